package lab

import (
	"bytes"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/tor/impair"
)

// TordConfig is the part of tord's YAML configuration (tor/pipeline/config.go)
// that testbed writes, one file per switch. Fields left out keep tord's
// defaults.
type TordConfig struct {
	Ports       []string `yaml:"ports"`
	Workers     int      `yaml:"workers"`
	Poll        string   `yaml:"poll"`
	MetricsAddr string   `yaml:"metrics_addr"`
	AdminAddr   string   `yaml:"admin_addr"`
	LogLevel    string   `yaml:"log_level"`
	XDP         struct {
		Frames   int `yaml:"frames,omitempty"`
		RingSize int `yaml:"ring_size,omitempty"`
	} `yaml:"xdp,omitempty"`
	Egress struct {
		Rate       string            `yaml:"rate"`
		QueueLimit string            `yaml:"queue_limit,omitempty"`
		PortRates  map[string]string `yaml:"port_rates,omitempty"`
	} `yaml:"egress"`
	Forwarding struct {
		Multipath string `yaml:"multipath"`
	} `yaml:"forwarding"`
	Impair *ImpairConfig `yaml:"impair,omitempty"`
	NetRT  *NetRTSection `yaml:"netrt,omitempty"`
	Trim   *TrimSection  `yaml:"trim,omitempty"`
	DCP    bool          `yaml:"dcp,omitempty"`
	LLR    *LLRSection   `yaml:"llr,omitempty"`
	ECN    *ECNSection   `yaml:"ecn,omitempty"`
	Trust  *TrustSection `yaml:"trust,omitempty"`
}

// TrustSection is tord's trust: section (tor/trust): the ports facing
// hosts, whose NetRT messages are refused, and the ports whose PFC and
// PAUSE frames pause egress. Both are lists that may be empty (core has
// no hosts), so neither is omitted.
type TrustSection struct {
	Hosts    []string `yaml:"hosts"`
	PFCPorts []string `yaml:"pfc_ports"`
}

// Trust returns the trust section of a switch with --trust: its host
// ports are those whose link leads to a host, and only its switch ports'
// PFC is honoured (hosts send none: NetRT's pauses go the other way).
func (p *Plan) Trust(node string) *TrustSection {
	t := &TrustSection{Hosts: []string{}, PFCPorts: p.switchPorts(node)}
	if t.PFCPorts == nil {
		t.PFCPorts = []string{}
	}
	sw := map[string]bool{}
	for _, s := range t.PFCPorts {
		sw[s] = true
	}
	for _, port := range p.Ports(node) {
		if !sw[port] {
			t.Hosts = append(t.Hosts, port)
		}
	}
	return t
}

// ECNSection is tord's ecn: section (cmd/tord/ecn.go) as testbed writes
// it: "ecn: {}" marks every port's data queue with the profile derived
// from the port's rate; a "default" profile replaces what it gives of
// that one's thresholds and probability.
type ECNSection struct {
	Profiles map[string]ECNProfile `yaml:"profiles,omitempty"`
}

// ECNProfile is one WRED_PROFILE-shaped profile of ECNSection.
type ECNProfile struct {
	MinThreshold string   `yaml:"min_threshold,omitempty"`
	MaxThreshold string   `yaml:"max_threshold,omitempty"`
	Probability  *float64 `yaml:"probability,omitempty"` // percent
}

// ECNSection returns the options' ecn section, nil without --ecn.
func (o *Options) ECNSection() *ECNSection {
	if !o.ECN {
		return nil
	}
	s := &ECNSection{}
	if o.ECNMin != "" || o.ECNMax != "" || o.ECNPMax != 0 {
		p := ECNProfile{MinThreshold: o.ECNMin, MaxThreshold: o.ECNMax}
		if o.ECNPMax != 0 {
			pmax := o.ECNPMax
			p.Probability = &pmax
		}
		s.Profiles = map[string]ECNProfile{"default": p}
	}
	return s
}

// TrimSection is tord's trim: section (tor/trim, DCP's lossless control
// plane): DCP data above the threshold of a port's data queue is trimmed
// to a header-only packet on the control queue, which WRR serves with
// the weight the incast degree implies.
type TrimSection struct {
	Threshold    string `yaml:"threshold,omitempty"`
	IncastDegree int    `yaml:"incast_degree,omitempty"`
}

