package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"rocetor/tor/topo"
)

func mustPlan(t *testing.T, topo string, edit func(*Options)) *Plan {
	t.Helper()
	o := DefaultOptions(topo)
	o.Prefix = DefaultPrefix(topo)
	if edit != nil {
		edit(&o)
	}
	p, err := NewPlan(o)
	if err != nil {
		t.Fatalf("NewPlan(%s): %v", topo, err)
	}
	return p
}

// linkString is a link as "node:iface addr — node:iface addr".
func linkString(l Link) string {
	return fmt.Sprintf("%s:%s %s — %s:%s %s", l.A.Node, l.A.Iface, l.A.V4, l.B.Node, l.B.Iface, l.B.V4)
}

func routeString(r Route) string {
	var hops []string
	for _, h := range r.NextHops {
		hops = append(hops, h.Via.String()+"@"+h.Dev)
	}
	return fmt.Sprintf("%s: %s via %s", r.Node, r.Dst, strings.Join(hops, ","))
}

func TestChainPlan(t *testing.T) {
	p := mustPlan(t, "chain", nil)
	var nodes []string
	for _, n := range p.Nodes {
		nodes = append(nodes, fmt.Sprintf("%s/%s/%s/%s", n.Name, n.Kind, n.Role, n.Netns))
	}
	want := []string{
		"h1/host/sender/rtb-chain-h1", "tor1/switch/tor/rtb-chain-tor1", "core/switch/core/rtb-chain-core",
		"tor2/switch/tor/rtb-chain-tor2", "h2/host/receiver/rtb-chain-h2",
	}
	if !slices.Equal(nodes, want) {
		t.Errorf("nodes:\n got %q\nwant %q", nodes, want)
	}
	var links []string
	for _, l := range p.Links {
		links = append(links, linkString(l))
	}
	wantLinks := []string{
		"tor1:h1 10.0.1.1/24 — h1:eth0 10.0.1.2/24",
		"tor1:core 10.1.1.1/24 — core:tor1 10.1.1.2/24",
		"core:tor2 10.2.1.1/24 — tor2:core 10.2.1.2/24",
		"tor2:h2 10.0.2.1/24 — h2:eth0 10.0.2.2/24",
	}
	if !slices.Equal(links, wantLinks) {
		t.Errorf("links:\n got %q\nwant %q", links, wantLinks)
	}
	// IPv6 twins: 10.A.B.x ↔ fdAA:0:0:B::x.
	for _, l := range p.Links {
		for _, e := range []End{l.A, l.B} {
			a4 := e.V4.Addr().As4()
			want := netip.MustParsePrefix(fmt.Sprintf("fd%02d:0:0:%x::%x/64", a4[1], a4[2], a4[3]))
			if e.V6 != want {
				t.Errorf("%s:%s has %v, want %v beside %v", e.Node, e.Iface, e.V6, want, e.V4)
			}
		}
	}
	var routes []string
	for _, r := range p.Routes {
		if r.Dst.Addr().Is4() {
			routes = append(routes, routeString(r))
		}
	}
	wantRoutes := []string{
		"h1: 0.0.0.0/0 via 10.0.1.1@eth0",
		"h2: 0.0.0.0/0 via 10.0.2.1@eth0",
		"tor1: 10.0.2.0/24 via 10.1.1.2@core",
		"core: 10.0.1.0/24 via 10.1.1.1@tor1",
		"core: 10.0.2.0/24 via 10.2.1.2@tor2",
		"tor2: 10.0.1.0/24 via 10.2.1.1@core",
	}
	if !slices.Equal(routes, wantRoutes) {
		t.Errorf("IPv4 routes:\n got %q\nwant %q", routes, wantRoutes)
	}
	if len(p.Routes) != 2*len(wantRoutes) {
		t.Errorf("%d routes, want %d (each IPv4 route with its IPv6 twin)", len(p.Routes), 2*len(wantRoutes))
	}
	if want := []Site{{"core", "tor2"}}; !slices.Equal(p.Sites, want) {
		t.Errorf("impair sites %v, want %v", p.Sites, want)
	}
	if got, want := p.Shape(), "h1 — tor1 — core — tor2 — h2"; got != want {
		t.Errorf("Shape() = %q, want %q", got, want)
	}
	if got := p.Ports("tor1"); !slices.Equal(got, []string{"h1", "core"}) {
		t.Errorf("tor1's ports %v, want [h1 core]", got)
	}
	if a := p.Addr("h2"); a != netip.MustParseAddr("10.0.2.2") {
		t.Errorf("Addr(h2) = %v", a)
	}
}

