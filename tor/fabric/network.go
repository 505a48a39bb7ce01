package fabric

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/netip"
	"path"
	"slices"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/stack"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/llr"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// Options say how a Network is built from a topo.Topology.
type Options struct {
	// Seed seeds every random stream: each switch's ECMP hash, ECN
	// marking and impairment, each host's QPs' first PSNs.
	Seed uint64
	// Switch is the YAML every switch is built from: tord's
	// configuration file (docs/operations.md) without ports, which the
	// topology gives. In a port list (netrt.fabric, llr.ports,
	// trim.ports, trust.hosts, trust.pfc_ports, pfc.ports) and in an impair rule's
	// port, "fabric", "hosts" and "all" stand for the switch's ports of
	// that kind. An llr.ports entry naming a host port makes that
	// host's NIC run llr at its end of the link (hostLLR). Empty:
	// forwarding alone.
	Switch string
	// SwitchFor replaces Switch for the switches it names (by topology
	// name: "core", "tor1", "agg1-0", or a path.Match pattern, "agg*",
	// the first in sorted order that matches; a name beats a pattern),
	// e.g. to impair one port of one switch as the testbed does. Ports
	// are named after the node they lead to ("tor2" on core).
	SwitchFor map[string]string
	// SwitchConfigs replaces Switch and SwitchFor for the switches it
	// names (by topology name, exactly): their configuration as a value,
	// as the lab's plan gives it (lab.Plan.TordConfigs), which the
	// network completes as it does the YAML's (ports, port groups,
	// seeds, one worker) on a copy of its own.
	SwitchConfigs map[string]*pipeline.Config
	// Transport is the hosts' loss recovery: gbn, irn, fasr or dcp
	// (default gbn); RTO its first retransmission timeout (0: the
	// transport's default); BDP the packets Go-Back-N's, IRN's and
	// FaSR's windows span (default 128, Go-Back-N's own default).
	Transport string
	RTO       time.Duration
	BDP       int
	// RTOLow is IRN's RTO_low (0: nic/stack's choice from RTO).
	RTOLow time.Duration
	// GBNWindow is Go-Back-N's window in packets; 0 gives it BDP, as
	// the selective transports' (a RoCE NIC has no BDP cap of its own:
	// set it to gbn's 128, or more, to model one, seed 004 §3.2).
	GBNWindow int
	// IRNGoBackN and IRNNoBDPFC are IRN's ablations (seed 004 §4.3;
	// stack.Config): go-back-N recovery instead of SACKs, and BDP-FC off
	// with the bitmaps tracking IRNNoBDPFC packets.
	IRNGoBackN bool
	IRNNoBDPFC int
	// IRNAckEvery is how many in-order packets IRN's receiver
	// acknowledges at once unasked (stack.Config; 0: irn's default).
	IRNAckEvery int
	// IRNNoTimeoutRecovery makes IRN's timer expiries resend nothing
	// (stack.Config): a diagnostic for a lossless fabric's spurious
	// expiries.
	IRNNoTimeoutRecovery bool
	// FaSRPoolBDP is the BDP in packets FaSR's shared pool is sized for
	// (stack.Config; 0: BDP).
	FaSRPoolBDP int
	// DCPRetransQ is DCP's RetransQ in entries per QP (stack.Config;
	// 0: nic/dcp's default).
	DCPRetransQ int
	// DCPWindow is DCP's send window in packets in flight per QP
	// (stack.Config; 0: none, nic/dcp's default).
	DCPWindow int
	// CC is the hosts' congestion control: none, fixed (each QP paced
	// at the host's line rate), dcqcn (ConnectX's defaults, or DCQCN's
	// when set: the testbed scales them to its rates) or timely (the
	// paper's parameters, or Timely's when set; not with dcp).
	CC     string
	DCQCN  *cc.DCQCNConfig
	Timely *cc.TimelyConfig
	// DSCP and CNPDSCP are the hosts' traffic classes, as a ConnectX's
	// tclass and cnp_dscp set them (nic.Config): DSCP on requests,
	// responses, ACKs and NAKs, CNPDSCP on CNPs; 0: the endpoint's
	// defaults, 26 (24 with dcp) and 48, which the switches' default
	// QoS profile (qos: {}) puts on the RoCE and CNP classes.
	DSCP, CNPDSCP uint8
	// HPCC are HPCC's parameters when CC is hpcc (nil: the paper's and
	// its ns-3 runs'); its switches need an int: section to stamp.
	HPCC *cc.HPCCConfig
	// MTU of every QP (default 1024).
	MTU int
	// Overhead is the bytes the wire adds to each frame (sim.LinkConfig;
	// default 24, -1 for none).
	Overhead int
	// HostQueue is each host's egress data queue budget, the NIC's
	// transmit backpressure (default 64 KiB).
	HostQueue int
	// RxRing is every port's receive ring in frames (default 1024).
	RxRing int
	// HostFrames, if set, is each host's frame memory in frames,
	// replacing the size its ring, queue and links ask for (hostFrames):
	// tests exhaust it.
	HostFrames int
	// MaxMessage is the largest message a flow posts (sizes the one
	// memory region every host registers; default 4 MiB).
	MaxMessage int
	// MaxQPs is the most QPs one host has (default 64). Each costs its
	// context and queues whether used or not (nic.Endpoint.QPBytes), so
	// a thousand hosts want no more than they use: QPsNeeded counts it
	// for a flow list.
	MaxQPs int
	// LinkLoss, if set, gives links loss or corruption rates: impair
	// rules on the switches' ends of the links, after the YAML's own
	// (the first rule that matches a frame wins).
	LinkLoss *LinkLoss
	// Threads is how many goroutines run the simulation (default 1):
	// the topology cut into as many partitions (partition), each a
	// simulation of its own, run in windows of the smallest delay of
	// a link between two (dataplane/sim Group). Every result is the
	// same for any Threads.
	Threads int
	// HostCQ, if set, is every host's completion queue: the work
	// requests it may have outstanding (default 4,096, or one per QP
	// if more, but no more than its QPs' queues hold). An experiment
	// that posts more at once than that sets it (fasr-scale at
	// thousands of QPs a host); the rest wait for completions.
	HostCQ int
	// QPCache, if its Bytes is set, gives every host's NIC an on-chip
	// QP-context cache whose misses take the host off its CPU for the
	// fetch (nic.QPCache; fasr-scale's --qpc-cache). Off by default:
	// every context on chip at no cost.
	QPCache nic.QPCache
	// HostBurst is how many packets a host's QP sends before its NIC
	// turns to the next QP with work (nic.Config.Burst; 0: nic's 16).
	// 1 interleaves the QPs packet by packet, as a NIC whose every QP
	// polls the MAC for the link does (seed 004 §4.1).
	HostBurst int
	// Jitter, if set, delays each frame any port sends by up to this
	// many nanoseconds more than its link's delay, uniformly, in order
	// (sim.Port.SetJitter): the spread of a NIC's transmit timing and a
	// switch's forwarding latency. Without it, senders at one rate
	// reach a shared queue at fixed phases, every hop re-serializing
	// them, and a full drop-tail queue admits the same one each time
	// (docs/experiments.md, netrt-incast). 0: none, as every result
	// before it was measured.
	Jitter int64
	// Drops, if set, gets one line per frame a switch drops, as it
	// drops it (dropLogger; torsim --drops). Only with one thread: the
	// partitions' lines would interleave.
	Drops io.Writer
}

