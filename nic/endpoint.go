package nic

import (
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Config configures an endpoint.
type Config struct {
	// MAC and IP are the endpoint's addresses, the source of every frame.
	MAC rocev2.MAC
	IP  netip.Addr
	// Port is the index of the endpoint's port in its worker (0 when the
	// worker has just the one).
	Port int
	// Egress is the egress configuration of that port, as the worker is
	// given it; DataQueue and ControlQueue name its queues ("data" and
	// "control" of dataplane.DefaultEgress when empty). Requests and read
	// responses go on the data queue, whose PFC priority PFC pauses and
	// whose byte budget is the NIC's transmit backpressure; ACKs and NAKs
	// go on the control queue.
	Egress       dataplane.EgressConfig
	DataQueue    string
	ControlQueue string
	// Transport is the reliability logic, e.g. gbn.New(gbn.Config{}).
	// It is required and belongs to this endpoint alone.
	Transport Transport
	// CC paces each QP's data packets; nil sends as fast as the port's
	// queue takes them.
	CC CC
	// MaxQPs bounds the QP table (default 1024); QPNs are BaseQPN (default
	// 0x100) onwards. The worker's TimerCap should be at least 4×MaxQPs.
	MaxQPs  int
	BaseQPN uint32
	// SQDepth and RQDepth are each QP's send and receive queue sizes
	// (default 32, rounded up to a power of two). CQDepth bounds the
	// work requests outstanding on the whole endpoint (default 4096), so
	// the completion queue never overflows. MaxMRs bounds the memory
	// regions (default 64).
	SQDepth, RQDepth, CQDepth, MaxMRs int
	// MTU is the default QP MTU (default 1024). FrameSize is the worker's
	// frame size (default 2048), which bounds the MTU.
	MTU       int
	FrameSize int
	// DSCP of every frame (default 26, the usual RoCE class). Frames are
	// sent ECN-capable (ECT(0)), as a NIC with DCQCN enabled sends them.
	// In a DCP fabric — a transport that asks for Classifier.DCP, such as
	// nic/dcp — the two low bits are the DCP tag: the default is then 24
	// (CS3), and a DSCP whose low bits are not 00 is refused, since the
	// frames the framework builds itself (CNPs, read responses) would be
	// parsed, and trimmed, as DCP packets (docs/wire-formats.md, "The
	// DSCP caveat"). The transport tags its own frames.
	DSCP uint8
	// BestEffort sends the endpoint's frames with DSCP 0, a ConnectX
	// QP's traffic class 0–3 (perftest's --tclass 0): a QoS switch's
	// default class, the lossy one of tord's default profile. DSCP must
	// then be 0, which otherwise stands for the default above.
	BestEffort bool
	// CNPDSCP is the DSCP of the CNPs the endpoint sends as DCQCN's
	// notification point (default 48, ConnectX's cnp_dscp), so that
	// switches can give them a class of their own ahead of the data.
	// ConnectX also sets the 802.1p priority of CNPs (cnp_802p_prio,
	// default 6); the endpoint's frames carry no 802.1Q tag, so the
	// DSCP is all there is to set. In a DCP fabric its low two bits
	// must be 00 (48 is).
	CNPDSCP uint8
	// Burst is how many packets one QP sends before the scheduler turns
	// to the next active QP (default 16).
	Burst int
	// Clock, if set, stamps work requests when Post is called; it must be
	// the worker's clock. Without it the worker stamps them when it takes
	// them from the ring, at most one loop later.
	Clock func() int64
	// Observer, if set, is told which work request each retransmitted
	// request packet and each retransmission timeout belongs to: per
	// message records (the simulator's flow file, tor/fabric). nil costs
	// one branch on those two paths only.
	Observer Observer
	// QPCache, if its Bytes is set, models an on-chip QP-context cache
	// whose misses hold the NIC's pipeline (QPCache); off, every
	// context is on chip at no cost.
	QPCache QPCache
}

// Observer attributes an endpoint's retransmissions to work requests by
// their WR.ID. Its methods run on the endpoint's worker goroutine,
// inside its step: they must return at once and must not call the
// endpoint.
type Observer interface {
	// Retransmitted: a request packet of work request id was sent
	// again (a PSN below the highest sent; Stats.Retransmits counts
	// these and the responder's resent read responses, which belong to
	// no local work request).
	Retransmitted(qpn uint32, id uint64)
	// TimedOut: the retransmission timer of QP qpn expired (one
	// Stats.Timeouts) while id was its oldest unfinished work request.
	TimedOut(qpn uint32, id uint64)
}

const ectZero = 2

func (c *Config) setDefaults() {
	if c.DataQueue == "" {
		c.DataQueue = "data"
	}
	if c.ControlQueue == "" {
		c.ControlQueue = "control"
	}
	if c.MaxQPs == 0 {
		c.MaxQPs = 1024
	}
	if c.BaseQPN == 0 {
		c.BaseQPN = 0x100
	}
	if c.SQDepth == 0 {
		c.SQDepth = 32
	}
	if c.RQDepth == 0 {
		c.RQDepth = 32
	}
	c.SQDepth, c.RQDepth = pow2(c.SQDepth), pow2(c.RQDepth)
	if c.CQDepth == 0 {
		c.CQDepth = 4096
	}
	if c.MaxMRs == 0 {
		c.MaxMRs = 64
	}
	if c.MTU == 0 {
		c.MTU = 1024
	}
	if c.FrameSize == 0 {
		c.FrameSize = 2048
	}
	if c.DSCP == 0 && !c.BestEffort {
		c.DSCP = 26
		if c.dcpFabric() {
			c.DSCP = 24
		}
	}
	if c.Burst == 0 {
		c.Burst = 16
	}
	if c.CNPDSCP == 0 {
		c.CNPDSCP = 48
	}
}

// dcpFabric reports whether the transport's packets are DCP packets.
func (c *Config) dcpFabric() bool {
	x, ok := c.Transport.(Classifying)
	return ok && x.Classifier(rocev2.Classifier{}).DCP
}

func pow2(n int) int {
	c := 1
	for c < n {
		c <<= 1
	}
	return c
}

// Endpoint is a software RNIC on one port of a dataplane.Worker: the
// worker's single stage (dataplane.Stage, Timed and Source). It consumes
// every RoCEv2 frame addressed to one of its QPs and drops, with a
// counted reason, what it cannot use; its Poll sends the requests and
// read responses of QPs with work while the data queue has room; ACKs
// and NAKs go out on the control queue as frames arrive.
//
// Setup (RegisterMR, CreateQP, Connect) happens before the worker runs.
// Then Post and PollCQ are called from one goroutine, the worker's or
// another; Stats from any goroutine; everything else belongs to the
// worker's goroutine.
type Endpoint struct {
	cfg   Config
	t     Transport
	dec   Decorator    // t, when it decorates requests
	adec  AckDecorator // t, when it decorates ACKs and NAKs
	rtt   RTTSampler   // cc, when it takes round-trip times
	ints  INTSampler   // cc, when it reads in-band telemetry
	cc    CC
	base  uint32
	port  uint16
	dataQ uint8
	ctrlQ uint8
	sack  bool // the transport's ACKs carry a SACKETH (Classifier.SACK)
	limit int  // data queue budget in bytes
	qps   []QP
	nqp   int
	mrs   []mr

	// worker side
	c         Ctx
	pkt       Pkt
	req       Request
	spec      rocev2.Spec
	out       dataplane.Packet
	cmd       cmd
	sched     sched    // the active QPs, in the order they send
	acks      []uint32 // QPs with a coalesced ACK due
	txBlocked bool     // a frame could not be made or queued this loop
	echo      intEcho  // INT records to echo, per QP (nic/int.go)
	intReq    int      // the frame being emitted carries an INT request tail of this many records
	intAck    int      // the frame being emitted echoes QP intAck−1's INT records
	running   bool
	cmds      *spsc[cmd]
	cq        *spsc[Completion]
	st        Stats
	lastPub   int64
	qpc       *qpc // Config.QPCache; nil when off

	started atomic.Bool
	pubMu   sync.Mutex
	pub     Stats

	// host side: the posting goroutine's accounting
	host struct {
		out       int
		sq, rq    []uint16
		connected []bool
	}
}

// NewEndpoint builds an endpoint; it does nothing until its worker runs.
func NewEndpoint(c Config) (*Endpoint, error) {
	c.setDefaults()
	switch {
	case c.Transport == nil:
		return nil, fmt.Errorf("%w: no transport", ErrConfig)
	case !c.IP.IsValid():
		return nil, fmt.Errorf("%w: no IP address", ErrConfig)
	case c.Port < 0 || c.Port >= dataplane.NoPort:
		return nil, fmt.Errorf("%w: port %d", ErrConfig, c.Port)
	case c.MaxQPs < 1 || uint64(c.BaseQPN) < 2 || uint64(c.BaseQPN)+uint64(c.MaxQPs) > 1<<24:
		return nil, fmt.Errorf("%w: QPNs %#x..%#x must lie in 2..0xffffff", ErrConfig, c.BaseQPN, uint64(c.BaseQPN)+uint64(c.MaxQPs)-1)
	case c.SQDepth > 1<<15 || c.RQDepth > 1<<15 || c.CQDepth < 1:
		return nil, fmt.Errorf("%w: queue depths SQ %d RQ %d CQ %d", ErrConfig, c.SQDepth, c.RQDepth, c.CQDepth)
	case c.FrameSize < 256 || c.FrameSize&(c.FrameSize-1) != 0:
		return nil, fmt.Errorf("%w: frame size %d is not a power of two ≥ 256", ErrConfig, c.FrameSize)
	case !validMTU(c.MTU) || c.MTU+maxHeaders > c.FrameSize:
		return nil, fmt.Errorf("%w: MTU %d with %d-byte frames: %w", ErrConfig, c.MTU, c.FrameSize, ErrMTU)
	case c.Burst < 1:
		return nil, fmt.Errorf("%w: burst %d", ErrConfig, c.Burst)
	case c.dcpFabric() && rocev2.TagOfDSCP(c.DSCP) != rocev2.DCPNone:
		return nil, fmt.Errorf("%w: DSCP %d carries DCP tag %v; the %s transport needs one whose low two bits are 00 (e.g. 24)",
			ErrConfig, c.DSCP, rocev2.TagOfDSCP(c.DSCP), c.Transport.Name())
	case c.dcpFabric() && rocev2.TagOfDSCP(c.CNPDSCP) != rocev2.DCPNone:
		return nil, fmt.Errorf("%w: CNP DSCP %d carries DCP tag %v; the %s transport needs one whose low two bits are 00 (e.g. 48)",
			ErrConfig, c.CNPDSCP, rocev2.TagOfDSCP(c.CNPDSCP), c.Transport.Name())
	case c.BestEffort && c.DSCP != 0:
		return nil, fmt.Errorf("%w: DSCP %d with BestEffort, which sends DSCP 0", ErrConfig, c.DSCP)
	case c.DSCP > 63 || c.CNPDSCP > 63:
		return nil, fmt.Errorf("%w: DSCP %d or CNP DSCP %d above 63", ErrConfig, c.DSCP, c.CNPDSCP)
	}
	if err := c.Egress.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	dq, cq := c.Egress.QueueIndexByName(c.DataQueue), c.Egress.QueueIndexByName(c.ControlQueue)
	if dq < 0 || cq < 0 {
		return nil, fmt.Errorf("%w: egress has no queue %q or %q", ErrConfig, c.DataQueue, c.ControlQueue)
	}
	limit := c.Egress.Queues[dq].Limit
	if limit < 2*c.FrameSize {
		return nil, fmt.Errorf("%w: data queue budget %d bytes is below two %d-byte frames", ErrConfig, limit, c.FrameSize)
	}
	e := &Endpoint{cfg: c, t: c.Transport, cc: c.CC, base: c.BaseQPN, port: uint16(c.Port),
		dataQ: uint8(dq), ctrlQ: uint8(cq), limit: limit,
		qps: make([]QP, c.MaxQPs), mrs: make([]mr, 0, c.MaxMRs),
		sched: newSched(c.MaxQPs), acks: make([]uint32, 0, c.MaxQPs),
		cmds: newSPSC[cmd](c.CQDepth), cq: newSPSC[Completion](c.CQDepth)}
	if e.cc == nil {
		e.cc = noCC{}
	}
	e.dec, _ = c.Transport.(Decorator)
	e.adec, _ = c.Transport.(AckDecorator)
	e.rtt, _ = e.cc.(RTTSampler)
	e.ints, _ = e.cc.(INTSampler)
	if x, ok := c.Transport.(Classifying); ok {
		e.sack = x.Classifier(rocev2.Classifier{}).SACK
	}
	e.host.sq = make([]uint16, c.MaxQPs)
	e.host.rq = make([]uint16, c.MaxQPs)
	e.c.e = e
	e.t.Init(c.MaxQPs)
	e.cc.Init(c.MaxQPs)
	var err error
	if e.qpc, err = newQPC(c.QPCache, e.t.SRState(), c.MaxQPs); err != nil {
		return nil, err
	}
	return e, nil
}

// Name implements dataplane.Stage.
func (e *Endpoint) Name() string { return "nic" }

// Transport returns the endpoint's transport.
func (e *Endpoint) Transport() Transport { return e.t }

// CC returns the endpoint's congestion control (Config.CC), nil for none.
func (e *Endpoint) CC() CC { return e.cfg.CC }

// Classifier returns the classifier the endpoint's worker must use: base
// with the settings the transport asks for (Classifying), e.g.
// e.Classifier(rocev2.Classifier{VerifyICRC: true}).
func (e *Endpoint) Classifier(base rocev2.Classifier) rocev2.Classifier {
	if x, ok := e.t.(Classifying); ok {
		return x.Classifier(base)
	}
	return base
}

// begin readies the Ctx for a call from the worker.
func (e *Endpoint) begin(dc *dataplane.Ctx) *Ctx {
	if !e.running {
		e.running = true
		e.started.Store(true)
	}
	e.c.Now, e.c.dc = dc.Now, dc
	e.txBlocked = false
	return &e.c
}

// end sends the coalesced ACKs.
func (e *Endpoint) end() {
	for _, i := range e.acks {
		q := &e.qps[i]
		q.ackPending = false
		if q.state == stateRTS {
			e.c.SendAck(q, rocev2.ACKSyndrome(31), q.epsn.Add(-1))
		}
	}
	e.acks = e.acks[:0]
}

// Process implements dataplane.Stage: it consumes the RoCEv2 frames of
// its QPs and drops the rest with a reason.
func (e *Endpoint) Process(dc *dataplane.Ctx, b *dataplane.Batch) {
	c := e.begin(dc)
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		e.receive(c, dc, p, dc.RxTime(i, b.N))
	}
	e.end()
}

