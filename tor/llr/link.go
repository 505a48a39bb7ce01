package llr

import (
	"math/rand/v2"
	"sync/atomic"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
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
	done  int // copies of first already sent (frame memory ran out)
}

const (
	holeCap = 256 // holes tracked per link; more are merged into the newest
	reqCap  = 256 // retransmission requests waiting for the stage
	noEntry = ^uint32(0)
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

	// The retransmission budget (Config.RetxRate, RetxBurst) as a
	// virtual-time token bucket: tat is when it would be full again,
	// burst how far ahead of now it may run, both in ns at lrate bit/s;
	// waiting says serving notices stopped for want of it.
	tat, burst int64
	lrate      uint64
	waiting    bool

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
	ask  atomic.Uint32
	next psn.Link // sequence of the next protected frame (seqNo)
	una  psn.Link // oldest sequence not yet acknowledged
	tx   *arena
	txh  []uint32 // arena handle per sequence in [una, next), indexed seq & (len−1)
	// txf is, per sequence as txh, the frame itself where the Tx buffer
	// holds it (Config.TxFrames) rather than a copy in tx: tx then only
	// reckons its bytes, so that what fits is decided exactly as with
	// a copy. held counts those frames; mem is the worker's frame
	// memory (Stage.Wrap), where they stay until acknowledged.
	txf     []txFrame
	held    int
	mem     *dataplane.Mem
	reqs    [reqCap]span
	reqHead int
	reqN    int
	// wireNext is one past the highest sequence that left the port
	// (Port.Transmit): where the neighbour's receiver must start when it
	// takes up this side's session, stamped into every sync as it leaves.
	wireNext psn.Link
	// dummies: position of the last one and when it was queued
	dummyPos   psn.Link
	dummyAt    int64
	batchCall  uint64
	batchBytes int // bytes this batch added to the data queue (not yet queued)

	// Session (rocev2.ShimSync; see the package doc). epoch is this
	// side's, drawn when it starts; peerEpoch the neighbour's, 0 until
	// its first sync: the receiver has no session and passes numbered
	// frames through. established: the neighbour echoed epoch, so it
	// follows this side's numbering; until then the sender numbers
	// nothing and takes no ACK. syncAsk: a sync is owed now (an answer);
	// unestablished, one goes every syncEvery from syncAt, the interval
	// doubling to maxSyncInterval while nobody answers.
	epoch, peerEpoch  uint16
	established       bool
	syncAsk           bool
	syncAt, syncEvery int64

	// Receiver (§3.1, §3.3–§3.5, Algorithms 1 and 2).
	ackNo psn.Link // next sequence to forward; the cumulative ACK
	high  psn.Link // one past the highest sequence known sent
	got   []uint64 // arrival bitmap for [ackNo, ackNo+Window), bit seq & (Window−1)
	slot  []uint32 // Blocking: reorder-buffer handle per sequence, or noEntry
	rx    *arena   // Blocking: the reordering buffer
	holes [holeCap]hole
	hHead int
	hN    int
	fresh int // holes not yet stamped by the stage
	// stuckAt is where ackNo stood when the stage last looked, and
	// stuckSince since when it has stood there: ackNoTimeout counts from
	// then (§3.5, "ackNo does not advance"), not from the loss of a run
	// that only reaches the head of line later.
	stuckAt    psn.Link
	stuckSince int64
	// The head-of-line wait being measured (PortStats.HeadWait*):
	// waitFrom is the stage's first poll of this stand of ackNo that
	// found frames held (0: none yet), presentFrom its first that found
	// the head itself held; waitRetries NoticeRetries then, waitSkip
	// ackNoTimeout ended it, waitPeak the buffer's peak during it.
	waitFrom, presentFrom int64
	waitRetries           uint64
	waitSkip              bool
	waitPeak              int
	pending               bool // the neighbour's copy of ackNo is stale (pendingAck)
	// carried is AcksCarried when the stage last looked; ackAt when an
	// ACK last left or the ACK became stale.
	carried uint64
	ackAt   int64
	paused  bool // curr_pfc_state == pause
	pausAt  int64
	// wake holds, per deadline kind (timerDummy…), when its armed timer
	// fires, 0 when none is armed (Stage.wakeAt).
	wake [timerKinds]int64
}

