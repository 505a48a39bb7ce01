package perf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/stack"
)

// Limits a client checks before it connects, so that a bad run is a
// usage error rather than a refusal halfway; the server checks them
// again in the hello.
const (
	// MaxQPs reaches FaSR's 5,000 concurrent QPs (seed 001 §V-C); the
	// endpoint's tables grow with it, not with the limit, and the
	// client's buffers stay under MaxClientMem (AutoDepth: one 4 KiB
	// message per QP at 5,000 is 20 MB).
	MaxQPs       = 8192
	MaxDepth     = 1024
	MaxClientMem = 1 << 30 // qps × depth × size bytes of local buffers
)

// srBDP is the default --bdp and maxBDP its largest (nic/stack).
const (
	srBDP  = stack.DefaultBDP
	maxBDP = stack.MaxBDP
)

// NewTransport builds one end's loss recovery, by --transport name (one
// of stack.Transports), with the first retransmission timeout the client
// asked for (0: the transport's default) and the BDP in packets IRN's
// and FaSR's SR state is sized for (0: srBDP; gbn and dcp do not depend
// on it, and gbn keeps its own window).
func NewTransport(name string, rto time.Duration, bdp int) (nic.Transport, error) {
	return stack.Config{Transport: name, RTO: rto, BDP: bdp}.NewTransport()
}

// KnownTransport reports whether roceperf has transport t (the empty
// name is none).
func KnownTransport(t string) bool { return slices.Contains(stack.Transports, t) }

// Supports reports whether transport t implements op: DCP covers WRITE
// and SEND (seed 002 §4.4), not READ.
func Supports(t string, op nic.Op) bool { return t != "dcp" || op != nic.OpRead }

// orderTolerant reports whether transport t places a QP's packets in any
// order, so that a late packet of a message could land after the next
// message written to the same place — unless that one starts after the
// first completed (client.setup limits the depth for it).
func orderTolerant(t string) bool { return t == "dcp" || t == "irn" || t == "fasr" }

// TransportNames lists the transports in sorted order.
func TransportNames() string {
	return strings.Join(slices.Sorted(slices.Values(stack.Transports)), ", ")
}

// Ops are the operations a run moves messages with, by name.
var Ops = map[string]nic.Op{"write": nic.OpWrite, "send": nic.OpSend, "read": nic.OpRead}

// MaxSweep is the largest size of -a: perftest's 8 MiB.
const MaxSweep = 8 << 20

// ClientOptions are a client run, as roceperf's flags give it (the
// flag of each field is docs/roceperf.md's); RunClient takes them
// checked and complete: Depth set (AutoDepth), To a host:port.
type ClientOptions struct {
	Op        nic.Op
	Dev       string // --dev: the interface
	To        string // host:port
	Size      int    // bytes per message
	Count     int    // messages in all (0 with Duration)
	QPs       int
	Depth     int    // messages in flight per QP
	Transport string // one of stack.Transports
	MTU       int
	Rate      uint64 // pace the endpoint to this many bit/s (0: unpaced)
	Poll      dataplane.PollMode
	RTO       time.Duration // both ends' first retransmission timeout (0: the transport's)
	BDP       int           // packets both ends' SR state is sized for
	Timeout   time.Duration // connect, each protocol step, resolution, a completion
	JSON      bool          // one JSON object per run instead of the table
	CC        CCOptions
	// perftest's modes
	Lat      bool          // a latency test: one QP, one message in flight
	Duration time.Duration // -D: run this long instead of count messages (count is then 0)
	All      bool          // -a: every power-of-two size from 2 B to 8 MiB
	RxDepth  int           // -r: receives the server posts per QP for SEND (0: its own)
	Gbits    bool          // --report-gbits: the table in Gb/s instead of MB/s
	CPUUtil  bool          // --cpu-util: report the CPU the client used
	Bidir    bool          // -b: the server sends the same messages back at once
	Pcap     PcapOptions
	Class    ClassOptions
	// DepthAuto: --depth was 0, so -a sizes each run's depth for its size.
	DepthAuto bool
}

// ServerOptions are a server, as serve's flags give it. The zero value
// of Clients serves one client at a time.
type ServerOptions struct {
	Dev     string        // --dev: the interface
	Listen  string        // TCP address to listen on
	Once    bool          // serve one round and return
	Timeout time.Duration // wait for a client's first line at most this long
	MaxMR   int           // bytes of a run's region
	Rate    uint64        // pace the endpoint to this many bit/s (READ responses)
	Poll    dataplane.PollMode
	Pcap    PcapOptions
	Metrics string // --metrics ADDR: Prometheus /metrics
	Clients int    // clients served at once (round.go)
	Class   ClassOptions
}