// receive handles one frame that arrived at about time at
// (dataplane.Ctx.RxTime): the congestion signals go to the CC at that
// time, not at the loop's, so a notification point that sends at most
// one CNP per min_time_between_cnps spaces its CNPs by the marked
// frames' arrivals, as a NIC that timestamps each frame does, and does
// not answer a whole receive batch with one (TestCNPsPerFrame).
func (e *Endpoint) receive(c *Ctx, dc *dataplane.Ctx, p *dataplane.Packet, at int64) {
	m := &p.Meta
	if m.Kind != rocev2.KindRoCE {
		p.Drop(ReasonNotRoCE)
		return
	}
	i := m.Flow.QP - e.base
	if m.Flow.QP < e.base || int(i) >= e.nqp || e.qps[i].state == stateReset {
		e.st.UnknownQP++
		p.Drop(ReasonUnknownQP)
		return
	}
	q := &e.qps[i]
	e.lookup(q, c.Now)
	e.st.RxPackets++
	e.st.RxBytes += uint64(p.Len)
	if q.state == stateError {
		e.st.QPErrorDrops++
		p.Drop(ReasonQPError)
		return
	}
	f := dc.Mem.Frame(p)
	k := &e.pkt
	*k = Pkt{Op: m.Opcode, PSN: m.PSN, AckReq: m.AckReq, ECN: m.ECN, Frame: f, Meta: m, p: p}
	if off := m.ExtOff(rocev2.ExtRETH); off != 0 {
		r := rocev2.RETH(f[off:])
		k.VA, k.RKey, k.DMALen = r.VA(), r.RKey(), r.DMALen()
	}
	if off := m.ExtOff(rocev2.ExtAETH); off != 0 {
		a := rocev2.AETH(f[off:])
		k.Syndrome, k.MSN = a.Syndrome(), a.MSN()
	}
	if off := m.ExtOff(rocev2.ExtSACK); off != 0 {
		x := rocev2.SACKETH(f[off:])
		k.HasSACK, k.SACK, k.SACKFlags, k.LostCnt = true, x.PSN(), x.Flags(), x.LostCnt()
	}
	k.Payload = f[m.PayloadOff : int(m.PayloadOff)+m.PayloadLen()]
	op := m.Opcode
	if m.ECN == 3 {
		// The notification point: CE on any packet of q but a CNP, which
		// never answers a CNP (two endpoints would echo marks back and
		// forth on a congested reverse path).
		e.st.ECNMarked++
		if op != rocev2.CNP && e.cc.Marked(q, at) {
			e.sendCNP(c, q)
		}
	}
	switch {
	case op == rocev2.CNP:
		e.st.CNPsRecv++
		e.cc.CNP(q, at)
	case op.Transport() != rocev2.TransportRC:
		p.Drop(ReasonBadOpcode)
	case op.IsResponse():
		if m.Ext&rocev2.ExtAETH != 0 { // a DCP header-only packet returned as a response has none
			switch syn := k.Syndrome; {
			case syn.IsACK():
				e.st.AcksRecv++
			case syn.IsNAK():
				e.st.NAKsRecv++
				q.timedOut = false
				if syn.Value() == rocev2.NakPSNSeqError {
					e.st.SeqNAKsRecv++
				}
			}
		}
		acked := q.acked
		e.t.Response(c, q, k)
		if e.rtt != nil && q.acked != acked {
			e.rtt.Acked(q, c.Now, q.acked)
		}
		if e.ints != nil {
			e.readINT(c, q, f, m)
		}
	case op.IsRequest():
		e.keepINT(q, f, m)
		e.t.Request(c, q, k)
	default:
		p.Drop(ReasonBadOpcode)
	}
	if p.Verdict == dataplane.Forward {
		dc.Consume(p) // delivered to the transport: the frame's life ends here
	}
	if op.IsResponse() && (!q.active || lossSignal(k)) {
		e.wakeUrgent(q)
	} else {
		e.wake(q)
	}
}

