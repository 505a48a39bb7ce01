package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
)

// ErrUsage wraps every error in what the user asked for (flags, names,
// values); main exits 2 on it.
var ErrUsage = errors.New("usage")

func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Topologies testbed can build.
var Topologies = []string{"chain", "dumbbell", "multipath", "link"}

// Options describe a testbed to build: its shape and what every switch's
// tord is told. The zero value is not ready; DefaultOptions is.
type Options struct {
	Topology string `json:"topology"` // chain, dumbbell, multipath or link
	Prefix   string `json:"prefix"`   // namespace name prefix, e.g. rtb-chain-

	Senders   int `json:"senders,omitempty"`   // dumbbell, multipath: hosts behind tor1
	Receivers int `json:"receivers,omitempty"` // dumbbell, multipath: hosts behind tor2
	Paths     int `json:"paths,omitempty"`     // multipath: parallel core switches

	Rate          string        `json:"rate"`                     // every switch port's egress rate, e.g. 1G; "0" unshaped
	Loss          float64       `json:"loss,omitempty"`           // drop probability at the impair sites (the fabric's frames: RoCEv2, link shim, PFC)
	Burst         float64       `json:"burst,omitempty"`          // mean burst length in packets: Gilbert–Elliott instead of Bernoulli
	Corrupt       float64       `json:"corrupt,omitempty"`        // FCS-error probability at the impair sites
	Skew          time.Duration `json:"skew,omitempty"`           // extra delay per impair site: site k delays k × skew
	OneWay        bool          `json:"one_way,omitempty"`        // loss and corruption only on what a site sends, not also on what it receives
	Seed          uint64        `json:"seed"`                     // impair seed
	Multipath     string        `json:"multipath"`                // ecmp, spray or adaptive
	NetRT         bool          `json:"netrt,omitempty"`          // tor1 and tor2 run NetRT (tor/netrt)
	Trim          bool          `json:"trim,omitempty"`           // every switch trims DCP data above the threshold (tor/trim)
	DCP           bool          `json:"dcp,omitempty"`            // every switch parses DCP headers (a DCP fabric; implied by Trim)
	LLR           string        `json:"llr,omitempty"`            // link-local retransmission on every switch-to-switch link: "", off, nb or blocking
	LLRMonitor    bool          `json:"llr_monitor,omitempty"`    // llr starts dormant, watching; the corruption monitor switches it on
	Trust         bool          `json:"trust,omitempty"`          // every switch names its host ports and honours PFC from switches only (tord's trust section)
	TrimThreshold string        `json:"trim_threshold,omitempty"` // data-queue depth that trims, e.g. 64KiB; "": tord's default
	IncastDegree  int           `json:"incast_degree,omitempty"`  // N of the WRR weight; 0: tord's default
	PathRates     []string      `json:"path_rates,omitempty"`     // multipath: tor1's rate toward core k, for unequal paths
	// BottleneckRate shapes tor1's port toward the fabric (tor2 on the
	// dumbbell and the link, core on the chain) below the others, so
	// that the senders' flows queue there; "": --rate.
	BottleneckRate string `json:"bottleneck_rate,omitempty"`
	QueueLimit     string `json:"queue_limit,omitempty"` // every egress queue's byte budget, e.g. 256KiB; "": tord's (1 MiB)
	// ECN has every switch mark ECN on its data queues (DCQCN's
	// congestion point, tord's ecn section) with the profile of ECNMin,
	// ECNMax and ECNPMax; what those leave empty is tord's rate-derived
	// default.
	ECN     bool    `json:"ecn,omitempty"`
	ECNMin  string  `json:"ecn_min,omitempty"`  // Kmin, e.g. 20KB
	ECNMax  string  `json:"ecn_max,omitempty"`  // Kmax
	ECNPMax float64 `json:"ecn_pmax,omitempty"` // Pmax in percent; 0: the default's
	// QoS gives every switch tord's default traffic classes (qos: {}):
	// RoCE lossless, CNPs strict, everything else lossy, each on its
	// own queue. Off, every frame shares the data queue, as the
	// recorded experiments ran.
	QoS  bool   `json:"qos,omitempty"`
	Poll string `json:"poll"` // tord polling mode
	// TordCPU schedules every tord's workers (tord's cpu section):
	// "fifo:P" or "rr:P" a real-time priority P, "other:N" nice N;
	// "": the kernel's default, as the recorded experiments ran.
	TordCPU     string `json:"tord_cpu,omitempty"`
	Workers     int    `json:"workers,omitempty"` // every tord's workers, and queues of the veths they poll (veths); 0 means 1
	IPv6        bool   `json:"ipv6"`              // IPv6 addresses and routes beside IPv4
	MetricsPort int    `json:"metrics_port"`      // tord's /metrics port in each switch namespace
	LogLevel    string `json:"log_level"`         // tord's log level
	Mgmt        string `json:"mgmt,omitempty"`    // the management network's IPv4 /24 (mgmt.go); "": none, metrics on loopback
}

