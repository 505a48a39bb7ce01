package lab

import (
	"context"
	"math"
	"slices"
	"time"
)

// Apps runs ordinary host programs beside roceperf: a TCP flow (iperf3)
// and ping, for experiments that put RoCE beside other traffic
// (roce-tcp). The namespace testbed has them; the simulator, which has
// no TCP and no ICMP, does not (Env.Apps is nil there).
type Apps interface {
	// TCP runs one bulk TCP flow from one host to another for a while
	// and reports what the receiver got.
	TCP(ctx context.Context, f TCPFlow) (*TCPResult, error)
	// Ping pings from one host to another every interval until ctx
	// ends and returns the round-trip times of the replies.
	Ping(ctx context.Context, from, to string, interval time.Duration) (*PingResult, error)
}

// TCPFlow is one iperf3 run: a server on To, a client on From sending
// for Duration.
type TCPFlow struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	Duration time.Duration `json:"duration"`
}

// TCPResult is what iperf3 -J reported of a flow.
type TCPResult struct {
	// Gbps is the receiver's throughput over the run
	// (end.sum_received).
	Gbps float64 `json:"gbps"`
	// Retransmits are the sender's TCP retransmitted segments
	// (end.sum_sent.retransmits).
	Retransmits int64     `json:"retransmits"`
	Bytes       int64     `json:"bytes"` // received
	Seconds     float64   `json:"seconds"`
	Start       time.Time `json:"start,omitzero"` // when the client started sending
	End         time.Time `json:"end,omitzero"`   // Start + Seconds
}

// PingResult is what ping printed: a round-trip time per reply.
type PingResult struct {
	Sent  int       `json:"sent"`
	RTTus []float64 `json:"rtt_us"` // one per reply, in µs, in arrival order
}

// Quantile returns the q-quantile of the replies' round-trip times in
// µs (nearest rank), NaN with none.
func (p *PingResult) Quantile(q float64) float64 {
	if p == nil || len(p.RTTus) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(p.RTTus))
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Lost is the share of pings that got no reply, NaN with none sent.
func (p *PingResult) Lost() float64 {
	if p == nil || p.Sent == 0 {
		return math.NaN()
	}
	return 1 - float64(len(p.RTTus))/float64(p.Sent)
}