// lossSignal reports whether a response says the peer misses packets: a
// NAK, or a SACKETH whose PSN or flags differ from a plain cumulative
// ACK's (IRN's NACK, FaSR's SACK or FNACK).
func lossSignal(k *Pkt) bool {
	return k.Syndrome.IsNAK() || k.HasSACK && (k.SACK != k.PSN || k.SACKFlags != 0)
}

// Timer kinds, in the top two bits of a timer's argument; the QP index is
// in the low 32 bits and, for the retransmission timer, a generation in
// bits 32–61.
const (
	timerRTO  = 0
	timerWake = 1
	genMask   = 1<<30 - 1
)

func (e *Endpoint) armRTO(c *Ctx, q *QP, at int64) {
	q.gen = (q.gen + 1) & genMask
	q.heapArmed, q.heapAt = true, at
	if !c.dc.After(at-c.Now, timerRTO<<62|uint64(q.gen)<<32|uint64(q.idx)) {
		q.heapArmed = false // the worker counted it (TimerFull); the next SetTimer tries again
	}
}

// Timer implements dataplane.Timed.
func (e *Endpoint) Timer(dc *dataplane.Ctx, arg uint64) {
	c := e.begin(dc)
	q := &e.qps[uint32(arg)]
	switch arg >> 62 {
	case timerRTO:
		if uint32(arg>>32)&genMask != q.gen || !q.heapArmed {
			break // superseded by an earlier deadline
		}
		q.heapArmed = false
		switch {
		case !q.rtoOn || q.state != stateRTS:
		case q.rtoAt > c.Now:
			e.armRTO(c, q, q.rtoAt)
		default:
			q.rtoOn = false
			q.timedOut = true
			e.st.Timeouts++
			if o := e.cfg.Observer; o != nil && q.sqHead != q.sqSent {
				o.TimedOut(q.qpn, q.sq[q.sqHead&uint32(len(q.sq)-1)].id)
			}
			e.t.Timeout(c, q)
			e.wakeUrgent(q)
		}
	case timerWake:
		q.parked = false
		e.wake(q)
	}
	e.end()
}

