package perf

import (
	"context"
	"net/netip"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/dcp"
	"rocetor/nic/fasr"
	"rocetor/nic/host"
	"rocetor/nic/irn"
	"rocetor/rocev2"
)

// Device is the host side of a run: a host.Host on --dev (OpenHost), or
// a FakeNet's in-memory host in tests, which exercise the exchange, the
// post loop and verification without root. Only this package
// implements it.
type Device interface {
	HasAddr(a netip.Addr) bool
	NextHop(ctx context.Context, peer netip.Addr, timeout time.Duration) (rocev2.MAC, error)
	open(c sessionConfig) (session, error)
}

// sessionConfig is what a run asks of its endpoint.
type sessionConfig struct {
	ip         netip.Addr
	transport  nic.Transport
	qps        int
	sq, rq, cq int
	mtu        int
	rate       uint64
	poll       dataplane.PollMode
	baseQPN    uint32
	cc         nic.CC // nil: none
	mrs        int    // memory regions (0: nic's default)
	class      ClassOptions
}

// endpoint is the endpoint configuration a run asks for; the host adds
// its addresses, egress and clock.
func (c sessionConfig) endpoint() nic.Config {
	return nic.Config{IP: c.ip, Transport: c.transport, MaxQPs: c.qps, BaseQPN: c.baseQPN,
		SQDepth: c.sq, RQDepth: c.rq, CQDepth: c.cq, MTU: c.mtu, CC: c.cc, MaxMRs: c.mrs,
		DSCP: uint8(c.class.TClass >> 2), BestEffort: c.class.BestEffort, CNPDSCP: uint8(c.class.CNPDSCP)}
}

// session is one run's endpoint: the verbs, its clock, and its counters
// once stopped. Post, PollCQ and Now belong to one goroutine.
type session interface {
	RegisterMR(buf []byte, a nic.Access) (nic.MR, error)
	CreateQP(o nic.QPOptions) (nic.QPInfo, error)
	Connect(qpn uint32, r nic.QPInfo) error
	Post(wr nic.WR) error
	PollCQ(out []nic.Completion) int
	Now() int64
	// Capture arms a capture of what the endpoint sends and receives
	// on its port (nil disarms).
	Capture(c *dataplane.Capture)
	Start()
	Stop()
	// Counters are valid after Stop.
	Counters() Counters
	// LiveCounters are the packet, recovery and congestion counters as
	// last published while the worker runs; safe from any goroutine.
	LiveCounters() Counters
}

// hostDevice runs sessions on a host.Host.
type hostDevice struct{ *host.Host }

func (d hostDevice) open(c sessionConfig) (session, error) {
	s, err := d.NewSession(host.SessionConfig{RateBps: c.rate, Poll: &c.poll, Endpoint: c.endpoint()})
	if err != nil {
		return nil, err
	}
	return hostSession{s, s.Endpoint()}, nil
}

type hostSession struct {
	s *host.Session
	*nic.Endpoint
}

func (h hostSession) Now() int64 { return h.s.Now() }
func (h hostSession) Start()     { h.s.Start() }
func (h hostSession) Stop()      { h.s.Stop() }

func (h hostSession) Capture(c *dataplane.Capture) { h.s.Worker().Capture(c) }

// Counters reports the endpoint's counters, with packets as the worker
// counted them on the port: what went to and came from the wire,
// whatever the frame.
func (h hostSession) Counters() Counters {
	st := h.LiveStats()
	snap := h.s.Worker().Snapshot()
	c := Counters{RetxPackets: st.Retransmits, Timeouts: st.Timeouts, NAKsReceived: st.NAKsRecv, NAKsSent: st.NAKsSent,
		CEReceived: st.ECNMarked, CNPsSent: st.CNPsSent, CNPsReceived: st.CNPsRecv, INTNoRoom: st.INTNoRoom, CC: ccCountersOf(h.CC())}
	c.QPContextBytes, c.QPQueueBytes = h.QPBytes()
	c.setSR(h.SRState())
	switch t := h.Transport().(type) {
	case *dcp.Transport:
		c.DCP = dcpCountersOf(t)
	case *irn.Transport:
		c.IRN = irnCountersOf(t)
	case *fasr.Transport:
		c.FaSR = fasrCountersOf(t)
	}
	if len(snap.Ports) > 0 {
		c.PacketsSent, c.PacketsReceived = snap.Ports[0].TxPackets, snap.Ports[0].RxPackets
	}
	c.Drops, c.HODrops = byReason(&snap.Drops), byReason(&snap.HODrops)
	return c
}

// LiveCounters reads the counters the endpoint and the worker publish
// about once a millisecond.
func (h hostSession) LiveCounters() Counters {
	st := h.Stats()
	snap := h.s.Worker().Snapshot()
	c := Counters{RetxPackets: st.Retransmits, Timeouts: st.Timeouts, NAKsReceived: st.NAKsRecv, NAKsSent: st.NAKsSent,
		CEReceived: st.ECNMarked, CNPsSent: st.CNPsSent, CNPsReceived: st.CNPsRecv, INTNoRoom: st.INTNoRoom}
	if len(snap.Ports) > 0 {
		c.PacketsSent, c.PacketsReceived = snap.Ports[0].TxPackets, snap.Ports[0].RxPackets
	}
	return c
}

// byReason names the nonzero counts of a worker's per-reason counters;
// nil when there are none.
func byReason(counts *[dataplane.MaxReasons]uint64) map[string]uint64 {
	var m map[string]uint64
	for r, n := range counts {
		if n > 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[dataplane.Reason(r).String()] = n
		}
	}
	return m
}

// setSR fills the SR-state figures from nic.Endpoint.SRState: s for each
// of qps QPs.
func (c *Counters) setSR(s nic.SRState, qps int) {
	c.SRStateBytesPerQP, c.SRSharedBytes, c.SRStateBytes, c.SRBDPPackets = s.PerQP, s.Shared, s.Bytes(qps), s.BDP
}

// dcpCountersOf reads a stopped DCP endpoint's counters.
func dcpCountersOf(t *dcp.Transport) *DCPCounters {
	st := t.Stats()
	return &DCPCounters{HOBounced: st.HOBounced, HONotReturned: st.HONotReturned, HOReturned: st.HOReturned, HORetransmits: st.HORetransmits,
		HOStale: st.HOStale, HODuplicates: st.HODuplicates, RetransQOverflows: st.RetransQOverflows,
		FallbackTimeouts: st.FallbackTimeouts, FallbackRetransmits: st.FallbackRetransmits,
		WindowFull: st.WindowFull,
		Duplicates: st.Duplicates, Unanchored: st.Unanchored, Recounts: st.Recounts, Poisoned: st.Poisoned,
		Deferred: st.Deferred, TrackingBytes: t.TrackingBytes()}
}

// irnCountersOf reads a stopped IRN endpoint's counters.
func irnCountersOf(t *irn.Transport) *IRNCounters {
	st := t.Stats()
	return &IRNCounters{OutOfOrder: st.OutOfOrder, NACKsSent: st.NACKsSent, Duplicates: st.Duplicates,
		EarlyReads: st.EarlyReads, NACKsReceived: st.NACKsRecv, SACKs: st.SACKs,
		Recoveries: st.Recoveries, Retransmits: st.Retransmits, ReadReissues: st.ReadReissues,
		TimeoutsLow: st.TimeoutsLow, TimeoutsHigh: st.TimeoutsHigh, WindowFull: st.WindowFull,
		MaxInFlight: st.MaxInFlight, Window: t.Window(1024), BitmapBytes: t.BitmapBytes()}
}