// ClassOptions are the traffic classes an endpoint's frames carry, as
// a ConnectX sets them: the QP's traffic class (perftest's --tclass)
// on its requests, responses, ACKs and NAKs, and cnp_dscp on the CNPs
// it sends. Switches classify by them (tord's qos section: RoCE on
// DSCP 26, CNPs on 48). Each end sets its own, as each ConnectX does.
type ClassOptions struct {
	// TClass is the IP traffic class byte: its DSCP (TClass/4) is the
	// frames'; its ECN bits are the congestion control's, as on a
	// ConnectX with ECN on. 0: the endpoint's default, 106 (DSCP 26),
	// or 96 (DSCP 24) with the dcp transport.
	TClass int
	// BestEffort is a traffic class of 0 to 3 asked for (TClass then
	// 0): DSCP 0, the class of every unmarked frame
	// (nic.Config.BestEffort).
	BestEffort bool
	// CNPDSCP is the DSCP of the CNPs (ConnectX's cnp_dscp); 0: 48.
	CNPDSCP int
}

// Check says what is wrong with the options, naming the flag.
func (c ClassOptions) Check() error {
	switch {
	case c.TClass != 0 && (c.TClass < 4 || c.TClass > 255):
		// TClass 0 stands for the default; 0 to 3 is BestEffort.
		return fmt.Errorf("--tclass %d: want 0 to 255", c.TClass)
	case c.BestEffort && c.TClass != 0:
		return fmt.Errorf("--tclass %d with a best-effort class: want 0 to 3", c.TClass)
	case c.CNPDSCP < 0 || c.CNPDSCP > 63:
		return fmt.Errorf("--cnp-dscp %d: want 1 to 63 (0: 48)", c.CNPDSCP)
	}
	return nil
}

// ValidMTU reports whether m is a path MTU a QP takes.
func ValidMTU(m int) bool { return m == 256 || m == 512 || m == 1024 || m == 2048 }

// AutoDepth keeps about two Go-Back-N windows (128 packets of 1 KiB,
// 256 KiB) of messages in flight per QP — fewer leave the QP idle
// between messages, more only wait in the send queue — and at least two,
// so that the next message is queued when one completes; but no more
// than 16 MiB over all QPs, which would only lengthen every message's
// completion time (and take memory: the client has a buffer per message
// in flight).
func AutoDepth(size, qps int) int {
	const perQP, total = 256 << 10, 16 << 20
	target := min(perQP, total/qps)
	d := min(max((target+size-1)/size, 2), 64)
	if qps*d*size > total {
		d = max(1, total/(qps*size))
	}
	return d
}

// CCOptions are a run's congestion control: the client's flags, sent to the
// server in the hello so that both ends run the same one — DCQCN's
// notification point is the receiver's, its reaction point the sender's
// (the server's for READ responses).
type CCOptions struct {
	Name string `json:"name"` // none, fixed, dcqcn, timely or hpcc
	// LineBps is the rate DCQCN and TIMELY start every QP at and never
	// pass, or the rate the fixed pacer holds each QP to.
	LineBps uint64           `json:"line_bps,omitempty"`
	DCQCN   *cc.DCQCNConfig  `json:"dcqcn,omitempty"`
	Timely  *cc.TimelyConfig `json:"timely,omitempty"` // nil: the paper's parameters
	HPCC    *cc.HPCCConfig   `json:"hpcc,omitempty"`   // nil: the paper's and its ns-3 runs' parameters
}

// Pairs reports whether the congestion control works with transport t
// (stack.Pairs: not timely with dcp).
func (o *CCOptions) Pairs(t string) error {
	if o == nil {
		return nil
	}
	return stack.Pairs(t, o.Name)
}

// Build returns a fresh congestion control for one endpoint (nic/stack);
// nil for none.
func (o *CCOptions) Build() (nic.CC, error) {
	if o == nil {
		return nil, nil
	}
	c, err := stack.Config{CC: o.Name, LineBps: o.LineBps, DCQCN: o.DCQCN, Timely: o.Timely, HPCC: o.HPCC}.NewCC(0)
	if errors.Is(err, stack.ErrUnknownCC) {
		return nil, fmt.Errorf("unknown congestion control %q (roceperf has: %s)", o.Name, strings.Join(stack.CCs, ", "))
	}
	return c, err
}