// wake puts q at the back of the active QPs unless it is active, parked,
// or not ready to send.
func (e *Endpoint) wake(q *QP) {
	if q.active || q.parked || q.state != stateRTS {
		return
	}
	q.active = true
	e.sched.push(listRound, q.idx)
}

// wakeUrgent puts q in the urgent list, served before the others, unless
// it is parked, not ready to send, urgent or resuming already; an active
// q moves there from the round. Process calls it for a QP that was idle
// and heard from its peer, or that was active and heard of a loss
// (lossSignal), and Timer when q's timer expired: what q has to send
// then — a retransmission, or what an acknowledgement let go — is what
// the peer waits for. (An active QP that only got an ACK keeps its place
// in the round, so busy QPs still share the port in turn.) At the back
// of the round it would wait for every other active QP: with 5,000 QPs
// at a few hundred Mbit/s a round is most of a second, longer than any
// retransmission timeout, so timers expired again and again with the
// retransmission unsent, IRN ran out of retries and FaSR's recoveries
// held its shared units for whole rounds (sr-concurrency,
// docs/experiments.md). The urgent list is first in, first out, so a QP
// woken early is not pushed back by later ones.
func (e *Endpoint) wakeUrgent(q *QP) {
	if q.parked || q.state != stateRTS {
		return
	}
	switch e.sched.in[q.idx] {
	case listUrgent, listResume:
		return
	case listRound:
		e.sched.remove(q.idx)
	}
	q.active = true
	e.sched.push(listUrgent, q.idx)
}

