package fabric

import (
	"fmt"
	"strconv"
	"strings"

	"rocetor/dataplane/sim"
)

// Role is what a node of a topology is.
type Role uint8

// Roles.
const (
	Host Role = iota
	Switch
)

// NodeSpec is one node of a topology. Tier is 0 for hosts, 1 for the
// switches hosts attach to, and up from there.
type NodeSpec struct {
	Name string
	Role Role
	Tier int
}

// LinkSpec is one full-duplex link between nodes A and B (indices into
// Topology.Nodes).
type LinkSpec struct {
	A, B    int
	RateBps uint64
	Delay   sim.Time
}

// Topology is nodes and links, as htsim's topology files list them.
type Topology struct {
	Name  string
	Nodes []NodeSpec
	Links []LinkSpec
}

// Tiers are the link parameters by tier: host links (host–ToR), fabric
// links (ToR–aggregation, leaf–spine, the chain's ToR–core) and core
// links (aggregation–core of a fat tree). A zero core rate or delay
// takes the fabric's.
type Tiers struct {
	HostRate, FabricRate, CoreRate    uint64
	HostDelay, FabricDelay, CoreDelay sim.Time
}

// DefaultTiers are 100 Gbit/s links with 1 µs of propagation, a common
// choice of the seeds' simulations (IRN, DCP).
func DefaultTiers() Tiers {
	return Tiers{HostRate: 100e9, FabricRate: 100e9, HostDelay: sim.Microsecond, FabricDelay: sim.Microsecond}
}

func (t Tiers) core() (uint64, sim.Time) {
	r, d := t.CoreRate, t.CoreDelay
	if r == 0 {
		r = t.FabricRate
	}
	if d == 0 {
		d = t.FabricDelay
	}
	return r, d
}

type builder struct {
	t  Topology
	ti Tiers
}

func (b *builder) node(name string, r Role, tier int) int {
	b.t.Nodes = append(b.t.Nodes, NodeSpec{Name: name, Role: r, Tier: tier})
	return len(b.t.Nodes) - 1
}

func (b *builder) link(a, c int, rate uint64, d sim.Time) {
	b.t.Links = append(b.t.Links, LinkSpec{A: a, B: c, RateBps: rate, Delay: d})
}

func (b *builder) hosts(sw, n int) {
	for i := 0; i < n; i++ {
		h := b.node(fmt.Sprintf("%s-h%d", b.t.Nodes[sw].Name, i), Host, 0)
		b.link(h, sw, b.ti.HostRate, b.ti.HostDelay)
	}
}

// Chain is the testbed's chain, NetRT's testbed: n hosts — ToR — core —
// ToR — n hosts.
func Chain(n int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: "chain"}, ti: ti}
	t0, core, t1 := b.node("tor0", Switch, 1), b.node("core", Switch, 2), b.node("tor1", Switch, 1)
	b.link(t0, core, ti.FabricRate, ti.FabricDelay)
	b.link(core, t1, ti.FabricRate, ti.FabricDelay)
	b.hosts(t0, n)
	b.hosts(t1, n)
	return b.t
}

// Dumbbell is n hosts — switch — switch — n hosts: one bottleneck.
func Dumbbell(n int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: "dumbbell"}, ti: ti}
	s0, s1 := b.node("s0", Switch, 1), b.node("s1", Switch, 1)
	b.link(s0, s1, ti.FabricRate, ti.FabricDelay)
	b.hosts(s0, n)
	b.hosts(s1, n)
	return b.t
}

// Multipath is the testbed's two-path topology: n hosts — ToR — two
// cores — ToR — n hosts.
func Multipath(n, paths int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: "multipath"}, ti: ti}
	t0 := b.node("tor0", Switch, 1)
	var cores []int
	for i := 0; i < paths; i++ {
		cores = append(cores, b.node(fmt.Sprintf("core%d", i), Switch, 2))
	}
	t1 := b.node("tor1", Switch, 1)
	for _, c := range cores {
		b.link(t0, c, ti.FabricRate, ti.FabricDelay)
		b.link(c, t1, ti.FabricRate, ti.FabricDelay)
	}
	b.hosts(t0, n)
	b.hosts(t1, n)
	return b.t
}

// Link is the testbed's single link between two switches (Protego's
// corrupting link): host — switch — switch — host.
func Link(ti Tiers) Topology {
	t := Dumbbell(1, ti)
	t.Name = "link"
	return t
}

