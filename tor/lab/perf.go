package lab

import (
	"context"
	"encoding/json"
	"errors"
	"rocetor/nic/perf"
	"time"
)

// Transfer is one roceperf run: a server on To, a client on From.
type Transfer struct {
	Op        string `json:"op"` // write, send or read
	From      string `json:"from"`
	To        string `json:"to"`
	Size      int    `json:"size"`  // bytes per message
	Count     int    `json:"count"` // messages
	QPs       int    `json:"qps"`
	Transport string `json:"transport"`
	MTU       int    `json:"mtu,omitempty"`
	Depth     int    `json:"depth,omitempty"` // messages in flight per QP; 0: roceperf's
	Rate      string `json:"rate,omitempty"`  // the client's pacing; empty: roceperf's default
	BDP       int    `json:"bdp,omitempty"`   // packets IRN's and FaSR's SR state is sized for; 0: roceperf's (128)
	// Poll is both endpoints' roceperf --poll (a round's server takes
	// the first transfer's); empty: roceperf's default, adaptive.
	Poll string `json:"poll,omitempty"`
	// CC is roceperf's --cc (none, fixed, dcqcn); empty: roceperf's
	// default, none.
	CC       string `json:"cc,omitempty"`
	LineRate string `json:"line_rate,omitempty"` // --line-rate: where DCQCN starts and returns to; empty: Rate
	// DCQCN sets ConnectX DCQCN parameters by their flag names without
	// the --dcqcn- prefix, e.g. rpg-time-reset: 300.
	DCQCN map[string]string `json:"dcqcn,omitempty"`
	// RTO is the client's first retransmission timeout (roceperf --rto);
	// 0: roceperf's, 16 ms.
	RTO     time.Duration `json:"rto,omitempty"`
	Timeout time.Duration `json:"timeout"`
}

// FCT is a flow-completion-time summary in microseconds, as roceperf
// reports it.
type FCT = perf.FCT

// Summary is roceperf's JSON summary (roceperf … --json).
type Summary struct {
	Transport   string  `json:"transport"`
	Op          string  `json:"op"`
	Size        int64   `json:"size"`
	Count       int64   `json:"count"`
	QPs         int64   `json:"qps"`
	Messages    int64   `json:"messages"`
	Bytes       int64   `json:"bytes"`
	DurationS   float64 `json:"duration_s"`
	GoodputGbps float64 `json:"goodput_gbps"`
	// Start and End are the run's first post and last completion on
	// the wall clock (roceperf's start and end; zero from a roceperf
	// without them).
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	FCT             FCT       `json:"fct_us"`
	RetxPackets     int64     `json:"retx_packets"`
	Timeouts        int64     `json:"timeouts"`
	NaksReceived    int64     `json:"naks_received"`
	NaksSent        int64     `json:"naks_sent"`
	PacketsSent     int64     `json:"packets_sent"`
	PacketsReceived int64     `json:"packets_received"`
	VerifiedBytes   int64     `json:"verified_bytes"`
	Corrupt         int64     `json:"corrupt"`
	EndpointDrops
	// Server is what the client reports of the server's endpoint.
	Server *EndpointDrops `json:"server,omitempty"`
}

// EndpointDrops are an endpoint's drops of DCP header-only packets, by
// reason (roceperf's ho_drops).
type EndpointDrops struct {
	HODrops map[string]int64 `json:"ho_drops,omitempty"`
}

// PerfResult is what one Transfer gave.
type PerfResult struct {
	Client    Summary         `json:"client"`
	ClientRaw json.RawMessage `json:"client_raw,omitempty"` // the JSON as printed, with any fields Summary lacks
	Server    json.RawMessage `json:"server,omitempty"`     // the server's JSON, if it printed one
}

// Perf runs transfers between the testbed's hosts. roceperf is the real
// one; tests use a fake.
type Perf interface {
	Transfer(ctx context.Context, t Transfer) (*PerfResult, error)
	// Round runs transfers that share their receiving host at once, as
	// one round of one server (roceperf serve --clients), and returns
	// their results in order, nil for one that reported nothing.
	Round(ctx context.Context, ts []Transfer) ([]*PerfResult, error)
}

// Simultaneous is a Perf that runs transfers at once by itself (the
// simulator: transfers at once are one simulation) rather than on one
// goroutine each. All returns their results in order, nil for one that
// reported nothing.
type Simultaneous interface {
	All(ctx context.Context, ts []Transfer) ([]*PerfResult, error)
}

// SeriesPerf is a Simultaneous Perf that also samples a switch while
// its transfers run (the simulator, on virtual time: the sampler of
// MeasureSeries reads the wall clock). The Series's times are seconds
// from the transfers' start, its Ends set.
type SeriesPerf interface {
	AllSeries(ctx context.Context, ts []Transfer, spec SeriesSpec) ([]*PerfResult, *Series, error)
}

// ErrPerf wraps a transfer that its endpoints reported as failed (a
// Perf's error: roceperf exited with one).
var ErrPerf = errors.New("roceperf failed")

// mergeRound reads the transfers of one round as one, what one client
// with all their QPs would have reported: messages, bytes, the
// recovery's and the packets' counters added up, goodput the verified
// bytes of all over the span from the first start to the last end (so
// a sender that started late or finished early counts as it did), and
// each FCT percentile the largest of the clients'. nil when no client
// reported.
func mergeRound(flows []*PerfResult) *PerfResult {
	var m Summary
	n := 0
	for _, f := range flows {
		if f == nil {
			continue
		}
		c := f.Client
		if n++; n == 1 {
			m.Transport, m.Op, m.Size = c.Transport, c.Op, c.Size
		}
		m.Count, m.QPs, m.Messages, m.Bytes = m.Count+c.Count, m.QPs+c.QPs, m.Messages+c.Messages, m.Bytes+c.Bytes
		m.RetxPackets, m.Timeouts = m.RetxPackets+c.RetxPackets, m.Timeouts+c.Timeouts
		m.NaksReceived, m.NaksSent = m.NaksReceived+c.NaksReceived, m.NaksSent+c.NaksSent
		m.PacketsSent, m.PacketsReceived = m.PacketsSent+c.PacketsSent, m.PacketsReceived+c.PacketsReceived
		m.VerifiedBytes, m.Corrupt = m.VerifiedBytes+c.VerifiedBytes, m.Corrupt+c.Corrupt
		if !c.Start.IsZero() && (m.Start.IsZero() || c.Start.Before(m.Start)) {
			m.Start = c.Start
		}
		if c.End.After(m.End) {
			m.End = c.End
		}
		m.FCT = FCT{P50: max(m.FCT.P50, c.FCT.P50), P99: max(m.FCT.P99, c.FCT.P99), P999: max(m.FCT.P999, c.FCT.P999),
			P9999: max(m.FCT.P9999, c.FCT.P9999), Mean: max(m.FCT.Mean, c.FCT.Mean), Max: max(m.FCT.Max, c.FCT.Max)}
	}
	if n == 0 {
		return nil
	}
	if !m.Start.IsZero() && m.End.After(m.Start) {
		m.DurationS = m.End.Sub(m.Start).Seconds()
		m.GoodputGbps = float64(m.VerifiedBytes) * 8 / m.DurationS / 1e9
	}
	raw, _ := json.Marshal(m)
	return &PerfResult{Client: m, ClientRaw: raw}
}