// nextActive takes the QP to serve next and the packets its turn allows:
// the one whose turn was cut short, then the urgent list, then the round;
// nil when none is active.
func (e *Endpoint) nextActive() (*QP, int) {
	i, burst, ok := e.sched.pop(e.cfg.Burst)
	if !ok {
		return nil, 0
	}
	q := &e.qps[i]
	q.active = false
	return q, burst
}

// The lists of sched.
const (
	listNone   uint8 = iota
	listRound        // active QPs, round robin
	listUrgent       // woken by a response or their timer
	listResume       // the one whose turn was cut short
)

// sched orders the active QPs: the one whose turn was cut short first,
// then the urgent list, then the round, each first in, first out. The
// lists are linked through per-QP indices, so a QP moves from the round
// to the urgent list in constant time; a QP is in one list at most.
type sched struct {
	next, prev []int32
	in         []uint8
	head, tail [listResume]int32 // of listRound and listUrgent, −1 when empty
	resume     int32             // the QP of listResume, −1 for none
	left       int               // packets left of its turn
}

func newSched(n int) sched {
	s := sched{next: make([]int32, n), prev: make([]int32, n), in: make([]uint8, n), resume: -1}
	for l := range s.head {
		s.head[l], s.tail[l] = -1, -1
	}
	return s
}

