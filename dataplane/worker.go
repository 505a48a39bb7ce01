package dataplane

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"rocetor/rocev2"
)

// PollMode says how a worker waits when it finds no work.
type PollMode int

// Poll modes.
const (
	// Busy never sleeps: lowest latency, one core at 100%. A loop that
	// finds nothing to do yields the CPU (sched_yield), which returns at
	// once when no other thread waits for it. One that does is often
	// the thread that feeds the worker: on veth, the NAPI thread that
	// copies frames into the AF_XDP rx ring. Spinning on an empty ring
	// kept it off the CPU until the scheduler preempted the worker, and
	// the kernel then dropped at the fill ring what the worker had not
	// drained in time (docs/performance.md, "Busy polling yields").
	Busy PollMode = iota
	// Adaptive spins for a while, then sleeps in poll(2) on the ports'
	// sockets (with need_wakeup the kernel then wakes it). Testbeds on
	// two cores need it.
	Adaptive
	// Interrupt sleeps as soon as a loop finds nothing to do.
	Interrupt
	// BusySpin is Busy without the yield: a loop with nothing to do
	// starts the next at once. For a core nothing else runs on, where
	// the yield's syscall is all it adds, and to measure what the yield
	// changes.
	BusySpin
)

// ParsePollMode parses "busy", "adaptive", "interrupt" or "spin".
func ParsePollMode(s string) (PollMode, error) {
	switch s {
	case "busy":
		return Busy, nil
	case "adaptive":
		return Adaptive, nil
	case "interrupt":
		return Interrupt, nil
	case "spin":
		return BusySpin, nil
	}
	return 0, fmt.Errorf("poll mode %q: want busy, adaptive, interrupt or spin", s)
}

func (m PollMode) String() string {
	switch m {
	case Busy:
		return "busy"
	case Adaptive:
		return "adaptive"
	case Interrupt:
		return "interrupt"
	case BusySpin:
		return "spin"
	}
	return fmt.Sprintf("PollMode(%d)", int(m))
}

// WorkerConfig configures a worker.
type WorkerConfig struct {
	ID     int
	Mem    *Mem
	Ports  []Port
	Egress []EgressConfig // one per port
	Stages []Stage
	Mode   PollMode
	// Classifier parses every received frame.
	Classifier rocev2.Classifier
	// Clock returns nanoseconds on a monotonic scale; nil uses the
	// runtime's monotonic clock.
	Clock func() int64
	// TimerCap bounds armed timers; 0 means 65536.
	TimerCap int
	// Spin is how many idle loops an adaptive worker makes before it
	// sleeps; 0 means 2000 (tens of microseconds).
	Spin int
	// MaxSleep bounds one sleep; 0 means one millisecond.
	MaxSleep time.Duration
	// Seed seeds the ECN marking draws of every port (with ID and the
	// port's index), so that a run repeats by seed.
	Seed uint64
	// RefusePFC, when not nil, names by port index the ports whose
	// 802.1Qbb PFC and 802.3x PAUSE frames are dropped (ReasonPFCRefused,
	// PortCounters.PFCRefused) instead of pausing the port's egress: a
	// host that may not stop the switch's queues must not reach them
	// with a forged pause. nil, or a false entry, honours them, which
	// is what a switch did before it had the knob.
	RefusePFC []bool
	// Handoff, when not nil, connects the worker (ID is its index) to
	// the other workers of its switch, and Mem must be ID's Mem of
	// SharedMems over the same Handoff. nil: the worker owns whatever
	// reaches it, and Owner and PortOwner are ignored.
	Handoff *Handoff
	// Owner returns the worker that owns a frame fresh from the wire,
	// classified (p.Meta, p.In set; frame is its bytes), or -1 when no
	// worker does and it stays where it arrived. A frame another worker
	// owns is handed to it before any stage runs. nil: every frame
	// stays. It runs on the packet path: no allocation, no locks.
	Owner func(p *Packet, frame []byte) int
	// PortOwner names, by port index, the worker that owns each port's
	// egress: its queues, shaper and byte budgets, and the stages from
	// EgressStage on. A packet bound for a port another worker owns is
	// handed to it before stage EgressStage (or, when EgressStage is
	// the number of stages, before it is queued). -1 names a shared
	// port, whose egress no stage keeps per-port state for: every
	// worker queues on its own share of it and transmits from it, its
	// budgets cut into the workers' parts by whoever builds the
	// egresses (pipeline.Owners), and a pause received on it is
	// honoured on every share (Worker.sharePause). nil: every worker queues
	// on its own share of every port.
	PortOwner []int
	// EgressStage is the first stage that runs on the egress port's
	// owner rather than on the flow's (trimming and llr read and number
	// the port's queue). Only with PortOwner.
	EgressStage int
	// LinkOwner names, by port index, the worker that owns each port's
	// link (a link-level protocol's receiver, tor/llr's), or -1. Frames
	// this worker receives on a port another worker's link owns are
	// handed to it unclassified; the owner's port must be an Inbox (or
	// wrap one), through which it receives them. nil: no link owners.
	LinkOwner []int
	// PFC, when not nil, pauses a port's peer when the bytes it put in
	// the egress queues pass a threshold (IngressPFC). nil sends PFC
	// only where a stage does (Ctx.SendPFC).
	PFC *IngressPFC
	// InputLimit, when not 0, is the bytes the frames one port brought
	// in may hold in this worker's egress queues at once, whatever
	// queue they wait in: a frame past it is dropped (ReasonInputFull),
	// as an input-queued switch's input buffer refuses it (the IRN
	// seed's switches, seed 004 §4.1; with egress.by_input, its
	// virtual output queues). 0: no such budget.
	InputLimit int
	// PFCWatchdog, when not nil, ends the pause storms of the ports'
	// peers (PFCWatchdog).
	PFCWatchdog *PFCWatchdog
	// Thread, when not nil, runs on the worker's OS thread once Run
	// has locked it, before the first step: tord sets the thread's
	// scheduling policy and CPU there (pipeline.CPUConfig). Its error
	// ends Run.
	Thread func() error
	// Yield, when not nil, is what a Busy worker calls on a loop that
	// found nothing to do, to give its CPU to a thread waiting for it:
	// afxdp.Yield on AF_XDP ports (see Busy), whose sched_yield is a raw
	// syscall and so lives in afxdp. In-memory ports have no thread
	// behind them to yield to.
	Yield func()
}