// tordCPU is the cpu section --tord-cpu asks for, validated against
// --poll as tord would.
func (o *Options) tordCPU() (pipeline.CPUConfig, error) {
	var c pipeline.CPUConfig
	if o.TordCPU == "" {
		return c, nil
	}
	policy, v, ok := strings.Cut(o.TordCPU, ":")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		return c, Usagef("--tord-cpu %q: want fifo:PRIORITY, rr:PRIORITY or other:NICE", o.TordCPU)
	}
	c.Policy = policy
	if policy == "other" {
		c.Nice = n
	} else {
		c.Priority = n
	}
	cfg := pipeline.DefaultConfig()
	cfg.Ports, cfg.Poll, cfg.CPU = []string{"a", "b"}, o.Poll, c
	if err := cfg.Validate(); err != nil {
		return c, Usagef("--tord-cpu %q: %v", o.TordCPU, err)
	}
	return c, nil
}

// DefaultOptions are the flags' defaults.
func DefaultOptions(topology string) Options {
	senders := 1
	if topology == "dumbbell" {
		senders = 2
	}
	return Options{
		Topology:    topology,
		Senders:     senders,
		Receivers:   1,
		Paths:       2,
		Rate:        "1G",
		Seed:        1,
		Multipath:   "ecmp",
		Poll:        "adaptive",
		Workers:     1,
		IPv6:        true,
		MetricsPort: 9478,
		LogLevel:    "info",
	}
}

// DefaultPrefix is the namespace prefix of a topology when --prefix is
// not given.
func DefaultPrefix(topology string) string { return "rtb-" + topology + "-" }

var prefixRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}-$`)

// ValidPrefix reports whether prefix is a namespace name prefix testbed
// takes: letters, digits, '_', '.' or '-', at most 40, ending in '-'.
func ValidPrefix(prefix string) bool { return prefixRE.MatchString(prefix) }

// Validate checks every option and names the first bad one.
func (o *Options) Validate() error {
	switch o.Topology {
	case "chain", "link":
	case "dumbbell", "multipath":
		if o.Senders < 1 || o.Senders > 32 {
			return Usagef("--senders %d: want 1 to 32", o.Senders)
		}
		if o.Receivers < 1 || o.Receivers > 32 {
			return Usagef("--receivers %d: want 1 to 32", o.Receivers)
		}
		if o.Topology == "multipath" && (o.Paths < 1 || o.Paths > 16) {
			return Usagef("--paths %d: want 1 to 16", o.Paths)
		}
	default:
		return Usagef("topology %q: want one of %s", o.Topology, strings.Join(Topologies, ", "))
	}
	if !prefixRE.MatchString(o.Prefix) {
		return Usagef("--prefix %q: want letters, digits, '_', '.' or '-', at most 40, ending in '-'", o.Prefix)
	}
	var r dataplane.Rate
	if err := r.UnmarshalText([]byte(o.Rate)); err != nil {
		return Usagef("--rate: %v", err)
	}
	switch o.Multipath {
	case "ecmp", "spray", "adaptive":
	default:
		return Usagef("--multipath %q: want ecmp, spray or adaptive", o.Multipath)
	}
	switch o.Poll {
	case "busy", "adaptive", "interrupt", "spin":
	default:
		return Usagef("--poll %q: want busy, adaptive, interrupt or spin", o.Poll)
	}
	if err := o.validateWorkers(); err != nil {
		return err
	}
	if _, err := o.tordCPU(); err != nil {
		return err
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return Usagef("--log-level %q: want debug, info, warn or error", o.LogLevel)
	}
	if o.MetricsPort < 1 || o.MetricsPort > 65534 {
		return Usagef("--metrics-port %d: want 1 to 65534 (the next port serves pprof)", o.MetricsPort)
	}
	if len(o.PathRates) > 0 && (o.Topology != "multipath" || len(o.PathRates) != o.Paths) {
		return Usagef("path rates %v: want one per path of a multipath topology", o.PathRates)
	}
	for _, pr := range o.PathRates {
		if err := r.UnmarshalText([]byte(pr)); err != nil {
			return Usagef("path rate: %v", err)
		}
	}
	if o.BottleneckRate != "" {
		if o.Topology == "multipath" {
			return Usagef("--bottleneck-rate: a multipath topology has no one bottleneck port; give --path-rates")
		}
		if err := r.UnmarshalText([]byte(o.BottleneckRate)); err != nil {
			return Usagef("--bottleneck-rate: %v", err)
		}
	}
	if err := o.validateECN(); err != nil {
		return err
	}
	if o.TrimThreshold != "" {
		var b dataplane.Bytes
		if err := b.UnmarshalText([]byte(o.TrimThreshold)); err != nil {
			return Usagef("--trim-threshold: %v", err)
		}
	}
	switch o.LLR {
	case "", "off", "nb", "blocking":
	default:
		return Usagef("--llr %q: want off, nb or blocking", o.LLR)
	}
	if o.LLRMonitor && (o.LLR == "" || o.LLR == "off") {
		return Usagef("--llr-monitor needs --llr nb or blocking")
	}
	if o.IncastDegree < 0 || o.IncastDegree > 256 {
		return Usagef("--incast-degree %d: want 1 to 256", o.IncastDegree)
	}
	if o.Skew < 0 || o.Skew > time.Second {
		return Usagef("--skew %v: want 0 to 1s", o.Skew)
	}
	// tor/impair validates its own rules: build a Control and ask it.
	cfg := o.Impair(DefaultImpairSite)
	if err := cfg.Validate(nil); err != nil {
		return Usagef("--loss/--burst/--corrupt: %v", err)
	}
	return nil
}

// validateECN checks --queue-limit and the ECN profile: thresholds that
// parse, Kmin ≤ Kmax, Kmin below the queue limit (tord refuses a queue
// that drops before it marks), Pmax a percentage.
func (o *Options) validateECN() error {
	limit := dataplane.Bytes(1 << 20) // tord's default
	if o.QueueLimit != "" {
		if err := limit.UnmarshalText([]byte(o.QueueLimit)); err != nil {
			return Usagef("--queue-limit: %v", err)
		}
		if limit < 2048 {
			return Usagef("--queue-limit %s: want ≥ 2KiB", o.QueueLimit)
		}
	}
	if !o.ECN && (o.ECNMin != "" || o.ECNMax != "" || o.ECNPMax != 0) {
		return Usagef("--ecn-min, --ecn-max and --ecn-pmax need --ecn")
	}
	var kmin, kmax dataplane.Bytes
	if o.ECNMin != "" {
		if err := kmin.UnmarshalText([]byte(o.ECNMin)); err != nil {
			return Usagef("--ecn-min: %v", err)
		}
		if kmin >= limit {
			return Usagef("--ecn-min %s: want below the queue limit (%d bytes): the queue would drop before it marks", o.ECNMin, limit)
		}
	}
	if o.ECNMax != "" {
		if err := kmax.UnmarshalText([]byte(o.ECNMax)); err != nil {
			return Usagef("--ecn-max: %v", err)
		}
	}
	if kmin != 0 && kmax != 0 && kmin > kmax {
		return Usagef("--ecn-min %s is above --ecn-max %s", o.ECNMin, o.ECNMax)
	}
	if !(o.ECNPMax >= 0 && o.ECNPMax <= 100) {
		return Usagef("--ecn-pmax %v: want a percentage from 0 to 100", o.ECNPMax)
	}
	return nil
}

// Kind is what a node is.
type Kind string

// Node kinds.
const (
	HostNode   Kind = "host"
	SwitchNode Kind = "switch"
)

// Roles of nodes within a topology, for experiments to find them by:
// the parts of tor/topo's testbed shapes.
const (
	RoleSender   = string(topo.Sender)   // a host behind tor1
	RoleReceiver = string(topo.Receiver) // a host behind tor2
	RoleToR      = string(topo.ToR)
	RoleCore     = string(topo.Core)
)

// Node is one network namespace.
type Node struct {
	Name  string `json:"name"`  // short name: h1, tor1, core
	Kind  Kind   `json:"kind"`  // host or switch
	Role  string `json:"role"`  // sender, receiver, tor, core
	Netns string `json:"netns"` // prefix + name
}

// End is one end of a link: an interface in a node with its addresses
// (address and prefix length, e.g. 10.0.1.2/24).
type End struct {
	Node  string       `json:"node"`
	Iface string       `json:"iface"`
	V4    netip.Prefix `json:"v4"`
	V6    netip.Prefix `json:"v6,omitzero"`
}

// Link is a veth pair.
type Link struct {
	A End `json:"a"`
	B End `json:"b"`
}

// NextHop is a gateway and the interface it is reached through.
type NextHop struct {
	Via netip.Addr `json:"via"`
	Dev string     `json:"dev"`
}

// Route is a static route in one node; several next hops make a
// multipath route.
type Route struct {
	Node     string       `json:"node"`
	Dst      netip.Prefix `json:"dst"`
	NextHops []NextHop    `json:"nexthops"`
}

// Site is a switch port whose egress the impairment (--loss, --burst,
// --corrupt) applies to.
type Site struct {
	Node string `json:"node"`
	Port string `json:"port"`
}

// DefaultImpairSite is a placeholder port for validating options alone.
var DefaultImpairSite = Site{Node: "core", Port: "tor2"}

// Plan is a whole topology as data: what testbed up creates, in order.
// It is a pure function of Options, so it is tested without root.
type Plan struct {
	Options Options    `json:"options"`
	Nodes   []Node     `json:"nodes"`
	Links   []Link     `json:"links"`
	Routes  []Route    `json:"routes"`
	Sites   []Site     `json:"impair_sites"`
	Mgmt    []MgmtLink `json:"mgmt,omitempty"` // with --mgmt: a veth from the host to each switch
	// Topo is the topology Nodes and Links lay out, node for node and
	// link for link in the same order (Options.Topo, without rates or
	// delays: each backend sets its own). It is not written with the
	// plan; reading a plan lays it out again from the options.
	Topo topo.Topology `json:"-"`
}

// UnmarshalJSON reads a plan as encoding/json writes it (a testbed's
// state file) and lays Topo out again from its options.
func (p *Plan) UnmarshalJSON(b []byte) error {
	type plain Plan
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return err
	}
	p.Topo = p.Options.Topo()
	return nil
}

// Topo returns the topology the options describe, tor/topo's shape of
// that name with the testbed's senders, receivers and paths, no rates
// and no delays; an unknown topology is empty.
func (o *Options) Topo() topo.Topology {
	var none topo.Tiers
	switch o.Topology {
	case "chain":
		return topo.Chain(1, none)
	case "link":
		return topo.Link(none)
	case "dumbbell":
		return topo.Dumbbell(o.Senders, o.Receivers, none)
	case "multipath":
		return topo.Multipath(o.Senders, o.Receivers, o.Paths, none)
	}
	return topo.Topology{}
}

// Peer returns the end of the link at the other side of node's iface.
func (p *Plan) Peer(node, iface string) (End, bool) {
	for _, l := range p.Links {
		switch {
		case l.A.Node == node && l.A.Iface == iface:
			return l.B, true
		case l.B.Node == node && l.B.Iface == iface:
			return l.A, true
		}
	}
	return End{}, false
}

// Node returns the named node, or nil.
func (p *Plan) Node(name string) *Node {
	for i := range p.Nodes {
		if p.Nodes[i].Name == name {
			return &p.Nodes[i]
		}
	}
	return nil
}

// ByRole returns the names of the nodes with this role, in plan order.
func (p *Plan) ByRole(role string) []string {
	var out []string
	for _, n := range p.Nodes {
		if n.Role == role {
			out = append(out, n.Name)
		}
	}
	return out
}

// Switches returns the switch nodes in plan order.
func (p *Plan) Switches() []Node {
	var out []Node
	for _, n := range p.Nodes {
		if n.Kind == SwitchNode {
			out = append(out, n)
		}
	}
	return out
}

// Ports returns a node's interfaces in link order: a switch's tord ports.
func (p *Plan) Ports(node string) []string {
	var out []string
	for _, l := range p.Links {
		for _, e := range []End{l.A, l.B} {
			if e.Node == node {
				out = append(out, e.Iface)
			}
		}
	}
	return out
}

// Addr returns a host's IPv4 address (on its first interface).
func (p *Plan) Addr(node string) netip.Addr {
	for _, l := range p.Links {
		for _, e := range []End{l.A, l.B} {
			if e.Node == node {
				return e.V4.Addr()
			}
		}
	}
	return netip.Addr{}
}

// Addr6 returns a host's IPv6 address, invalid without --ipv6.
func (p *Plan) Addr6(node string) netip.Addr {
	for _, l := range p.Links {
		for _, e := range []End{l.A, l.B} {
			if e.Node == node && e.V6.IsValid() {
				return e.V6.Addr()
			}
		}
	}
	return netip.Addr{}
}

// Bottleneck returns the port where the senders' flows meet on their way
// to the receivers, the topology's (topo.Topology.Bottleneck): tor1's
// first port toward another switch (tor2 on the dumbbell and the link,
// core on the chain, core1 on multipath). Its data queue is what the
// congestion experiments watch.
func (p *Plan) Bottleneck() (node, port string) {
	n, l, ok := p.Topo.Bottleneck()
	if !ok || l >= len(p.Links) {
		return "tor1", ""
	}
	node = p.Topo.Nodes[n].Name
	for _, e := range []End{p.Links[l].A, p.Links[l].B} {
		if e.Node == node {
			return node, e.Iface
		}
	}
	return node, ""
}

// Shape returns a one-line picture of the topology.
func (p *Plan) Shape() string {
	s, r := p.ByRole(RoleSender), p.ByRole(RoleReceiver)
	mid := "tor1 — tor2"
	if c := p.ByRole(RoleCore); len(c) == 1 {
		mid = "tor1 — " + c[0] + " — tor2"
	} else if len(c) > 1 {
		mid = fmt.Sprintf("tor1 — {%s} — tor2", strings.Join(c, ","))
	}
	return fmt.Sprintf("%s — %s — %s", strings.Join(s, ","), mid, strings.Join(r, ","))
}

// Addressing. Every link has its own /24 and /64; an IPv4 subnet
// 10.A.B.0/24 has the IPv6 twin fdA:0:0:B::/64 (A in decimal digits),
// and an address's last byte is the same in both:
//
//	host links        10.0.i.0/24   switch .1, host .2   (hi has 10.0.i.2)
//	tor1 — core k     10.1.k.0/24   tor1 .1, core .2
//	core k — tor2     10.2.k.0/24   core .1, tor2 .2
//	tor1 — tor2       10.1.1.0/24   tor1 .1, tor2 .2     (dumbbell, link)
func subnet(a, b int) (v4, v6 netip.Prefix) {
	v4 = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(a), byte(b), 0}), 24)
	v6 = netip.MustParsePrefix(fmt.Sprintf("fd%02d:0:0:%x::/64", a, b))
	return v4, v6
}

// host returns address n of a subnet pair, with the subnets' lengths.
func host(v4, v6 netip.Prefix, n byte) (netip.Prefix, netip.Prefix) {
	a4 := v4.Addr().As4()
	a4[3] = n
	a6 := v6.Addr().As16()
	a6[15] = n
	return netip.PrefixFrom(netip.AddrFrom4(a4), 24), netip.PrefixFrom(netip.AddrFrom16(a6), 64)
}

// NewPlan lays out the topology the options describe (Options.Topo,
// tor/topo's shape): its nodes as namespaces and its links as veths, in
// the topology's order, then the testbed's own addresses, routes,
// impair sites and management network. Every topology is tor1 and tor2
// with hosts behind each, joined directly (dumbbell, link) or through
// core switches (chain: one, multipath: K).
func NewPlan(o Options) (*Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Options: o, Topo: o.Topo()}
	t := &p.Topo
	var lefts, rights, coreNames []string
	for _, n := range t.Nodes {
		k := HostNode
		if n.Role == topo.Switch {
			k = SwitchNode
		}
		p.Nodes = append(p.Nodes, Node{Name: n.Name, Kind: k, Role: string(n.Part), Netns: o.Prefix + n.Name})
		switch n.Part {
		case topo.Sender:
			lefts = append(lefts, n.Name)
		case topo.Receiver:
			rights = append(rights, n.Name)
		case topo.Core:
			coreNames = append(coreNames, n.Name)
		}
	}
	cores := len(coreNames)

	end := func(node, iface string, v4, v6 netip.Prefix) End {
		e := End{Node: node, Iface: iface, V4: v4}
		if o.IPv6 {
			e.V6 = v6
		}
		return e
	}
	link := func(a, aIf string, b, bIf string, s4, s6 netip.Prefix) {
		a4, a6 := host(s4, s6, 1)
		b4, b6 := host(s4, s6, 2)
		p.Links = append(p.Links, Link{A: end(a, aIf, a4, a6), B: end(b, bIf, b4, b6)})
	}
	hostNets := map[string][2]netip.Prefix{}
	for i, h := range append(append([]string(nil), lefts...), rights...) {
		s4, s6 := subnet(0, i+1)
		hostNets[h] = [2]netip.Prefix{s4, s6}
	}
	// The topology's links in its order (the senders' host links, the
	// switches', the receivers'), named and addressed as the comment
	// on subnet says: a switch's interface is named after its peer, a
	// host's is eth0, the switch side of a host link is .1.
	coreK := map[string]int{}
	for k, c := range coreNames {
		coreK[c] = k + 1
	}
	for _, l := range t.Links {
		a, b := t.Nodes[l.A], t.Nodes[l.B]
		if a.Role == topo.Host {
			a, b = b, a
		}
		var s4, s6 netip.Prefix
		switch {
		case b.Role == topo.Host:
			n := hostNets[b.Name]
			link(a.Name, b.Name, b.Name, "eth0", n[0], n[1])
			continue
		case coreK[b.Name] > 0: // tor1 — core k
			s4, s6 = subnet(1, coreK[b.Name])
		case coreK[a.Name] > 0: // core k — tor2
			s4, s6 = subnet(2, coreK[a.Name])
		default: // tor1 — tor2
			s4, s6 = subnet(1, 1)
		}
		link(a.Name, b.Name, b.Name, a.Name, s4, s6)
	}

	// Routes: hosts default via their ToR; each switch to the host
	// subnets it is not attached to.
	gw := func(node string) (End, End) { // the host's end and its ToR's
		for _, l := range p.Links {
			if l.B.Node == node {
				return l.B, l.A
			}
		}
		panic("no link for " + node)
	}
	route := func(node string, dst4, dst6 netip.Prefix, hops []End) {
		var h4, h6 []NextHop
		for _, e := range hops {
			h4 = append(h4, NextHop{Via: e.V4.Addr(), Dev: peerIface(p, e)})
			if o.IPv6 {
				h6 = append(h6, NextHop{Via: e.V6.Addr(), Dev: peerIface(p, e)})
			}
		}
		p.Routes = append(p.Routes, Route{Node: node, Dst: dst4, NextHops: h4})
		if o.IPv6 {
			p.Routes = append(p.Routes, Route{Node: node, Dst: dst6, NextHops: h6})
		}
	}
	for _, h := range append(append([]string(nil), lefts...), rights...) {
		_, sw := gw(h)
		route(h, netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"), []End{sw})
	}
	// ends returns, for a switch, the far ends of its links toward the
	// given neighbours.
	far := func(node string, neighbours []string) []End {
		var out []End
		for _, n := range neighbours {
			for _, l := range p.Links {
				switch {
				case l.A.Node == node && l.B.Node == n:
					out = append(out, l.B)
				case l.B.Node == node && l.A.Node == n:
					out = append(out, l.A)
				}
			}
		}
		return out
	}
	towardTor1, towardTor2 := []string{"tor1"}, []string{"tor2"}
	if cores > 0 {
		towardTor1, towardTor2 = coreNames, coreNames
	}
	for _, h := range rights {
		route("tor1", hostNets[h][0], hostNets[h][1], far("tor1", towardTor2))
	}
	for _, c := range coreNames {
		for _, h := range lefts {
			route(c, hostNets[h][0], hostNets[h][1], far(c, []string{"tor1"}))
		}
		for _, h := range rights {
			route(c, hostNets[h][0], hostNets[h][1], far(c, []string{"tor2"}))
		}
	}
	for _, h := range lefts {
		route("tor2", hostNets[h][0], hostNets[h][1], far("tor2", towardTor1))
	}

	// The impairment sits where data from the senders leaves for tor2:
	// each core's port toward tor2, or tor1's own.
	if cores == 0 {
		p.Sites = []Site{{Node: "tor1", Port: "tor2"}}
	}
	for _, c := range coreNames {
		p.Sites = append(p.Sites, Site{Node: c, Port: "tor2"})
	}
	if err := p.checkWorkers(); err != nil {
		return nil, err
	}
	var err error
	if p.Mgmt, err = p.mgmtLinks(); err != nil {
		return nil, err
	}
	return p, nil
}

// peerIface returns the interface on the other side of the link whose
// end e is: the local device a route through e's address uses.
func peerIface(p *Plan, e End) string {
	for _, l := range p.Links {
		if l.A == e {
			return l.B.Iface
		}
		if l.B == e {
			return l.A.Iface
		}
	}
	return ""
}