func (o *Options) setDefaults() {
	o.Transport = cmp.Or(o.Transport, "gbn")
	o.CC = cmp.Or(o.CC, "none")
	o.MTU = cmp.Or(o.MTU, 1024)
	o.BDP = cmp.Or(o.BDP, 128)
	o.HostQueue = cmp.Or(o.HostQueue, 64<<10)
	o.RxRing = cmp.Or(o.RxRing, 1024)
	o.MaxMessage = cmp.Or(o.MaxMessage, 4<<20)
	o.MaxQPs = cmp.Or(o.MaxQPs, 64)
	switch {
	case o.Overhead == 0:
		o.Overhead = 24
	case o.Overhead < 0:
		o.Overhead = 0
	}
}

// SwitchNode is one switch: tord's pipeline, built from its Config by
// tor/pipeline as tord builds it, over simulated ports.
type SwitchNode struct {
	Name  string
	Index int // among the switches
	Cfg   pipeline.Config
	Pipe  *pipeline.Pipeline
	Node  *sim.Node
	Addr  netip.Addr // its own address, the gateway its neighbours route to
	kinds []portKind
}

// HostNode is one host: a nic endpoint with its transport and
// congestion control on a worker with one simulated port.
type HostNode struct {
	Name  string
	Index int // among the hosts
	IP    netip.Addr
	MAC   rocev2.MAC
	EP    *nic.Endpoint
	Node  *sim.Node
	MR    nic.MR
	Line  uint64 // link rate
	ToR   int    // the switch it hangs off (index among switches)
	// LLR is the llr stage of the host's NIC (hostLLR), nil unless the
	// ToR protects the host's link.
	LLR   *llr.Stage
	port  string            // the ToR's port toward it
	gw    rocev2.MAC        // the ToR port's MAC, every frame's destination
	cqb   [8]nic.Completion // collect drains the queue in as many polls as it takes
	qps   int
	part  int              // its partition
	peers map[int][]pairQP // by peer host index: the QPs set up to it
}

