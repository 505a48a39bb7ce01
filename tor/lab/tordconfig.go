package lab

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"rocetor/dataplane"
	"rocetor/tor/impair"
	"rocetor/tor/pipeline"
	"rocetor/tor/trim"
)

// Trust returns the trust section of a switch with --trust: its host
// ports are those whose link leads to a host, and only its switch ports'
// PFC is honoured (hosts send none: NetRT's pauses go the other way).
// Both lists are there even when empty (core has no hosts): an empty
// pfc_ports honours no port's PFC, an absent one every port's.
func (p *Plan) Trust(node string) pipeline.TrustConfig {
	pfc := p.switchPorts(node)
	if pfc == nil {
		pfc = []string{}
	}
	t := pipeline.TrustConfig{Hosts: []string{}, PFCPorts: &pfc}
	sw := map[string]bool{}
	for _, s := range pfc {
		sw[s] = true
	}
	for _, port := range p.Ports(node) {
		if !sw[port] {
			t.Hosts = append(t.Hosts, port)
		}
	}
	return t
}

// ECNSection returns the options' ecn section, nil without --ecn:
// "ecn: {}" marks every port's data queue with the profile derived from
// the port's rate; a "default" profile replaces what it gives of that
// one's thresholds and probability.
func (o *Options) ECNSection() *pipeline.ECNConfig {
	if !o.ECN {
		return nil
	}
	s := &pipeline.ECNConfig{}
	if o.ECNMin != "" || o.ECNMax != "" || o.ECNPMax != 0 {
		p := pipeline.ECNProfileConfig{MinThreshold: size(o.ECNMin), MaxThreshold: size(o.ECNMax)}
		if o.ECNPMax != 0 {
			pmax := o.ECNPMax
			p.Probability = &pmax
		}
		s.Profiles = map[string]pipeline.ECNProfileConfig{pipeline.DefaultECNProfile: p}
	}
	return s
}

// NetRT returns the netrt section of a ToR, with timings and budgets for
// the namespace testbed; its fabric ports are those whose link leads to
// another switch. Software switches on two shared cores have ToR-to-ToR
// RTTs of a few hundred microseconds and queues that can hold
// milliseconds of traffic, not the microseconds of a hardware fabric, so:
//   - hold is 20 ms: a duplicate must outlive a retransmission that
//     waited behind a full queue at core and was lost again (ACKs retire
//     nearly all duplicates long before);
//   - window, the span over which requested bytes count against k_low,
//     is about one RTT (500 µs), as tor/netrt's default (hold) is on
//     hardware; a window of milliseconds would count a whole burst of
//     random losses as congestion, pause the sender and pace its
//     retransmissions, and the sender's RTO would fire;
//   - requests repeat every millisecond, eight times;
//   - a flow's last packet, unacknowledged 4 ms after it left the
//     switch's port, is sent again (tail_probe): a lost last packet of a
//     message leaves tor2 nothing to see the gap by, and the sender's
//     RTO is 16 ms;
//   - with --skew, the first request of a gap waits for the paths'
//     delay spread plus 200 µs (request_delay): most gaps are then
//     reordering, and a request at once would have tor1 resend packets
//     that are only late, whose copies overload tor2's host port.
func (p *Plan) NetRT(node string) pipeline.NetRTConfig {
	n := pipeline.NetRTConfig{PoolBytes: 2 << 20, PoolFrames: 2048, Hold: 20 * time.Millisecond, TailProbe: 4 * time.Millisecond,
		BufferBytes: 2 << 20, BufferFrames: 2048, RequestInterval: time.Millisecond, MaxRequests: 8, Window: 500 * time.Microsecond}
	if o := p.Options; o.Skew > 0 && len(p.Sites) > 1 {
		n.RequestDelay = time.Duration(len(p.Sites)-1)*o.Skew + 200*time.Microsecond
	}
	n.Fabric = p.switchPorts(node)
	return n
}

// netRTFrames is the UMEM of a ToR running NetRT: the pool and the
// reordering buffer hold frames on top of what the rings keep filled.
const netRTFrames = 16384

// switchPorts returns a node's ports whose links lead to another switch.
func (p *Plan) switchPorts(node string) []string {
	var out []string
	for _, l := range p.Links {
		for _, e := range [][2]End{{l.A, l.B}, {l.B, l.A}} {
			if e[0].Node == node && p.Node(e[1].Node).Kind == SwitchNode {
				out = append(out, e[0].Iface)
			}
		}
	}
	return out
}

// ownedPorts returns node's host ports that c would have its workers
// share (pipeline.Config.SharedPorts: --rate 0 with netrt or llr): a
// host link has one tx queue at the switch end (workers.go), so worker
// 0 alone must send to the host. nil where none would be shared, which
// leaves every other configuration as it was.
func (p *Plan) ownedPorts(node string, c *pipeline.Config) []string {
	shared := c.SharedPorts()
	if shared == nil {
		return nil
	}
	var out []string
	sw := p.switchPorts(node)
	for i, port := range c.Ports {
		if shared[i] && !slices.Contains(sw, port) {
			out = append(out, port)
		}
	}
	return out
}