func TestMultipathPlan(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Paths = 3; o.Multipath = "spray" })
	if got := p.ByRole(RoleCore); !slices.Equal(got, []string{"core1", "core2", "core3"}) {
		t.Fatalf("cores %v", got)
	}
	var tor1 []string
	for _, r := range p.Routes {
		if r.Node == "tor1" && r.Dst.Addr().Is4() {
			tor1 = append(tor1, routeString(r))
		}
	}
	want := []string{"tor1: 10.0.2.0/24 via 10.1.1.2@core1,10.1.2.2@core2,10.1.3.2@core3"}
	if !slices.Equal(tor1, want) {
		t.Errorf("tor1's routes %q, want %q", tor1, want)
	}
	if len(p.Sites) != 3 {
		t.Errorf("impair sites %v, want one per core", p.Sites)
	}
	for name, c := range p.TordConfigs() {
		if c.Forwarding.Multipath != "spray" {
			t.Errorf("%s: multipath %q, want spray", name, c.Forwarding.Multipath)
		}
	}
}

func TestDumbbellPlan(t *testing.T) {
	p := mustPlan(t, "dumbbell", func(o *Options) { o.Senders = 4; o.IPv6 = false })
	if got := p.ByRole(RoleSender); !slices.Equal(got, []string{"h1", "h2", "h3", "h4"}) {
		t.Errorf("senders %v", got)
	}
	if got := p.ByRole(RoleReceiver); !slices.Equal(got, []string{"h5"}) {
		t.Errorf("receivers %v", got)
	}
	if a := p.Addr("h5"); a != netip.MustParseAddr("10.0.5.2") {
		t.Errorf("receiver's address %v, want 10.0.5.2", a)
	}
	if p.Addr6("h1").IsValid() {
		t.Error("IPv6 address with --ipv6=false")
	}
	for _, r := range p.Routes {
		if r.Dst.Addr().Is6() {
			t.Errorf("IPv6 route with --ipv6=false: %s", routeString(r))
		}
	}
	if want := []Site{{"tor1", "tor2"}}; !slices.Equal(p.Sites, want) {
		t.Errorf("impair sites %v, want %v (the shared link)", p.Sites, want)
	}
	// tor1 has five ports: its rings shrink so the UMEM stays in budget.
	c := p.TordConfigs()["tor1"]
	if len(c.Ports) != 5 || c.XDP.Frames < 2*c.XDP.RingSize*len(c.Ports) || c.XDP.Frames > 16384 {
		t.Errorf("tor1: ports %v, frames %d, ring %d: want frames ≥ 2 × ring × ports and ≤ 16384", c.Ports, c.XDP.Frames, c.XDP.RingSize)
	}
	var tor2 []string
	for _, r := range p.Routes {
		if r.Node == "tor2" {
			tor2 = append(tor2, routeString(r))
		}
	}
	if len(tor2) != 4 || tor2[0] != "tor2: 10.0.1.0/24 via 10.1.1.1@tor1" {
		t.Errorf("tor2's routes %q, want one per sender via tor1", tor2)
	}
}

func TestLinkPlan(t *testing.T) {
	p := mustPlan(t, "link", nil)
	if got := p.Shape(); got != "h1 — tor1 — tor2 — h2" {
		t.Errorf("Shape() = %q", got)
	}
	if len(p.Switches()) != 2 || len(p.Links) != 3 {
		t.Errorf("%d switches and %d links, want 2 and 3", len(p.Switches()), len(p.Links))
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"topology", func(o *Options) { o.Topology = "ring" }, "topology"},
		{"prefix", func(o *Options) { o.Prefix = "rtb chain" }, "--prefix"},
		{"prefix-dash", func(o *Options) { o.Prefix = "rtb" }, "--prefix"},
		{"rate", func(o *Options) { o.Rate = "fast" }, "--rate"},
		{"multipath", func(o *Options) { o.Multipath = "random" }, "--multipath"},
		{"poll", func(o *Options) { o.Poll = "spinning" }, "--poll"},
		{"loss", func(o *Options) { o.Loss = 1.5 }, "loss"},
		{"burst", func(o *Options) { o.Loss = 0.9; o.Burst = 2 }, "burst"},
		{"senders", func(o *Options) { o.Topology = "dumbbell"; o.Senders = 0 }, "--senders"},
		{"paths", func(o *Options) { o.Topology = "multipath"; o.Paths = 17 }, "--paths"},
		{"tord-cpu", func(o *Options) { o.TordCPU = "fifo" }, "--tord-cpu"},
		{"tord-cpu-priority", func(o *Options) { o.Poll = "interrupt"; o.TordCPU = "fifo:0" }, "cpu.priority"},
		// Real time with a polling worker would keep a CPU for good.
		{"tord-cpu-poll", func(o *Options) { o.TordCPU = "fifo:10" }, "cpu.policy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultOptions("chain")
			o.Prefix = "rtb-chain-"
			c.edit(&o)
			err := o.Validate()
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Validate() = %v, want a usage error naming %s", err, c.want)
			}
		})
	}
}

func TestXDPSizes(t *testing.T) {
	for ports := 2; ports <= 34; ports++ {
		frames, ring := xdpSizes(ports)
		if ports == 2 {
			if frames != 0 || ring != 0 {
				t.Errorf("2 ports: %d frames, ring %d, want tord's defaults (0, 0)", frames, ring)
			}
			continue
		}
		if frames&(frames-1) != 0 || ring&(ring-1) != 0 || ring < 256 || frames < 2*ring*ports {
			t.Errorf("%d ports: %d frames, ring %d: want powers of two, ring ≥ 256, frames ≥ 2 × ring × ports", ports, frames, ring)
		}
		if ports <= 16 && frames > 16384 {
			t.Errorf("%d ports: %d frames, want ≤ 16384", ports, frames)
		}
	}
}

