package topo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"rocetor/dataplane/sim"
)

// nodes is each node as "name/role/tier/part".
func nodes(t Topology) []string {
	var out []string
	for _, n := range t.Nodes {
		out = append(out, fmt.Sprintf("%s/%s/%d/%s", n.Name, n.Role, n.Tier, n.Part))
	}
	return out
}

// links is each link as "a—b".
func links(t Topology) []string {
	var out []string
	for _, l := range t.Links {
		out = append(out, t.Nodes[l.A].Name+"—"+t.Nodes[l.B].Name)
	}
	return out
}

// TestTestbedShapes: the testbed's shapes name their nodes and order
// their nodes and links as tor/lab lays out its namespaces and veths.
func TestTestbedShapes(t *testing.T) {
	for _, c := range []struct {
		topo         Topology
		name         string
		nodes, links []string
	}{
		{Chain(1, Tiers{}), "chain",
			[]string{"h1/host/0/sender", "tor1/switch/1/tor", "core/switch/2/core", "tor2/switch/1/tor", "h2/host/0/receiver"},
			[]string{"tor1—h1", "tor1—core", "core—tor2", "tor2—h2"}},
		{Chain(2, Tiers{}), "chain",
			[]string{"h1/host/0/sender", "h2/host/0/sender", "tor1/switch/1/tor", "core/switch/2/core", "tor2/switch/1/tor",
				"h3/host/0/receiver", "h4/host/0/receiver"},
			[]string{"tor1—h1", "tor1—h2", "tor1—core", "core—tor2", "tor2—h3", "tor2—h4"}},
		{Dumbbell(2, 1, Tiers{}), "dumbbell",
			[]string{"h1/host/0/sender", "h2/host/0/sender", "tor1/switch/1/tor", "tor2/switch/1/tor", "h3/host/0/receiver"},
			[]string{"tor1—h1", "tor1—h2", "tor1—tor2", "tor2—h3"}},
		{Multipath(1, 2, 3, Tiers{}), "multipath",
			[]string{"h1/host/0/sender", "tor1/switch/1/tor", "core1/switch/2/core", "core2/switch/2/core", "core3/switch/2/core",
				"tor2/switch/1/tor", "h2/host/0/receiver", "h3/host/0/receiver"},
			[]string{"tor1—h1", "tor1—core1", "core1—tor2", "tor1—core2", "core2—tor2", "tor1—core3", "core3—tor2", "tor2—h2", "tor2—h3"}},
		{Multipath(1, 1, 1, Tiers{}), "multipath",
			[]string{"h1/host/0/sender", "tor1/switch/1/tor", "core1/switch/2/core", "tor2/switch/1/tor", "h2/host/0/receiver"},
			[]string{"tor1—h1", "tor1—core1", "core1—tor2", "tor2—h2"}},
		{Link(Tiers{}), "link",
			[]string{"h1/host/0/sender", "tor1/switch/1/tor", "tor2/switch/1/tor", "h2/host/0/receiver"},
			[]string{"tor1—h1", "tor1—tor2", "tor2—h2"}},
	} {
		if c.topo.Name != c.name || !slices.Equal(nodes(c.topo), c.nodes) || !slices.Equal(links(c.topo), c.links) {
			t.Errorf("%s:\n got %q\n     %q\nwant %q\n     %q", c.name, nodes(c.topo), links(c.topo), c.nodes, c.links)
		}
	}
}

// TestLeafSpineAndFatTree: sizes, names and order of the data-center
// shapes, which torsim's recorded results depend on.
func TestLeafSpineAndFatTree(t *testing.T) {
	ls := LeafSpine(2, 2, 2, Tiers{})
	wantN := []string{"leaf0/switch/1/tor", "leaf1/switch/1/tor", "spine0/switch/2/spine", "spine1/switch/2/spine",
		"leaf0-h0/host/0/host", "leaf0-h1/host/0/host", "leaf1-h0/host/0/host", "leaf1-h1/host/0/host"}
	wantL := []string{"leaf0—spine0", "leaf0—spine1", "leaf1—spine0", "leaf1—spine1",
		"leaf0-h0—leaf0", "leaf0-h1—leaf0", "leaf1-h0—leaf1", "leaf1-h1—leaf1"}
	if !slices.Equal(nodes(ls), wantN) || !slices.Equal(links(ls), wantL) {
		t.Errorf("leafspine:\n got %q\n     %q", nodes(ls), links(ls))
	}
	for _, c := range []struct{ k, hosts, switches, links int }{{4, 16, 20, 48}, {8, 128, 80, 384}, {16, 1024, 320, 3072}} {
		ft := FatTree(c.k, Tiers{})
		h := len(ft.Hosts())
		if h != c.hosts || len(ft.Nodes)-h != c.switches || len(ft.Links) != c.links {
			t.Errorf("k=%d: %d hosts, %d switches, %d links; want %d, %d, %d", c.k, h, len(ft.Nodes)-h, len(ft.Links), c.hosts, c.switches, c.links)
		}
	}
	ft := FatTree(4, Tiers{})
	got := nodes(ft)
	if !slices.Equal(got[:5], []string{"tor0-0/switch/1/tor", "tor0-1/switch/1/tor", "agg0-0/switch/2/agg", "agg0-1/switch/2/agg", "tor1-0/switch/1/tor"}) ||
		got[16] != "core0/switch/3/core" || got[20] != "tor0-0-h0/host/0/host" || got[35] != "tor3-1-h1/host/0/host" {
		t.Errorf("fat tree k=4 nodes %q", got)
	}
	gl := links(ft)
	if !slices.Equal(gl[:6], []string{"tor0-0—agg0-0", "tor0-0—agg0-1", "tor0-1—agg0-0", "tor0-1—agg0-1", "agg0-0—core0", "agg0-0—core1"}) ||
		gl[32] != "tor0-0-h0—tor0-0" {
		t.Errorf("fat tree k=4 links %q", gl)
	}
}