// push appends QP i to list l (listRound or listUrgent).
func (s *sched) push(l uint8, i uint32) {
	k := l - 1
	s.in[i], s.next[i], s.prev[i] = l, -1, s.tail[k]
	if s.tail[k] >= 0 {
		s.next[s.tail[k]] = int32(i)
	} else {
		s.head[k] = int32(i)
	}
	s.tail[k] = int32(i)
}

// remove takes QP i out of the list it is in (listRound or listUrgent).
func (s *sched) remove(i uint32) {
	k := s.in[i] - 1
	n, p := s.next[i], s.prev[i]
	if p >= 0 {
		s.next[p] = n
	} else {
		s.head[k] = n
	}
	if n >= 0 {
		s.prev[n] = p
	} else {
		s.tail[k] = p
	}
	s.in[i] = listNone
}

// cut makes QP i the one whose turn was cut short, with left packets of
// it to go.
func (s *sched) cut(i uint32, left int) {
	s.in[i], s.resume, s.left = listResume, int32(i), left
}

// pop takes the next QP and the packets of its turn (burst, or what was
// left of a cut one); ok is false when no QP is active.
func (s *sched) pop(burst int) (i uint32, n int, ok bool) {
	if s.resume >= 0 {
		i, n = uint32(s.resume), s.left
		s.resume, s.in[i] = -1, listNone
		return i, n, true
	}
	for l := listUrgent; l >= listRound; l-- {
		if h := s.head[l-1]; h >= 0 {
			s.remove(uint32(h))
			return uint32(h), burst, true
		}
	}
	return 0, 0, false
}

