package dataplane

import (
	"fmt"
	"math/rand/v2"

	"rocetor/rocev2"
)

// ECN marking: the switch is DCQCN's congestion point (Zhu et al.,
// "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015,
// §3.1). Each egress queue may carry a RED-like profile, the one
// operators write as SONiC's WRED_PROFILE (green_min_threshold,
// green_max_threshold in bytes, green_drop_probability in %,
// ecn: ecn_all) and the paper writes Kmin, Kmax, Pmax: at a depth up to
// Kmin no frame is marked, between Kmin and Kmax an ECN-capable frame is
// marked Congestion Experienced with a probability rising linearly to
// Pmax, and beyond Kmax every one is. The seeds evaluate their loss
// recovery under DCQCN (NetRT Fig. 8 and §V-B, seed 000; DCP §6, seed
// 002), whose NICs slow down on the CNPs these marks cause.
//
// Marking never drops: a frame that is not ECN-capable (Not-ECT) is
// left as it is, never dropped early; an ECN-capable one is marked,
// never dropped for ECN reasons. Only the queue's byte limit drops, as
// without a profile.

// MarkPoint says where an egress queue decides its ECN marks.
type MarkPoint uint8

// Mark points.
const (
	// MarkDequeue decides as the scheduler releases a frame, on the bytes
	// left behind it: the mark leaves at once instead of waiting out the
	// queue, so DCQCN's loop is shorter by one queueing delay. It is
	// what the ns-3 RDMA model the seeds' simulations descend from does
	// (HPCC's SwitchNode::SwitchNotifyDequeue, on egress bytes after the
	// frame's removal), and so what the fabric simulator compares with.
	// The default.
	MarkDequeue MarkPoint = iota
	// MarkEnqueue decides as the frame joins the queue, on the bytes it
	// finds there, as commodity switch ASICs' WRED does.
	MarkEnqueue
)

// ParseMarkPoint parses "dequeue" or "enqueue".
func ParseMarkPoint(s string) (MarkPoint, error) {
	switch s {
	case "dequeue":
		return MarkDequeue, nil
	case "enqueue":
		return MarkEnqueue, nil
	}
	return 0, fmt.Errorf("mark point %q: want dequeue or enqueue", s)
}

func (m MarkPoint) String() string {
	switch m {
	case MarkDequeue:
		return "dequeue"
	case MarkEnqueue:
		return "enqueue"
	}
	return fmt.Sprintf("MarkPoint(%d)", int(m))
}

// ECNProfile is one queue's marking curve. Its zero value marks nothing.
type ECNProfile struct {
	// MinBytes is Kmin: at a queue depth of MinBytes or less nothing is
	// marked.
	MinBytes int
	// MaxBytes is Kmax: beyond it every ECN-capable frame is marked.
	// 0 switches marking off.
	MaxBytes int
	// PMax is the marking probability at MaxBytes, in [0, 1]; between
	// MinBytes and MaxBytes it grows linearly from 0. PMax 0 with
	// MinBytes == MaxBytes is DCTCP's single threshold K.
	PMax float64
}

// On reports whether the profile marks at all.
func (p ECNProfile) On() bool { return p.MaxBytes > 0 }

// Validate checks the profile; the zero value is valid (off).
func (p ECNProfile) Validate() error {
	switch {
	case p == ECNProfile{}:
		return nil
	case p.MinBytes < 0 || p.MaxBytes < 1:
		return fmt.Errorf("min %d, max %d bytes: want 0 ≤ min and 1 ≤ max", p.MinBytes, p.MaxBytes)
	case p.MinBytes > p.MaxBytes:
		return fmt.Errorf("min %d bytes above max %d", p.MinBytes, p.MaxBytes)
	case !(p.PMax >= 0 && p.PMax <= 1):
		return fmt.Errorf("probability %v, want 0 to 1", p.PMax)
	}
	return nil
}

// Probability returns the chance that an ECN-capable frame is marked at
// a queue depth of depth bytes, as MarkDequeue or MarkEnqueue measures
// it. Comparisons are strict, as in ns-3's SwitchMmu::ShouldSendCN.
func (p ECNProfile) Probability(depth int) float64 {
	switch {
	case !p.On() || depth <= p.MinBytes:
		return 0
	case depth > p.MaxBytes:
		return 1
	}
	return p.PMax * float64(depth-p.MinBytes) / float64(p.MaxBytes-p.MinBytes)
}