type pairQP struct{ local, remote uint32 }

type portKind uint8

const (
	hostPort portKind = iota
	fabricPort
)

// Network is a topology built: switches and hosts on one simulation,
// cut into partitions (Options.Threads).
type Network struct {
	// Sim is the first partition: with one, every switch, host and
	// link. Global runs the actors that read or write several nodes
	// (Run's flow posting and sampling), between the partitions'
	// windows.
	Sim      *sim.Sim
	Global   *sim.Sim
	parts    []*sim.Sim
	part     []int // topology node → its partition
	group    *sim.Group
	Topo     topo.Topology
	Switches []*SwitchNode
	Hosts    []*HostNode
	Opts     Options
	scratch  [][]byte      // per partition: every host's memory region
	byNode   []int         // topology node → index among switches or hosts
	first    []int         // topology node → its first host, -1 if none
	dist     map[int][]int // hop counts to a node, by node (hops)
	adj      [][]int       // links of each node
	hostNd   []int         // host index → topology node
	tally    flowTally     // per flow retransmissions and timeouts (Run sizes it)
	loss     []linkImp     // each link's loss or corruption (Options.LinkLoss)
}

// End is one end of a link, the topology's view of a port.
type end struct {
	node, port int // topology node, port index on it
	peer, pp   int // the node and port at the other end
	link       int
}