// rate and size read a rate or a size of the options, which
// Options.Validate checked; "" is 0.
func rate(s string) dataplane.Rate {
	var r dataplane.Rate
	if s != "" {
		_ = r.UnmarshalText([]byte(s))
	}
	return r
}

func size(s string) dataplane.Bytes {
	var b dataplane.Bytes
	if s != "" {
		_ = b.UnmarshalText([]byte(s))
	}
	return b
}

// Impairment is what the impair sites do: a loss rate, optionally in
// bursts, a corruption rate, and a delay that grows by Skew from one
// site to the next (unequal paths for the multipath topology).
type Impairment struct {
	Loss    float64       `json:"loss"`
	Burst   float64       `json:"burst,omitempty"` // mean burst length in packets; 0 = independent losses
	Corrupt float64       `json:"corrupt,omitempty"`
	Skew    time.Duration `json:"skew,omitempty"` // site k (from 0, in plan order) delays the fabric's frames by k × Skew
	Trim    bool          `json:"trim,omitempty"` // DCP data packets picked for loss are trimmed to header-only packets
	// OneWay keeps loss and corruption to the frames a site sends on;
	// otherwise the frames it receives on that port lose as much, so
	// what recovery sends back (requests, notices, ACKs) meets the
	// loss too.
	OneWay bool `json:"one_way,omitempty"`
	// Scope is what the loss may hit: LossAll (or empty), every frame
	// of the fabric, or LossData, the data plane alone (impair's match
	// data: never a header-only packet, ACK, NAK, CNP or PFC frame), as
	// DCP's testbed loses packets (seed 002 §6.1).
	Scope string `json:"scope,omitempty"`
	Seed  uint64 `json:"seed"`
}

// Loss scopes of an Impairment.
const (
	LossAll  = "all"
	LossData = "data"
)

// Impairment returns the options' impairment.
func (o *Options) Impairment() Impairment {
	return Impairment{Loss: o.Loss, Burst: o.Burst, Corrupt: o.Corrupt, Skew: o.Skew, OneWay: o.OneWay, Seed: o.Seed}
}

// Zero reports whether the impairment does nothing.
func (m Impairment) Zero() bool { return m.Loss == 0 && m.Corrupt == 0 && m.Skew == 0 }

// Rule returns the impair rule for site k, port port, or nil when it
// does nothing there. The fabric's frames are impaired — RoCEv2, the link
// shim's frames, PFC — so a recovery mechanism's own copies and control
// frames meet the loss too; ARP, ND and the experiment's own TCP control
// connections pass. With Scope LossData only the data plane is.
func (m Impairment) Rule(port string, k int) *impair.Rule {
	if m.Loss == 0 && m.Corrupt == 0 && (m.Skew == 0 || k == 0) {
		return nil
	}
	r := &impair.Rule{Port: port, Direction: "egress", Match: "fabric", Corrupt: m.Corrupt, Trim: m.Trim && m.Loss > 0}
	if m.Scope == LossData {
		r.Match = "data"
	}
	if m.Skew > 0 && k > 0 {
		r.Delay = &impair.Delay{Mean: time.Duration(k) * m.Skew}
	}
	if m.Burst > 0 && m.Loss > 0 {
		r.Burst = &impair.Burst{Loss: m.Loss, Length: m.Burst}
	} else {
		r.Loss = m.Loss
	}
	return r
}

// rules appends the rules of site k on port to c: the egress rule, and
// unless OneWay its loss and corruption on ingress too.
func (m Impairment) rules(c *impair.Config, port string, k int) {
	r := m.Rule(port, k)
	if r == nil {
		return
	}
	c.Rules = append(c.Rules, *r)
	if !m.OneWay && (m.Loss > 0 || m.Corrupt > 0) {
		in := impair.Rule{Port: port, Direction: "ingress", Match: r.Match, Loss: r.Loss, Corrupt: r.Corrupt}
		if m.Scope == LossData {
			in.Trim = r.Trim // data the other way is trimmed too; with LossAll it is destroyed, as recorded
		}
		if r.Burst != nil {
			b := *r.Burst
			in.Burst = &b
		}
		c.Rules = append(c.Rules, in)
	}
}

// Impair returns the impair section for sites 0, 1, … on the given
// ports; the zero section (no rules) when nothing is impaired.
func (m Impairment) Impair(ports ...string) impair.Config {
	c := impair.Config{Seed: m.Seed}
	for k, p := range ports {
		m.rules(&c, p, k)
	}
	if len(c.Rules) == 0 {
		return impair.Config{}
	}
	return c
}

// ImpairOf returns the impair section of one switch: the rules of the
// plan's sites on it; the zero section when nothing is impaired there.
func (p *Plan) ImpairOf(node string, m Impairment) impair.Config {
	c := impair.Config{Seed: m.Seed}
	for k, s := range p.Sites {
		if s.Node == node {
			m.rules(&c, s.Port, k)
		}
	}
	if len(c.Rules) == 0 {
		return impair.Config{}
	}
	return c
}

// Impair returns the options' impair section at one site.
func (o *Options) Impair(s Site) impair.Config { return o.Impairment().Impair(s.Port) }

