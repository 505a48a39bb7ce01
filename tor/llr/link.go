package llr

import (
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"sync/atomic"
)

// hole is a run of missing sequences found in one go: the receiver saw
// a sequence (or a dummy's position) beyond the next one it expected.
// Holes are found in sequence order and kept in a FIFO ring.
type hole struct {
	first psn.Link
	n     int
	// at is when the loss was detected (worker time, stamped by the
	// stage at its next call: the port's Receive has no clock); 0 until
	// then. noticed is when the loss notice last named the hole's head.
	at, noticed int64
	fresh       bool // no notice sent yet
}

// span is a run of sequences a loss notice asked to retransmit.
type span struct {
	first psn.Link
	n     int
}

const (
	// syncSlack is how far beyond the receiver's start the first
	// numbered frame may be and still count what lies before it as
	// lost; further, the receiver adopts the neighbour's position.
	syncSlack = 256
	holeCap   = 256 // holes tracked per link; more are counted and left to ackNoTimeout
	reqCap    = 256 // retransmission requests waiting for the stage
	noEntry   = ^uint32(0)
)

// link is the state of one protected port: it is the sender towards the
// neighbour and the receiver from it (seed 003, Figure 15). The stage
// (Process, Poll, Timer) and the port wrapper (Receive, Transmit) of the
// same worker share it; nothing else touches it.
type link struct {
	port uint16
	cfg  *Config
	st   *PortStats
	peer rocev2.MAC // source of the last shim frame received: where llr's own frames go
	// queue indices on this port, resolved at the first batch
	dataQ, retxQ, ctrlQ, idleQ int
	resolved                   bool

	// Sender (§3.1–§3.3, appendix A.2).
	// off switches the sender off (Stage.SetActive): frames cross the
	// link as they are, as on an unprotected one, until it is switched
	// on again. Numbering resumes where it stopped, so the receiver,
	// which passes unshimmed frames through, sees no gap. Protego lies
	// dormant until a link needs it (§2.3, appendix C); an operator or
	// a monitor turns it on. Set from any goroutine.
	off atomic.Bool
	// pinned: an operator chose on or off (Stage.SetActive); the
	// neighbour's protection requests change nothing until
	// Stage.Release. Set from any goroutine.
	pinned atomic.Bool
	// lossCode is the loss rate (rocev2.LossCode) of the neighbour's
	// last protection request, 0 before any; neighbourLoss the same,
	// decoded once for Eq. 1. The port wrapper sets both.
	lossCode      atomic.Uint32
	neighbourLoss float64
	// ask is the LossCode of a protection request for the stage to send
	// the neighbour, 0 for none (Stage.RequestProtection, from the
	// monitor's goroutine).
	ask     atomic.Uint32
	next    psn.Link // sequence of the next protected frame (seqNo)
	una     psn.Link // oldest sequence not yet acknowledged
	tx      *arena
	txh     []uint32 // arena handle per sequence in [una, next), indexed seq & (len−1)
	reqs    [reqCap]span
	reqHead int
	reqN    int
	skipAsk bool // a notice named acknowledged sequences: send a skip dummy
	// dummies: position of the last one and when it was queued
	dummyPos   psn.Link
	dummyAt    int64
	dummyArmed bool // a timer is armed for the next repeat
	batchCall  uint64
	batchBytes int // bytes this batch added to the data queue (not yet queued)

	// Receiver (§3.1, §3.3–§3.5, Algorithms 1 and 2).
	synced bool // a numbered frame came since this switch started
	// skipTo: the neighbour said no sequence before it will come again
	// (a skip dummy); skipping while ackNo is short of it.
	skipTo   psn.Link
	skipping bool
	ackNo    psn.Link // next sequence to forward; the cumulative ACK
	high     psn.Link // one past the highest sequence known sent
	got      []uint64 // arrival bitmap for [ackNo, ackNo+Window), bit seq & (Window−1)
	slot     []uint32 // Blocking: reorder-buffer handle per sequence, or noEntry
	rx       *arena   // Blocking: the reordering buffer
	holes    [holeCap]hole
	hHead    int
	hN       int
	fresh    int  // holes not yet stamped by the stage
	pending  bool // the neighbour's copy of ackNo is stale (pendingAck)
	paused   bool // curr_pfc_state == pause
	pausAt   int64
}