// Build makes the network of t: a worker per switch with the pipeline
// its configuration gives, a nic endpoint per host, links between
// their ports, and routes from the topology in every switch's FIB
// (shortest paths, every equal-cost next hop in the group). QPs are
// set up later, by Pairs.
func Build(t topo.Topology, o Options) (*Network, error) {
	o.setDefaults()
	if o.Jitter < 0 {
		return nil, fmt.Errorf("fabric: jitter %d ns is negative", o.Jitter)
	}
	if o.Drops != nil {
		if o.Threads > 1 {
			return nil, fmt.Errorf("fabric: a drop log needs one thread, not %d", o.Threads)
		}
		fmt.Fprintln(o.Drops, dropHeader)
	}
	n := &Network{Sim: sim.New(), Topo: t, Opts: o, byNode: make([]int, len(t.Nodes))}
	n.setParts(max(1, o.Threads))
	// The names and their pairing once, before any host is built (dcp
	// with timely is refused here).
	if err := n.hostStack().Validate(); err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	for range n.parts {
		n.scratch = append(n.scratch, make([]byte, o.MaxMessage))
	}
	var err error
	if n.loss, err = o.LinkLoss.rates(t, o.Seed); err != nil {
		return nil, err
	}
	// Ports of every node, in link order.
	ports := make([][]end, len(t.Nodes))
	for li, l := range t.Links {
		pa, pb := len(ports[l.A]), len(ports[l.B])
		ports[l.A] = append(ports[l.A], end{node: l.A, port: pa, peer: l.B, pp: pb, link: li})
		ports[l.B] = append(ports[l.B], end{node: l.B, port: pb, peer: l.A, pp: pa, link: li})
	}
	macs := make([][]rocev2.MAC, len(t.Nodes))
	k := 0
	for i := range t.Nodes {
		for range ports[i] {
			k++
			macs[i] = append(macs[i], rocev2.MAC{0x02, 0, byte(k >> 24), byte(k >> 16), byte(k >> 8), byte(k)})
		}
	}
	// Addresses: each switch with hosts is a ToR with a /24; its hosts
	// are .1, .2, … in link order. Every switch has an address of its
	// own, the gateway its neighbours route to.
	tor := 0
	for i, nd := range t.Nodes {
		if nd.Role != topo.Switch {
			continue
		}
		s := &SwitchNode{Name: nd.Name, Index: len(n.Switches)}
		s.Addr = netip.AddrFrom4([4]byte{11, byte(s.Index >> 8), byte(s.Index), 1})
		n.byNode[i] = s.Index
		n.Switches = append(n.Switches, s)
		hosts := 0
		for _, e := range ports[i] {
			if t.Nodes[e.peer].Role == topo.Host {
				hosts++
			}
		}
		if hosts > 254 {
			return nil, fmt.Errorf("fabric: switch %s has %d hosts, at most 254", nd.Name, hosts)
		}
		j := 0
		for _, e := range ports[i] {
			if t.Nodes[e.peer].Role != topo.Host {
				continue
			}
			j++
			h := &HostNode{Name: t.Nodes[e.peer].Name, Index: len(n.Hosts), MAC: macs[e.peer][0],
				IP: netip.AddrFrom4([4]byte{10, byte(tor >> 8), byte(tor), byte(j)}), Line: t.Links[e.link].RateBps,
				ToR: s.Index, port: n.portName(ports[i], e.port), gw: macs[i][e.port], peers: map[int][]pairQP{}}
			n.byNode[e.peer] = h.Index
			n.Hosts = append(n.Hosts, h)
		}
		if hosts > 0 {
			tor++
		}
	}
	if len(n.Hosts) != len(t.Hosts()) {
		return nil, fmt.Errorf("fabric: every host must hang off a switch")
	}
	// Every switch's configuration first: a host's NIC reads its ToR's
	// (hostLLR).
	for i, nd := range t.Nodes {
		if nd.Role == topo.Switch {
			s := n.Switches[n.byNode[i]]
			if s.Cfg, err = n.switchConfig(s, ports[i]); err != nil {
				return nil, err
			}
		}
	}
	// Simulated ports, per node.
	simPorts := make([][]*sim.Port, len(t.Nodes))
	frames, sizes := make([]int, len(t.Nodes)), make([]int, len(t.Nodes))
	for i, nd := range t.Nodes {
		if nd.Role == topo.Switch {
			cfg := &n.Switches[n.byNode[i]].Cfg
			frames[i], sizes[i] = cfg.XDP.Frames, n.slot(cfg.XDP.FrameSize)
		} else {
			frames[i] = n.hostFrames(ports[i], n.hostProtected(n.Hosts[n.byNode[i]]))
			sizes[i] = n.slot(hostFrameSize)
		}
	}
	// Frame memory is reserved, not touched (frameMems).
	mems, err := frameMems(frames, sizes, n.part)
	if err != nil {
		return nil, err
	}
	for i, nd := range t.Nodes {
		mem := mems[i]
		for pi := range ports[i] {
			name := n.portName(ports[i], pi)
			if nd.Role == topo.Host {
				name = "eth0"
			}
			simPorts[i] = append(simPorts[i], sim.NewPort(n.parts[n.part[i]], name, macs[i][pi], mem, o.RxRing))
		}
	}
	for li, l := range t.Links {
		var pa, pb *sim.Port
		for _, e := range ports[l.A] {
			if e.link == li {
				pa, pb = simPorts[l.A][e.port], simPorts[l.B][e.pp]
			}
		}
		if err := sim.Connect(n.Sim, pa, pb, sim.LinkConfig{RateBps: l.RateBps, Delay: l.Delay,
			Overhead: o.Overhead, RxRing: o.RxRing}); err != nil {
			return nil, err
		}
	}
	if o.Jitter > 0 {
		for i := range t.Nodes {
			for pi, p := range simPorts[i] {
				p.SetJitter(sim.Time(o.Jitter)*sim.Nanosecond, rand.New(rand.NewPCG(o.Seed, sim.Seed(o.Seed, 10, uint64(i), uint64(pi)))))
			}
		}
	}
	for i, nd := range t.Nodes {
		ps := n.parts[n.part[i]]
		clock := func() int64 { return ps.Now() / sim.Nanosecond }
		if nd.Role == topo.Switch {
			if err := n.buildSwitch(n.Switches[n.byNode[i]], ports, i, mems[i], simPorts[i], macs, clock); err != nil {
				return nil, err
			}
			continue
		}
		if err := n.buildHost(n.Hosts[n.byNode[i]], mems[i], simPorts[i], clock); err != nil {
			return nil, err
		}
	}
	n.group = sim.NewGroup(n.parts, n.Global)
	return n, nil
}