// Multipath and dumbbell take senders and receivers: every sender has a
// route to every receiver through its ToR, and the cores know them all.
func TestSendersReceivers(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Senders, o.Receivers, o.Paths = 2, 2, 2 })
	if s, r := p.ByRole(RoleSender), p.ByRole(RoleReceiver); len(s) != 2 || len(r) != 2 || s[0] != "h1" || r[1] != "h4" {
		t.Fatalf("senders %v, receivers %v", s, r)
	}
	routes := map[string]int{}
	for _, r := range p.Routes {
		if r.Dst.Addr().Is4() {
			routes[r.Node]++
		}
	}
	// tor1 reaches h3 and h4, tor2 h1 and h2, each core all four.
	if routes["tor1"] != 2 || routes["tor2"] != 2 || routes["core1"] != 4 || routes["core2"] != 4 {
		t.Errorf("IPv4 routes per node %v", routes)
	}
	if d := DefaultOptions("multipath"); d.Senders != 1 || d.Receivers != 1 {
		t.Errorf("multipath defaults to %d senders, %d receivers; want 1, 1", d.Senders, d.Receivers)
	}
	o := DefaultOptions("dumbbell")
	o.Prefix, o.Receivers = DefaultPrefix("dumbbell"), 33
	if err := o.Validate(); !errors.Is(err, ErrUsage) {
		t.Errorf("33 receivers: %v, want a usage error", err)
	}
}

// TestPlanIsTopo: for every option set the testbed takes, the plan's
// nodes and links are its topology's (tor/topo), node for node and link
// for link: names, kinds, roles, ends, in the same order, so that the
// simulator, which builds the topology, has the testbed's ports.
func TestPlanIsTopo(t *testing.T) {
	var sets []func(*Options)
	for s := 1; s <= 4; s++ {
		for r := 1; r <= 3; r++ {
			for k := 1; k <= 4; k++ {
				sets = append(sets, func(o *Options) { o.Senders, o.Receivers, o.Paths = s, r, k })
			}
		}
	}
	sets = append(sets, func(o *Options) { o.Senders, o.Receivers, o.Paths = 32, 32, 16 })
	for _, topology := range Topologies {
		for _, edit := range sets {
			p := mustPlan(t, topology, edit)
			tp := p.Topo
			if want := p.Options.Topo(); !reflect.DeepEqual(tp, want) {
				t.Fatalf("%s: the plan's topology is not its options'", topology)
			}
			if tp.Name != topology || len(tp.Nodes) != len(p.Nodes) || len(tp.Links) != len(p.Links) {
				t.Fatalf("%s: topology %s with %d nodes and %d links, plan %d and %d", topology, tp.Name,
					len(tp.Nodes), len(tp.Links), len(p.Nodes), len(p.Links))
			}
			for i, n := range tp.Nodes {
				pn := p.Nodes[i]
				if pn.Name != n.Name || pn.Role != string(n.Part) || (pn.Kind == SwitchNode) != (n.Role == topo.Switch) {
					t.Errorf("%s: node %d is %+v in the plan, %+v in the topology", topology, i, pn, n)
				}
			}
			for i, l := range tp.Links {
				pl := p.Links[i]
				if pl.A.Node != tp.Nodes[l.A].Name || pl.B.Node != tp.Nodes[l.B].Name {
					t.Errorf("%s: link %d is %s in the plan, %s — %s in the topology", topology, i, linkString(pl),
						tp.Nodes[l.A].Name, tp.Nodes[l.B].Name)
				}
				if l.RateBps != 0 || l.Delay != 0 {
					t.Errorf("%s: link %d has a rate or delay in the plan's topology: %+v", topology, i, l)
				}
			}
			node, port := p.Bottleneck()
			if ports := p.switchPorts("tor1"); node != "tor1" || port != ports[0] {
				t.Errorf("%s: bottleneck %s:%s, want tor1's first switch port %s", topology, node, port, ports[0])
			}
		}
	}
}

// TestPlanJSON: a plan's JSON (a testbed's state file) has the fields
// it always had and no topology; reading it back lays the topology
// out again.
func TestPlanJSON(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Senders, o.Paths = 2, 3 })
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(keys)); !slices.Equal(got, []string{"impair_sites", "links", "nodes", "options", "routes"}) {
		t.Errorf("plan JSON keys %q", got)
	}
	var st State
	if err := json.Unmarshal([]byte(`{"version": 1, "plan": `+string(b)+`}`), &st); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Plan, p) {
		t.Errorf("plan read back differs:\n got %+v\nwant %+v", st.Plan, p)
	}
	if n, port := st.Plan.Bottleneck(); n != "tor1" || port != "core1" {
		t.Errorf("bottleneck of the plan read back %s:%s, want tor1:core1", n, port)
	}
}
