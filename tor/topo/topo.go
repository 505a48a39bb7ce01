package topo

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"rocetor/dataplane/sim"
)

// Role is what a node of a topology is: a host or a switch.
type Role uint8

// Roles.
const (
	Host Role = iota
	Switch
)

func (r Role) String() string {
	if r == Switch {
		return "switch"
	}
	return "host"
}

// NodeSpec is one node of a topology. Tier is 0 for hosts, 1 for the
// switches hosts attach to, and up from there.
type NodeSpec struct {
	Name string
	Role Role
	Tier int
	Part Part
}

// LinkSpec is one full-duplex link between nodes A and B (indices into
// Topology.Nodes). RateBps and Delay are zero in a shape built with
// zero Tiers: the lab's plan sets them per backend.
type LinkSpec struct {
	A, B    int
	RateBps uint64
	Delay   sim.Time
}

// Topology is nodes and links, as htsim's topology files list them.
// A node's ports are its links in link order.
type Topology struct {
	Name  string
	Nodes []NodeSpec
	Links []LinkSpec
}

// Tiers are the link parameters by tier: host links (host–ToR), fabric
// links (ToR–aggregation, leaf–spine, the testbed's ToR–core and
// ToR–ToR) and core links (aggregation–core of a fat tree, the links to
// tier 3). A zero core rate or delay takes the fabric's.
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

// WithTiers returns a copy of t (links copied, nodes shared) with every
// link's rate and delay those of its tier: a link with a host at an end
// is a host link, one with an end in tier 3 or above a core link, any
// other a fabric link.
func (t Topology) WithTiers(ti Tiers) Topology {
	t.Links = append([]LinkSpec(nil), t.Links...)
	cr, cd := ti.core()
	for i := range t.Links {
		l := &t.Links[i]
		a, b := t.Nodes[l.A], t.Nodes[l.B]
		switch {
		case a.Role == Host || b.Role == Host:
			l.RateBps, l.Delay = ti.HostRate, ti.HostDelay
		case a.Tier >= 3 || b.Tier >= 3:
			l.RateBps, l.Delay = cr, cd
		default:
			l.RateBps, l.Delay = ti.FabricRate, ti.FabricDelay
		}
	}
	return t
}

type builder struct{ t Topology }

func (b *builder) node(name string, r Role, tier int, p Part) int {
	b.t.Nodes = append(b.t.Nodes, NodeSpec{Name: name, Role: r, Tier: tier, Part: p})
	return len(b.t.Nodes) - 1
}

func (b *builder) link(a, c int) {
	b.t.Links = append(b.t.Links, LinkSpec{A: a, B: c})
}

// hosts hangs n hosts named after the switch ("leaf0-h0") off sw, each
// host at its link's A end.
func (b *builder) hosts(sw, n int) {
	for i := 0; i < n; i++ {
		h := b.node(fmt.Sprintf("%s-h%d", b.t.Nodes[sw].Name, i), Host, 0, Server)
		b.link(h, sw)
	}
}

// LeafSpine is leaves × spines, every leaf linked to every spine, with
// hosts per leaf. Oversubscription is hosts × host rate over spines ×
// fabric rate. Nodes: leaf0…, spine0…, then each leaf's hosts
// (leafI-h0…); links: every leaf's to every spine, then the hosts'.
func LeafSpine(leaves, spines, hosts int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: "leafspine"}}
	var ls, ss []int
	for i := 0; i < leaves; i++ {
		ls = append(ls, b.node(fmt.Sprintf("leaf%d", i), Switch, 1, ToR))
	}
	for i := 0; i < spines; i++ {
		ss = append(ss, b.node(fmt.Sprintf("spine%d", i), Switch, 2, Spine))
	}
	for _, l := range ls {
		for _, s := range ss {
			b.link(l, s)
		}
	}
	for _, l := range ls {
		b.hosts(l, hosts)
	}
	return b.t.WithTiers(ti)
}

// FatTree is a k-ary fat tree (Al-Fares et al., SIGCOMM 2008; htsim's
// FatTreeTopology): k pods of k/2 ToRs and k/2 aggregation switches,
// (k/2)² cores, k/2 hosts per ToR — k³/4 hosts, 1,024 for k = 16.
// Nodes: each pod's ToRs (torP-I) and aggregation switches (aggP-I),
// the cores (core0…), then each ToR's hosts (torP-I-h0…).
func FatTree(k int, ti Tiers) Topology {
	b := &builder{t: Topology{Name: fmt.Sprintf("fattree-k%d", k)}}
	h := k / 2
	tors := make([][]int, k)
	aggs := make([][]int, k)
	for p := 0; p < k; p++ {
		for i := 0; i < h; i++ {
			tors[p] = append(tors[p], b.node(fmt.Sprintf("tor%d-%d", p, i), Switch, 1, ToR))
		}
		for i := 0; i < h; i++ {
			aggs[p] = append(aggs[p], b.node(fmt.Sprintf("agg%d-%d", p, i), Switch, 2, Agg))
		}
	}
	cores := make([]int, h*h)
	for c := range cores {
		cores[c] = b.node(fmt.Sprintf("core%d", c), Switch, 3, Core)
	}
	for p := 0; p < k; p++ {
		for _, t := range tors[p] {
			for _, a := range aggs[p] {
				b.link(t, a)
			}
		}
		// Aggregation switch i of each pod reaches cores i·k/2 … i·k/2+k/2−1.
		for i, a := range aggs[p] {
			for j := 0; j < h; j++ {
				b.link(a, cores[i*h+j])
			}
		}
	}
	for p := 0; p < k; p++ {
		for _, t := range tors[p] {
			b.hosts(t, h)
		}
	}
	return b.t.WithTiers(ti)
}

// Syntax is what Parse reads, for a command's help.
const Syntax = "chain[:hosts=N], dumbbell[:hosts=N|senders=S,receivers=R], multipath[:hosts=N|senders=S,receivers=R,paths=P], " +
	"link, leafspine[:leaves=L,spines=S,hosts=H], fattree[:k=K], file:PATH (rocetor's topology file or ns-3's topology.txt), ns3:PATH"

// Parse reads a topology name with parameters, as torsim's --topo takes
// it: "chain", "chain:hosts=2" (hosts a side), "dumbbell:hosts=8" (8
// senders and 8 receivers), "dumbbell:senders=4,receivers=1",
// "multipath:paths=2", "link", "leafspine:leaves=4,spines=2,hosts=8",
// "fattree:k=16", "file:PATH" (ReadFile: rocetor's topology file, or
// ns-3's topology.txt told apart by content), "ns3:PATH" (ns-3's,
// whatever its content). Defaults: chain 1 host a side, dumbbell 4,
// multipath 1 and 2 paths, leaf-spine 4 leaves, 2 spines, 8 hosts a
// leaf, fat tree k = 4.
func Parse(s string, ti Tiers) (Topology, error) {
	name, args, _ := strings.Cut(s, ":")
	switch name {
	case "file":
		return ReadFile(args, ti)
	case "ns3":
		return ReadNS3(args)
	}
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
		h := get("hosts", 4)
		t = Dumbbell(get("senders", h), get("receivers", h), ti)
	case "multipath":
		h := get("hosts", 1)
		s, r := get("senders", h), get("receivers", h)
		t = Multipath(s, r, get("paths", 2), ti)
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
	if len(kv) > 0 {
		return t, fmt.Errorf("topology %q: no parameter %q", s, slices.Sorted(maps.Keys(kv))[0])
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