// TordConfigs returns each switch's tord configuration, by node name:
// what testbed writes to its file (MarshalTordConfig) and the simulator
// builds it from.
func (p *Plan) TordConfigs() map[string]*pipeline.Config {
	out := map[string]*pipeline.Config{}
	o := p.Options
	for _, n := range p.Switches() {
		ports, _ := p.tordPorts(n.Name) // NewPlan checked it
		c := pipeline.DefaultConfig()
		c.Ports = ports
		c.Workers = o.NumWorkers()
		c.Poll = o.Poll
		c.CPU, _ = o.tordCPU() // Validate checked it
		c.MetricsAddr = net.JoinHostPort(p.metricsHost(n.Name), strconv.Itoa(o.MetricsPort))
		c.AdminAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(o.MetricsPort+1))
		c.LogLevel = o.LogLevel
		if frames, ring := xdpSizes(len(c.Ports)); frames > 0 {
			c.XDP.Frames, c.XDP.RingSize = frames, ring
		}
		c.Egress.Rate = rate(o.Rate)
		if o.QueueLimit != "" {
			c.Egress.QueueLimit = size(o.QueueLimit)
		}
		c.ECN = o.ECNSection()
		if o.QoS {
			c.QoS = &pipeline.QoSConfig{}
		}
		c.Forwarding.Multipath = o.Multipath
		c.Impair = p.ImpairOf(n.Name, o.Impairment())
		if o.Trim {
			c.Trim = &trim.Config{Threshold: size(o.TrimThreshold), IncastDegree: o.IncastDegree}
		}
		c.DCP = o.DCP
		c.LLR = p.LLR(n.Name)
		if o.Trust {
			c.Trust = p.Trust(n.Name)
		}
		if n.Name == "tor1" && len(o.PathRates) > 0 {
			// Unequal paths: tor1's port toward core k is shaped to
			// the k-th rate, where adaptive routing sees the queues.
			c.Egress.PortRates = map[string]dataplane.Rate{}
			for k, r := range o.PathRates {
				c.Egress.PortRates[fmt.Sprintf("core%d", k+1)] = rate(r)
			}
		}
		if node, port := p.Bottleneck(); n.Name == node && o.BottleneckRate != "" && port != "" {
			if c.Egress.PortRates == nil {
				c.Egress.PortRates = map[string]dataplane.Rate{}
			}
			c.Egress.PortRates[port] = rate(o.BottleneckRate)
		}
		if o.NetRT && n.Role == RoleToR {
			c.NetRT = p.NetRT(n.Name)
			// Rings and NetRT's pool and buffer both: a ToR with four
			// ports (multipath, three paths) fills 16384 frames with
			// rings alone.
			ring := cmp.Or(c.XDP.RingSize, 2048)
			need := 2*ring*len(c.Ports) + c.NetRT.Frames()
			c.XDP.Frames = max(c.XDP.Frames, netRTFrames)
			for c.XDP.Frames < need {
				c.XDP.Frames *= 2 // tord wants a power of two
			}
		}
		if c.LLR.On() {
			// Room for the frames llr's Tx buffers hold in place of
			// copies (llr.tx_frames' default), beyond the rings and NetRT's.
			ring := cmp.Or(c.XDP.RingSize, 2048)
			need := 2*ring*len(c.Ports) + c.LLRFrames()
			if c.NetRT.On() {
				need += c.NetRT.Frames()
			}
			for c.XDP.Frames < need {
				c.XDP.Frames *= 2
			}
		}
		c.Egress.OwnedPorts = p.ownedPorts(n.Name, &c)
		out[n.Name] = &c
	}
	return out
}

// metricsHost is where a switch's tord serves /metrics: its management
// address with --mgmt, loopback otherwise. The admin API stays on
// loopback either way.
func (p *Plan) metricsHost(node string) string {
	if m := p.MgmtOf(node); m != nil {
		return m.Addr.Addr().String()
	}
	return "127.0.0.1"
}

// xdpSizes keeps tord's UMEM at 8192 frames of 4 KiB (32 MiB) where its
// defaults fit, and within 16384 frames otherwise: tord wants at least
// 2 × ring size × ports frames, so switches with many ports get smaller
// rings. Zero means tord's default.
func xdpSizes(ports int) (frames, ring int) {
	const defFrames, defRing = 8192, 2048
	if 2*defRing*ports <= defFrames {
		return 0, 0
	}
	ring = defRing
	for ring > 256 && 2*ring*ports > 16384 {
		ring /= 2
	}
	frames = defFrames
	for frames < 2*ring*ports {
		frames *= 2
	}
	return frames, ring
}

// MarshalTordConfig returns a switch's configuration as testbed writes
// it to the switch's file: tord's YAML (pipeline.Config.Marshal) under a
// header naming the switch.
func MarshalTordConfig(node string, c *pipeline.Config) ([]byte, error) {
	b, err := c.Marshal("tord configuration of switch " + node + ", written by testbed (cmd/testbed).")
	if err != nil {
		return nil, fmt.Errorf("tord config of %s: %w", node, err)
	}
	return b, nil
}