// setParts cuts the topology into k partitions (partition), one if a
// link between two would have no delay (no lookahead).
func (n *Network) setParts(k int) {
	n.part = partition(n.Topo, k)
	if lookahead(n.Topo, n.part) <= 0 {
		n.part, k = partition(n.Topo, 1), 1
	}
	n.parts = []*sim.Sim{n.Sim}
	for len(n.parts) < k {
		n.parts = append(n.parts, n.Sim.Part())
	}
	n.Global = n.Sim.Part()
}

// Parallelism returns the speed-up the run's partitions allow
// (sim.Group.Parallelism): 1 with one.
func (n *Network) Parallelism() float64 { return n.group.Parallelism() }

// Partitions returns how many partitions the network runs on
// (Options.Threads, one if a link between two had no delay).
func (n *Network) Partitions() int { return len(n.parts) }

// Now returns the time of the last event fired.
func (n *Network) Now() sim.Time { return n.group.Now() }

// portName names a switch's port after the node it leads to, as the
// testbed names them ("tor1" on core is core's port toward tor1); the
// second and later links to one node get "-2", "-3", ….
func (n *Network) portName(ends []end, port int) string {
	peer := n.Topo.Nodes[ends[port].peer].Name
	k := 1
	for _, e := range ends[:port] {
		if e.peer == ends[port].peer {
			k++
		}
	}
	if k > 1 {
		return fmt.Sprintf("%s-%d", peer, k)
	}
	return peer
}

// switchConfig is the switch's tord configuration: the template with
// the switch's ports, port groups expanded, its own seeds, one worker.
func (n *Network) switchConfig(s *SwitchNode, ends []end) (pipeline.Config, error) {
	cfg, err := n.switchTemplate(s)
	if err != nil {
		return cfg, err
	}
	var all, hosts, fabric []string
	var maxRate uint64
	for _, e := range ends {
		name := n.portName(ends, e.port)
		all = append(all, name)
		if n.Topo.Nodes[e.peer].Role == topo.Host {
			hosts = append(hosts, name)
			s.kinds = append(s.kinds, hostPort)
		} else {
			fabric = append(fabric, name)
			s.kinds = append(s.kinds, fabricPort)
		}
		maxRate = max(maxRate, n.Topo.Links[e.link].RateBps)
	}
	expand := func(l []string) []string {
		var out []string
		for _, p := range l {
			switch p {
			case "all":
				out = append(out, all...)
			case "hosts":
				out = append(out, hosts...)
			case "fabric":
				out = append(out, fabric...)
			default:
				out = append(out, p)
			}
		}
		return out
	}
	cfg.Ports = all
	cfg.Workers = 1
	if len(hosts) == 0 {
		// NetRT runs between ToRs (seed 000): a switch without hosts
		// only forwards what they exchange.
		cfg.NetRT = pipeline.NetRTConfig{}
	}
	cfg.MetricsAddr, cfg.AdminAddr = "", ""
	cfg.CPU = pipeline.CPUConfig{} // simulated switches have no threads of their own
	cfg.NetRT.Fabric = expand(cfg.NetRT.Fabric)
	// A host port in llr.ports protects the host's link: the host's NIC
	// runs llr at its end (hostLLR).
	cfg.LLR.Ports = expand(cfg.LLR.Ports)
	cfg.Trust.Hosts = expand(cfg.Trust.Hosts)
	if cfg.Trust.PFCPorts != nil {
		p := expand(*cfg.Trust.PFCPorts)
		cfg.Trust.PFCPorts = &p
	}
	if cfg.Trim != nil {
		cfg.Trim.Ports = expand(cfg.Trim.Ports)
	}
	if cfg.PFC != nil {
		p := *cfg.PFC
		p.Ports = expand(cfg.PFC.Ports)
		if len(p.Ports) == 0 && len(cfg.PFC.Ports) > 0 {
			cfg.PFC = nil // "hosts" on a switch without hosts: none, not all
		} else {
			cfg.PFC = &p
		}
	}
	var rules []impair.Rule
	for _, r := range cfg.Impair.Rules {
		for _, p := range expand([]string{r.Port}) {
			r.Port = p
			rules = append(rules, r)
		}
	}
	cfg.Impair.Rules = append(rules, n.lossRules(ends)...)
	if cfg.Egress.Rate == 0 {
		cfg.Egress.Rate = dataplane.Rate(maxRate)
	}
	for _, e := range ends {
		if r := n.Topo.Links[e.link].RateBps; r != uint64(cfg.Egress.Rate) {
			if cfg.Egress.PortRates == nil {
				cfg.Egress.PortRates = map[string]dataplane.Rate{}
			}
			cfg.Egress.PortRates[n.portName(ends, e.port)] = dataplane.Rate(r)
		}
	}
	// Each switch draws from streams of its own.
	cfg.Impair.Seed = sim.Seed(n.Opts.Seed, 1, uint64(s.Index), cfg.Impair.Seed)
	// Each switch hashes differently, as operators seed each tier
	// (tor/fwd: ECMP polarization).
	cfg.Forwarding.HashSeed = sim.Seed(n.Opts.Seed, 3, uint64(s.Index), cfg.Forwarding.HashSeed)
	if cfg.ECN != nil {
		cfg.ECN.Seed = sim.Seed(n.Opts.Seed, 2, uint64(s.Index), cfg.ECN.Seed)
	}
	if n.Opts.Transport == "dcp" {
		cfg.DCP = true
	}
	// Frames as tord's UMEM would need them: the rings' (a small ring
	// here, there is no kernel), NetRT's, llr's Tx buffers', every
	// queue full, and the frames in flight toward the switch (inFlight).
	cfg.XDP.RingSize = 64
	// Egress rings start small and grow with their queues (queueRing).
	if cfg.Egress.Ring == 0 {
		cfg.Egress.Ring = queueRing
	}
	// Frames of 2 KiB hold an MTU of 1024 with every header and shim;
	// half of tord's default size is half the memory a run touches.
	if n.Opts.MTU <= 1024 {
		cfg.XDP.FrameSize = 2048
	}
	need := 2*64*len(all) + cfg.NetRT.Frames() + cfg.LLRFrames() + cfg.MaxQueued(len(all))/1024 + n.inFlight(ends)
	cfg.XDP.Frames = 1 << 12
	for cfg.XDP.Frames < need {
		cfg.XDP.Frames <<= 1
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("switch %s: %w", s.Name, err)
	}
	return cfg, nil
}