// NetRTSection is tord's netrt: section as testbed writes it, with
// timings and budgets for the namespace testbed. Software switches on
// two shared cores have ToR-to-ToR RTTs of a few hundred microseconds
// and queues that can hold milliseconds of traffic, not the microseconds
// of a hardware fabric, so:
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
type NetRTSection struct {
	Fabric          []string `yaml:"fabric"`
	PoolBytes       string   `yaml:"pool_bytes"`
	PoolFrames      int      `yaml:"pool_frames"`
	Hold            string   `yaml:"hold"`
	TailProbe       string   `yaml:"tail_probe,omitempty"`
	BufferBytes     string   `yaml:"buffer_bytes"`
	BufferFrames    int      `yaml:"buffer_frames"`
	RequestDelay    string   `yaml:"request_delay,omitempty"`
	RequestInterval string   `yaml:"request_interval"`
	MaxRequests     int      `yaml:"max_requests"`
	Window          string   `yaml:"window,omitempty"`
	PausePriority   int      `yaml:"pause_priority,omitempty"`
}

// netRTFrames is the UMEM of a ToR running NetRT: the pool and the
// reordering buffer hold frames on top of what the rings keep filled.
const netRTFrames = 16384

// NetRT returns the netrt section of a ToR: its fabric ports are those
// whose link leads to another switch.
func (p *Plan) NetRT(node string) *NetRTSection {
	n := &NetRTSection{PoolBytes: "2MiB", PoolFrames: 2048, Hold: "20ms", TailProbe: "4ms", BufferBytes: "2MiB", BufferFrames: 2048,
		RequestInterval: "1ms", MaxRequests: 8, Window: "500us"}
	if o := p.Options; o.Skew > 0 && len(p.Sites) > 1 {
		n.RequestDelay = (time.Duration(len(p.Sites)-1)*o.Skew + 200*time.Microsecond).String()
	}
	n.Fabric = p.switchPorts(node)
	return n
}

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

// ImpairConfig is tord's impair: section as testbed writes it: the
// subset of impair.Config it uses, with empty fields left out so the
// file reads like the examples in tor/impair/doc.go.
type ImpairConfig struct {
	Seed  uint64       `yaml:"seed"`
	Rules []ImpairRule `yaml:"rules"`
}

// ImpairRule is one rule of ImpairConfig.
type ImpairRule struct {
	Port      string       `yaml:"port"`
	Direction string       `yaml:"direction"`
	Match     string       `yaml:"match"`
	Loss      float64      `yaml:"loss,omitempty"`
	Burst     *ImpairBurst `yaml:"burst,omitempty"`
	Corrupt   float64      `yaml:"corrupt,omitempty"`
	Delay     *ImpairDelay `yaml:"delay,omitempty"`
	Trim      bool         `yaml:"trim,omitempty"` // DCP data picked for loss is trimmed, not dropped
}

// ImpairDelay holds every matching frame for Mean (a Go duration).
type ImpairDelay struct {
	Mean string `yaml:"mean"`
}

// ImpairBurst is Gilbert–Elliott loss by mean rate and mean burst length.
type ImpairBurst struct {
	Loss   float64 `yaml:"loss"`
	Length float64 `yaml:"length"`
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
	OneWay bool   `json:"one_way,omitempty"`
	Seed   uint64 `json:"seed"`
}

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
// connections pass.
func (m Impairment) Rule(port string, k int) *ImpairRule {
	if m.Loss == 0 && m.Corrupt == 0 && (m.Skew == 0 || k == 0) {
		return nil
	}
	r := &ImpairRule{Port: port, Direction: "egress", Match: "fabric", Corrupt: m.Corrupt, Trim: m.Trim && m.Loss > 0}
	if m.Skew > 0 && k > 0 {
		r.Delay = &ImpairDelay{Mean: (time.Duration(k) * m.Skew).String()}
	}
	if m.Burst > 0 && m.Loss > 0 {
		r.Burst = &ImpairBurst{Loss: m.Loss, Length: m.Burst}
	} else {
		r.Loss = m.Loss
	}
	return r
}

// rules appends the rules of site k on port to c: the egress rule, and
// unless OneWay its loss and corruption on ingress too.
func (m Impairment) rules(c *ImpairConfig, port string, k int) {
	r := m.Rule(port, k)
	if r == nil {
		return
	}
	c.Rules = append(c.Rules, *r)
	if !m.OneWay && (m.Loss > 0 || m.Corrupt > 0) {
		in := ImpairRule{Port: port, Direction: "ingress", Match: r.Match, Loss: r.Loss, Burst: r.Burst, Corrupt: r.Corrupt}
		c.Rules = append(c.Rules, in)
	}
}

