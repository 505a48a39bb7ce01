package fasr

import (
	"fmt"
	"reflect"

	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Config tunes the transport. The zero value gives the defaults; both
// ends of a connection should use the same Window.
type Config struct {
	// Window bounds the PSNs sent and not yet acknowledged; default 128,
	// gbn's, so that the two compare at the same window. Retransmissions
	// are not bounded by it.
	Window int
	// AckEvery makes the responder acknowledge after this many in-order
	// packets, besides every packet with AckReq; default 16. During a
	// recovery every packet is acknowledged (coalesced per batch), and a
	// packet that opens a gap at once.
	AckEvery int
	// RTO is the first retransmission timeout (default 16 ms, gbn's);
	// each expiry without progress doubles it, up to MaxRTO (default
	// 64×RTO). What an expiry resends depends on the last lost-cnt heard
	// (§III-B 2).
	RTO, MaxRTO int64
	// RetryLimit is how many expiries in a row, without progress, a QP
	// survives; the next completes its oldest work request with
	// nic.StatusRetryExceeded and puts the QP in the error state.
	// Default 7.
	RetryLimit int
	// BDP is the bandwidth-delay product in packets the shared pool is
	// sized for, when Units and Blocks are not given: §III-D sizes it for
	// a BDP of 500 packets at 2% loss (20 units, 70 blocks), and since
	// the out-of-order and lost packets of all QPs together are bounded
	// by the BDP (§III-A), the pool scales with it: Units =
	// ceil(20·BDP/500), Blocks = ceil(70·BDP/500). Default 500, the
	// seed's; give IRN's window the same number to compare the two
	// (nic.SRState).
	BDP int
	// Units is the number of level-1 SR state units the endpoint's QPs
	// share (§III-C 1): a QP side takes one while it recovers from a
	// loss. Default from BDP (20 at 500); at most 65535; -1 for none,
	// which leaves every recovery Go-Back-N.
	Units int
	// Blocks is the number of level-2 bitmap blocks of 16 bits the QPs
	// share (§III-C 2): a QP side on the slow path links as many as its
	// out-of-order span needs. Default from BDP (70 at 500, §III-D's
	// count of 10-bit blocks; the testbed's are 16 bits, §V-A). At most
	// 65535; -1 for none, which keeps recoveries on the fast path or
	// makes them fall back.
	Blocks int
}

// The seed's pool for its BDP (§III-D), which Config.BDP scales.
const (
	seedBDP    = 500
	seedUnits  = 20
	seedBlocks = 70
)

// Transport is FaSR for one endpoint. Create it with New and hand it to
// nic.Config; it belongs to that endpoint's worker. Not safe for
// concurrent use.
type Transport struct {
	cfg   Config
	qs    []qstate
	pool  pool
	stats Stats
	tab   uint32      // entries of each QP's SSN and SEND-end tables: a power of two ≥ Window+2
	ssn   [][]uint32  // per QP, by MSN: the SSN of each outstanding SEND (requester)
	rend  [][]sendEnd // per QP, by SSN: where each SEND placed ahead ends (responder)

	// One ACK's own SACKETH values, set just before Ctx.SendAck and read
	// by DecorateAck (an FNACK's flag and discarded PSN).
	ackFNACK bool
	ackPSN   psn.PSN
}

// qstate is a QP's context, both sides: 36 bytes. What only a recovering
// side needs lives in its SR state unit, to which tx and rx point.
type qstate struct {
	// requester
	rtxNext psn.PSN       // retransmission cursor: the PSNs in [rtxNext, rtxEnd) not known
	rtxEnd  psn.PSN       // to have arrived go before new data
	order   nic.SendOrder // SENDs numbered as they start
	tx      uint16        // SR state unit, or none
	retries uint8         // expiries since the last progress
	backoff uint8         // RTO doublings in force
	tflags  uint8

	// responder
	rflags   uint8
	rx       uint16  // SR state unit, or none
	rcvNxt   psn.PSN // RCV-NXT: the oldest PSN not received
	rssn     uint32  // SSN of the next SEND to complete: its receive is the oldest
	sinceAck uint16  // in-order packets since the last ACK
}

// sendEnd records the last packet of a SEND placed (8 bytes): its PSN,
// and the message's length plus one (0: nothing recorded). The receive
// completes when RCV-NXT passes that PSN.
type sendEnd struct {
	last psn.PSN
	n    uint32
}

// tflags.
const (
	tFNACK  = 1 << iota // an FNACK was acted on since the last new ACK
	tGBN                // recovering Go-Back-N (no unit) until the next new ACK
	tCause1             // what set the cursor: 0 a SACK, tCause1 a restart (RTO, FNACK), tCause2 a Go-Back-N NAK or fallback
	tCause2
	tReadGap // a READ was re-issued for Una; later responses are dropped until it answers
)

// rflags.
const (
	rNAKSent = 1 << iota // a Go-Back-N NAK is out for RCV-NXT
)

// Stats are the transport's counters, one per event. The worker's
// goroutine updates them; read them there (Transport.Stats) or after the
// worker stopped.
type Stats struct {
	// responder (receiver)
	Recoveries    uint64 // loss recoveries started with an SR state unit (an out-of-order packet after RCV-NXT)
	FastEntries   uint64 // recoveries on the fast path: started with lost-cnt 1, or back from the slow path when it fell to 1
	SlowEntries   uint64 // recoveries on the slow path: started with lost-cnt > 1, or switched from the fast path when it grew
	FNACKsSent    uint64 // packets between RCV-NXT and sack-high discarded and reported with an FNACK (§III-D)
	Duplicates    uint64 // packets before RCV-NXT or at sack-high dropped (nic_duplicate), acknowledged again
	LostOverflows uint64 // lost-cnt overflowed its 3 bits: frozen, flagged in every ACK until the recovery ends
	GBNFallbacks  uint64 // recoveries that went Go-Back-N (drop out-of-order packets, one NAK per RCV-NXT): no unit, no block, or an early READ
	ReadFallbacks uint64 // of those, for a READ request ahead of RCV-NXT: a READ executes in order

	// requester (sender)
	SACKs           uint64 // ACKs with a SACK PSN past the cumulative ACK
	LostGaps        uint64 // SACK discontinuities judged data loss (lost-cnt grew or overflowed): resent
	SACKLossGaps    uint64 // SACK discontinuities judged SACK loss (lost-cnt did not grow): not resent
	FNACKsRecv      uint64 // FNACKs received
	FNACKRestarts   uint64 // FNACKs acted on: retransmission restarted from UNACK, once per new ACK
	GBNRewinds      uint64 // Go-Back-N NAKs from a responder that fell back, acted on
	TxGBNFallbacks  uint64 // recoveries without a unit or a bitmap: Go-Back-N from UNACK
	Timeouts0       uint64 // expiries with lost-cnt 0: resend from UNACK, Go-Back-N
	Timeouts1       uint64 // expiries with lost-cnt 1: resend UNACK only
	TimeoutsN       uint64 // expiries with lost-cnt > 1 or overflowed: UNACK and the bitmap's zeros up to sack-high
	SACKRetransmits uint64 // packets resent for a SACK (§III-B 2)
	RestartResends  uint64 // packets resent after an expiry or an FNACK
	GBNResends      uint64 // packets resent Go-Back-N

	// both sides: the SR path (Fig. 9(b)) and the shared pool (§III-C)
	FastOps         uint64 // SR operations on the fast path: an out-of-order packet recorded, RCV-NXT updated, a SACK or an expiry handled without the bitmap
	SlowOps         uint64 // the same on the slow path, with the bitmap
	Compressions    uint64 // slow-path bitmaps started with a compression-cnt (bitmap acceleration, §III-D)
	UnitsExhausted  uint64 // SR state units asked for when none was free
	BlocksExhausted uint64 // bitmap blocks asked for when too few were free
	PeakUnits       uint64 // most units in use at once
	PeakBlocks      uint64 // most blocks in use at once
}

// FastPathRatio returns the share of SR operations done on the fast path
// (the seed's Fig. 9(b)); 0 when there was none.
func (s Stats) FastPathRatio() float64 {
	if s.FastOps+s.SlowOps == 0 {
		return 0
	}
	return float64(s.FastOps) / float64(s.FastOps+s.SlowOps)
}

// New returns a transport; it validates cfg and fills in defaults.
func New(cfg Config) (*Transport, error) {
	if cfg.Window == 0 {
		cfg.Window = 128
	}
	if cfg.AckEvery == 0 {
		cfg.AckEvery = 16
	}
	if cfg.RTO == 0 {
		cfg.RTO = 16e6
	}
	if cfg.MaxRTO == 0 {
		cfg.MaxRTO = 64 * cfg.RTO
	}
	if cfg.RetryLimit == 0 {
		cfg.RetryLimit = 7
	}
	if cfg.BDP == 0 {
		cfg.BDP = seedBDP
	}
	if cfg.BDP < 1 || cfg.BDP > 1<<20 {
		return nil, fmt.Errorf("fasr: BDP %d packets, want 1 to %d", cfg.BDP, 1<<20)
	}
	switch cfg.Units {
	case 0:
		cfg.Units = (seedUnits*cfg.BDP + seedBDP - 1) / seedBDP
	case -1:
		cfg.Units = 0
	}
	switch cfg.Blocks {
	case 0:
		cfg.Blocks = (seedBlocks*cfg.BDP + seedBDP - 1) / seedBDP
	case -1:
		cfg.Blocks = 0
	}
	switch {
	case cfg.Window < 1 || cfg.Window > 1<<16:
		return nil, fmt.Errorf("fasr: window %d, want 1 to %d", cfg.Window, 1<<16)
	case cfg.AckEvery < 1 || cfg.AckEvery > 0xffff:
		return nil, fmt.Errorf("fasr: ack every %d packets, want 1 to 65535", cfg.AckEvery)
	case cfg.RTO < 1 || cfg.MaxRTO < cfg.RTO:
		return nil, fmt.Errorf("fasr: RTO %d ns, max %d ns: want 0 < RTO ≤ max", cfg.RTO, cfg.MaxRTO)
	case cfg.RetryLimit < 0 || cfg.RetryLimit > 255:
		return nil, fmt.Errorf("fasr: retry limit %d, want 0 to 255", cfg.RetryLimit)
	case cfg.Units < 0 || cfg.Units > maxPool:
		return nil, fmt.Errorf("fasr: %d SR state units, want 0 to %d", cfg.Units, maxPool)
	case cfg.Blocks < 0 || cfg.Blocks > maxPool:
		return nil, fmt.Errorf("fasr: %d bitmap blocks, want 0 to %d", cfg.Blocks, maxPool)
	}
	tab := uint32(64)
	for tab < uint32(cfg.Window)+2 {
		tab <<= 1
	}
	return &Transport{cfg: cfg, pool: newPool(cfg.Units, cfg.Blocks), tab: tab}, nil
}

// Name implements nic.Transport.
func (t *Transport) Name() string { return "fasr" }

// Init implements nic.Transport.
func (t *Transport) Init(n int) {
	t.qs = make([]qstate, n)
	for i := range t.qs {
		t.qs[i].tx, t.qs[i].rx = none, none
	}
	t.ssn = make([][]uint32, n)
	t.rend = make([][]sendEnd, n)
}

// StateBytes implements nic.Transport: the per-QP context, both sides,
// with the two SR state pointers. The shared pool is SharedBytes.
func (t *Transport) StateBytes() int { return int(reflect.TypeFor[qstate]().Size()) }

// QueueBytes implements nic.HostMemory: the requester's SSN of each
// outstanding message and the responder's record of each SEND placed
// ahead, which a NIC keeps with the send and receive WQEs in host memory
// (as nic/irn does).
func (t *Transport) QueueBytes() int {
	return int(t.tab) * int(reflect.TypeFor[uint32]().Size()+reflect.TypeFor[sendEnd]().Size())
}

// SharedBytes returns the bytes of the endpoint's shared SR pool, the
// same whatever the number of QPs: the units, the bitmap blocks, the
// pointers linking them, and both availability bitmaps.
func (t *Transport) SharedBytes() int { return t.pool.bytes() }

// SRState implements nic.Transport: per QP, the two SR state pointers
// (the requester's and the responder's unit, §III-C 1: the seed's "SR
// state pointer") and the end of the retransmission cursor, which gbn's
// single send pointer does without (rtxNext is that pointer's
// counterpart; rocetor keeps the cursor in the QP context, not in the
// unit: doc.go, "Deviations"); shared, the pool (SharedBytes), sized for
// Config.BDP. The rest of qstate is gbn's or SEND numbering every
// out-of-order placer keeps (order, rssn).
func (t *Transport) SRState() nic.SRState {
	return nic.SRState{PerQP: nic.FieldBytes(reflect.TypeFor[qstate](), srFields...), Shared: t.SharedBytes(), BDP: t.cfg.BDP}
}

// srFields are qstate's SR state (SRState).
var srFields = []string{"tx", "rx", "rtxEnd"}

// Config returns the configuration in force, defaults filled in.
func (t *Transport) Config() Config { return t.cfg }

// Stats returns the counters. Call it from the worker's goroutine or
// after the worker stopped.
func (t *Transport) Stats() Stats {
	s := t.stats
	s.Compressions = t.pool.compressions
	s.PeakUnits, s.PeakBlocks = uint64(t.pool.peakUnits), uint64(t.pool.peakBlocks)
	return s
}

// InUse returns the units and blocks in use now.
func (t *Transport) InUse() (units, blocks int) { return t.pool.nUnits, t.pool.nBlocks }

// Classifier implements nic.Classifying: FaSR's ACKs carry a SACKETH,
// its requests the OOO layout.
func (t *Transport) Classifier(c rocev2.Classifier) rocev2.Classifier {
	c.SACK, c.OOO = true, true
	return c
}

// Open implements nic.Transport.
func (t *Transport) Open(q *nic.QP) {
	i := q.Index()
	s := &t.qs[i]
	t.release(s) // a slot used before returns what it held
	t.qs[i] = qstate{rtxNext: q.Una(), rtxEnd: q.Una(), tx: none, rx: none, rcvNxt: q.EPSN()}
	if t.ssn[i] == nil {
		t.ssn[i], t.rend[i] = make([]uint32, t.tab), make([]sendEnd, t.tab)
	}
	clear(t.ssn[i])
	clear(t.rend[i])
}

// release returns a QP's SR state units to the pool.
func (t *Transport) release(s *qstate) {
	if s.tx != none {
		t.pool.freeUnit(s.tx)
		s.tx = none
	}
	if s.rx != none {
		t.pool.freeUnit(s.rx)
		s.rx = none
	}
}

// fail puts q in the error state and returns its units.
func (t *Transport) fail(c *nic.Ctx, q *nic.QP, st nic.Status) {
	t.release(&t.qs[q.Index()])
	c.Fail(q, st)
}

// rto returns the timeout in force for s.
func (t *Transport) rto(s *qstate) int64 {
	return nic.Backoff(t.cfg.RTO, s.backoff, t.cfg.MaxRTO)
}

// Decorate implements nic.Decorator: every request uses the OOO layout
// (§IV-D): Build puts a RETH with the packet's own address in every
// WRITE packet, and a SEND packet carries its SSN — its number among the
// QP's SENDs, assigned when the message starts — and its index in the
// message in a SETH.
func (t *Transport) Decorate(q *nic.QP, r *nic.Request, sp *rocev2.Spec) {
	i := q.Index()
	s := &t.qs[i]
	s.order.Decorate(t.ssn[i], r, sp)
}

// DecorateAck implements nic.AckDecorator: the cumulative ACK is RCV-NXT
// minus one (the AETH MSN is 0: FaSR does not count messages, and its
// requester completes by PSN); the SACKETH carries sack-high (outside a
// recovery, the cumulative ACK again), the lost-cnt and its overflow
// flag, or, for an FNACK, the flag and the discarded PSN.
func (t *Transport) DecorateAck(q *nic.QP, sp *rocev2.Spec) {
	s := &t.qs[q.Index()]
	if sp.Syndrome.IsACK() {
		sp.PSN = s.rcvNxt.Add(-1)
	}
	sp.AckMSN = 0 // not kept: the requester completes by PSN
	sp.SACKPSN, sp.SACKFlags, sp.LostCnt = s.rcvNxt.Add(-1), 0, 0
	if !sp.Syndrome.IsACK() && sp.Syndrome != rocev2.NAKSyndrome(rocev2.NakPSNSeqError) {
		return // a refusal (RNR, fatal): the SACKETH carries RCV-NXT−1 alone
	}
	if s.rx != none {
		u := &t.pool.units[s.rx]
		sp.SACKPSN, sp.LostCnt = u.sackHigh, u.lost
		if u.flags&uOverflow != 0 {
			sp.SACKFlags |= rocev2.SACKLostOverflow
		}
		if !t.ackFNACK {
			u.reported = u.sackHigh
		}
	}
	if t.ackFNACK {
		sp.SACKPSN = t.ackPSN
		sp.SACKFlags |= rocev2.SACKFNACK
	}
}

// Next implements nic.Transport: the retransmission cursor first —
// skipping what the SR state knows arrived — then new data within the
// window.
func (t *Transport) Next(c *nic.Ctx, q *nic.QP) bool {
	s := &t.qs[q.Index()]
	una, end := q.Una(), q.SndMax()
	for s.rtxNext.Less(s.rtxEnd) {
		x := s.rtxNext
		if x.Less(una) {
			s.rtxNext = una
			continue
		}
		if !x.Less(end) {
			s.rtxNext = s.rtxEnd
			break
		}
		if s.tx != none {
			if y := t.skip(&t.pool.units[s.tx], una, x); y != x {
				s.rtxNext = y
				continue
			}
		}
		n, ok := c.SendRequest(q, x)
		if !ok {
			return false
		}
		s.rtxNext = x.Add(n)
		switch s.tflags & (tCause1 | tCause2) {
		case 0:
			t.stats.SACKRetransmits++
		case tCause1:
			t.stats.RestartResends++
		default:
			t.stats.GBNResends++
		}
		t.arm(c, q, s)
		return true
	}
	if end.Diff(una) >= t.cfg.Window {
		return false
	}
	if _, ok := c.SendRequest(q, end); !ok {
		return false
	}
	t.arm(c, q, s)
	return true
}

func (t *Transport) arm(c *nic.Ctx, q *nic.QP, s *qstate) {
	if !q.TimerArmed() {
		c.SetTimer(q, c.Now+t.rto(s))
	}
}

// skip returns the first PSN from x on (x ≥ UNACK) that u does not know
// arrived: on the fast path everything in (UNACK, sack-high] did; on the
// slow path the bitmap says.
func (t *Transport) skip(u *unit, una, x psn.PSN) psn.PSN {
	if x == una || !x.LessEq(u.sackHigh) {
		return x
	}
	if u.slow() {
		return t.pool.nextMissing(u, x)
	}
	if u.lostOver() == 1 {
		return u.sackHigh.Add(1)
	}
	return x
}

// rewind points the retransmission cursor at [from, to), for cause.
func (t *Transport) rewind(s *qstate, from, to psn.PSN, cause uint8) {
	s.rtxNext, s.rtxEnd = from, to
	s.tflags = s.tflags&^(tCause1|tCause2) | cause
}

// progress resets the retry state after Una moved and restarts or stops
// the timer.
func (t *Transport) progress(c *nic.Ctx, q *nic.QP, s *qstate) {
	s.retries, s.backoff = 0, 0
	s.tflags &^= tFNACK | tGBN
	if q.Outstanding() {
		c.SetTimer(q, c.Now+t.rto(s))
	} else {
		c.StopTimer(q)
	}
}

// Response implements nic.Transport: the requester side. An ACK or a
// Go-Back-N NAK acknowledges cumulatively, then its SACKETH drives the
// selective retransmissions (§III-B 2).
func (t *Transport) Response(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	s := &t.qs[q.Index()]
	if p.Op != rocev2.RCAck {
		t.readResponse(c, q, s, p)
		return
	}
	syn := p.Syndrome
	switch {
	case syn.IsACK():
		if !p.PSN.Less(q.SndMax()) || p.PSN.Less(q.Una().Add(-1)) {
			c.Drop(p, nic.ReasonStale)
			return
		}
		t.acked(c, q, s, p.PSN)
		t.sack(c, q, s, p, false)
	case syn.IsNAK() && syn.Value() == rocev2.NakPSNSeqError:
		n := p.PSN
		if q.SndMax().Less(n) || n.Less(q.Una()) {
			c.Drop(p, nic.ReasonStale)
			return
		}
		t.acked(c, q, s, n.Add(-1))
		t.sack(c, q, s, p, true)
	case syn.IsNAK() || syn.IsRNR():
		// A refusal: RNR (not retried: the SEND fails) or fatal. Its PSN
		// is the refused request's; the SACKETH carries RCV-NXT−1
		// (DecorateAck), and only that is acknowledged: the PSNs between
		// may still be missing, and are resent from UNACK.
		if p.PSN.Less(q.Una()) || !p.PSN.Less(q.SndMax()) {
			c.Drop(p, nic.ReasonStale)
			return
		}
		cum := q.Una().Add(-1)
		if p.HasSACK {
			cum = p.SACK
		}
		if c.Refuse(q, syn, cum, p.PSN) {
			t.release(s)
			return
		}
		if q.Una().Less(p.PSN) {
			t.rewind(s, q.Una(), p.PSN, tCause2)
		}
		c.Wake(q)
	default:
		c.Drop(p, nic.ReasonStale)
	}
}

// readResponse handles a READ response as gbn does (rxe's req_retry):
// its PSN acknowledges every request before it; one past Una shows a
// lost response, and the READ is re-issued from Una, once per gap.
func (t *Transport) readResponse(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt) {
	x := p.PSN
	if !x.Less(q.SndMax()) || x.Less(q.Una().Add(-1)) {
		c.Drop(p, nic.ReasonStale)
		return
	}
	t.acked(c, q, s, x.Add(-1))
	una := q.Una()
	switch {
	case x.Less(una):
		c.Drop(p, nic.ReasonDuplicate)
	case una.Less(x):
		if s.tflags&tReadGap == 0 {
			s.tflags |= tReadGap
			t.rewind(s, una, una.Add(1), tCause2)
			c.Wake(q)
		}
		c.Drop(p, nic.ReasonOutOfOrder)
	default:
		if c.ReadResponse(q, p) != nic.StatusOK {
			c.Drop(p, nic.ReasonStale)
			return
		}
		s.tflags &^= tReadGap
		if q.Err() {
			t.release(s) // a refusal came due (nic.Ctx.Refuse)
			return
		}
		t.progress(c, q, s)
		t.follow(q, s)
	}
}

// acked applies cumulative ACK a: completions, progress, and the SR
// state's head follows UNACK; past sack-high the recovery is over.
func (t *Transport) acked(c *nic.Ctx, q *nic.QP, s *qstate, a psn.PSN) {
	if c.Ack(q, a) {
		t.progress(c, q, s)
		t.follow(q, s)
	}
	if q.Err() {
		t.release(s) // a refusal came due (nic.Ctx.Refuse)
	}
}

// follow moves the requester's SR state after Una moved: the bitmap's
// head follows it, and past sack-high the recovery is over.
func (t *Transport) follow(q *nic.QP, s *qstate) {
	if s.tx == none {
		return
	}
	u := &t.pool.units[s.tx]
	una := q.Una()
	if u.sackHigh.Less(una) {
		t.pool.freeUnit(s.tx)
		s.tx = none
		return
	}
	if u.slow() {
		t.pool.release(u, una)
	}
}

// sack applies the SACKETH of an ACK (or of a Go-Back-N NAK, nak) after
// its cumulative part: §III-B 2's rules.
func (t *Transport) sack(c *nic.Ctx, q *nic.QP, s *qstate, p *nic.Pkt, nak bool) {
	una := q.Una()
	if p.SACKFlags&rocev2.SACKFNACK != 0 {
		// A retransmission beyond RCV-NXT reached the responder, so the
		// one of RCV-NXT was lost: restart from UNACK, as an early
		// expiry would, once until a new ACK (§III-D).
		t.stats.FNACKsRecv++
		if s.tflags&tFNACK == 0 && q.Outstanding() {
			s.tflags |= tFNACK
			t.stats.FNACKRestarts++
			t.restart(s, q)
			c.Wake(q)
		}
		return
	}
	if nak {
		// The responder fell back to Go-Back-N: resend everything from
		// its RCV-NXT, except what the SR state knows arrived (the
		// responder keeps what it recorded).
		t.stats.GBNRewinds++
		t.rewind(s, una, q.SndMax(), tCause2)
	}
	sh := p.SACK
	if !p.HasSACK || !una.Add(-1).Less(sh) || !sh.Less(q.SndMax()) {
		return // nothing selective: sack-high is the cumulative ACK
	}
	t.stats.SACKs++
	if s.tflags&tGBN != 0 {
		return
	}
	lost, ovf := int(p.LostCnt), p.SACKFlags&rocev2.SACKLostOverflow != 0
	if ovf {
		lost = lostMax + 1
	}
	if s.tx == none {
		if s.tx = t.pool.allocUnit(); s.tx == none {
			t.stats.UnitsExhausted++
			t.txFallback(c, q, s)
			return
		}
		u := &t.pool.units[s.tx]
		u.sackHigh = una.Add(-1) // nothing known beyond the cumulative ACK
	}
	u := &t.pool.units[s.tx]
	if lost > 1 && !u.slow() {
		// To the slow path: record what the fast path knew — (UNACK,
		// sack-high] arrived — compressed if long.
		if !t.pool.startBitmap(u, una, u.lostOver() == 1) {
			t.stats.BlocksExhausted++
			t.txFallback(c, q, s)
			return
		}
	}
	if gap := sh.Diff(u.sackHigh) - 1; gap >= 0 {
		if gap > 0 {
			from := u.sackHigh.Add(1)
			if lost > u.lostOver() || ovf {
				// Data loss: the gap's packets are resent (on entering
				// the recovery, [UNACK, SACK) whatever lost-cnt says).
				t.stats.LostGaps++
				if !s.rtxNext.Less(s.rtxEnd) {
					t.rewind(s, from, sh, 0)
				} else if s.rtxEnd.Less(sh) {
					s.rtxEnd = sh
				}
			} else {
				// SACK loss: lost-cnt did not grow, so they arrived.
				t.stats.SACKLossGaps++
				if u.slow() && !t.pool.setRange(u, from, sh.Add(-1)) {
					t.stats.BlocksExhausted++
					t.txFallback(c, q, s)
					return
				}
			}
		}
		if u.slow() && !t.pool.set(u, sh) {
			t.stats.BlocksExhausted++
			t.txFallback(c, q, s)
			return
		}
		u.sackHigh = sh
	}
	if u.slow() {
		t.stats.SlowOps++
	} else {
		t.stats.FastOps++
	}
	u.lost = uint8(min(lost, lostMax))
	if ovf {
		u.flags |= uOverflow
	} else {
		u.flags &^= uOverflow
	}
	if lost == 1 && u.slow() {
		t.pool.freeBitmap(u) // back to the fast path: only UNACK is missing
	}
	c.Wake(q)
}

// txFallback gives up the SR state for this recovery: Go-Back-N from
// UNACK until a new ACK.
func (t *Transport) txFallback(c *nic.Ctx, q *nic.QP, s *qstate) {
	t.stats.TxGBNFallbacks++
	if s.tx != none {
		t.pool.freeUnit(s.tx)
		s.tx = none
	}
	s.tflags |= tGBN
	t.rewind(s, q.Una(), q.SndMax(), tCause2)
	c.Wake(q)
}

// restart resends as an expiry does, by the last lost-cnt heard
// (§III-B 2): 0 (no recovery known) — everything from UNACK, Go-Back-N;
// 1 — UNACK only; more, or overflowed — UNACK and the bitmap's zeros up
// to sack-high.
func (t *Transport) restart(s *qstate, q *nic.QP) {
	una := q.Una()
	lost := 0
	if s.tx != none {
		lost = t.pool.units[s.tx].lostOver()
	}
	switch {
	case lost == 0:
		t.rewind(s, una, q.SndMax(), tCause1)
	case lost == 1:
		t.rewind(s, una, una.Add(1), tCause1)
		t.stats.FastOps++
	default:
		t.rewind(s, una, t.pool.units[s.tx].sackHigh.Add(1), tCause1)
		t.stats.SlowOps++
	}
}

// Timeout implements nic.Transport: resend by lost-cnt with a doubled
// timeout, or give up after RetryLimit expiries without progress.
func (t *Transport) Timeout(c *nic.Ctx, q *nic.QP) {
	s := &t.qs[q.Index()]
	if !q.Outstanding() {
		return
	}
	if int(s.retries) >= t.cfg.RetryLimit {
		t.fail(c, q, nic.StatusRetryExceeded)
		return
	}
	s.retries++
	if t.rto(s) < t.cfg.MaxRTO {
		s.backoff++
	}
	s.tflags &^= tReadGap
	lost := 0
	if s.tx != none {
		lost = t.pool.units[s.tx].lostOver()
	}
	switch {
	case lost == 0:
		t.stats.Timeouts0++
	case lost == 1:
		t.stats.Timeouts1++
	default:
		t.stats.TimeoutsN++
	}
	t.restart(s, q)
	c.SetTimer(q, c.Now+t.rto(s))
}

var (
	_ nic.Transport    = (*Transport)(nil)
	_ nic.Decorator    = (*Transport)(nil)
	_ nic.AckDecorator = (*Transport)(nil)
	_ nic.Classifying  = (*Transport)(nil)
	_ nic.HostMemory   = (*Transport)(nil)
)