// LeafSpine is leaves × spines, every leaf linked to every spine, with
// hosts per leaf. Oversubscription is hosts × host rate over spines ×
// fabric rate.
func LeafSpine(leaves, spines, hosts int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: "leafspine"}, ti: ti}
	var ls, ss []int
	for i := 0; i < leaves; i++ {
		ls = append(ls, b.node(fmt.Sprintf("leaf%d", i), Switch, 1))
	}
	for i := 0; i < spines; i++ {
		ss = append(ss, b.node(fmt.Sprintf("spine%d", i), Switch, 2))
	}
	for _, l := range ls {
		for _, s := range ss {
			b.link(l, s, ti.FabricRate, ti.FabricDelay)
		}
	}
	for _, l := range ls {
		b.hosts(l, hosts)
	}
	return b.t
}

// FatTree is a k-ary fat tree (Al-Fares et al., SIGCOMM 2008; htsim's
// FatTreeTopology): k pods of k/2 ToRs and k/2 aggregation switches,
// (k/2)² cores, k/2 hosts per ToR — k³/4 hosts, 1,024 for k = 16.
func FatTree(k int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: fmt.Sprintf("fattree-k%d", k)}, ti: ti}
	h := k / 2
	cr, cd := ti.core()
	tors := make([][]int, k)
	aggs := make([][]int, k)
	for p := 0; p < k; p++ {
		for i := 0; i < h; i++ {
			tors[p] = append(tors[p], b.node(fmt.Sprintf("tor%d-%d", p, i), Switch, 1))
		}
		for i := 0; i < h; i++ {
			aggs[p] = append(aggs[p], b.node(fmt.Sprintf("agg%d-%d", p, i), Switch, 2))
		}
	}
	cores := make([]int, h*h)
	for c := range cores {
		cores[c] = b.node(fmt.Sprintf("core%d", c), Switch, 3)
	}
	for p := 0; p < k; p++ {
		for _, t := range tors[p] {
			for _, a := range aggs[p] {
				b.link(t, a, ti.FabricRate, ti.FabricDelay)
			}
		}
		// Aggregation switch i of each pod reaches cores i·k/2 … i·k/2+k/2−1.
		for i, a := range aggs[p] {
			for j := 0; j < h; j++ {
				b.link(a, cores[i*h+j], cr, cd)
			}
		}
	}
	for p := 0; p < k; p++ {
		for _, t := range tors[p] {
			b.hosts(t, h)
		}
	}
	return b.t
}

// ParseTopology reads a topology name with parameters, as the command
// takes it: "chain", "chain:hosts=2", "dumbbell:hosts=8", "multipath:paths=2",
// "link", "leafspine:leaves=4,spines=2,hosts=8", "fattree:k=16".
func ParseTopology(s string, ti Tiers) (Topology, error) {
	name, args, _ := strings.Cut(s, ":")
	kv := map[string]int{}
	if args != "" {
		for _, a := range strings.Split(args, ",") {
			k, v, ok := strings.Cut(a, "=")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || n < 1 {
				return Topology{}, fmt.Errorf("topology %q: %q is not name=positive integer", s, a)
			}
			kv[k] = n
		}
	}
	get := func(k string, def int) int {
		if v, ok := kv[k]; ok {
			delete(kv, k)
			return v
		}
		return def
	}
	var t Topology
	switch name {
	case "chain":
		t = Chain(get("hosts", 1), ti)
	case "dumbbell":
		t = Dumbbell(get("hosts", 4), ti)
	case "multipath":
		t = Multipath(get("hosts", 1), get("paths", 2), ti)
	case "link":
		t = Link(ti)
	case "leafspine":
		t = LeafSpine(get("leaves", 4), get("spines", 2), get("hosts", 8), ti)
	case "fattree":
		k := get("k", 4)
		if k%2 != 0 || k > 16 {
			return t, fmt.Errorf("topology %q: k must be even and at most 16", s)
		}
		t = FatTree(k, ti)
	default:
		return t, fmt.Errorf("topology %q: want chain, dumbbell, multipath, link, leafspine or fattree", s)
	}
	for k := range kv {
		return t, fmt.Errorf("topology %q: no parameter %q", s, k)
	}
	return t, nil
}

// Hosts returns the indices of the host nodes, in order.
func (t *Topology) Hosts() []int {
	var out []int
	for i, n := range t.Nodes {
		if n.Role == Host {
			out = append(out, i)
		}
	}
	return out
}