func newLink(port uint16, cfg *Config, st *PortStats) *link {
	l := &link{port: port, cfg: cfg, st: st, peer: rocev2.MAC{0x01, 0x80, 0xc2, 0, 0, 0x0e}}
	recs := min(cfg.TxBuffer/60+1, Window)
	n := 1
	for n < recs {
		n <<= 1
	}
	l.tx = newArena(cfg.TxBuffer, n)
	l.txh = make([]uint32, n)
	l.got = make([]uint64, Window/64)
	if cfg.Mode == Blocking {
		l.rx = newArena(cfg.RxBuffer, min(cfg.RxBuffer/60+1, Window))
		l.slot = make([]uint32, Window)
		for i := range l.slot {
			l.slot[i] = noEntry
		}
	}
	return l
}

func (l *link) has(s psn.Link) bool { return l.got[(s&(Window-1))>>6]&(1<<(s&63)) != 0 }
func (l *link) mark(s psn.Link)     { l.got[(s&(Window-1))>>6] |= 1 << (s & 63) }
func (l *link) unmark(s psn.Link)   { l.got[(s&(Window-1))>>6] &^= 1 << (s & 63) }

// inflight returns the sequences sent and not yet acknowledged.
func (l *link) inflight() int { return l.next.Diff(l.una) }

// ack applies a cumulative ACK from the neighbour: every sequence before
// a was received (or skipped), so its copy is freed (appendix A.2).
func (l *link) ack(a psn.Link) {
	d := a.Diff(l.una)
	if d <= 0 {
		return
	}
	if a.Diff(l.next) > 0 {
		// An ACK beyond what this switch has sent: the neighbour holds
		// state from before this switch restarted. Continue from its
		// ackNo; the copies held are of numbers it has left behind.
		l.st.Resyncs++
		for l.una != l.next {
			l.freeTx()
		}
		l.next, l.una, l.dummyPos = a, a, a
		return
	}
	for i := 0; i < d; i++ {
		l.freeTx()
	}
	l.st.TxBytes = l.tx.span()
}

func (l *link) freeTx() {
	i := int(l.una) & (len(l.txh) - 1)
	l.tx.free(l.txh[i])
	l.una = l.una.Add(1)
}

// request queues a loss notice's sequences for retransmission by the
// stage; sequences no longer (or never) in the Tx buffer are counted and
// ignored.
func (l *link) request(first psn.Link, n int) {
	l.st.NoticesReceived++
	if d := first.Diff(l.una); d < 0 {
		// Already acknowledged: the receiver has lost its state (it
		// restarted) and waits for what it will never get. Say so.
		l.skipAsk = true
		n += d
		first = l.una
	}
	if over := first.Add(n).Diff(l.next); over > 0 {
		n -= over
	}
	if n <= 0 {
		l.st.NoticesStale++
		return
	}
	l.st.LossesNotified += uint64(n)
	if l.reqN == reqCap {
		l.st.RequestsDropped++
		return
	}
	l.reqs[(l.reqHead+l.reqN)%reqCap] = span{first, n}
	l.reqN++
}

// addHole records the missing run [first, first+n); wire says whether
// the loss happened on the link (counted in LossesDetected) or here (a
// full reordering buffer). With the table full the run is merged into
// the newest hole: runs come in sequence order, so the merged hole only
// also covers sequences that did arrive, which ackNoTimeout passes over
// and a notice names harmlessly.
func (l *link) addHole(first psn.Link, n int, wire bool) {
	if wire {
		l.st.LossesDetected += uint64(n)
	}
	if l.hN == holeCap {
		l.st.HolesMerged++
		last := &l.holes[(l.hHead+l.hN-1)%holeCap]
		last.n = first.Add(n).Diff(last.first)
		return
	}
	l.holes[(l.hHead+l.hN)%holeCap] = hole{first: first, n: n, fresh: true}
	l.hN++
	l.fresh++
}

// saw moves the highest sequence known sent: every sequence before
// missingEnd not yet seen is lost (§3.1: a gap in the sequence numbers),
// and newHigh is one past the highest known sent. A data frame s gives
// (s, s+1); a dummy at position d gives (d, d).
func (l *link) saw(missingEnd, newHigh psn.Link) {
	if d := missingEnd.Diff(l.high); d > 0 {
		l.addHole(l.high, d, true)
	}
	if e := newHigh.Diff(l.high); e > 0 {
		l.st.Expected += uint64(e)
		l.high = newHigh
	}
}