func newLink(port uint16, cfg *Config, st *PortStats) *link {
	l := &link{port: port, cfg: cfg, st: st, peer: rocev2.MAC{0x01, 0x80, 0xc2, 0, 0, 0x0e}}
	l.epoch = uint16(rand.N(0xffff)) + 1 // nonzero: 0 echoes nobody
	l.syncAsk, l.syncEvery = true, cfg.NoticeRetry
	recs := min(cfg.TxBuffer/60+1, Window)
	n := 1
	for n < recs {
		n <<= 1
	}
	l.tx = newArena(cfg.TxBuffer, n)
	l.txh = make([]uint32, n)
	if cfg.TxFrames > 0 {
		l.txf = make([]txFrame, n)
	}
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
// a was received (or skipped), so its copy is freed (appendix A.2). An
// ACK outside [una, next] is of no session of this side's: ignored.
func (l *link) ack(a psn.Link) {
	d := a.Diff(l.una)
	if d <= 0 || a.Diff(l.next) > 0 {
		return
	}
	for i := 0; i < d; i++ {
		l.freeTx()
	}
	l.st.TxBytes = l.tx.span()
	l.st.TxHeld = l.held
}

func (l *link) freeTx() {
	i := int(l.una) & (len(l.txh) - 1)
	l.tx.freeOldest() // the record of una
	if l.txf != nil && l.txf[i].held {
		l.txf[i].held = false
		l.held--
		l.mem.Release(l.txf[i].addr)
	}
	l.una = l.una.Add(1)
}

// readHeld copies the frame the Tx buffer holds at index i into dst,
// with the ECN field it had when taken.
func (l *link) readHeld(i int, dst []byte) {
	t := &l.txf[i]
	copy(dst, l.mem.Bytes(t.addr, len(dst)))
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(dst, &m)
	switch {
	case m.ECN == t.ecn:
	case m.IPVersion == 4:
		rocev2.IPv4(dst[m.L3Off:]).SetECN(t.ecn)
	case m.IPVersion == 6:
		rocev2.IPv6(dst[m.L3Off:]).SetECN(t.ecn)
	}
}

// txFrame is a frame the Tx buffer holds in place (link.txf). The
// egress may mark it CE after it was taken (dataplane.Egress.mark),
// which a copy taken before it did not see: ecn is its ECN field as
// taken, for a retransmission to leave as the copy would have.
type txFrame struct {
	addr uint64
	ecn  uint8
	held bool
}

// request queues a loss notice's sequences for retransmission by the
// stage; sequences no longer (or never) in the Tx buffer are counted and
// ignored.
func (l *link) request(first psn.Link, n int) {
	l.st.NoticesReceived++
	if d := first.Diff(l.una); d < 0 {
		n += d // acknowledged meanwhile: a notice overtaken by its own answer
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
	l.reqs[(l.reqHead+l.reqN)%reqCap] = span{first: first, n: n}
	l.reqN++
}

// addHole records the missing run [first, first+n); wire says whether
// the loss happened on the link (counted in LossesDetected) or here (a
// full reordering buffer). With the table full the run is merged into
// the newest hole: runs come in sequence order, so the merged hole only
// also covers sequences that did arrive, which ackNoTimeout passes over
// and a notice names harmlessly. The merged hole is made fresh again:
// the stage names the new run in a notice and restarts its
// ackNoTimeout, which must not skip a run nobody asked for.
func (l *link) addHole(first psn.Link, n int, wire bool) {
	if wire {
		l.st.LossesDetected += uint64(n)
	}
	if l.hN == holeCap {
		l.st.HolesMerged++
		last := &l.holes[(l.hHead+l.hN-1)%holeCap]
		last.n = first.Add(n).Diff(last.first)
		if !last.fresh {
			last.fresh = true
			l.fresh++ // the newest hole: the last fresh ones include it
		}
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

// maxSyncInterval bounds the interval of the syncs of a side nobody
// answers (a neighbour without llr): one a second.
const maxSyncInterval = int64(1e9)

// sync takes a neighbour's sync (rocev2.ShimSync): a new epoch is a new
// session of the neighbour, whose numbering continues at next, so the
// receiver starts over there; an echo other than this side's epoch means
// the neighbour does not follow this side's numbering (it restarted), so
// the sender numbers nothing until it does. Either way, and whenever the
// neighbour asks (SyncNeed), this side owes it a sync.
func (l *link) sync(next psn.Link, flags uint8, echo, epoch uint16) {
	l.st.SyncsReceived++
	if epoch != l.peerEpoch {
		if l.peerEpoch != 0 {
			l.st.Resyncs++ // the neighbour restarted
		}
		l.peerEpoch = epoch
		l.resync(next)
		l.syncAsk, l.syncEvery = true, l.cfg.NoticeRetry
	}
	switch {
	case echo != l.epoch:
		l.established = false
		l.syncAsk = true
	case !l.established:
		l.established = true
		l.st.Sessions++
	}
	if flags&rocev2.SyncNeed != 0 {
		l.syncAsk = true
	}
}