// switchTemplate is the configuration the switch is built from, before
// switchConfig completes it: its own value (SwitchConfigs), else its
// YAML by name, by pattern (SwitchFor) or the template (Switch).
func (n *Network) switchTemplate(s *SwitchNode) (pipeline.Config, error) {
	if c, ok := n.Opts.SwitchConfigs[s.Name]; ok && c != nil {
		return c.Clone(), nil
	}
	text, what := n.Opts.Switch, "switch template"
	if y, ok := n.Opts.SwitchFor[s.Name]; ok {
		text, what = y, "switch "+s.Name
	} else {
		// Patterns, in order, the first that matches: "tor*" names
		// a fat tree's tier.
		for _, k := range slices.Sorted(maps.Keys(n.Opts.SwitchFor)) {
			if ok, _ := path.Match(k, s.Name); ok {
				text, what = n.Opts.SwitchFor[k], "switch "+s.Name+" ("+k+")"
				break
			}
		}
	}
	return pipeline.ParseConfig([]byte(text), what)
}

// buildSwitch builds the switch's pipeline (tor/pipeline, as tord does)
// over its simulated ports, with routes from the topology in its FIB.
func (n *Network) buildSwitch(s *SwitchNode, ports [][]end, node int, mem *dataplane.Mem, sp []*sim.Port,
	macs [][]rocev2.MAC, clock func() int64) error {
	fib := &fwd.FIB{}
	pn, err := pipeline.NewPlan(&s.Cfg, fib, nil)
	if err != nil {
		return fmt.Errorf("switch %s: %w", s.Name, err)
	}
	// The routes are not kept: the table keeps what it was given
	// (fwd.Table's TableConfig), and a copy here per switch was 2.5 MB of
	// a k = 16 fat tree's resident memory.
	tc := n.routes(s, ports, node, macs)
	tc.Multipath = pn.Fwd.Multipath
	tb, err := fwd.NewTable(tc)
	if err != nil {
		return fmt.Errorf("switch %s: routes: %w", s.Name, err)
	}
	fib.Store(tb)
	dp := make([]dataplane.Port, len(sp))
	for i, p := range sp {
		dp[i] = p
	}
	if s.Pipe, err = pn.Build(0, mem, dp, clock); err != nil {
		return fmt.Errorf("switch %s: %w", s.Name, err)
	}
	s.Node = sim.AddNode(n.parts[n.part[node]], s.Pipe.Worker, sp)
	if n.Opts.Drops != nil {
		s.Pipe.Worker.SetDropHook(dropLogger(n.Opts.Drops, s.Name, sp, clock, rocev2.Classifier{DCP: s.Cfg.ParsesDCP()}))
	}
	return nil
}