// dataFull reports whether the data queue is too full for another frame.
func (e *Endpoint) dataFull(dc *dataplane.Ctx) bool {
	bytes, _ := dc.Egress(int(e.port)).Depth(int(e.dataQ))
	return bytes+e.cfg.FrameSize > e.limit
}

// Poll implements dataplane.Source: it takes new work requests from the
// ring, then lets active QPs send — read responses first, then the
// transport's next request — up to Burst packets per QP per turn and a
// worker batch in all, while the data queue has room for a frame and
// congestion control allows. A QP that must wait for its congestion
// control is parked until the time it names. QPs woken by a response or
// their timer go before the others (wakeUrgent), and a QP whose turn the
// full data queue, the socket or the batch cut short goes first in the
// next Poll with the rest of its burst: at the back of the ring it would
// wait a whole round with part of a message sent and unacknowledged.
func (e *Endpoint) Poll(dc *dataplane.Ctx) int {
	c := e.begin(dc)
	e.ingest(c)
	made := 0
	for made < dataplane.BatchSize && !e.txBlocked && !e.dataFull(dc) {
		q, burst := e.nextActive()
		if q == nil {
			break
		}
		if q.state != stateRTS {
			continue
		}
		e.lookup(q, c.Now)
		more, k := true, 0
		for ; k < burst; k++ {
			if made == dataplane.BatchSize || e.dataFull(dc) {
				break
			}
			if at := e.cc.Ready(q, c.Now); at > c.Now {
				e.park(c, q, at)
				more = false
				break
			}
			if !e.respond(c, q) && !e.t.Next(c, q) {
				more = e.txBlocked // retry when the queue or memory frees up
				break
			}
			made++
		}
		switch {
		case !more:
		case k < burst:
			// Cut short: the rest of the turn comes first next time.
			q.active = true
			e.sched.cut(q.idx, burst-k)
		default:
			e.wake(q)
		}
	}
	e.end()
	if c.Now-e.lastPub >= int64(time.Millisecond) {
		e.publish(c.Now)
	}
	return made
}

func (e *Endpoint) park(c *Ctx, q *QP, at int64) {
	e.st.Paced++
	q.parked = true
	if !c.dc.After(at-c.Now, timerWake<<62|uint64(q.idx)) {
		q.parked = false // no timer: stay active and ask again next loop
		e.wake(q)
	}
}