// Defaults of DefaultECNProfile. The ns-3 HPCC configuration (Li et al.,
// SIGCOMM 2019; its run script's KMIN_MAP/KMAX_MAP/PMAX_MAP, in units of
// 1000 bytes) gives DCQCN 100/400 KB at 25 Gbit/s and 400/1600 KB at 100
// Gbit/s, Pmax 0.2: 4000 and 16000 bytes per Gbit/s.
const (
	ECNMinPerGbps = 4000  // Kmin bytes per Gbit/s of port rate
	ECNMaxPerGbps = 16000 // Kmax bytes per Gbit/s of port rate
	ECNPMax       = 0.2   // Pmax
	// ECNMinFloor is the least default Kmin: the DCQCN paper's own Kmin
	// (5 KB, at 40 Gbit/s), about five 1 KB-MTU RoCE frames, so that a
	// slow port does not mark a queue of a frame or two, which a
	// worker's batching makes at any rate.
	ECNMinFloor = 5000
	// ECNUnshapedBps is the rate the default profile assumes for an
	// unshaped port (rate 0), the same as PauseRateBps's: a software
	// port on veth moves a few Gbit/s, and 10 Gbit/s is the smallest
	// rate RoCE NICs run at.
	ECNUnshapedBps = 10e9
)

// DefaultECNProfile returns the profile for a port shaped to rateBps
// (0: unshaped, taken as ECNUnshapedBps): Kmin and Kmax grow linearly
// with the rate from ns-3 HPCC's values, Kmin at least ECNMinFloor and
// Kmax at least four times Kmin, Pmax 0.2. At 100 Gbit/s it is
// 400 KB/1600 KB/0.2; at 10 Gbit/s 40 KB/160 KB/0.2; at 1 Gbit/s
// 5 KB/20 KB/0.2.
func DefaultECNProfile(rateBps uint64) ECNProfile {
	if rateBps == 0 {
		rateBps = ECNUnshapedBps
	}
	kmin := max(int(rateBps*ECNMinPerGbps/1e9), ECNMinFloor)
	kmax := max(int(rateBps*ECNMaxPerGbps/1e9), 4*kmin)
	return ECNProfile{MinBytes: kmin, MaxBytes: kmax, PMax: ECNPMax}
}

// ecnCurve is an ECNProfile compiled for the packet path: the
// probability as a threshold on 53 random bits per byte beyond Kmin.
type ecnCurve struct {
	on         bool
	kmin, kmax int
	slope      float64 // PMax × 2^53 / (kmax − kmin)
}

func compileECN(p ECNProfile) ecnCurve {
	c := ecnCurve{on: p.On(), kmin: p.MinBytes, kmax: p.MaxBytes}
	if p.MaxBytes > p.MinBytes {
		c.slope = p.PMax * (1 << 53) / float64(p.MaxBytes-p.MinBytes)
	}
	return c
}

// splitmix64 is SplitMix64's finaliser: it spreads nearby seeds (worker
// 0 and 1, port 0 and 1) to unrelated PCG states.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// seedECN seeds the port's marking stream.
func (e *Egress) seedECN(seed uint64) {
	e.rng = *rand.NewPCG(splitmix64(seed), splitmix64(seed^0x5eed))
}

// ecnOf returns what a queue entry keeps of p for marking: the ECN bits
// of an IP frame (0, Not-ECT, for anything else) and where its IP header
// starts. DCP header-only packets keep Not-ECT here whatever their bits:
// they stand for a payload already trimmed for congestion, their
// receiver bounces them to the sender as a loss notice, and DCQCN must
// not count that congestion twice (seed 002 §4.1–§4.3; the bits themselves
// pass unchanged, see rocev2.Trim).
func ecnOf(p *Packet) (ecn uint8, l3 uint16, v6 bool) {
	m := &p.Meta
	if m.IPVersion == 0 || m.Reason != rocev2.ReasonNone || m.HeaderOnly() {
		return 0, 0, false
	}
	return m.ECN, m.L3Off, m.IPVersion == 6
}

// mark is the marking point of queue q for entry en at depth bytes: it
// counts an ECN-capable frame and marks it CE when the curve says so.
func (e *Egress) mark(q *queue, en *entry, depth int) {
	if en.ecn == ecnNotECT {
		return
	}
	q.stats.ECT++
	c := &q.ecn
	if !c.on || en.ecn == ecnCE || depth <= c.kmin || e.mem == nil {
		return
	}
	if depth <= c.kmax && e.rng.Uint64()>>11 >= uint64(float64(depth-c.kmin)*c.slope) {
		return
	}
	f := e.mem.Bytes(en.addr, int(en.len))
	if en.v6 {
		rocev2.IPv6(f[en.l3:]).SetECN(ecnCE)
	} else {
		// The checksum is patched, not recomputed (RFC 1624); the
		// RoCEv2 ICRC masks the TOS byte, so it stays valid.
		rocev2.IPv4(f[en.l3:]).SetECN(ecnCE)
	}
	en.ecn = ecnCE
	q.stats.Marked++
}