// routes fills the switch's table from the topology: a /32 to each of
// its hosts, and to every other ToR's /24 the equal-cost next hops of
// the shortest paths, through the neighbouring switches' addresses.
func (n *Network) routes(s *SwitchNode, ports [][]end, node int, macs [][]rocev2.MAC) *fwd.TableConfig {
	t := &n.Topo
	tc := &fwd.TableConfig{Local: []netip.Addr{s.Addr}}
	for _, e := range ports[node] {
		peer := t.Nodes[e.peer]
		if peer.Role == topo.Host {
			h := n.Hosts[n.byNode[e.peer]]
			tc.Routes = append(tc.Routes, fwd.Route{Prefix: netip.PrefixFrom(h.IP, 32), NextHops: []fwd.NextHop{{Port: uint16(e.port)}}})
			tc.Neighbours = append(tc.Neighbours, fwd.Neighbour{Port: uint16(e.port), Addr: h.IP, MAC: h.MAC})
			continue
		}
		ps := n.Switches[n.byNode[e.peer]]
		tc.Neighbours = append(tc.Neighbours, fwd.Neighbour{Port: uint16(e.port), Addr: ps.Addr, MAC: macs[e.peer][e.pp]})
	}
	// Routes with the same next hops share one list: most of a fat
	// tree's switch's routes go up through the same group.
	groups := map[string][]fwd.NextHop{}
	var key []byte
	for _, dst := range n.tors() {
		if dst == node {
			continue
		}
		dist := n.hops(dst)
		key = key[:0]
		for _, e := range ports[node] {
			if t.Nodes[e.peer].Role == topo.Switch && dist[e.peer] == dist[node]-1 {
				key = append(key, byte(e.port), byte(e.port>>8))
			}
		}
		if len(key) == 0 {
			continue
		}
		hops, ok := groups[string(key)]
		if !ok {
			for _, e := range ports[node] {
				if t.Nodes[e.peer].Role == topo.Switch && dist[e.peer] == dist[node]-1 {
					hops = append(hops, fwd.NextHop{Port: uint16(e.port), Gateway: n.Switches[n.byNode[e.peer]].Addr})
				}
			}
			groups[string(key)] = hops
		}
		h := n.Hosts[n.firstHost(dst)]
		tc.Routes = append(tc.Routes, fwd.Route{Prefix: netip.PrefixFrom(h.IP, 24).Masked(), NextHops: hops})
	}
	return tc
}

// tors returns the topology nodes that have hosts, in order.
func (n *Network) tors() []int {
	var out []int
	for i := range n.Topo.Nodes {
		if n.Topo.Nodes[i].Role == topo.Switch && n.firstHost(i) >= 0 {
			out = append(out, i)
		}
	}
	return out
}

func (n *Network) firstHost(sw int) int {
	if n.first == nil {
		n.first = make([]int, len(n.Topo.Nodes))
		for i := range n.first {
			n.first[i] = -1
		}
		for i, nd := range n.Topo.Nodes {
			if nd.Role != topo.Switch {
				continue
			}
			for _, h := range n.Hosts {
				if h.ToR == n.byNode[i] {
					n.first[i] = h.Index
					break
				}
			}
		}
	}
	return n.first[sw]
}