// ingest moves posted work requests into their queues.
func (e *Endpoint) ingest(c *Ctx) {
	w := &e.cmd
	for e.cmds.pop(w) {
		q := &e.qps[w.QP-e.base]
		if w.post < 0 {
			w.post = c.Now
		}
		if q.state == stateError {
			e.complete(&Completion{ID: w.ID, QP: q.qpn, Op: w.Op, Status: StatusFlushed, Len: w.Len})
			continue
		}
		if w.Op == OpRecv {
			q.rq[q.rqTail&uint32(len(q.rq)-1)] = rwqe{id: w.ID, off: w.off, len: uint32(w.Len), mr: w.mr}
			q.rqTail++
			continue
		}
		if q.sqTail-q.sqHead == uint32(len(q.sq)) {
			q.growSQ()
		}
		q.sq[q.sqTail&uint32(len(q.sq)-1)] = wqe{id: w.ID, post: w.post, off: w.off, rva: w.RemoteVA,
			len: uint32(w.Len), rkey: w.RKey, msn: q.smsn & 0xffffff, mr: w.mr, op: w.Op}
		q.sqTail++
		q.smsn++
		e.wake(q)
	}
}

// cnpPad is the 16 reserved bytes of a CNP (annex A17.9.2).
var cnpPad [rocev2.CNPLen]byte

// sendCNP sends a congestion notification packet to q's peer QP: BTH
// opcode 0x81 with BECN set, PSN 0, and 16 reserved bytes, in the CNP
// class (Config.CNPDSCP) on the control queue — not paced, not charged
// to congestion control.
func (e *Endpoint) sendCNP(c *Ctx, q *QP) {
	s := e.header(q)
	s.Opcode, s.BECN, s.Payload, s.DSCP = rocev2.CNP, true, cnpPad[:], e.cfg.CNPDSCP
	if c.emit(q, e.ctrlQ, false) {
		e.st.CNPsSent++
	}
}

// header fills e.spec with q's addressing and returns it. In a SACK
// fabric every RC ACK carries a SACKETH (Build ignores SACK for other
// opcodes).
func (e *Endpoint) header(q *QP) *rocev2.Spec {
	s := &e.spec
	*s = rocev2.Spec{Src: e.cfg.MAC, Dst: q.rmac, SrcIP: e.cfg.IP, DstIP: q.rip, DSCP: e.cfg.DSCP, ECN: ectZero,
		SrcPort: q.sport, DestQP: q.rqpn, SACK: e.sack}
	return s
}

func (e *Endpoint) publish(now int64) {
	e.lastPub = now
	e.pubMu.Lock()
	e.pub = e.st
	e.pubMu.Unlock()
}

// Stats returns the counters as last published (about once a
// millisecond while the worker runs). Safe from any goroutine.
func (e *Endpoint) Stats() Stats {
	e.pubMu.Lock()
	defer e.pubMu.Unlock()
	return e.pub
}

// LiveStats returns the counters as they are now. Call it only from the
// worker's goroutine (tests driving Step) or after the worker stopped.
func (e *Endpoint) LiveStats() Stats { return e.st }

// QPBytes returns the bytes of state one QP takes: ctx is the QP context
// (the framework's QP struct plus the transport's and the congestion
// control's per-QP state, what a NIC keeps in SRAM), queues the send and
// receive queue rings and the transport's own queues (HostMemory): what
// a NIC keeps in host memory.
func (e *Endpoint) QPBytes() (ctx, queues int) {
	queues = e.cfg.SQDepth*wqeSize + e.cfg.RQDepth*rwqeSize
	if h, ok := e.t.(HostMemory); ok {
		queues += h.QueueBytes()
	}
	return qpSize + e.t.StateBytes() + e.cc.StateBytes(), queues
}

// SRState returns the transport's selective-repeat state (SRState) and
// the QPs the endpoint is sized for (Config.MaxQPs): the endpoint's SR
// memory is s.Bytes(qps).
func (e *Endpoint) SRState() (s SRState, qps int) {
	return e.t.SRState(), e.cfg.MaxQPs
}

// Sizes of the per-QP structures, measured by reflection (unsafe stays in
// afxdp).
var (
	qpSize   = int(reflect.TypeFor[QP]().Size())
	wqeSize  = int(reflect.TypeFor[wqe]().Size())
	rwqeSize = int(reflect.TypeFor[rwqe]().Size())
)
