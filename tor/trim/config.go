package trim

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// ErrConfig wraps every configuration error; the message names the field.
var ErrConfig = errors.New("trim: invalid config")

// Defaults of the zero fields of Config.
const (
	DefaultThreshold    = 64 << 10 // bytes of data queue
	DefaultIncastDegree = 8        // N
	DefaultMinWeight    = 0.1      // w when r ≤ N−1
)

// HOLen is the length of an untagged IPv4 header-only packet: Ethernet
// 14, IPv4 20, UDP 8, BTH 12, DCPETH 8, ICRC 4 (docs/wire-formats.md).
const HOLen = rocev2.EthernetLen + rocev2.IPv4MinLen + rocev2.UDPLen + rocev2.BTHLen + rocev2.DCPLen + rocev2.ICRCLen

// DataLen is the length of an untagged IPv4 DCP WRITE packet carrying
// 1024 bytes, the RoCE MTU DCP's testbed runs: HOLen plus the RETH every
// DCP WRITE packet carries plus the payload, 1106 bytes.
const DataLen = HOLen + rocev2.RETHLen + 1024

// DefaultRatio is r, the data:header-only size ratio, when Config.Ratio
// is 0: DataLen/HOLen = 1106/66 ≈ 16.76. Set Ratio for another MTU
// (r = (MTU + 82)/66 over IPv4; 86-byte HO packets over IPv6).
const DefaultRatio = float64(DataLen) / float64(HOLen)

// Config is the stage's configuration, the value under "trim:" in tord's
// YAML. Zero fields take the defaults above.
type Config struct {
	// Threshold is the data queue depth in bytes beyond which a packet
	// is trimmed or dropped: a packet is trimmed when the depth plus
	// the packet would exceed it.
	Threshold dataplane.Bytes `yaml:"threshold"`
	// IncastDegree is N, the switch radix the control queue is sized
	// for: an (N−1)-to-1 incast, every packet trimmed, stays lossless
	// on the control queue (seed 002 §4.2).
	IncastDegree int `yaml:"incast_degree"`
	// Ratio is r, data packet size over header-only packet size; 0
	// means DefaultRatio.
	Ratio float64 `yaml:"ratio"`
	// MinWeight is the weight used when r ≤ N−1, where no weight
	// guarantees a lossless control queue (§4.2; §6.3 finds a small one
	// does well).
	MinWeight float64 `yaml:"min_weight"`
	// ControlLimit bounds the control queue of each trimming port in
	// bytes; a header-only packet that would pass it is dropped
	// (queue_full, counted as a header-only loss). 0 leaves the
	// control queue egress.queue_limit and the shared buffer's dynamic
	// threshold, as every other queue. The seed gives its control
	// queue no size of its own (§4.2 sizes only its weight); this
	// bounds it to find the room at which header-only packets are lost.
	ControlLimit dataplane.Bytes `yaml:"control_limit"`
	// Ports are the names of the ports whose egress trims; empty means
	// every port.
	Ports []string `yaml:"ports"`
}

func bad(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

// Validate checks the configuration and names the first bad field. ports,
// when not nil, are the switch's interface names, which Ports must use.
func (c *Config) Validate(ports []string) error {
	if c.Threshold < 0 {
		return bad("threshold", "%d bytes: want ≥ 0", c.Threshold)
	}
	if c.IncastDegree != 0 && c.IncastDegree < 2 {
		return bad("incast_degree", "%d: want ≥ 2 (an N−1 to 1 incast)", c.IncastDegree)
	}
	if c.Ratio != 0 && !(c.Ratio > 1 && c.Ratio < 1e6) {
		return bad("ratio", "%v: want a data:header-only size ratio > 1, or 0 for %.2f", c.Ratio, DefaultRatio)
	}
	if c.MinWeight != 0 && !(c.MinWeight > 0 && c.MinWeight <= 1000) {
		return bad("min_weight", "%v: want a weight in (0, 1000]", c.MinWeight)
	}
	if c.ControlLimit != 0 && c.ControlLimit < HOLen {
		return bad("control_limit", "%d bytes: want 0 (none) or at least a header-only packet, %d", c.ControlLimit, HOLen)
	}
	seen := map[string]bool{}
	for i, p := range c.Ports {
		if p == "" || seen[p] {
			return bad(fmt.Sprintf("ports[%d]", i), "empty or repeated port %q", p)
		}
		seen[p] = true
		if ports != nil && !slices.Contains(ports, p) {
			return bad(fmt.Sprintf("ports[%d]", i), "%q is not one of the switch's ports %v", p, ports)
		}
	}
	return nil
}

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.IncastDegree == 0 {
		c.IncastDegree = DefaultIncastDegree
	}
	if c.Ratio == 0 {
		c.Ratio = DefaultRatio
	}
	if c.MinWeight == 0 {
		c.MinWeight = DefaultMinWeight
	}
	return c
}