// Impair returns the impair section for sites 0, 1, … on the given
// ports; nil when nothing is impaired.
func (m Impairment) Impair(ports ...string) *ImpairConfig {
	c := &ImpairConfig{Seed: m.Seed}
	for k, p := range ports {
		m.rules(c, p, k)
	}
	if len(c.Rules) == 0 {
		return nil
	}
	return c
}

// ImpairOf returns the impair section of one switch: the rules of the
// plan's sites on it; nil when nothing is impaired there.
func (p *Plan) ImpairOf(node string, m Impairment) *ImpairConfig {
	c := &ImpairConfig{Seed: m.Seed}
	for k, s := range p.Sites {
		if s.Node == node {
			m.rules(c, s.Port, k)
		}
	}
	if len(c.Rules) == 0 {
		return nil
	}
	return c
}

// Impair returns the options' impair section at one site, as
// tor/impair's own type, for validation.
func (o *Options) Impair(s Site) impair.Config {
	var c impair.Config
	if ic := o.Impairment().Impair(s.Port); ic != nil {
		if err := yamlRoundTrip(ic, &c); err != nil {
			panic(err) // our own types always encode
		}
	}
	return c
}

// yamlRoundTrip encodes v and decodes the result strictly into out.
func yamlRoundTrip(v, out any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return decodeStrict(b, out)
}

// TordConfigs returns each switch's configuration, by node name.
func (p *Plan) TordConfigs() map[string]*TordConfig {
	out := map[string]*TordConfig{}
	o := p.Options
	for _, n := range p.Switches() {
		ports, _ := p.tordPorts(n.Name) // NewPlan checked it
		c := &TordConfig{
			Ports:       ports,
			Workers:     o.NumWorkers(),
			Poll:        o.Poll,
			MetricsAddr: net.JoinHostPort(p.metricsHost(n.Name), strconv.Itoa(o.MetricsPort)),
			AdminAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(o.MetricsPort+1)),
			LogLevel:    o.LogLevel,
		}
		c.XDP.Frames, c.XDP.RingSize = xdpSizes(len(c.Ports))
		c.Egress.Rate = o.Rate
		c.Egress.QueueLimit = o.QueueLimit
		c.ECN = o.ECNSection()
		c.Forwarding.Multipath = o.Multipath
		c.Impair = p.ImpairOf(n.Name, o.Impairment())
		if o.Trim {
			c.Trim = &TrimSection{Threshold: o.TrimThreshold, IncastDegree: o.IncastDegree}
		}
		c.DCP = o.DCP
		c.LLR = p.LLR(n.Name)
		if o.Trust {
			c.Trust = p.Trust(n.Name)
		}
		if n.Name == "tor1" && len(o.PathRates) > 0 {
			// Unequal paths: tor1's port toward core k is shaped to
			// the k-th rate, where adaptive routing sees the queues.
			c.Egress.PortRates = map[string]string{}
			for k, r := range o.PathRates {
				c.Egress.PortRates[fmt.Sprintf("core%d", k+1)] = r
			}
		}
		if node, port := p.Bottleneck(); n.Name == node && o.BottleneckRate != "" && port != "" {
			if c.Egress.PortRates == nil {
				c.Egress.PortRates = map[string]string{}
			}
			c.Egress.PortRates[port] = o.BottleneckRate
		}
		if o.NetRT && n.Role == RoleToR {
			c.NetRT = p.NetRT(n.Name)
			c.XDP.Frames = max(c.XDP.Frames, netRTFrames)
		}
		out[n.Name] = c
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

// Marshal returns the configuration as tord reads it, with a header.
func (c *TordConfig) Marshal(node string) ([]byte, error) {
	b, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode tord config of %s: %w", node, err)
	}
	head := fmt.Sprintf("# tord configuration of switch %s, written by testbed (cmd/testbed).\n", node)
	return append([]byte(head), b...), nil
}

// Unmarshal reads a configuration as Marshal wrote it, rejecting unknown
// fields as tord does.
func (c *TordConfig) Unmarshal(b []byte) error { return decodeStrict(b, c) }

// decodeStrict decodes YAML into out, rejecting unknown fields as tord
// does.
func decodeStrict(b []byte, out any) error {
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	return d.Decode(out)
}