// ECN codepoints (RFC 3168 §5).
const (
	ecnNotECT = 0
	ecnCE     = 3
)

// SetMarking replaces the marking of this port: the point, and the
// profile of each queue (missing ones are off). Frames already queued
// are decided at the new point: with a change from dequeue to enqueue,
// those queued meanwhile pass no marking point. It runs on the owner's
// thread; from others, use Worker.SetMarking.
func (e *Egress) SetMarking(at MarkPoint, profiles []ECNProfile) error {
	if at > MarkEnqueue {
		return fmt.Errorf("%w: mark point %d", ErrEgressConfig, at)
	}
	if len(profiles) > len(e.queues) {
		return fmt.Errorf("%w: %d ECN profiles for %d queues", ErrEgressConfig, len(profiles), len(e.queues))
	}
	for i, p := range profiles {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("%w: queue %d (%s): ecn: %v", ErrEgressConfig, i, e.queues[i].cfg.Name, err)
		}
	}
	e.markAt = at
	for i := range e.queues {
		var p ECNProfile
		if i < len(profiles) {
			p = profiles[i]
		}
		e.queues[i].cfg.ECN = p
		e.queues[i].ecn = compileECN(p)
	}
	return nil
}

// MarkAt returns the marking point.
func (e *Egress) MarkAt() MarkPoint { return e.markAt }

// ECN returns the marking profile of queue q.
func (e *Egress) ECN(q int) ECNProfile { return e.queues[q].cfg.ECN }

// UseMem names the frame memory the queued frames live in, which
// marking rewrites. NewWorker sets it for the egresses it builds; an
// Egress without one counts ECN-capable frames but marks none.
func (e *Egress) UseMem(m *Mem) { e.mem = m }

// Marking is the ECN marking of every port of a worker, for
// Worker.SetMarking.
type Marking struct {
	At MarkPoint
	// Seed restarts the marking draws of every port as WorkerConfig.Seed
	// seeds them, so a run after a reload repeats by seed too.
	Seed uint64
	// Profiles[port][queue]; a missing port or queue is off.
	Profiles [][]ECNProfile
}

// SetMarking replaces the ECN marking of every port, for a live reload.
// It is safe to call from any goroutine: it checks m and hands a copy to
// the worker, which applies it at the start of its next Step.
func (w *Worker) SetMarking(m Marking) error {
	if m.At > MarkEnqueue {
		return fmt.Errorf("%w: mark point %d", ErrWorkerConfig, m.At)
	}
	if len(m.Profiles) > len(w.ports) {
		return fmt.Errorf("%w: ECN profiles for %d ports, have %d", ErrWorkerConfig, len(m.Profiles), len(w.ports))
	}
	c := Marking{At: m.At, Seed: m.Seed, Profiles: make([][]ECNProfile, len(w.ports))}
	for i, ps := range m.Profiles {
		if len(ps) > len(w.cfg.Egress[i].Queues) {
			return fmt.Errorf("%w: port %s: %d ECN profiles for %d queues", ErrWorkerConfig, w.ports[i].Name(), len(ps), len(w.cfg.Egress[i].Queues))
		}
		for q, p := range ps {
			if err := p.Validate(); err != nil {
				return fmt.Errorf("%w: port %s queue %s: ecn: %v", ErrWorkerConfig, w.ports[i].Name(), w.cfg.Egress[i].Queues[q].Name, err)
			}
		}
		c.Profiles[i] = append([]ECNProfile(nil), ps...)
	}
	w.marking.Store(&c)
	return nil
}

// applyMarking adopts a Marking handed over by SetMarking; on the
// worker's thread.
func (w *Worker) applyMarking() {
	m := w.marking.Load()
	if m == nil || !w.marking.CompareAndSwap(m, nil) {
		return
	}
	for i, e := range w.egress {
		_ = e.SetMarking(m.At, m.Profiles[i]) // checked by SetMarking
		e.seedECN(w.portSeed(m.Seed, i))
	}
}

// portSeed derives port i's marking seed from the worker's seed.
func (w *Worker) portSeed(seed uint64, i int) uint64 {
	return seed ^ splitmix64(uint64(w.cfg.ID)) ^ splitmix64(uint64(i)<<32)
}