// Trims reports whether the port named name trims.
func (c *Config) Trims(name string) bool {
	return len(c.Ports) == 0 || slices.Contains(c.Ports, name)
}

// Weight returns w, the control:data ratio of scheduled bytes (seed 002
// §4.2): an N−1 to 1 incast whose packets are all trimmed sends the
// control queue B·(N−1)/r, and WRR drains it at B·w/(1+w), so
//
//	w = (N−1) / (r−N+1)
//
// keeps it lossless. The formula holds only for r > N−1; otherwise
// Weight returns MinWeight.
func (c Config) Weight() float64 {
	c = c.withDefaults()
	n1 := float64(c.IncastDegree - 1)
	if c.Ratio <= n1 {
		return c.MinWeight
	}
	return n1 / (c.Ratio - n1)
}

// Queue names the stage and WRR act on, as dataplane.DefaultEgress names
// them.
const (
	ControlQueue = "control"
	DataQueue    = "data"
)

// weightScale is the integer weight of the lighter of the two queues,
// and maxWeight caps the heavier one; see WRR.
const (
	weightScale = 1000
	maxWeight   = 1 << 16
)

// Weights returns the integer DRR weights, control and data, whose ratio
// is w: with x = max(w, 1/w), the lighter queue weighs 1000 and the
// heavier round(1000·x) up to x = 65.5; beyond, the lighter weighs
// floor(65536/x) and the heavier at most 65536. Rounding the heavier
// weight errs by at most 0.5 in 1000 (0.05 %); only x > 65536, which
// §4.2's formula gives for r within 0.0001 of N−1, is capped at 65536.
func Weights(w float64) (control, data int) {
	x := w
	if w < 1 {
		x = 1 / w
	}
	light := weightScale
	if x*weightScale > maxWeight {
		light = max(1, int(maxWeight/x))
	}
	heavy := min(maxWeight, int(math.Round(x*float64(light))))
	if w < 1 {
		return light, heavy
	}
	return heavy, light
}

// WRR returns eg with the DCP switch's WRR (seed 002 §4.2, §5): the
// control and data queues on one strict-priority level, the data queue's
// (normally level 1, "data"), sharing it by deficit round robin with
// weights in the ratio Weight():1. The other queues keep their levels and
// their quanta: retransmit stays above (NetRT's recovered packets are
// few and paced), idle below.
//
// The DRR quantum becomes 1 byte per unit of weight, so that a round
// serves about 1000 bytes of the lighter queue (Weights scales it to
// 1000) and w times that of the other: the ratio holds over a few frames,
// not only over megabytes, and a round is at most 64 KiB. The price is a
// few more visits per frame: dequeuing 1106-byte frames took 17–19 ns a
// frame under strict priority and 22–27 ns with this DRR (quantum 1;
// 16 ns with quantum 4), on the shared 2-core AMD EPYC machine, a cost
// lost in the 200–260 ns a frame takes through the whole worker
// (BenchmarkTrim).
// Queues alone on their level are served without DRR (dataplane
// Egress.pick), and the weights of any others sharing a level are scaled
// by the old quantum, so their shares do not change. With ControlLimit
// the control queue's byte budget is the lesser of it and eg's. eg's
// Queues are copied, not modified.
func (c Config) WRR(eg dataplane.EgressConfig) (dataplane.EgressConfig, error) {
	ci, di := eg.QueueIndexByName(ControlQueue), eg.QueueIndexByName(DataQueue)
	if ci < 0 || di < 0 {
		return eg, fmt.Errorf("%w: the egress has no %q or no %q queue", ErrConfig, ControlQueue, DataQueue)
	}
	old := eg.Quantum
	if old == 0 {
		old = 1500
	}
	eg.Queues = slices.Clone(eg.Queues)
	for i := range eg.Queues {
		eg.Queues[i].Weight *= old
	}
	cw, dw := Weights(c.Weight())
	eg.Queues[ci].Level = eg.Queues[di].Level
	eg.Queues[ci].Weight, eg.Queues[di].Weight = cw, dw
	if l := int(c.ControlLimit); l > 0 && l < eg.Queues[ci].Limit {
		eg.Queues[ci].Limit = l
	}
	eg.Quantum = 1
	return eg, nil
}