// hops returns the hop count from every node to node dst over the
// topology's links, -1 where there is no path; a host other than dst
// ends a path (hosts do not forward). Routing (to a ToR) and ideal FCTs
// (to a host) both read it; it is kept per dst, so they walk the
// topology once per destination.
func (n *Network) hops(dst int) []int {
	if d, ok := n.dist[dst]; ok {
		return d
	}
	if n.dist == nil {
		n.dist = map[int][]int{}
	}
	t, adj := &n.Topo, n.adjacency()
	d := make([]int, len(t.Nodes))
	for i := range d {
		d[i] = -1
	}
	d[dst] = 0
	q := []int{dst}
	for len(q) > 0 {
		x := q[0]
		q = q[1:]
		if x != dst && t.Nodes[x].Role == topo.Host {
			continue
		}
		for _, li := range adj[x] {
			l := t.Links[li]
			if y := l.A + l.B - x; d[y] < 0 {
				d[y] = d[x] + 1
				q = append(q, y)
			}
		}
	}
	n.dist[dst] = d
	return d
}

// Transports are the loss recoveries a host can run, by name (nic/stack).
var Transports = stack.Transports

// hostStack is the hosts' transport and congestion control: nic/stack's, with
// BDP spanning Go-Back-N's window too.
func (n *Network) hostStack() stack.Config {
	return stack.Config{Transport: n.Opts.Transport, RTO: n.Opts.RTO, RTOLow: n.Opts.RTOLow, BDP: n.Opts.BDP,
		GBNWindow: cmp.Or(n.Opts.GBNWindow, n.Opts.BDP), IRNGoBackN: n.Opts.IRNGoBackN, IRNNoBDPFC: n.Opts.IRNNoBDPFC,
		IRNAckEvery: n.Opts.IRNAckEvery, IRNNoTimeoutRecovery: n.Opts.IRNNoTimeoutRecovery, FaSRPoolBDP: n.Opts.FaSRPoolBDP,
		DCPRetransQ: n.Opts.DCPRetransQ, DCPWindow: n.Opts.DCPWindow, CC: n.Opts.CC, DCQCN: n.Opts.DCQCN, Timely: n.Opts.Timely, HPCC: n.Opts.HPCC}
}

func (n *Network) transport() (nic.Transport, error) {
	t, err := n.hostStack().NewTransport()
	if err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	return t, nil
}

func (n *Network) cc(line uint64) (nic.CC, error) {
	c, err := n.hostStack().NewCC(line)
	if err != nil {
		return nil, fmt.Errorf("fabric: %w", err)
	}
	return c, nil
}

// Pair sets up k QPs between hosts a and b (indices among the hosts),
// connected both ways. Call it before the simulation runs.
func (n *Network) Pair(a, b, k int) error {
	ha, hb := n.Hosts[a], n.Hosts[b]
	for i := 0; i < k; i++ {
		pa := psn.New(uint32(sim.Seed(n.Opts.Seed, 4, uint64(a), uint64(b), uint64(i))))
		pb := psn.New(uint32(sim.Seed(n.Opts.Seed, 5, uint64(a), uint64(b), uint64(i))))
		qa, err := ha.EP.CreateQP(nic.QPOptions{MTU: n.Opts.MTU, PSN: pa})
		if err != nil {
			return fmt.Errorf("host %s: %w", ha.Name, err)
		}
		qb, err := hb.EP.CreateQP(nic.QPOptions{MTU: n.Opts.MTU, PSN: pb})
		if err != nil {
			return fmt.Errorf("host %s: %w", hb.Name, err)
		}
		// Frames go to the ToR's port: the routed fabric's gateway.
		ra, rb := qb, qa
		ra.MAC, rb.MAC = ha.gw, hb.gw
		if err := ha.EP.Connect(qa.QPN, ra); err != nil {
			return err
		}
		if err := hb.EP.Connect(qb.QPN, rb); err != nil {
			return err
		}
		ha.peers[b] = append(ha.peers[b], pairQP{local: qa.QPN, remote: qb.QPN})
	}
	return nil
}

// QPsNeeded returns the most QPs one host needs for flows with qps QPs
// per communicating pair (Options.MaxQPs).
func QPsNeeded(flows []workload.Flow, qps int) int {
	pairs := map[[2]int]bool{}
	per := map[int]int{}
	for _, f := range flows {
		if k := [2]int{f.Src, f.Dst}; !pairs[k] {
			pairs[k] = true
			per[f.Src] += qps
			per[f.Dst] += qps
		}
	}
	most := 1
	for _, n := range per {
		most = max(most, n)
	}
	return most
}

// QPs returns the QPs set up from host a to host b.
func (n *Network) QPs(a, b int) int { return len(n.Hosts[a].peers[b]) }