// TestTiers: every link takes its tier's rate and delay; a fat tree's
// core links fall back to the fabric's when the core tier is zero.
func TestTiers(t *testing.T) {
	ti := Tiers{HostRate: 1, FabricRate: 2, CoreRate: 3, HostDelay: 4, FabricDelay: 5, CoreDelay: 6}
	ft := FatTree(4, ti)
	count := map[string]int{}
	for _, l := range ft.Links {
		count[fmt.Sprintf("%d/%d", l.RateBps, l.Delay)]++
	}
	if count["1/4"] != 16 || count["2/5"] != 16 || count["3/6"] != 16 {
		t.Errorf("fat tree links by rate/delay %v, want 16 host, 16 fabric, 16 core", count)
	}
	ti.CoreRate, ti.CoreDelay = 0, 0
	for _, l := range FatTree(4, ti).Links {
		if l.RateBps == 0 || l.RateBps == 3 || l.Delay == 6 {
			t.Fatalf("core link %+v with a zero core tier", l)
		}
	}
	c := Chain(1, Tiers{})
	d := c.WithTiers(DefaultTiers())
	for i, l := range d.Links {
		if l.RateBps != 100e9 || l.Delay != sim.Microsecond || c.Links[i].RateBps != 0 {
			t.Errorf("link %d: %+v, the original %+v", i, l, c.Links[i])
		}
	}
}

func TestBottleneck(t *testing.T) {
	for _, c := range []struct {
		topo Topology
		want string
	}{
		{Chain(1, Tiers{}), "tor1—core"},
		{Dumbbell(4, 1, Tiers{}), "tor1—tor2"},
		{Multipath(2, 2, 2, Tiers{}), "tor1—core1"},
		{Link(Tiers{}), "tor1—tor2"},
	} {
		n, l, ok := c.topo.Bottleneck()
		if !ok || c.topo.Nodes[n].Name != "tor1" || links(c.topo)[l] != c.want {
			t.Errorf("%s: bottleneck %d, %d, %v; want tor1 on %s", c.topo.Name, n, l, ok, c.want)
		}
	}
	ft := FatTree(4, Tiers{})
	if _, _, ok := ft.Bottleneck(); ok {
		t.Error("a fat tree has a bottleneck")
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in              string
		name            string
		hosts, switches int
		senders         int
	}{
		{"chain", "chain", 2, 3, 1},
		{"chain:hosts=3", "chain", 6, 3, 3},
		{"dumbbell", "dumbbell", 8, 2, 4},
		{"dumbbell:hosts=2", "dumbbell", 4, 2, 2},
		{"dumbbell:senders=4,receivers=1", "dumbbell", 5, 2, 4},
		{"dumbbell:hosts=3,receivers=1", "dumbbell", 4, 2, 3},
		{"multipath", "multipath", 2, 4, 1},
		{"multipath:paths=4", "multipath", 2, 6, 1},
		{"multipath:hosts=2,paths=3", "multipath", 4, 5, 2},
		{"link", "link", 2, 2, 1},
		{"leafspine", "leafspine", 32, 6, 0},
		{"leafspine:leaves=2,spines=1,hosts=3", "leafspine", 6, 3, 0},
		{"fattree", "fattree-k4", 16, 20, 0},
		{"fattree:k=16", "fattree-k16", 1024, 320, 0},
	} {
		tp, err := Parse(c.in, DefaultTiers())
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		h := len(tp.Hosts())
		if tp.Name != c.name || h != c.hosts || len(tp.Nodes)-h != c.switches || len(tp.ByPart(Sender)) != c.senders {
			t.Errorf("%s: %s with %d hosts, %d switches, %d senders; want %s, %d, %d, %d", c.in, tp.Name, h, len(tp.Nodes)-h,
				len(tp.ByPart(Sender)), c.name, c.hosts, c.switches, c.senders)
		}
		for _, l := range tp.Links {
			if l.RateBps != 100e9 || l.Delay != sim.Microsecond {
				t.Errorf("%s: link %+v without the tiers'", c.in, l)
			}
		}
	}
	for _, c := range []struct{ in, want string }{
		{"ring", "want chain"},
		{"chain:hosts=0", "positive integer"},
		{"chain:hosts", "positive integer"},
		{"chain:paths=2", `no parameter "paths"`},
		{"link:hosts=2", `no parameter "hosts"`},
		{"fattree:k=5", "even"},
		{"fattree:k=18", "at most 16"},
		{"dumbbell:zeta=1,alpha=2", `no parameter "alpha"`},
	} {
		if _, err := Parse(c.in, DefaultTiers()); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func TestLookups(t *testing.T) {
	tp := Multipath(2, 1, 2, Tiers{})
	if i := tp.Index("core2"); i != 4 || tp.Index("core0") != -1 {
		t.Errorf("Index(core2) = %d, Index(core0) = %d", i, tp.Index("core0"))
	}
	if got := tp.ByPart(Core); !slices.Equal(got, []int{3, 4}) {
		t.Errorf("cores %v", got)
	}
	if got := tp.Hosts(); !slices.Equal(got, []int{0, 1, 6}) {
		t.Errorf("hosts %v", got)
	}
	if p := tp.Peer(0, 2); p != 0 || tp.Peer(0, 0) != 2 {
		t.Errorf("Peer: %d, %d", p, tp.Peer(0, 0))
	}
	if Host.String() != "host" || Switch.String() != "switch" {
		t.Errorf("roles %s, %s", Host, Switch)
	}
}
