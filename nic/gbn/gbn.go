package gbn

import (
	"fmt"
	"reflect"

	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Config tunes the transport. The zero value gives the defaults.
type Config struct {
	// Window bounds the PSNs sent and not yet acknowledged (a READ counts
	// its responses); default 128, rxe's RXE_MAX_UNACKED_PSNS.
	Window int
	// AckEvery makes the responder acknowledge after this many accepted
	// packets, besides every packet with AckReq (the last of each
	// message); default 16. 1 acknowledges every packet; 0 is the default.
	AckEvery int
	// RTO is the first retransmission timeout (default 16 ms); each
	// expiry without progress doubles it, up to MaxRTO (default 64×RTO).
	// ConnectX NICs default to 67 ms (timeout 14: 4.096 µs × 2^14). 1 ms
	// fired with no loss at all on a loaded two-core testbed, where
	// scheduling delay and shaped queues (1 MiB drains in 8 ms at
	// 1 Gb/s) make round trips of several milliseconds; 16 ms did not
	// (roceperf, 1 MiB WRITEs over veth, docs/roceperf.md).
	RTO, MaxRTO int64
	// RetryLimit is how many expiries in a row, without progress, a QP
	// survives; the next completes its oldest work request with
	// nic.StatusRetryExceeded and puts the QP in the error state.
	// Default 7, the largest IBA retry_cnt.
	RetryLimit int
}

// Transport is Go-Back-N for one endpoint. Create it with New and hand it
// to nic.Config; it belongs to that endpoint's worker.
type Transport struct {
	cfg Config
	st  []state
}

// state is the per-QP state: 12 bytes.
type state struct {
	send     psn.PSN // next PSN the requester sends
	sinceAck uint16  // responder: packets accepted since the last ACK
	retries  uint8   // requester: expiries since the last progress
	backoff  uint8   // requester: RTO doublings in force
	nakSent  bool    // responder: a sequence NAK is out for EPSN
	readGap  bool    // requester: a READ was re-issued for Una
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
	switch {
	case cfg.Window < 1 || cfg.Window > 1<<22:
		return nil, fmt.Errorf("gbn: window %d, want 1 to %d", cfg.Window, 1<<22)
	case cfg.AckEvery < 1 || cfg.AckEvery > 0xffff:
		return nil, fmt.Errorf("gbn: ack every %d packets, want 1 to 65535", cfg.AckEvery)
	case cfg.RTO < 1 || cfg.MaxRTO < cfg.RTO:
		return nil, fmt.Errorf("gbn: RTO %d ns, max %d ns: want 0 < RTO ≤ max", cfg.RTO, cfg.MaxRTO)
	case cfg.RetryLimit < 0 || cfg.RetryLimit > 255:
		return nil, fmt.Errorf("gbn: retry limit %d, want 0 to 255", cfg.RetryLimit)
	}
	return &Transport{cfg: cfg}, nil
}

// Name implements nic.Transport.
func (t *Transport) Name() string { return "gbn" }

// Init implements nic.Transport.
func (t *Transport) Init(n int) { t.st = make([]state, n) }

// StateBytes implements nic.Transport.
func (t *Transport) StateBytes() int { return int(reflect.TypeFor[state]().Size()) }

// SRState implements nic.Transport: Go-Back-N accepts nothing out of
// order and resends everything from the loss, so it keeps no SR state;
// it is the baseline the others' SR state is counted over.
func (t *Transport) SRState() nic.SRState { return nic.SRState{} }

// Open implements nic.Transport.
func (t *Transport) Open(q *nic.QP) { t.st[q.Index()] = state{send: q.Una()} }

// rto returns the timeout in force for s.
func (t *Transport) rto(s *state) int64 {
	return nic.Backoff(t.cfg.RTO, s.backoff, t.cfg.MaxRTO)
}

// Next implements nic.Transport: send the PSN after the last one sent,
// while the window allows. After a NAK or a timeout that PSN is the
// rewound one, so everything from the loss on goes again.
func (t *Transport) Next(c *nic.Ctx, q *nic.QP) bool {
	s := &t.st[q.Index()]
	una := q.Una()
	if s.send.Less(una) {
		s.send = una
	}
	if s.send.Diff(una) >= t.cfg.Window {
		return false
	}
	n, ok := c.SendRequest(q, s.send)
	if !ok {
		return false
	}
	s.send = s.send.Add(n)
	if !q.TimerArmed() {
		c.SetTimer(q, c.Now+t.rto(s))
	}
	return true
}

// progress resets the retry state after the requester moved forward and
// restarts or stops the timer.
func (t *Transport) progress(c *nic.Ctx, q *nic.QP, s *state) {
	s.retries, s.backoff = 0, 0
	if q.Outstanding() {
		c.SetTimer(q, c.Now+t.rto(s))
	} else {
		c.StopTimer(q)
	}
}

// Response implements nic.Transport: the requester side (rxe_comp.c).
func (t *Transport) Response(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	s := &t.st[q.Index()]
	if p.Op == rocev2.RCAck {
		t.ack(c, q, p, s)
		return
	}
	// A read response. Its PSN acknowledges every request before it.
	x := p.PSN
	if !x.Less(q.SndMax()) {
		c.Drop(p, nic.ReasonStale)
		return
	}
	if c.Ack(q, x.Add(-1)) {
		t.progress(c, q, s)
	}
	una := q.Una()
	switch {
	case x.Less(una):
		c.Drop(p, nic.ReasonDuplicate)
	case una.Less(x):
		// A response went missing. Re-issue the READ from the lost PSN,
		// and with it go back on everything after it, once per gap:
		// later responses of the same gap are dropped until Una arrives;
		// the timer covers a lost re-issue.
		if !s.readGap {
			s.readGap = true
			if una.Less(s.send) {
				s.send = una
			}
		}
		c.Drop(p, nic.ReasonOutOfOrder)
	default:
		if c.ReadResponse(q, p) != nic.StatusOK {
			c.Drop(p, nic.ReasonStale)
			return
		}
		s.readGap = false
		t.progress(c, q, s)
	}
}

func (t *Transport) ack(c *nic.Ctx, q *nic.QP, p *nic.Pkt, s *state) {
	syn := p.Syndrome
	switch {
	case syn.IsACK():
		if !p.PSN.Less(q.SndMax()) || p.PSN.Less(q.Una().Add(-1)) {
			c.Drop(p, nic.ReasonStale)
			return
		}
		if c.Ack(q, p.PSN) {
			t.progress(c, q, s)
		}
	case syn.IsNAK() && syn.Value() == rocev2.NakPSNSeqError:
		// The responder expects PSN n: everything before it arrived, and
		// everything from it on goes again (rxe: req_retry from the
		// NAK's PSN).
		n := p.PSN
		if q.SndMax().Less(n) || n.Less(q.Una()) {
			c.Drop(p, nic.ReasonStale)
			return
		}
		if c.Ack(q, n.Add(-1)) {
			t.progress(c, q, s)
		}
		if n.Less(s.send) {
			s.send = n
		}
	case syn.IsNAK():
		st := nic.StatusRemoteOp
		switch syn.Value() {
		case rocev2.NakInvalidReq:
			st = nic.StatusRemoteInvalid
		case rocev2.NakRemoteAccess:
			st = nic.StatusRemoteAccess
		}
		// The NAK's PSN is the failed request's: what came before it
		// completed.
		c.Ack(q, p.PSN.Add(-1))
		c.Fail(q, st)
	case syn.IsRNR():
		// RNR retry count 0: the peer had no receive posted, so the
		// SEND fails (no RNR retry path here).
		c.Ack(q, p.PSN.Add(-1))
		c.Fail(q, nic.StatusRNR)
	default:
		c.Drop(p, nic.ReasonStale)
	}
}

// Request implements nic.Transport: the responder side (rxe_resp.c's
// check_psn and duplicate_request).
func (t *Transport) Request(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	s := &t.st[q.Index()]
	d := p.PSN.Diff(q.EPSN())
	switch {
	case d > 0:
		// A gap: one NAK carrying the expected PSN, then silence until
		// the expected PSN arrives.
		if !s.nakSent {
			s.nakSent = true
			c.SendAck(q, rocev2.NAKSyndrome(rocev2.NakPSNSeqError), q.EPSN())
		}
		c.Drop(p, nic.ReasonOutOfOrder)
		return
	case d < 0:
		// A duplicate: a READ restarts its responses, anything else is
		// acknowledged again (coalesced with the batch's other ACKs).
		if p.Op == rocev2.RCReadRequest {
			c.RepeatRead(q, p)
		} else {
			c.ScheduleAck(q)
		}
		c.Drop(p, nic.ReasonDuplicate)
		return
	}
	s.nakSent = false
	switch st := c.Deliver(q, p); st {
	case nic.StatusOK:
		if p.Op == rocev2.RCReadRequest {
			s.sinceAck = 0 // its responses acknowledge it
			return
		}
		s.sinceAck++
		if p.AckReq || p.Op.IsLast() || p.Op.IsOnly() || int(s.sinceAck) >= t.cfg.AckEvery {
			s.sinceAck = 0
			c.ScheduleAck(q)
		}
	case nic.StatusRNR:
		c.SendAck(q, rocev2.RNRSyndrome(0), p.PSN)
		c.Drop(p, nic.ReasonRNR)
	case nic.StatusRemoteAccess:
		c.SendAck(q, rocev2.NAKSyndrome(rocev2.NakRemoteAccess), p.PSN)
		c.Drop(p, nic.ReasonAccess)
		c.Fail(q, nic.StatusFlushed)
	default:
		c.SendAck(q, rocev2.NAKSyndrome(rocev2.NakInvalidReq), p.PSN)
		c.Drop(p, nic.ReasonInvalid)
		c.Fail(q, nic.StatusFlushed)
	}
}

// Timeout implements nic.Transport: go back to Una with a doubled
// timeout, or give up after RetryLimit expiries without progress.
func (t *Transport) Timeout(c *nic.Ctx, q *nic.QP) {
	s := &t.st[q.Index()]
	if !q.Outstanding() {
		return
	}
	if int(s.retries) >= t.cfg.RetryLimit {
		c.Fail(q, nic.StatusRetryExceeded)
		return
	}
	s.retries++
	if t.rto(s) < t.cfg.MaxRTO {
		s.backoff++
	}
	s.send = q.Una()
	s.readGap = false
	c.SetTimer(q, c.Now+t.rto(s))
}

var _ nic.Transport = (*Transport)(nil)
