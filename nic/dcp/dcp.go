package dcp

import (
	"fmt"
	"reflect"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Config tunes the transport. The zero value gives the defaults; both
// ends of a connection must use the same Messages.
type Config struct {
	// Messages is how many messages a QP keeps outstanding: the sender
	// starts message m only while m < unaMSN+Messages, and the receiver
	// tracks that many, one counter each. Default 8, the outstanding
	// messages per QP of NCCL that §4.5 sizes the tracking for; a power
	// of two from 1 to 256.
	Messages int
	// RetransQ is the capacity of each QP's retransmission queue, in
	// (MSN, PSN) entries of 8 bytes (default 256, 2 KiB per QP). A
	// returned header-only packet that finds it full is dropped and
	// counted (Stats.RetransQOverflows): the coarse timeout recovers
	// that packet.
	RetransQ int
	// RTO is the coarse timeout of the oldest unacknowledged message
	// (default 64 ms, about ConnectX's 67 ms: header-only retransmission
	// recovers trimmed packets within a round trip, so this timer only
	// has to catch what the lossless control plane lost; firing early
	// resends a whole message. The oldest message's last packet can wait
	// behind up to Messages−1 later ones in the switches' queues: on a
	// loaded two-core testbed 16 ms, gbn's timeout, fired 12 times in a
	// 50 MiB run with five packets trimmed (docs/experiments.md)). Each
	// expiry without progress doubles it, up to MaxRTO (default 64×RTO).
	RTO, MaxRTO int64
	// RetryLimit is how many expiries in a row, without progress, a QP
	// survives; the next completes its oldest work request with
	// nic.StatusRetryExceeded and puts the QP in the error state.
	// Default 7, the largest IBA retry_cnt; at most 255 (sRetryNo is a
	// byte).
	RetryLimit int
	// Window caps each QP's data packets in flight, retransmissions
	// included: the available window (awin) the seed's QP scheduler
	// sends from, new data (min(round_quota, awin) bytes) and RetransQ
	// entries (min(16, len, awin/MTU)) alike (seed 002 §4.3). 0, the
	// default, is no cap: nothing but the congestion control paces a
	// QP. A packet is in flight from its transmission until the sender
	// learns it left the network — its header-only packet came back, or
	// the receiver counted its arrival — and a coarse timeout empties
	// the window (what it held has long left). DCP acknowledges whole
	// messages (§4.5), which would hold a message larger than the window
	// for ever, so with a window the receiver also acknowledges each
	// batch of arrivals, carrying its count of the QP's data packets in
	// the AETH's MSN field (otherwise a copy of eMSN, which the DCP
	// header carries). Both ends must enable it.
	Window int
}

// Drop reasons of the transport, counted by the endpoint's worker (and,
// the packets being header-only, in its Snapshot.HODrops as well).
var (
	// ReasonRetransQFull: a returned header-only packet found its QP's
	// RetransQ full (Stats.RetransQOverflows); the coarse timeout
	// recovers the packet it names.
	ReasonRetransQFull = dataplane.NewReason("dcp_retransq_full")
	// ReasonNotReturned: the receiver could not return a header-only
	// packet to its sender — no free frame, or its control queue full
	// (Stats.HONotReturned); the coarse timeout recovers the packet.
	ReasonNotReturned = dataplane.NewReason("dcp_ho_not_returned")
)

// Transport is DCP's RNIC side for one endpoint. Create it with New and
// hand it to nic.Config; it belongs to that endpoint's worker.
type Transport struct {
	cfg   Config
	w     uint32      // Messages
	st    []qstate    // per QP
	tx    []txMsg     // per QP, w each: the sender's outstanding messages by MSN mod w
	rx    []rxMsg     // per QP, w each: the receiver's tracked messages by MSN mod w
	rtq   [][]rtEntry // per QP: RetransQ, allocated when the QP opens
	win   []wstate    // per QP, with a Window only
	stats Stats
}

// wstate is a QP's window state (Config.Window), both sides: 12 bytes.
type wstate struct {
	fly   uint32  // requester: packets sent and not known to have left the network
	heard psn.PSN // requester: the latest arrival count the responder reported
	rcvd  psn.PSN // responder: data packets of the QP that arrived, mod 2^24
}

// qstate is a QP's scalar state, both sides: 44 bytes.
type qstate struct {
	// requester
	send    psn.PSN // next new PSN to send
	end     psn.PSN // one past the newest started message: send == end starts a new one
	una     psn.PSN // unaMSN, the oldest unacknowledged message (MSNs are 24-bit serial numbers)
	next    psn.PSN // MSN of the next message to start
	ssn     uint32  // SSN of the next SEND to start
	rsNext  psn.PSN // timeout round: next PSN of the unaMSN-th message to resend
	rsLeft  uint32  // and how many remain
	rtHead  uint16  // RetransQ: oldest entry
	rtLen   uint16  // RetransQ: entries
	sRetry  uint8   // sRetryNo: timeouts of the unaMSN-th message
	backoff uint8   // RTO doublings in force

	// responder
	rRetry uint8   // rRetryNo: the retry round the eMSN-th message is counted in
	emsn   psn.PSN // eMSN: every message before it completed
	rssn   uint32  // SSN of the next SEND to complete: its receive is the oldest
}

// txMsg is what the sender keeps of a started message (12 bytes): where
// it starts and ends in PSNs, to resend it whole on a timeout and to turn
// an eMSN into the PSN the framework completes up to, and its SSN, which
// every packet of a SEND carries again when retransmitted.
type txMsg struct {
	first psn.PSN
	n     uint32
	ssn   uint32
}

// rxMsg is the receiver's tracking state of one message (24 bytes):
// the packet counter of §4.5, with the message's size (from the RETH of
// a WRITE packet, from the last packet of a SEND), its first PSN (from
// its first packet, its last packet and size, or its predecessor), and
// the duplicate check: the sums of the counted PSNs and of their squares.
type rxMsg struct {
	first psn.PSN
	n     uint32 // packets; 0 while unknown
	cnt   uint32 // packets counted in the current retry round
	s1    uint32 // Σ PSN mod 2^32 over the counted packets
	s2    uint32 // Σ PSN² mod 2^32
	tail  uint16 // payload bytes of a SEND's last packet
	flags uint8
}

// rxMsg flags.
const (
	fFirst    = 1 << iota // first is known
	fDone                 // mcf: every packet arrived, once
	fSend                 // Cf: a SEND, whose receive completes with the message
	fPoisoned             // the count went wrong (a duplicate): wait for a retry round
)

// rtEntry is a RetransQ entry (8 bytes): the PSN a returned header-only
// packet named and its MSN, with the retry round it was sent in in the
// top byte.
type rtEntry struct {
	psn psn.PSN
	mr  uint32 // MSN | RetryNo<<24
}

func (e rtEntry) msn() psn.PSN { return psn.New(e.mr) }
func (e rtEntry) retry() uint8 { return uint8(e.mr >> 24) }

// maxPackets bounds a message's packets: nic.MaxMessage at the smallest
// MTU, a quarter of the PSN space.
const maxPackets = 1 << 22

// Stats are the transport's counters, one per event. The worker's
// goroutine updates them; read them there (Transport.Stats) or after the
// worker stopped.
type Stats struct {
	// receiver
	HOBounced     uint64 // header-only packets returned to their sender, swapped (§4.1 ②)
	HONotReturned uint64 // header-only packets the receiver could not return (no frame, control queue full), dropped (dcp_ho_not_returned)
	Unanchored    uint64 // SEND packets returned like a header-only packet: their message's first PSN, hence their offset, was not known yet
	Duplicates    uint64 // data packets of a completed message or an older retry round, dropped (nic_duplicate)
	Recounts      uint64 // retry rounds adopted: a packet of the eMSN-th message with sRetryNo > rRetryNo reset its counter (§4.5)
	Poisoned      uint64 // messages whose counter reached their size with a wrong PSN sum, or passed it: a duplicate was counted; they wait for a retry round
	Deferred      uint64 // messages complete before an earlier one, whose completion waited for eMSN (§4.5)

	// sender
	HOReturned          uint64 // returned header-only packets received
	HORetransmits       uint64 // packets retransmitted from RetransQ entries (§4.3)
	HOStale             uint64 // returned header-only packets or RetransQ entries for a completed message or an older retry round, ignored
	HODuplicates        uint64 // returned header-only packets already in the RetransQ, ignored
	RetransQOverflows   uint64 // returned header-only packets dropped because the RetransQ was full (dcp_retransq_full; the timeout recovers them)
	FallbackTimeouts    uint64 // coarse timeouts: sRetryNo incremented and the unaMSN-th message resent (§4.5)
	FallbackRetransmits uint64 // packets resent by those timeouts
	WindowFull          uint64 // times a QP with work found its window (Config.Window) full: it waited for credit
}

// New returns a transport; it validates cfg and fills in defaults.
func New(cfg Config) (*Transport, error) {
	if cfg.Messages == 0 {
		cfg.Messages = 8
	}
	if cfg.RetransQ == 0 {
		cfg.RetransQ = 256
	}
	if cfg.RTO == 0 {
		cfg.RTO = 64e6
	}
	if cfg.MaxRTO == 0 {
		cfg.MaxRTO = 64 * cfg.RTO
	}
	if cfg.RetryLimit == 0 {
		cfg.RetryLimit = 7
	}
	switch {
	case cfg.Messages < 1 || cfg.Messages > 256 || cfg.Messages&(cfg.Messages-1) != 0:
		return nil, fmt.Errorf("dcp: %d messages per QP, want a power of two from 1 to 256", cfg.Messages)
	case cfg.RetransQ < 1 || cfg.RetransQ > 0xffff:
		return nil, fmt.Errorf("dcp: RetransQ of %d entries, want 1 to 65535", cfg.RetransQ)
	case cfg.RTO < 1 || cfg.MaxRTO < cfg.RTO:
		return nil, fmt.Errorf("dcp: RTO %d ns, max %d ns: want 0 < RTO ≤ max", cfg.RTO, cfg.MaxRTO)
	case cfg.RetryLimit < 0 || cfg.RetryLimit > 255:
		return nil, fmt.Errorf("dcp: retry limit %d, want 0 to 255", cfg.RetryLimit)
	case cfg.Window < 0 || cfg.Window > maxPackets:
		return nil, fmt.Errorf("dcp: window of %d packets, want 0 (none) to %d", cfg.Window, maxPackets)
	}
	return &Transport{cfg: cfg, w: uint32(cfg.Messages)}, nil
}

// Name implements nic.Transport.
func (t *Transport) Name() string { return "dcp" }

// Init implements nic.Transport.
func (t *Transport) Init(n int) {
	t.st = make([]qstate, n)
	t.tx = make([]txMsg, n*int(t.w))
	t.rx = make([]rxMsg, n*int(t.w))
	t.rtq = make([][]rtEntry, n)
	if t.cfg.Window > 0 {
		t.win = make([]wstate, n)
	}
}

// StateBytes implements nic.Transport: the QP context — scalars, the
// sender's and the receiver's per-message state, the RetransQ's
// descriptor (its entries are QueueBytes), and the window's counters
// when there is a window.
func (t *Transport) StateBytes() int {
	n := int(reflect.TypeFor[qstate]().Size()) + int(t.w)*int(reflect.TypeFor[txMsg]().Size()+reflect.TypeFor[rxMsg]().Size()) +
		int(reflect.TypeFor[[]rtEntry]().Size())
	if t.cfg.Window > 0 {
		n += int(reflect.TypeFor[wstate]().Size())
	}
	return n
}

// QueueBytes implements nic.HostMemory: the RetransQ, which DCP keeps in
// host memory (§4.3).
func (t *Transport) QueueBytes() int { return t.cfg.RetransQ * int(reflect.TypeFor[rtEntry]().Size()) }

// SRState implements nic.Transport: per QP, the receiver's per-message
// tracking (TrackingBytes: the §4.5 counter, flags, the duplicate check's
// sums, and the packet count, first PSN and SEND length it needs to know
// a message complete) and what HO-based retransmission adds over gbn's
// state — the RetransQ's head and length (its entries are in host
// memory) and rRetryNo. The sender's message table (txMsg) is what a NIC
// fetches again from the send queue (§4.3), sRetryNo gbn's retry count,
// eMSN and the rest RC counters: not counted. Nothing depends on the
// BDP: Messages bounds the tracked messages, whatever their size.
func (t *Transport) SRState() nic.SRState {
	return nic.SRState{PerQP: t.TrackingBytes() + nic.FieldBytes(reflect.TypeFor[qstate](), srFields...)}
}

// srFields are qstate's SR state (SRState).
var srFields = []string{"rtHead", "rtLen", "rRetry"}

// TrackingBytes returns the bytes per QP of the receiver's per-message
// tracking state, the figure §4.5 puts at 8 messages × 2 bytes.
func (t *Transport) TrackingBytes() int { return int(t.w) * int(reflect.TypeFor[rxMsg]().Size()) }

// Config returns the configuration in force, defaults filled in.
func (t *Transport) Config() Config { return t.cfg }

// Stats returns the counters. Call it from the worker's goroutine or
// after the worker stopped.
func (t *Transport) Stats() Stats { return t.stats }

// Classifier implements nic.Classifying: DCP packets carry the DCP
// extension header.
func (t *Transport) Classifier(c rocev2.Classifier) rocev2.Classifier {
	c.DCP = true
	return c
}

// Open implements nic.Transport.
func (t *Transport) Open(q *nic.QP) {
	i := q.Index()
	t.st[i] = qstate{send: q.Una(), end: q.Una()}
	clear(t.tx[i*int(t.w) : (i+1)*int(t.w)])
	rx := t.rxOf(i)
	clear(rx)
	rx[0] = rxMsg{first: q.EPSN(), flags: fFirst}
	if t.rtq[i] == nil {
		t.rtq[i] = make([]rtEntry, t.cfg.RetransQ)
	}
	if t.win != nil {
		t.win[i] = wstate{}
	}
}

func (t *Transport) txOf(i int) []txMsg { return t.tx[i*int(t.w) : (i+1)*int(t.w)] }
func (t *Transport) rxOf(i int) []rxMsg { return t.rx[i*int(t.w) : (i+1)*int(t.w)] }

// rto returns the timeout in force for s.
func (t *Transport) rto(s *qstate) int64 {
	return nic.Backoff(t.cfg.RTO, s.backoff, t.cfg.MaxRTO)
}

// Decorate implements nic.Decorator: every request is a DCP data packet
// (tag 10, the endpoint's DSCP class kept) with the DCP extension header:
// the message's MSN, the retry round (sRetryNo for the unaMSN-th
// message, 0 for the later ones, which no timeout has resent), and the
// SSN of a SEND. Build adds the RETH to every WRITE packet (§4.4). A
// message's first packet records where the message lies.
func (t *Transport) Decorate(q *nic.QP, r *nic.Request, s *rocev2.Spec) {
	i := q.Index()
	st := &t.st[i]
	tx := t.txOf(i)
	msn := psn.New(r.MSN)
	m := &tx[uint32(msn)&(t.w-1)]
	if msn == st.next && r.Index == 0 {
		*m = txMsg{first: s.PSN, n: uint32(r.Count)}
		if r.Op == nic.OpSend {
			m.ssn = st.ssn
			st.ssn = (st.ssn + 1) & psn.Mask
		}
		st.next = st.next.Add(1)
		st.end = s.PSN.Add(r.Count)
	}
	s.DCP, s.DSCP, s.MSN = true, rocev2.WithTag(s.DSCP, rocev2.DCPData), r.MSN
	if msn == st.una {
		s.Retry = st.sRetry
	}
	if r.Op == nic.OpSend {
		s.SSN = m.ssn
	}
}

// DecorateAck implements nic.AckDecorator: ACKs and NAKs are DCP ACKs
// (tag 01) carrying eMSN and rRetryNo; a positive ACK's PSN is the last
// packet of the message before eMSN.
func (t *Transport) DecorateAck(q *nic.QP, s *rocev2.Spec) {
	i := q.Index()
	st := &t.st[i]
	s.DCP, s.DSCP = true, rocev2.WithTag(s.DSCP, rocev2.DCPAck)
	s.MSN, s.Retry, s.AckMSN = uint32(st.emsn), st.rRetry, uint32(st.emsn)
	if t.win != nil {
		s.AckMSN = uint32(t.win[i].rcvd) // the arrival count the sender's window drains by
	}
	if s.Syndrome.IsACK() {
		s.PSN = t.rxOf(i)[uint32(st.emsn)&(t.w-1)].first.Add(-1)
	}
}

// Next implements nic.Transport: the resends of a timeout round first,
// then RetransQ entries, then new data within the message window, each
// only while the send window (Config.Window, if any) has room. The
// framework asks the congestion control before every call, so
// retransmissions are paced like new packets (§4.3, "Incompatible with
// CC module").
func (t *Transport) Next(c *nic.Ctx, q *nic.QP) bool {
	i := q.Index()
	s := &t.st[i]
	if t.win != nil && t.win[i].fly >= uint32(t.cfg.Window) {
		t.stats.WindowFull++ // credit wakes the QP when the window opens
		return false
	}
	if s.rsLeft > 0 {
		n, ok := c.SendRequest(q, s.rsNext)
		if !ok {
			return false
		}
		s.rsNext = s.rsNext.Add(n)
		s.rsLeft -= min(s.rsLeft, uint32(n))
		t.stats.FallbackRetransmits++
		t.sent(c, q, s, true)
		return true
	}
	rq := t.rtq[i]
	for s.rtLen > 0 {
		e := rq[s.rtHead]
		if q.Refused(e.psn) {
			t.pop(s, len(rq)) // at or after a refused request: never resent
			continue
		}
		if !t.current(i, s, e) {
			t.pop(s, len(rq))
			t.stats.HOStale++
			continue
		}
		if _, ok := c.SendRequest(q, e.psn); !ok {
			return false
		}
		t.pop(s, len(rq))
		t.stats.HORetransmits++
		t.sent(c, q, s, e.msn() == s.una)
		return true
	}
	if s.send == s.end && s.next.Diff(s.una) >= int(t.w) {
		return false // the receiver tracks no more messages
	}
	n, ok := c.SendRequest(q, s.send)
	if !ok {
		return false
	}
	s.send = s.send.Add(n)
	t.sent(c, q, s, s.next.Add(-1) == s.una)
	return true
}

// sent runs the coarse timer after a packet went: it measures RTO from
// the last packet of the unaMSN-th message sent (una), so that a message
// that takes longer than RTO to send — 1 MiB takes 8 ms at 1 Gb/s —
// does not time out while it is still going out; the paper's timer runs
// from the last change of unaMSN, which for its several-MB messages at
// 400 Gb/s (about 100 µs) is the same thing.
func (t *Transport) sent(c *nic.Ctx, q *nic.QP, s *qstate, una bool) {
	if t.win != nil {
		t.win[q.Index()].fly++
	}
	if una || !q.TimerArmed() {
		c.SetTimer(q, c.Now+t.rto(s))
	}
}

func (t *Transport) pop(s *qstate, capacity int) {
	s.rtHead++
	if int(s.rtHead) == capacity {
		s.rtHead = 0
	}
	s.rtLen--
}

// current reports whether RetransQ entry e still names a packet to
// retransmit: one of a started, unacknowledged message, sent in the
// message's current retry round.
func (t *Transport) current(i int, s *qstate, e rtEntry) bool {
	msn := e.msn()
	d := msn.Diff(s.una)
	if d < 0 || d >= s.next.Diff(s.una) {
		return false
	}
	if d == 0 && e.retry() != s.sRetry || d > 0 && e.retry() != 0 {
		return false
	}
	m := &t.txOf(i)[uint32(msn)&(t.w-1)]
	return e.psn.InWindow(m.first, int(m.n)) && e.psn.Less(s.send)
}

// Response implements nic.Transport: the requester side. A returned
// header-only packet becomes a RetransQ entry; a DCP ACK completes the
// messages before its eMSN; a NAK fails the QP.
func (t *Transport) Response(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	off := p.Meta.ExtOff(rocev2.ExtDCP)
	if p.Op != rocev2.RCAck || off == 0 {
		c.Drop(p, nic.ReasonStale) // read responses, plain ACKs: not from a DCP peer
		return
	}
	d := rocev2.DCPETH(p.Frame[off:])
	i := q.Index()
	s := &t.st[i]
	if p.Meta.Tag == rocev2.DCPHeaderOnly {
		t.credit(c, q, 1) // its packet left the data path at the switch that trimmed it
		t.returned(c, q, p, i, s, d)
		return
	}
	if t.win != nil {
		// The responder's count of arrivals (DecorateAck); an older
		// one, overtaken on another path, says nothing new.
		w := &t.win[i]
		if n := psn.New(p.MSN).Diff(w.heard); n > 0 {
			w.heard = psn.New(p.MSN)
			t.credit(c, q, uint32(n))
		}
	}
	emsn := psn.New(d.MSN())
	if k := emsn.Diff(s.una); k < 0 || k > s.next.Diff(s.una) {
		c.Drop(p, nic.ReasonStale)
		return
	}
	syn := p.Syndrome
	switch {
	case syn.IsACK():
		if emsn != s.una {
			t.acked(c, q, i, s, emsn)
		}
	case syn.IsRNR() || syn.IsNAK():
		// A refusal of the request at the NAK's PSN. The receiver
		// places out of order: eMSN says what arrived, not the PSNs
		// before the refused one, so the messages from eMSN to it are
		// still recovered (an RNR NAK) or flushed (a fatal one).
		t.acked(c, q, i, s, emsn)
		c.Refuse(q, syn, q.Una().Add(-1), p.PSN)
	default:
		c.Drop(p, nic.ReasonStale)
	}
}

// credit takes n packets that left the network out of q's window, and
// wakes q if that opened it.
func (t *Transport) credit(c *nic.Ctx, q *nic.QP, n uint32) {
	if t.win == nil {
		return
	}
	w := &t.win[q.Index()]
	full := w.fly >= uint32(t.cfg.Window)
	w.fly -= min(w.fly, n)
	if full && w.fly < uint32(t.cfg.Window) {
		c.Wake(q)
	}
}

// returned queues the retransmission a returned header-only packet asks
// for (§4.3, Rx path).
func (t *Transport) returned(c *nic.Ctx, q *nic.QP, p *nic.Pkt, i int, s *qstate, d rocev2.DCPETH) {
	t.stats.HOReturned++
	e := rtEntry{psn: p.PSN, mr: d.MSN() | uint32(d.RetryNo())<<24}
	if !t.current(i, s, e) {
		t.stats.HOStale++
		c.Drop(p, nic.ReasonStale)
		return
	}
	rq := t.rtq[i]
	for k, j := 0, int(s.rtHead); k < int(s.rtLen); k++ {
		if rq[j] == e {
			t.stats.HODuplicates++
			c.Drop(p, nic.ReasonDuplicate)
			return
		}
		if j++; j == len(rq) {
			j = 0
		}
	}
	if int(s.rtLen) == len(rq) {
		t.stats.RetransQOverflows++
		c.Drop(p, ReasonRetransQFull)
		return
	}
	rq[(int(s.rtHead)+int(s.rtLen))%len(rq)] = e
	s.rtLen++
	c.Wake(q)
}

// acked completes the messages before emsn, which lies in (unaMSN,
// next], and restarts the coarse timer for the new unaMSN (§4.5).
func (t *Transport) acked(c *nic.Ctx, q *nic.QP, i int, s *qstate, emsn psn.PSN) {
	if emsn == s.una {
		return
	}
	m := &t.txOf(i)[uint32(emsn.Add(-1))&(t.w-1)]
	c.Ack(q, m.first.Add(int(m.n)-1))
	s.una = emsn
	s.sRetry, s.backoff, s.rsLeft = 0, 0, 0
	if q.Outstanding() {
		c.SetTimer(q, c.Now+t.rto(s))
	} else {
		c.StopTimer(q)
	}
}

// Timeout implements nic.Transport: the coarse timeout of §4.5. The
// unaMSN-th message starts a new retry round: sRetryNo goes up and every
// packet of the message sent so far goes again, ahead of everything else.
func (t *Transport) Timeout(c *nic.Ctx, q *nic.QP) {
	i := q.Index()
	s := &t.st[i]
	if !q.Outstanding() || s.una == s.next {
		return
	}
	if int(s.sRetry) >= t.cfg.RetryLimit {
		c.Fail(q, nic.StatusRetryExceeded)
		return
	}
	s.sRetry++
	if t.win != nil {
		// Silent for RTO (64 ms by default): whatever the window
		// still counts has left the network unheard of (a lost ACK
		// or header-only packet), and the round's resends need room.
		t.win[i].fly = 0
	}
	if t.rto(s) < t.cfg.MaxRTO {
		s.backoff++
	}
	m := &t.txOf(i)[uint32(s.una)&(t.w-1)]
	s.rsNext, s.rsLeft = m.first, min(m.n, uint32(s.send.Diff(m.first)))
	t.stats.FallbackTimeouts++
	c.SetTimer(q, c.Now+t.rto(s))
}

var (
	_ nic.Transport    = (*Transport)(nil)
	_ nic.Decorator    = (*Transport)(nil)
	_ nic.AckDecorator = (*Transport)(nil)
	_ nic.Classifying  = (*Transport)(nil)
	_ nic.HostMemory   = (*Transport)(nil)
)