// Worker runs the pipeline over its ports on one locked OS thread: it
// polls each port for a batch, classifies it, runs the stages, queues the
// result per egress port, fires due timers and transmits what the
// schedulers release. It owns its Mem, ports, stages and queues; nothing
// is shared with other workers. Only Snapshot may be called from other
// goroutines.
type Worker struct {
	cfg    WorkerConfig
	mem    *Mem
	ports  []Port
	egress []*Egress
	stages []Stage
	timed  []Timed
	hold   []Holder // ports, or the ports under them, that hold frames
	pend   []Pender // ports, or the ports under them, that count waiting frames
	srcs   []Source
	srcIdx []uint16
	timers *Timers
	clock  func() int64
	onDrop func(frame []byte, in, out uint16, r Reason) // SetDropHook
	batch  Batch
	// emitted[s] is the one-packet batch in which a frame stage s emits
	// meets the stages after s. One per stage, because a later stage may
	// emit in turn while its Process runs on an earlier stage's batch.
	emitted []Batch
	ctx     Ctx
	st      workerStats
	// srcFull says a Source made a whole batch in the last Step: it
	// stopped for the batch, not for want of room, credit or work, so
	// it may have more now (Next).
	srcFull bool
	pfd     []unix.PollFd

	stepped bool // Step ran: ctx.Now is the previous loop's time
	lastPub int64
	tid     int // the OS thread Run locked, for Snapshot.TID
	pubMu   sync.Mutex
	pub     Snapshot

	// capture is armed by the control plane (Worker.Capture); cap is
	// its value for the current loop.
	capture atomic.Pointer[Capture]
	cap     *Capture
	// marking is a Marking that SetMarking handed over, until Step
	// adopts it.
	marking atomic.Pointer[Marking]

	// ho is WorkerConfig.Handoff; egressAt is WorkerConfig.EgressStage
	// with PortOwner, else -1. gone marks the packets of a batch handed
	// away.
	ho       *Handoff
	egressAt int
	gone     uint64
	inbox    []*Inbox  // by port, where the port is or wraps one
	pfc      *pfcState // WorkerConfig.PFC's accounting; nil without it
	input    []int     // queued bytes by ingress port (WorkerConfig.InputLimit); nil without it
	wd       *wdState  // WorkerConfig.PFCWatchdog's; nil without it
	// pfcRx is the priorities whose received pauses are honoured
	// (IngressPFC.Priorities; every one without).
	pfcRx uint8
}

// MonotonicClock returns a clock reading nanoseconds since the call on
// the runtime's monotonic clock: a worker's, unless WorkerConfig.Clock
// gives another.
func MonotonicClock() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// ErrWorkerConfig wraps every worker configuration error.
var ErrWorkerConfig = errors.New("dataplane: worker config")

