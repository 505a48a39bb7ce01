package irn

import (
	"fmt"
	"math/bits"
	"reflect"

	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Config tunes the transport. The zero value gives the defaults; both
// ends of a connection should use the same BDP or Window (a receiver
// with a smaller one drops, unacknowledged, what lies beyond it).
type Config struct {
	// BDP is the bandwidth-delay product of the longest path, in bytes.
	// BDP-FC (§3.2) caps each QP's packets in flight — the PSNs from the
	// oldest unacknowledged one to the next new one — at ceil(BDP/MTU),
	// with the QP's path MTU. Default 128 KiB: 128 packets of 1 KiB,
	// gbn's window, and about a 1 Gb/s path with a 1 ms round trip,
	// which the namespace testbed's RTT of a few hundred microseconds
	// stays below.
	BDP int
	// Window, when set, is the cap in packets, whatever the MTU; it
	// overrides BDP.
	Window int
	// MTU is the path MTU BDP is divided by to size each QP's bitmaps
	// (default 1024). A QP with a larger path MTU gets the smaller cap
	// ceil(BDP/its MTU); one with a smaller MTU is held to the bitmaps'
	// size.
	MTU int
	// RTOLow is the retransmission timeout while at most N packets are
	// in flight, RTOHigh otherwise (§3.1). The paper's values are 100 µs
	// and 320 µs (§4.1) in a fabric whose longest path is six 40 Gb/s
	// hops of 2 µs: a 24 µs base round trip (its 120 KB BDP), so about
	// 4 and 13 round trips. The seed derives neither from the round
	// trip, though: RTO_high is "an estimation of the maximum round trip
	// time with one congested link" — propagation plus a full switch
	// buffer's queuing — and RTO_low "the desirable upper-bound on tail
	// latency for short messages". The defaults, 8 ms and 16 ms, apply
	// the first rule to the namespace testbed as it is: a round trip of
	// about 0.5 ms at the median and 1–2 ms at p99 (llr-tail's no-loss
	// FCTs), but stalls of several milliseconds when the two CPUs are
	// shared by two switches and two endpoints — the worst round trip
	// is set by the scheduler, not the buffers. RTO_high is gbn's and
	// fasr's 16 ms. History: 500 µs and 4 ms expired 20,830 times in a
	// lossless 5,000-QP run; 2 ms and 8 ms still expired, with no packet
	// lost at any switch, in 6 of 8 lossless sr-concurrency runs (60 to
	// 456 times) and once in a lossless one-QP sr-loss run, each expiry
	// resending a window; at 8 ms and 16 ms, 3 of 8 lossless
	// sr-concurrency runs were clean, 2 expired without a switch drop
	// (49 and 50 times) and 3 lost packets at the switches, and all of
	// sr-loss's were clean (docs/experiments.md, 2026-11-25). The price
	// is a longer wait when a tail or a retransmission is lost (sr-loss
	// at 2 %: 83 and 81 % of lossless, 88 % before).
	RTOLow, RTOHigh int64
	// N is how many packets in flight still count as few enough for
	// RTOLow (default 3, the paper's).
	N int
	// MaxRTO bounds the backoff: each expiry without progress doubles the
	// timeout in force, up to MaxRTO (default 256 ms, 16 × RTOHigh). The seed has no
	// backoff; without it a dead peer would be probed every RTOLow.
	MaxRTO int64
	// RetryLimit is how many expiries in a row, without progress, a QP
	// survives; the next completes its oldest work request with
	// nic.StatusRetryExceeded and puts the QP in the error state.
	// Default 10: with RTOLow's short first timeouts, gbn's 7 would give
	// up after 64 ms of silence; 10 takes about a quarter of a second.
	// At most 255.
	RetryLimit int
	// AckEvery makes the receiver acknowledge after this many in-order
	// packets, besides every packet that asks (AckReq: the last of each
	// message, and the one that fills the sender's window); default 16,
	// and never more than half the window.
	AckEvery int

	// GoBackN and NoBDPFC are the seed's factor analysis (§4.3, Fig. 7),
	// each taking one of IRN's two changes to RoCE away, for experiments;
	// a deployment wants neither.
	//
	// GoBackN replaces the SACK-based loss recovery with go-back-N
	// ("enabling go-back-N loss recovery instead of using SACKs"): the
	// receiver discards every packet ahead of the expected PSN, with one
	// NACK per gap as a RoCE responder sends (nic/gbn), and the sender
	// resends everything from the NACK's PSN, or from the oldest
	// unacknowledged one on a timeout. The rest of IRN stays: BDP-FC,
	// RTO_low and RTO_high with N, the OOO packet layout.
	GoBackN bool
	// NoBDPFC, when set, turns BDP-FC off ("disabling BDP-FC"): a QP's
	// packets in flight are no longer capped at the BDP but only by what
	// its bitmaps can track, NoBDPFC packets, which size them instead of
	// BDP or Window (a NIC without BDP-FC still tracks what it sent; give
	// it the largest message's packets to leave no cap at all). SACK
	// recovery, the timeouts and the rest stay.
	NoBDPFC int

	// NoTimeoutRecovery, for experiments on a lossless fabric, leaves a
	// timer expiry one effect only, the one it has on the endpoint (the
	// QP goes to the front of its NIC's scheduler): the expiry is counted
	// and backs off as any, but enters no loss recovery and resends
	// nothing. irn-fabric uses it to find which of a spurious expiry's
	// effects speeds flows up (docs/experiments.md, "DCQCN and TIMELY").
	// A packet that is lost is then recovered by a NACK or not at all: a
	// deployment never wants it.
	NoTimeoutRecovery bool
}

// Transport is IRN for one endpoint. Create it with New and hand it to
// nic.Config; it belongs to that endpoint's worker.
type Transport struct {
	cfg   Config
	cap   int // bitmap bits per QP: a power of two ≥ the largest window, ≥ 64
	words int // cap / 64
	mask  uint32
	tab   uint32   // entries of each QP's SSN and SEND-length tables: a power of two ≥ cap+2
	st    []qstate // per QP
	bm    []uint64 // per QP, nBitmaps × words
	ssn   [][]uint32
	rlen  [][]uint32
	// nack is the SACK PSN of the NACK being sent, for DecorateAck.
	nackOn    bool
	nackFlags uint8
	nackPSN   psn.PSN
	stats     Stats
}

// The per-QP bitmaps, each cap bits, indexed by PSN mod cap.
const (
	bmSACK    = iota // sender: PSNs selectively acknowledged, from cum on
	bmArrived        // receiver: PSNs placed ahead of epsn
	bmEnd            // receiver: … that end a message (the AETH MSN counts them)
	bmSendEnd        // receiver: … that end a SEND (its receive completes)
	nBitmaps
)

// qstate is a QP's scalar state, both sides: 64 bytes (TestStateBytes).
type qstate struct {
	// requester
	next    psn.PSN       // next new PSN
	cum     psn.PSN       // the responder's expected PSN, as last acknowledged (≥ Una)
	high    psn.PSN       // one past the highest selectively acknowledged PSN (meaningful when above cum)
	rtx     psn.PSN       // loss recovery: the next PSN to consider for retransmission
	recSeq  psn.PSN       // loss recovery: the last new packet sent before entering it
	order   nic.SendOrder // SENDs numbered as they start
	t0      int64         // the timer's base: last progress, or the first send after a quiet spell
	w       uint32        // BDP-FC cap in packets
	retries uint8         // expiries since the last progress
	backoff uint8         // RTO doublings in force
	flags   uint8         // fRecovery, …

	// responder
	sinceAck uint16  // in-order packets since the last ACK asked for
	epsn     psn.PSN // expected PSN: every PSN before it arrived
	msn      uint32  // messages completed (the AETH MSN)
	rssn     uint32  // SSN of the next SEND to complete: its receive is the oldest
}

// qstate flags.
const (
	fRecovery = 1 << iota // in loss recovery (§3.1)
	fForceCum             // retransmit cum first: a timeout entered recovery
	fReissue              // re-issue the READ at Una: a response went missing
	fReadGap              // a READ re-issue is out for Una; later responses are dropped until it arrives
	fSweep                // entered on a timeout: every PSN not SACKed up to the recovery sequence is lost
	fNakSent              // responder, GoBackN: a NACK is out for epsn; later packets are discarded silently
)

// maxPackets bounds a message's packets: nic.MaxMessage at the smallest
// MTU.
const maxPackets = 1 << 22

// Stats are the transport's counters, one per event. The worker's
// goroutine updates them; read them there (Transport.Stats) or after the
// worker stopped.
type Stats struct {
	// receiver
	OutOfOrder uint64 // data packets placed ahead of the expected PSN, each answered with a NACK (§3.1)
	NACKsSent  uint64 // NACKs sent: out-of-order arrivals and duplicates of them
	Duplicates uint64 // data packets that had arrived before, dropped (nic_duplicate) and acknowledged again; at the requester, READ responses that had, too
	EarlyReads uint64 // READ requests ahead of the expected PSN, discarded (nic_out_of_order) and NACKed with the FNACK flag: a READ executes in order
	GapsFilled uint64 // in-order arrivals that moved the expected PSN over packets placed ahead

	// sender
	NACKsRecv      uint64 // NACKs received
	SACKs          uint64 // PSNs newly marked selectively acknowledged
	Recoveries     uint64 // loss recovery entered: on a NACK or a timeout (§3.1)
	RecoveryExits  uint64 // loss recovery left: a cumulative ACK passed the recovery sequence
	Retransmits    uint64 // packets resent in loss recovery: cum first, then holes below a SACKed PSN (after a timeout, every PSN not SACKed)
	ReadReissues   uint64 // READs re-issued from a missing response
	TimeoutsLow    uint64 // expiries of RTO_low (≤ N packets in flight)
	TimeoutsHigh   uint64 // expiries of RTO_high
	WindowFull     uint64 // times BDP-FC held back a new packet (§3.2)
	MaxInFlight    uint64 // the most packets ever in flight on one QP: never above the cap
	StaleResponses uint64 // ACKs and read responses for nothing outstanding
}

// New returns a transport; it validates cfg and fills in defaults.
func New(cfg Config) (*Transport, error) {
	if cfg.BDP == 0 {
		cfg.BDP = 128 << 10
	}
	if cfg.MTU == 0 {
		cfg.MTU = 1024
	}
	if cfg.RTOLow == 0 {
		cfg.RTOLow = 8_000_000
	}
	if cfg.RTOHigh == 0 {
		cfg.RTOHigh = 16_000_000
	}
	if cfg.N == 0 {
		cfg.N = 3
	}
	if cfg.MaxRTO == 0 {
		cfg.MaxRTO = 256_000_000
	}
	if cfg.RetryLimit == 0 {
		cfg.RetryLimit = 10
	}
	if cfg.AckEvery == 0 {
		cfg.AckEvery = 16
	}
	switch {
	case cfg.BDP < 0 || cfg.Window < 0 || cfg.Window > 1<<16:
		return nil, fmt.Errorf("irn: BDP %d bytes, window %d packets: want BDP > 0 or a window of 1 to 65536", cfg.BDP, cfg.Window)
	case cfg.MTU < 256 || cfg.MTU > 4096 || cfg.MTU&(cfg.MTU-1) != 0:
		return nil, fmt.Errorf("irn: MTU %d, want 256, 512, 1024, 2048 or 4096", cfg.MTU)
	case cfg.Window == 0 && (cfg.BDP+cfg.MTU-1)/cfg.MTU > 1<<16:
		return nil, fmt.Errorf("irn: BDP %d bytes is more than 65536 packets of %d bytes", cfg.BDP, cfg.MTU)
	case cfg.RTOLow < 1 || cfg.RTOHigh < cfg.RTOLow || cfg.MaxRTO < cfg.RTOHigh:
		return nil, fmt.Errorf("irn: RTO low %d ns, high %d ns, max %d ns: want 0 < low ≤ high ≤ max", cfg.RTOLow, cfg.RTOHigh, cfg.MaxRTO)
	case cfg.N < 0:
		return nil, fmt.Errorf("irn: N %d, want ≥ 0", cfg.N)
	case cfg.RetryLimit < 0 || cfg.RetryLimit > 255:
		return nil, fmt.Errorf("irn: retry limit %d, want 0 to 255", cfg.RetryLimit)
	case cfg.AckEvery < 1 || cfg.AckEvery > 0xffff:
		return nil, fmt.Errorf("irn: ack every %d packets, want 1 to 65535", cfg.AckEvery)
	case cfg.NoBDPFC < 0 || cfg.NoBDPFC > 1<<16:
		return nil, fmt.Errorf("irn: BDP-FC off with %d packets tracked: want 1 to 65536, or 0 for BDP-FC on", cfg.NoBDPFC)
	}
	w := cfg.Window
	if w == 0 {
		w = (cfg.BDP + cfg.MTU - 1) / cfg.MTU
	}
	if cfg.NoBDPFC > 0 {
		w = cfg.NoBDPFC
	}
	capBits := max(64, 1<<bits.Len(uint(w-1)))
	t := &Transport{cfg: cfg, cap: capBits, words: capBits / 64, mask: uint32(capBits - 1),
		tab: uint32(1 << bits.Len(uint(capBits+1)))}
	return t, nil
}

// Name implements nic.Transport.
func (t *Transport) Name() string { return "irn" }

// Init implements nic.Transport.
func (t *Transport) Init(n int) {
	t.st = make([]qstate, n)
	t.bm = make([]uint64, n*nBitmaps*t.words)
	t.ssn = make([][]uint32, n)
	t.rlen = make([][]uint32, n)
}

// StateBytes implements nic.Transport: the QP context — scalars and the
// four bitmaps of cap bits (the sender's SACK bitmap, the receiver's
// arrival, message-end and SEND-end bitmaps), plus the descriptors of
// the two host-memory tables.
func (t *Transport) StateBytes() int {
	return int(reflect.TypeFor[qstate]().Size()) + t.BitmapBytes() + 2*int(reflect.TypeFor[[]uint32]().Size())
}

// SRState implements nic.Transport: per QP, the four bitmaps and the
// requester's recovery pointers — the cumulative ACK it heard, the
// highest SACK, the retransmission pointer and the recovery sequence
// (§3.1) — over gbn's state; the bitmaps span BDP packets, the window
// rounded up to a power of two (at least 64) so that a PSN indexes them
// with a mask. The rest of qstate has a gbn or framework counterpart
// (next: gbn's send pointer; epsn, msn: the responder's) or is SEND
// numbering every out-of-order placer keeps (order, rssn).
func (t *Transport) SRState() nic.SRState {
	return nic.SRState{PerQP: t.BitmapBytes() + nic.FieldBytes(reflect.TypeFor[qstate](), srFields...), BDP: t.cap}
}

// srFields are qstate's SR state (SRState).
var srFields = []string{"cum", "high", "rtx", "recSeq"}

// BitmapBytes returns the bytes per QP of the four bitmaps.
func (t *Transport) BitmapBytes() int { return nBitmaps * t.words * 8 }

// QueueBytes implements nic.HostMemory: the sender's SSN of each
// outstanding message and the receiver's length of each SEND placed
// ahead, tables a NIC keeps with the send and receive WQEs in host
// memory.
func (t *Transport) QueueBytes() int { return 2 * int(t.tab) * 4 }

// Config returns the configuration in force, defaults filled in.
func (t *Transport) Config() Config { return t.cfg }

// Window returns the BDP-FC cap of a QP with path MTU mtu; with BDP-FC
// off, the packets its bitmaps track.
func (t *Transport) Window(mtu int) int {
	if t.cfg.NoBDPFC > 0 {
		return t.cfg.NoBDPFC
	}
	if t.cfg.Window > 0 {
		return t.cfg.Window
	}
	return min(t.cap, (t.cfg.BDP+mtu-1)/mtu)
}

// Stats returns the counters. Call it from the worker's goroutine or
// after the worker stopped.
func (t *Transport) Stats() Stats { return t.stats }

// Classifier implements nic.Classifying: IRN's ACKs carry a SACKETH, its
// requests the OOO layout (a RETH in every WRITE packet, a SETH in every
// SEND packet) so that the receiver places them in any order.
func (t *Transport) Classifier(c rocev2.Classifier) rocev2.Classifier {
	c.SACK, c.OOO = true, true
	return c
}

// Open implements nic.Transport.
func (t *Transport) Open(q *nic.QP) {
	i := q.Index()
	una := q.Una()
	t.st[i] = qstate{next: una, cum: una, high: una, rtx: una, recSeq: una.Add(-1),
		w: uint32(t.Window(q.MTU())), epsn: q.EPSN()}
	clear(t.bitmaps(i))
	if t.ssn[i] == nil {
		t.ssn[i] = make([]uint32, t.tab)
		t.rlen[i] = make([]uint32, t.tab)
	}
	clear(t.ssn[i])
	clear(t.rlen[i])
}

func (t *Transport) bitmaps(i int) []uint64 {
	n := nBitmaps * t.words
	return t.bm[i*n : (i+1)*n]
}

// bitmap returns QP i's bitmap k.
func (t *Transport) bitmap(i, k int) []uint64 {
	o := (i*nBitmaps + k) * t.words
	return t.bm[o : o+t.words]
}

func (t *Transport) test(b []uint64, p psn.PSN) bool {
	x := uint32(p) & t.mask
	return b[x>>6]&(1<<(x&63)) != 0
}

func (t *Transport) set(b []uint64, p psn.PSN) {
	x := uint32(p) & t.mask
	b[x>>6] |= 1 << (x & 63)
}

func (t *Transport) clr(b []uint64, p psn.PSN) {
	x := uint32(p) & t.mask
	b[x>>6] &^= 1 << (x & 63)
}

// rto returns the timeout in force for q: RTO_low with at most N packets
// in flight, RTO_high otherwise (§3.1), doubled per expiry without
// progress.
func (t *Transport) rto(q *nic.QP, s *qstate) int64 {
	d := t.cfg.RTOHigh
	if q.SndMax().Diff(q.Una()) <= t.cfg.N {
		d = t.cfg.RTOLow
	}
	return nic.Backoff(d, s.backoff, t.cfg.MaxRTO)
}

// arm sets q's timer to its base plus the timeout in force, or stops it
// when nothing is outstanding. A deadline later than the armed one costs
// no timer entry (nic.Ctx.SetTimer).
func (t *Transport) arm(c *nic.Ctx, q *nic.QP, s *qstate) {
	if !q.Outstanding() {
		c.StopTimer(q)
		return
	}
	c.SetTimer(q, s.t0+t.rto(q, s))
}

// progress resets the retry state after the requester moved forward and
// restarts the timer.
func (t *Transport) progress(c *nic.Ctx, q *nic.QP, s *qstate) {
	s.retries, s.backoff, s.t0 = 0, 0, c.Now
	t.arm(c, q, s)
}

// Decorate implements nic.Decorator: every request uses the OOO layout
// (Build puts a RETH in every WRITE packet; a SEND packet gets its SSN
// and its index in the message). A retransmission and the packet that
// fills the BDP-FC window ask for an ACK: the sender waits for both, and
// the receiver would otherwise coalesce them with packets that may not
// come.
func (t *Transport) Decorate(q *nic.QP, r *nic.Request, sp *rocev2.Spec) {
	i := q.Index()
	s := &t.st[i]
	s.order.Decorate(t.ssn[i], r, sp)
	if r.Retransmit || sp.PSN.Add(1).Diff(q.Una()) >= int(s.w) {
		sp.AckReq = true
	}
}

// DecorateAck implements nic.AckDecorator: a positive ACK acknowledges
// everything before the expected PSN, whatever the framework's in-order
// state says (IRN places through Place and PlaceRecv, which keep none);
// the AETH MSN counts the messages completed; the SACKETH carries the
// PSN that triggered a NACK (§3.1), or for an ACK the cumulative PSN
// again — nothing selective.
func (t *Transport) DecorateAck(q *nic.QP, sp *rocev2.Spec) {
	s := &t.st[q.Index()]
	sp.AckMSN = s.msn & psn.Mask
	if sp.Syndrome.IsACK() {
		sp.PSN = s.epsn.Add(-1)
	}
	sp.SACKPSN = s.epsn.Add(-1)
	if t.nackOn {
		sp.SACKPSN, sp.SACKFlags = t.nackPSN, t.nackFlags
	}
}

// Next implements nic.Transport: a READ re-issue first, then, in loss
// recovery, the cumulative ACK's packet and the holes below the highest
// SACKed PSN (after a timeout: every PSN not SACKed up to the recovery
// sequence; a refused request's PSN counts as SACKed), then new packets while BDP-FC allows (§3.1, §3.2). The
// framework asks the congestion control before every call.
func (t *Transport) Next(c *nic.Ctx, q *nic.QP) bool {
	i := q.Index()
	s := &t.st[i]
	una := q.Una()
	if s.next.Less(una) {
		s.next = una
	}
	if s.flags&fReissue != 0 {
		if _, ok := c.SendRequest(q, una); !ok {
			return false
		}
		s.flags &^= fReissue
		t.stats.ReadReissues++
		t.sent(c, q, s)
		return true
	}
	if s.flags&fRecovery != 0 {
		if s.rtx.Less(s.cum) {
			s.rtx = s.cum
		}
		if s.flags&fForceCum != 0 && s.cum.Less(s.next) {
			// Entered on a timeout: the cumulative ACK's packet goes
			// first, whether or not a later one was SACKed.
			n, ok := c.SendRequest(q, s.cum)
			if !ok {
				return false
			}
			s.flags &^= fForceCum
			s.rtx = s.cum.Add(n)
			t.stats.Retransmits++
			t.sent(c, q, s)
			return true
		}
		s.flags &^= fForceCum
		// Lost: a PSN not SACKed below a SACKed one — and after a
		// timeout, any PSN not SACKed up to the recovery sequence.
		lim := s.high
		if s.flags&fSweep != 0 && lim.Less(s.recSeq.Add(1)) {
			lim = s.recSeq.Add(1)
		}
		sack := t.bitmap(i, bmSACK)
		for s.rtx.Less(lim) && s.rtx.Less(s.next) {
			if t.test(sack, s.rtx) {
				s.rtx = s.rtx.Add(1)
				continue
			}
			n, ok := c.SendRequest(q, s.rtx)
			if !ok {
				return false
			}
			s.rtx = s.rtx.Add(n)
			t.stats.Retransmits++
			t.sent(c, q, s)
			return true
		}
	}
	if s.next.Diff(una) >= int(s.w) {
		t.stats.WindowFull++
		return false
	}
	resend := s.next.Less(q.SndMax()) // GoBackN: what followed a loss
	n, ok := c.SendRequest(q, s.next)
	if !ok {
		return false
	}
	if resend {
		t.stats.Retransmits++
	}
	s.next = s.next.Add(n)
	if f := uint64(q.SndMax().Diff(una)); f > t.stats.MaxInFlight && n == 1 {
		t.stats.MaxInFlight = f
	}
	t.sent(c, q, s)
	return true
}

// sent runs the timer after a packet went: a quiet QP starts it afresh;
// otherwise the deadline may only move out (more packets in flight:
// RTO_high instead of RTO_low).
func (t *Transport) sent(c *nic.Ctx, q *nic.QP, s *qstate) {
	if !q.TimerArmed() {
		s.t0 = c.Now
	}
	t.arm(c, q, s)
}

// Response implements nic.Transport: the requester side.
func (t *Transport) Response(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	i := q.Index()
	s := &t.st[i]
	if p.Op != rocev2.RCAck {
		t.readResponse(c, q, p, s)
		return
	}
	syn := p.Syndrome
	switch {
	case syn.IsACK():
		if !p.PSN.Less(q.SndMax()) {
			t.stale(c, p)
			return
		}
		t.cumulative(c, q, i, s, p.PSN.Add(1))
	case syn.IsNAK() && syn.Value() == rocev2.NakPSNSeqError:
		// IRN's NACK: the expected PSN and, in the SACKETH, the PSN that
		// arrived ahead of it.
		if q.SndMax().Less(p.PSN) {
			t.stale(c, p)
			return
		}
		t.stats.NACKsRecv++
		t.cumulative(c, q, i, s, p.PSN)
		if t.cfg.GoBackN {
			t.goBack(s, p.PSN)
			c.Wake(q)
			return
		}
		t.selective(q, i, s, p)
	case syn.IsNAK() || syn.IsRNR():
		// A refusal: RNR (retry count 0, as gbn: the SEND fails) or
		// fatal. Its PSN is the refused request's; the SACKETH carries
		// the cumulative ACK (DecorateAck), and only that is
		// acknowledged: the PSNs between may still be missing.
		if p.PSN.Less(q.Una()) || !p.PSN.Less(q.SndMax()) {
			t.stale(c, p)
			return
		}
		cum := q.Una().Add(-1)
		if p.HasSACK {
			cum = p.SACK
		}
		if c.Refuse(q, syn, cum, p.PSN) {
			return
		}
		// The refused request waits for the PSNs before it, which the
		// refusal shows lost as a SACK would: recover them.
		t.cumulative(c, q, i, s, q.Una())
		if s.high.Less(p.PSN) {
			s.high = p.PSN
		}
		if s.flags&fRecovery == 0 {
			t.enter(s)
		}
		c.Wake(q)
	default:
		t.stale(c, p)
	}
}

func (t *Transport) stale(c *nic.Ctx, p *nic.Pkt) {
	t.stats.StaleResponses++
	c.Drop(p, nic.ReasonStale)
}

// cumulative takes the responder's expected PSN e: everything before it
// arrived. It completes what that covers, moves the SACK bitmap along,
// and leaves loss recovery once e passes the recovery sequence (§3.1).
func (t *Transport) cumulative(c *nic.Ctx, q *nic.QP, i int, s *qstate, e psn.PSN) {
	moved := t.setCum(i, s, e)
	if c.Ack(q, e.Add(-1)) || moved {
		t.progress(c, q, s)
	}
	t.setCum(i, s, q.Una())
	t.exit(s)
}

// exit leaves loss recovery once the cumulative ACK passed the recovery
// sequence (§3.1).
func (t *Transport) exit(s *qstate) {
	if s.flags&fRecovery != 0 && s.recSeq.Less(s.cum) {
		s.flags &^= fRecovery | fForceCum | fSweep
		t.stats.RecoveryExits++
	}
}

// setCum moves cum up to e, clearing the SACK bits it passes, and
// reports whether it moved.
func (t *Transport) setCum(i int, s *qstate, e psn.PSN) bool {
	d := e.Diff(s.cum)
	if d <= 0 {
		return false
	}
	sack := t.bitmap(i, bmSACK)
	if d >= t.cap {
		clear(sack)
	} else {
		for x := s.cum; x != e; x = x.Add(1) {
			t.clr(sack, x)
		}
	}
	s.cum = e
	if s.high.Less(e) {
		s.high = e
	}
	return true
}

// selective records the PSN a NACK's SACKETH names as arrived and enters
// loss recovery (§3.1) if the hole the NACK names is still open. With the FNACK flag the receiver discarded that
// packet (an early READ request): it is not marked, but it still counts
// as a later PSN the receiver saw, so recovery resends it too.
func (t *Transport) selective(q *nic.QP, i int, s *qstate, p *nic.Pkt) {
	if x := p.SACK; p.HasSACK && s.cum.Less(x) && x.Less(q.SndMax()) && x.Diff(s.cum) < t.cap {
		sack := t.bitmap(i, bmSACK)
		if p.SACKFlags&rocev2.SACKFNACK == 0 && !t.test(sack, x) {
			t.set(sack, x)
			t.stats.SACKs++
		}
		if s.high.LessEq(x) {
			s.high = x.Add(1)
		}
	}
	// A NACK older than the cumulative ACK names a hole that closed
	// since: its SACK still counts, but it starts nothing.
	if s.flags&fRecovery == 0 && p.PSN == s.cum {
		t.enter(s)
	}
}

// enter starts loss recovery: the recovery sequence is the last new
// packet sent so far, and retransmission starts at the cumulative ACK —
// unless a recovery that ended since the last timeout resent it already:
// its retransmission is on its way, NACKs sent before it arrived still
// name the old hole, and the timer recovers it if it was lost too. So a
// PSN is resent at most once between timeouts (Timeout resets rtx).
func (t *Transport) enter(s *qstate) {
	s.flags |= fRecovery
	s.recSeq = s.next.Add(-1)
	if s.rtx.Less(s.cum) {
		s.rtx = s.cum
	}
	t.stats.Recoveries++
}

// readResponse handles a READ response as gbn does: in order it is
// placed; a gap re-issues the READ from the missing PSN, once per gap.
// IRN's selective recovery covers requests; responses are recovered Go-
// Back-N style (see the package doc).
func (t *Transport) readResponse(c *nic.Ctx, q *nic.QP, p *nic.Pkt, s *qstate) {
	x := p.PSN
	if !x.Less(q.SndMax()) {
		t.stale(c, p)
		return
	}
	// A response for PSN x means the responder took the READ, and with
	// it every request before.
	if c.Ack(q, x.Add(-1)) {
		t.progress(c, q, s)
	}
	t.setCum(q.Index(), s, q.Una())
	una := q.Una()
	switch {
	case x.Less(una):
		t.stats.Duplicates++
		c.Drop(p, nic.ReasonDuplicate)
	case una.Less(x):
		if s.flags&fReadGap == 0 {
			s.flags |= fReadGap | fReissue
		}
		c.Drop(p, nic.ReasonOutOfOrder)
	default:
		if c.ReadResponse(q, p) != nic.StatusOK {
			t.stale(c, p)
			return
		}
		s.flags &^= fReadGap
		t.setCum(q.Index(), s, q.Una())
		t.exit(s)
		t.progress(c, q, s)
	}
}

// Timeout implements nic.Transport: loss recovery starts (again) from the
// cumulative ACK, whose packet goes first (§3.1), and every PSN not
// SACKed up to the last sent counts as lost (a deviation: see the
// package doc); a READ whose responses stopped is re-issued from the
// missing one. After RetryLimit expiries without progress the QP fails.
func (t *Transport) Timeout(c *nic.Ctx, q *nic.QP) {
	s := &t.st[q.Index()]
	if !q.Outstanding() {
		return
	}
	if int(s.retries) >= t.cfg.RetryLimit {
		c.Fail(q, nic.StatusRetryExceeded)
		return
	}
	if q.SndMax().Diff(q.Una()) <= t.cfg.N {
		t.stats.TimeoutsLow++
	} else {
		t.stats.TimeoutsHigh++
	}
	s.retries++
	if t.rto(q, s) < t.cfg.MaxRTO {
		s.backoff++
	}
	if t.cfg.GoBackN {
		t.goBack(s, q.Una())
		s.flags &^= fReadGap
		s.t0 = c.Now
		t.arm(c, q, s)
		return
	}
	if t.cfg.NoTimeoutRecovery {
		s.t0 = c.Now
		t.arm(c, q, s)
		return
	}
	s.rtx = s.cum
	t.enter(s)
	s.flags |= fForceCum | fSweep
	s.flags &^= fReadGap
	if q.Una().Less(s.cum) {
		s.flags |= fReissue
	}
	s.t0 = c.Now
	t.arm(c, q, s)
}

// goBack is the GoBackN ablation's recovery: everything from e on goes
// again, as new packets do (BDP-FC still holds them), the way nic/gbn
// rewinds. Counted as a recovery; the resent packets count as
// retransmissions in the endpoint's stats.
func (t *Transport) goBack(s *qstate, e psn.PSN) {
	if e.Less(s.next) {
		s.next = e
		t.stats.Recoveries++
	}
}

var (
	_ nic.Transport    = (*Transport)(nil)
	_ nic.Decorator    = (*Transport)(nil)
	_ nic.AckDecorator = (*Transport)(nil)
	_ nic.Classifying  = (*Transport)(nil)
	_ nic.HostMemory   = (*Transport)(nil)
)