// NewWorker builds a worker; nothing runs until Step or Run.
func NewWorker(c WorkerConfig) (*Worker, error) {
	if c.Mem == nil {
		return nil, fmt.Errorf("%w: no frame memory", ErrWorkerConfig)
	}
	if len(c.Ports) == 0 || len(c.Ports) >= NoPort {
		return nil, fmt.Errorf("%w: %d ports", ErrWorkerConfig, len(c.Ports))
	}
	if len(c.Egress) != len(c.Ports) {
		return nil, fmt.Errorf("%w: %d egress configs for %d ports", ErrWorkerConfig, len(c.Egress), len(c.Ports))
	}
	if c.RefusePFC != nil && len(c.RefusePFC) != len(c.Ports) {
		return nil, fmt.Errorf("%w: RefusePFC names %d ports, have %d", ErrWorkerConfig, len(c.RefusePFC), len(c.Ports))
	}
	if c.InputLimit < 0 {
		return nil, fmt.Errorf("%w: input limit %d bytes", ErrWorkerConfig, c.InputLimit)
	}
	if h := c.Handoff; h != nil {
		if c.ID < 0 || c.ID >= h.Workers() || c.Mem.share != h || c.Mem.id != c.ID {
			return nil, fmt.Errorf("%w: worker %d of a handoff among %d needs its Mem of SharedMems", ErrWorkerConfig, c.ID, h.Workers())
		}
		if c.PortOwner != nil && len(c.PortOwner) != len(c.Ports) {
			return nil, fmt.Errorf("%w: PortOwner names %d ports, have %d", ErrWorkerConfig, len(c.PortOwner), len(c.Ports))
		}
		for i, o := range c.PortOwner {
			if o < -1 || o >= h.Workers() {
				return nil, fmt.Errorf("%w: port %d's owner %d, want -1 (shared) to %d", ErrWorkerConfig, i, o, h.Workers()-1)
			}
		}
		if c.LinkOwner != nil && len(c.LinkOwner) != len(c.Ports) {
			return nil, fmt.Errorf("%w: LinkOwner names %d ports, have %d", ErrWorkerConfig, len(c.LinkOwner), len(c.Ports))
		}
		if c.EgressStage < 0 || c.EgressStage > len(c.Stages) {
			return nil, fmt.Errorf("%w: egress stage %d of %d stages", ErrWorkerConfig, c.EgressStage, len(c.Stages))
		}
	}
	if c.PFC != nil {
		if err := c.PFC.validate(len(c.Ports)); err != nil {
			return nil, err
		}
	}
	if c.PFCWatchdog != nil {
		if err := c.PFCWatchdog.validate(len(c.Ports)); err != nil {
			return nil, err
		}
	}
	if c.TimerCap == 0 {
		c.TimerCap = 1 << 16
	}
	if c.Spin == 0 {
		c.Spin = 2000
	}
	if c.MaxSleep == 0 {
		c.MaxSleep = time.Millisecond
	}
	w := &Worker{cfg: c, mem: c.Mem, ports: c.Ports, stages: c.Stages, timers: NewTimers(c.TimerCap), clock: c.Clock, egressAt: -1}
	if c.Handoff == nil {
		w.cfg.Owner, w.cfg.PortOwner, w.cfg.LinkOwner = nil, nil, nil
	} else {
		w.ho = c.Handoff
		if c.PortOwner != nil {
			w.egressAt = c.EgressStage
		}
		w.pfd = append(w.pfd, unix.PollFd{Fd: int32(w.ho.efd[c.ID]), Events: unix.POLLIN})
		w.st.Handed = make([]uint64, w.ho.Workers())
	}
	if w.clock == nil {
		w.clock = MonotonicClock()
	}
	for i, ec := range c.Egress {
		e, err := NewEgress(ec)
		if err != nil {
			return nil, fmt.Errorf("port %s: %w", c.Ports[i].Name(), err)
		}
		e.UseMem(w.mem)
		e.seedECN(w.portSeed(c.Seed, i))
		w.egress = append(w.egress, e)
	}
	if w.ho != nil {
		w.ho.egress[c.ID] = w.egress
	}
	for i, e := range w.egress {
		o := w.portOwner(uint16(i))
		e.away = o >= 0 && o != c.ID
	}
	if c.PFC != nil {
		w.pfc = newPFCState(*c.PFC, w.egress)
	}
	if c.InputLimit > 0 {
		w.input = make([]int, len(c.Ports))
	}
	w.pfcRx = 0xff
	if c.PFC != nil && c.PFC.Priorities != 0 {
		w.pfcRx = c.PFC.Priorities
	}
	if c.PFCWatchdog != nil {
		w.wd = newWDState(*c.PFCWatchdog, len(c.Ports))
	}
	w.timed = make([]Timed, len(c.Stages))
	for i, s := range c.Stages {
		w.timed[i], _ = s.(Timed)
		if src, ok := s.(Source); ok {
			w.srcs = append(w.srcs, src)
			w.srcIdx = append(w.srcIdx, uint16(i))
		}
	}
	for i, p := range c.Ports {
		if fd := p.Fd(); fd >= 0 {
			w.pfd = append(w.pfd, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		for q := p; q != nil; {
			if x, ok := q.(*Inbox); ok && w.ho != nil {
				if w.inbox == nil {
					w.inbox = make([]*Inbox, len(c.Ports))
				}
				w.inbox[i] = x
			}
			if h, ok := q.(Holder); ok {
				w.hold = append(w.hold, h)
			}
			if r, ok := q.(Pender); ok {
				w.pend = append(w.pend, r)
			}
			u, ok := q.(Wrapper)
			if !ok {
				break
			}
			q = u.Inner()
		}
	}
	// The last stage's emissions go straight to the queues (emit).
	w.emitted = make([]Batch, max(len(c.Stages)-1, 0))
	w.st.Ports = make([]PortCounters, len(c.Ports))
	w.st.Stages = make([]StageCounters, len(c.Stages))
	w.ctx = Ctx{Mem: w.mem, w: w}
	w.publish(0)
	return w, nil
}

// Egress returns the egress of port i. Like the worker, it belongs to the
// worker's thread.
func (w *Worker) Egress(i int) *Egress { return w.egress[i] }

// Step runs one loop at time now and returns how much work it did
// (frames received and transmitted, timers fired). Tests and simulators
// call it directly with a clock of their own; Run calls it in a loop.
func (w *Worker) Step(now int64) int {
	work := 0
	w.ctx.Since, w.ctx.Now = w.ctx.Now, now
	if !w.stepped {
		w.ctx.Since, w.stepped = now, true
	}
	w.cap = w.capture.Load()
	w.applyMarking()
	if w.ho != nil {
		work += w.drainHandoff()
	}
	for i, p := range w.ports {
		b := &w.batch
		b.N = 0
		n := p.Receive(b)
		if n == 0 {
			continue
		}
		work += n
		if w.cfg.LinkOwner != nil {
			if o := w.cfg.LinkOwner[i]; o >= 0 && o != w.cfg.ID {
				w.handRaw(i, o, b) // counted where the link's owner receives them
				continue
			}
		}
		w.st.batch(n)
		w.receive(i, b)
		if w.gone != 0 {
			w.compact(b)
		}
		w.process(0, b)
		w.dispatch(b)
	}
	for {
		s, arg, ok := w.timers.Pop(now)
		if !ok {
			break
		}
		work++
		if t := w.timed[s]; t != nil {
			w.ctx.stage = s
			t.Timer(&w.ctx, arg)
		}
	}
	if w.pfc != nil && now >= w.pfc.next {
		w.pfcRefresh(now)
	}
	if w.wd != nil && now >= w.wd.next {
		w.wdCheck(now)
	}
	w.srcFull = false
	for i, src := range w.srcs {
		w.ctx.stage = w.srcIdx[i]
		n := src.Poll(&w.ctx)
		work += n
		w.srcFull = w.srcFull || n >= BatchSize
	}
	// Transmit batches reuse the receive batch: every packet received
	// has met its stages and its queue by now. A second batch of its own
	// was 6.6 KB a worker, 6 MB of resident memory for a k = 16 fat
	// tree's 1,344 simulated nodes (tor/fabric).
	out := &w.batch.Pkts
	for i, p := range w.ports {
		e := w.egress[i]
		if e.Backlog() > 0 {
			if room := min(p.TxRoom(), BatchSize); room > 0 {
				k := e.Dequeue(now, out[:room])
				if w.pfc != nil || w.input != nil {
					for j := 0; j < k; j++ {
						if o := &out[j]; o.In != NoPort {
							w.dequeued(o.In, uint16(i), o.Queue, int(o.Len))
						}
					}
				}
				sent := p.Transmit(out[:k])
				if w.cap != nil && (w.cap.Point == CaptureTx || w.cap.Point == CaptureRxTx) && w.cap.Port == i {
					// The frames are the kernel's until their
					// completion, but nothing rewrites them meanwhile.
					for j := 0; j < sent; j++ {
						w.cap.add(w.mem.Frame(&out[j]))
					}
				}
				pc := &w.st.Ports[i]
				for j := 0; j < sent; j++ {
					pc.TxPackets++
					pc.TxBytes += uint64(out[j].Len)
				}
				for j := sent; j < k; j++ {
					// The queues keep no Meta: parse the frame again,
					// on this drop path only, to tell a header-only
					// one; the ICRC was checked on receipt.
					o, cls := &out[j], w.cfg.Classifier
					cls.VerifyICRC = false
					cls.Classify(w.mem.Frame(o), &o.Meta)
					w.dropPacket(o, ReasonTxFull)
				}
				work += k
			}
		}
		p.Service()
	}
	if w.ho != nil {
		w.flushHandoff()
		if w.egressAt >= 0 {
			for i, e := range w.egress {
				if w.cfg.PortOwner[i] == w.cfg.ID {
					e.Publish()
				}
			}
		}
	}
	if work > 0 {
		w.st.BusyPolls++
	} else {
		w.st.IdlePolls++
	}
	if now-w.lastPub >= int64(time.Millisecond) {
		w.publish(now)
	}
	return work
}

// receive classifies a fresh batch from port in, counts it and consumes
// MAC control frames, which act on this port's egress.
func (w *Worker) receive(in int, b *Batch) {
	pc := &w.st.Ports[in]
	rx := w.cap != nil && (w.cap.Point == CaptureRx || w.cap.Point == CaptureRxTx) && w.cap.Port == in
	// The port's counters are added once per batch, from a local sum,
	// not per frame, a load and a store each: in
	// BenchmarkWorkerForwardParts/unverified the median paired
	// difference in CPU time per frame was −3.9 ns, 13 of 22 rounds
	// lower (10M − 2M frames each, GOMAXPROCS=1, perf stat -e
	// task-clock, 2026-11-29; rounds moved by ±20 ns with the loaded
	// machine, so the gain is not firmly shown).
	var bytes uint64
	for j := 0; j < b.N; j++ {
		p := &b.Pkts[j]
		if rx {
			w.cap.add(w.mem.Frame(p))
		}
		p.In, p.Out, p.Queue, p.Verdict = uint16(in), NoPort, 0, Forward
		bytes += uint64(p.Len)
		f := w.mem.Frame(p)
		// The frame is the worker's alone: the ICRC is verified in
		// place, in one CRC pass (rocev2.Classifier.ClassifyOwned):
		// classifying a 1 KB frame with its ICRC took 189 ns with
		// Classify, 116 ns with ClassifyOwned (BenchmarkClassify, CPU
		// time, medians of 10, 2026-11-28).
		w.cfg.Classifier.ClassifyOwned(f, &p.Meta)
		if p.Meta.Reason != rocev2.ReasonNone {
			p.Drop(Malformed(p.Meta.Reason))
			continue
		}
		if w.cfg.Owner != nil {
			if o := w.cfg.Owner(p, f); o >= 0 && o != w.cfg.ID {
				if w.hand(p, o, 0) {
					w.gone |= 1 << j
				}
				continue
			}
		}
		if p.Meta.Kind == rocev2.KindMACControl {
			w.control(in, p, f)
		}
	}
	pc.RxPackets += uint64(b.N)
	pc.RxBytes += bytes
}

// control acts on a MAC control frame received on port in, which pauses
// that port's egress.
func (w *Worker) control(in int, p *Packet, f []byte) {
	pc := &w.st.Ports[in]
	if in < len(w.cfg.RefusePFC) && w.cfg.RefusePFC[in] {
		pc.PFCRefused++
		p.Drop(ReasonPFCRefused)
		return
	}
	c := rocev2.MACControl(f[p.Meta.L3Off:])
	switch c.Opcode() {
	case rocev2.MACControlPFC:
		if len(c) >= rocev2.PFCLen {
			var t [8]uint16
			for k := range t {
				t[k] = c.Time(k)
			}
			enable := c.ClassEnable()
			for k := range t {
				if enable&(1<<k) != 0 {
					pc.PFCRxPrio[k]++
				}
			}
			// A priority without PFC is never paused
			// (IngressPFC.Priorities), nor one the watchdog
			// found stormed (each share's watchdog its own).
			enable &= w.pfcRx
			if w.sharedPort(in) {
				w.sharePause(in, rocev2.MACControlPFC, enable, &t)
			}
			w.pausePFC(in, enable, &t)
			pc.PFCRx++
		}
	case rocev2.MACControlPause:
		if w.sharedPort(in) {
			w.sharePause(in, rocev2.MACControlPause, 0, &[8]uint16{c.PauseTime()})
		}
		w.egress[in].PauseAll(w.ctx.Now, c.PauseTime())
		pc.PauseRx++
	}
	// MAC control frames end at the link; they are consumed,
	// not dropped.
	w.st.Consumed++
	w.mem.Release(p.Addr)
	p.Verdict = Taken
}

// pausePFC pauses the priorities of enable on port in's egress for
// times, less those the watchdog found stormed.
func (w *Worker) pausePFC(in int, enable uint8, t *[8]uint16) {
	if w.wd != nil {
		enable = w.wdPause(in, enable, t)
	}
	w.egress[in].Pause(w.ctx.Now, enable, t)
}

// process runs stages from, from+1, … over b.
func (w *Worker) process(from int, b *Batch) {
	for s := from; s < len(w.stages); s++ {
		if s == w.egressAt {
			w.handEgress(b)
		}
		w.stage(s, b)
	}
}

// stage runs stage s over b.
func (w *Worker) stage(s int, b *Batch) {
	w.ctx.stage = uint16(s)
	w.st.Stages[s].Calls++
	w.st.Stages[s].Packets += uint64(b.N)
	w.stages[s].Process(&w.ctx, b)
	if w.cap != nil && w.cap.Point == CaptureStage && w.cap.Stage == s {
		w.captureStage(b)
	}
}

// emit runs a packet stage s emitted through the stages after s and
// queues it if they leave it to forward. The stage's own frame is
// re-classified, since a stage may have built or rewritten it.
func (w *Worker) emit(s uint16, p *Packet) bool {
	if int(s)+1 >= len(w.stages) {
		return w.enqueue(p)
	}
	b := &w.emitted[s]
	b.N = 1
	q := &b.Pkts[0]
	*q = *p
	q.Verdict, q.Reason = Forward, 0
	if w.cfg.Classifier.ClassifyOwned(w.mem.Frame(q), &q.Meta); q.Meta.Reason != rocev2.ReasonNone {
		w.dropPacket(q, Malformed(q.Meta.Reason)) // a stage's bug, counted like the wire's
		return false
	}
	w.process(int(s)+1, b)
	w.ctx.stage = s
	switch q.Verdict {
	case Forward:
		return w.enqueue(q)
	case Drop:
		w.dropPacket(q, q.Reason)
		return false
	}
	return true // a later stage took it
}

// captureStage copies the packets of b the current stage left to
// forward out of the captured port.
func (w *Worker) captureStage(b *Batch) {
	for j := 0; j < b.N; j++ {
		if p := &b.Pkts[j]; p.Verdict == Forward && int(p.Out) == w.cap.Port {
			w.cap.add(w.mem.Frame(p))
		}
	}
}

// dispatch queues every packet the stages left with Forward and frees the
// dropped ones.
func (w *Worker) dispatch(b *Batch) {
	if w.wd == nil && w.pfc == nil && w.input == nil {
		w.dispatchPlain(b)
		return
	}
	for j := 0; j < b.N; j++ {
		p := &b.Pkts[j]
		switch p.Verdict {
		case Forward:
			w.enqueue(p)
		case Drop:
			w.dropPacket(p, p.Reason)
		}
	}
}

// dispatchPlain is dispatch for a worker with neither PFC accounting nor
// a PFC watchdog: enqueue's checks for those are made once a batch, and
// a packet routed to a queue of this worker's egress goes straight to
// it. Everything else (NoPort, a bad port or queue, a port another
// worker owns) takes enqueue, which counts or hands it. Measured in
// BenchmarkWorkerForwardParts/unverified's worker, in one process
// alternating 4,000 batches each way, thread CPU time, GOMAXPROCS=1, 61
// rounds (2026-11-29, load 5): 58.8 ns a frame through enqueue, 56.9
// here, median paired difference −1.7 ns (quartiles −2.2, −1.1), 53 of
// 61 rounds lower. With several workers enqueue had taken 128
// instructions a data packet in BenchmarkPipelineScaleWorkPaired's pair
// with two, where the pair with one spent 68 here (callgrind,
// 2026-12-01).
func (w *Worker) dispatchPlain(b *Batch) {
	eg := w.egress
	for j := 0; j < b.N; j++ {
		p := &b.Pkts[j]
		switch p.Verdict {
		case Forward:
			if int(p.Out) >= len(eg) || int(p.Queue) >= len(eg[p.Out].queues) || eg[p.Out].away {
				w.enqueue(p)
				continue
			}
			switch eg[p.Out].enqueuePacket(p) {
			case pushed, pushHeadroom:
			case pushThreshold:
				w.dropPacket(p, ReasonBufferThreshold)
			default:
				w.dropPacket(p, ReasonQueueFull)
			}
		case Drop:
			w.dropPacket(p, p.Reason)
		}
	}
}

// portOwner returns the worker that owns port i's egress
// (WorkerConfig.PortOwner), or -1 when every worker queues on its own
// share of it: a shared port, one past the ports, or a worker without
// port owners.
func (w *Worker) portOwner(i uint16) int {
	if w.egressAt < 0 || int(i) >= len(w.cfg.PortOwner) {
		return -1
	}
	return w.cfg.PortOwner[i]
}

func (w *Worker) enqueue(p *Packet) bool {
	if o := w.portOwner(p.Out); o >= 0 && o != w.cfg.ID {
		// Bound for a port another worker owns, past the stages
		// that check (EgressStage is the last, or a stage after it
		// emitted): it queues it.
		if w.hand(p, o, uint16(len(w.stages))) {
			return true
		}
		w.dropPacket(p, p.Reason)
		return false
	}
	switch {
	case p.Out == NoPort:
		w.dropPacket(p, ReasonUnrouted)
	case int(p.Out) >= len(w.egress) || int(p.Queue) >= w.egress[p.Out].NumQueues():
		w.dropPacket(p, ReasonBadPort)
	case w.wd != nil && w.wdDropping(p.Out, p.Queue):
		w.st.Ports[p.Out].WDDrops++
		w.dropPacket(p, ReasonPFCWatchdog)
	case w.input != nil && int(p.In) < len(w.input) && w.input[p.In]+int(p.Len) > w.cfg.InputLimit:
		w.dropPacket(p, ReasonInputFull)
	default:
		hr := w.pfc != nil && w.pfcHeadroom(p)
		r := w.egress[p.Out].enqueuePacket(p)
		if hr {
			w.egress[p.Out].queues[p.Queue].headroom = false
		}
		switch r {
		case pushed, pushHeadroom:
			if w.pfc != nil {
				w.pfcEnqueued(p.In, p.Out, p.Queue, int(p.Len), r == pushHeadroom)
			}
			if w.input != nil && int(p.In) < len(w.input) {
				w.input[p.In] += int(p.Len)
			}
			return true
		case pushThreshold:
			w.dropPacket(p, ReasonBufferThreshold)
		default:
			w.dropPacket(p, ReasonQueueFull)
		}
	}
	return false
}

// dequeued uncounts a frame that came in by port in and left queue q of
// port out, sent or dropped: from PFC's count (pfcDequeued) and the
// input's (WorkerConfig.InputLimit).
func (w *Worker) dequeued(in, out uint16, q uint8, n int) {
	if w.pfc != nil {
		w.pfcDequeued(in, out, q, n)
	}
	if w.input != nil && int(in) < len(w.input) {
		w.input[in] -= n
	}
}

// dropPacket frees p's frame and counts the drop under r, and under
// HODrops too when p is a DCP header-only packet.
func (w *Worker) dropPacket(p *Packet, r Reason) {
	if p.Meta.HeaderOnly() {
		w.st.HODrops[r]++
	}
	w.dropFrame(p.Addr, p.Len, p.In, p.Out, r)
}

// drop frees the n-byte frame at addr, which no packet describes (a
// frame flushed from a queue, or handed nowhere), and counts the drop
// under r.
func (w *Worker) drop(addr uint64, n uint16, r Reason) { w.dropFrame(addr, n, NoPort, NoPort, r) }

// dropFrame shows the frame to the drop hook, counts its drop under r
// and frees it.
func (w *Worker) dropFrame(addr uint64, n, in, out uint16, r Reason) {
	if w.onDrop != nil {
		w.onDrop(w.mem.Bytes(addr, int(n)), in, out, r)
	}
	w.st.Drops[r]++
	w.mem.Release(addr)
}

// SetDropHook makes fn see every frame the worker drops, before it is
// freed: its bytes (fn's only until it returns), the ports it came in
// by and was bound for (NoPort where not known: frames flushed from a
// queue or refused by a handoff ring) and the reason it is counted
// under. It is for tracing (torsim's --drops log) and runs on the
// worker's goroutine; set it before the worker runs. tord sets none,
// which leaves the packet path one nil test per drop.
func (w *Worker) SetDropHook(fn func(frame []byte, in, out uint16, r Reason)) { w.onDrop = fn }

func (w *Worker) sendPFC(port int, enable uint8, times [8]uint16) bool {
	addr, ok := w.mem.Alloc()
	if !ok {
		w.st.Drops[ReasonNoFrame]++
		return false
	}
	w.st.Built++
	n, err := rocev2.BuildPFC(w.mem.Room(addr), w.ports[port].MAC(), enable, times)
	if err != nil || !w.egress[port].EnqueueControl(addr, n) {
		w.drop(addr, uint16(n), ReasonQueueFull)
		return false
	}
	pc := &w.st.Ports[port]
	pc.PFCTx++
	for k := range times {
		if enable&(1<<k) != 0 {
			pc.PFCTxPrio[k]++
		}
	}
	return true
}

// Run locks the calling goroutine to its OS thread and loops until ctx
// is done, sleeping when idle as the poll mode says. It then releases
// every frame still queued.
func (w *Worker) Run(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if w.cfg.Thread != nil {
		if err := w.cfg.Thread(); err != nil {
			return err
		}
	}
	w.tid = unix.Gettid()
	idle := 0
	for ctx.Err() == nil {
		now := w.clock()
		if w.Step(now) > 0 {
			idle = 0
			continue
		}
		idle++
		switch {
		case w.cfg.Mode == Busy:
			w.yield()
			continue
		case w.cfg.Mode == BusySpin, w.cfg.Mode == Adaptive && idle < w.cfg.Spin:
			continue
		}
		w.sleep(now)
	}
	w.publish(w.clock())
	w.drain()
	return nil
}

// yield gives the CPU to a thread waiting for it, if any (see Busy and
// WorkerConfig.Yield), and counts the idle loop as a yield.
func (w *Worker) yield() {
	w.st.Yields++
	if w.cfg.Yield != nil {
		w.cfg.Yield()
	}
}

// drain gives every frame still in an egress queue back to Mem, so a
// stopped worker accounts for all frames it owns. Frames that stages hold
// are theirs to give back (see the stage's Close).
func (w *Worker) drain() {
	for _, e := range w.egress {
		e.flush(w.mem)
	}
}

// sleep waits in poll(2) until a port has frames, the next timer or
// held frame (Holder) is due, a queued frame may go (Egress.Next), or
// MaxSleep passes. A worker with a frame that may go now, or with a full
// tx ring, does not sleep. One whose queues wait for the shaper sleeps
// until its next token: polling for it kept a paced endpoint (roceperf
// at 200 Mbit/s, a frame every 41 µs) spinning on a CPU the switches and
// the other endpoint needed; waking late costs no rate, as the bucket
// keeps the credit of the time overslept (EgressConfig.BurstBytes).
// Measured: 80 MB from a roceperf client paced at 200 Mbit/s took 3.5
// and 5.3 CPU seconds polling, 2.6 and 1.6 sleeping (2026-11-25, link
// testbed, two CPUs shared with builds).
func (w *Worker) sleep(now int64) {
	d := int64(w.cfg.MaxSleep)
	for i, e := range w.egress {
		at, ok := e.Next(now)
		if !ok {
			continue
		}
		if at <= now || w.ports[i].TxRoom() == 0 {
			return
		}
		d = min(d, at-now)
	}
	if at, ok := w.timers.Next(); ok {
		d = min(d, at-now)
	}
	for _, h := range w.hold {
		if at, ok := h.Deadline(); ok {
			d = min(d, at-now)
		}
	}
	if w.pfc != nil && w.pfc.next != math.MaxInt64 {
		d = min(d, w.pfc.next-now) // a pause to send again before it lapses
	}
	if w.wd != nil && w.wd.next != math.MaxInt64 {
		d = min(d, w.wd.next-now) // a storm to declare or end
	}
	if d <= 0 {
		return
	}
	if w.ho != nil {
		// Say so before looking at the rings a last time: a worker
		// that hands a frame after the look sees the flag and writes
		// the eventfd this poll waits on (Handoff.wake).
		w.ho.sleeping[w.cfg.ID].Store(true)
		defer w.ho.sleeping[w.cfg.ID].Store(false)
		if w.ho.pending(w.cfg.ID) {
			return
		}
		defer w.ho.clearWake(w.cfg.ID)
	}
	w.st.Sleeps++
	if len(w.pfd) == 0 {
		time.Sleep(time.Duration(d))
		return
	}
	ts := unix.NsecToTimespec(d)
	_, _ = unix.Ppoll(w.pfd, &ts, nil) // EINTR and timeouts both mean "look again"
}

// Pender is implemented by ports that know how many received frames
// wait for Receive without taking them (dataplane.MemPort): Next finds
// it through Wrapper, as the worker finds a Holder.
type Pender interface {
	Pending() int
}

// Next returns the earliest time, at or after now, at which Step has
// something to do, having just run Step(now): now when a port has frames
// waiting (Pender), a Source made a whole batch, or a queued frame may
// go at once; else the next timer, held frame (Holder) or time the
// egress may release a frame (Egress.Next: the shaper's next token, the
// end of a PFC pause). ok is false when nothing is pending at all:
// only a received frame or a posted request wakes the worker then.
//
// A port whose TxRoom is 0 is left out: its owner knows when the wire
// frees (a simulator's port completes a transmission at serialization
// time) and steps the worker then. A discrete-event simulator calls
// Next after each Step instead of polling, so idle time costs nothing;
// the worker's own loop (Run) needs no Next, as it sleeps on the same
// deadlines (sleep).
func (w *Worker) Next(now int64) (at int64, ok bool) {
	if w.srcFull || (w.ho != nil && w.ho.pending(w.cfg.ID)) {
		return now, true
	}
	for _, r := range w.pend {
		if r.Pending() > 0 {
			return now, true
		}
	}
	at = math.MaxInt64
	for i, e := range w.egress {
		if e.Backlog() == 0 || w.ports[i].TxRoom() == 0 {
			continue
		}
		if t, due := e.Next(now); due {
			at, ok = min(at, t), true
		}
	}
	if t, due := w.timers.Next(); due {
		at, ok = min(at, t), true
	}
	if w.pfc != nil && w.pfc.next != math.MaxInt64 {
		at, ok = min(at, w.pfc.next), true
	}
	if w.wd != nil && w.wd.next != math.MaxInt64 {
		at, ok = min(at, w.wd.next), true
	}
	for _, h := range w.hold {
		if t, due := h.Deadline(); due {
			at, ok = min(at, t), true
		}
	}
	if !ok {
		return 0, false
	}
	return max(at, now), true
}

// Publish copies the counters for Snapshot at worker time now, from the
// worker's goroutine. A worker publishes about once a millisecond of its
// clock; a simulator calls Publish at the end of a run.
func (w *Worker) Publish(now int64) { w.publish(now) }

// publish copies the counters for Snapshot.
func (w *Worker) publish(now int64) {
	w.lastPub = now
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	s := &w.pub
	s.Worker, s.TID = w.cfg.ID, w.tid
	s.Ports = append(s.Ports[:0], w.st.Ports...)
	s.Stages = append(s.Stages[:0], w.st.Stages...)
	s.Drops, s.HODrops = w.st.Drops, w.st.HODrops
	s.BusyPolls, s.IdlePolls, s.Sleeps, s.Yields = w.st.BusyPolls, w.st.IdlePolls, w.st.Sleeps, w.st.Yields
	s.Batches = w.st.Batches
	s.Handed = append(s.Handed[:0], w.st.Handed...)
	s.Built, s.Consumed = w.st.Built, w.st.Consumed
	s.Timers, s.TimerFull = w.timers.Len(), w.timers.Refused
	s.FramesUse, s.Frames, s.FramesShared = w.mem.InUse(), w.mem.Frames(), w.mem.Shared()
	if len(w.egress) > 0 {
		if b := w.egress[0].Shared(); b != nil {
			s.SharedUsed, s.SharedSize = b.Used(), b.Size()
		}
	}
	if len(s.PortStats) != len(w.ports) {
		s.PortStats = make([]PortStats, len(w.ports))
		s.Queues = make([][]QueueSnapshot, len(w.ports))
		s.Reserves = make([]ReserveSnapshot, len(w.ports))
	}
	for i, p := range w.ports {
		s.PortStats[i] = p.Stats()
		e := w.egress[i]
		if len(s.Queues[i]) != e.NumQueues() {
			s.Queues[i] = make([]QueueSnapshot, e.NumQueues())
		}
		for q := range s.Queues[i] {
			bytes, pkts := e.Depth(q)
			s.Queues[i][q] = QueueSnapshot{Name: e.QueueName(q), DepthBytes: bytes, DepthPackets: pkts,
				LimitBytes: e.Limit(q), ThresholdBytes: e.Threshold(q), Paused: e.Paused(now, q), ECN: e.ECN(q), MarkAt: e.MarkAt(), QueueStats: e.Stats(q)}
			if o := w.portOwner(uint16(i)); o >= 0 && o != w.cfg.ID {
				// Another worker owns the port's budgets whole; the
				// collector sums the workers' shares (a shared
				// port's, each worker its part).
				s.Queues[i][q].LimitBytes, s.Queues[i][q].ThresholdBytes, s.Queues[i][q].ECN = 0, 0, ECNProfile{}
			}
		}
		s.Reserves[i] = ReserveSnapshot{}
		if o := w.portOwner(uint16(i)); o < 0 || o == w.cfg.ID {
			s.Reserves[i].Size, s.Reserves[i].Held = e.PortReserve()
		}
	}
}

// Published returns the counters as last published, without a copy:
// for the worker's own goroutine only (a simulator's, between steps),
// valid until the worker publishes again, and not to be changed. A
// simulator reads thousands of workers' counters as a run ends, and
// Snapshot's copies of them were 11 MB for htsim's 1,024-host
// permutation, all touched at the run's end.
func (w *Worker) Published() *Snapshot { return &w.pub }

// Snapshot returns a deep copy of the counters as last published. It is
// safe to call from any goroutine.
func (w *Worker) Snapshot() Snapshot {
	w.pubMu.Lock()
	defer w.pubMu.Unlock()
	s := w.pub
	s.Ports = append([]PortCounters(nil), s.Ports...)
	s.PortStats = append([]PortStats(nil), s.PortStats...)
	s.Stages = append([]StageCounters(nil), s.Stages...)
	s.Handed = append([]uint64(nil), s.Handed...)
	s.Reserves = append([]ReserveSnapshot(nil), s.Reserves...)
	s.Queues = make([][]QueueSnapshot, len(w.pub.Queues))
	for i := range s.Queues {
		s.Queues[i] = append([]QueueSnapshot(nil), w.pub.Queues[i]...)
	}
	return s
}
