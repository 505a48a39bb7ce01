package lab

import (
	"context"
	"flag"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// --mgmt lays a /30 per switch out of the /24, in plan order, and moves
// tord's metrics (not its admin API) onto the switch's end.
func TestMgmtPlan(t *testing.T) {
	p := mustPlan(t, "chain", func(o *Options) { o.Mgmt = DefaultMgmtNet.String() })
	want := []struct{ node, host, sw string }{
		{"tor1", "198.19.78.1/30", "198.19.78.2/30"},
		{"core", "198.19.78.5/30", "198.19.78.6/30"},
		{"tor2", "198.19.78.9/30", "198.19.78.10/30"},
	}
	if len(p.Mgmt) != len(want) {
		t.Fatalf("%d management links, want %d: %+v", len(p.Mgmt), len(want), p.Mgmt)
	}
	ifaces := map[string]bool{}
	for i, w := range want {
		m := p.Mgmt[i]
		if m.Node != w.node || m.HostAddr.String() != w.host || m.Addr.String() != w.sw || m.Iface != "mgmt" {
			t.Errorf("link %d: %+v, want %s host %s switch %s on mgmt", i, m, w.node, w.host, w.sw)
		}
		if len(m.HostIface) > 15 || !strings.HasPrefix(m.HostIface, "rtbm") || ifaces[m.HostIface] {
			t.Errorf("%s: host interface %q: want rtbm…, unique, at most 15 bytes", m.Node, m.HostIface)
		}
		ifaces[m.HostIface] = true
		if m.HostIface != mgmtHostIface(p.Node(m.Node).Netns) {
			t.Errorf("%s: host interface %q is not the one down looks for", m.Node, m.HostIface)
		}
		if slices.Contains(p.Ports(m.Node), m.Iface) {
			t.Errorf("%s: mgmt is one of the switch's ports", m.Node)
		}
	}
	cfgs := p.TordConfigs()
	for _, w := range want {
		c := cfgs[w.node]
		if a := netip.MustParsePrefix(w.sw).Addr().String() + ":9478"; c.MetricsAddr != a || c.AdminAddr != "127.0.0.1:9479" {
			t.Errorf("%s: metrics %s, admin %s; want %s and loopback", w.node, c.MetricsAddr, c.AdminAddr, a)
		}
		if slices.Contains(c.Ports, "mgmt") {
			t.Errorf("%s: tord's ports %v include mgmt", w.node, c.Ports)
		}
	}

	// Without --mgmt: nothing of it, metrics on loopback.
	p = mustPlan(t, "chain", nil)
	if len(p.Mgmt) != 0 || len(p.MgmtCommands()) != 0 || p.TordConfigs()["core"].MetricsAddr != "127.0.0.1:9478" {
		t.Errorf("without --mgmt: %+v, %q", p.Mgmt, p.MgmtCommands())
	}
}

// The management commands are the only ones that run in testbed's own
// namespace, and there they touch only the plan's host-end interfaces;
// the rest still names the plan's namespaces.
func TestMgmtCommandsTouchOnlyTheirInterfaces(t *testing.T) {
	for _, topo := range Topologies {
		p := mustPlan(t, topo, func(o *Options) { o.Mgmt = "198.19.80.0/24"; o.Paths = 4 })
		ns, hostIfs := map[string]bool{}, map[string]bool{}
		for _, n := range p.Nodes {
			ns[n.Netns] = true
		}
		for _, m := range p.Mgmt {
			hostIfs[m.HostIface] = true
		}
		if len(hostIfs) != len(p.Switches()) {
			t.Errorf("%s: %d host interfaces for %d switches", topo, len(hostIfs), len(p.Switches()))
		}
		for _, c := range p.MgmtCommands() {
			if c[1] == "-n" {
				if !ns[c[2]] || !slices.Contains(c, "mgmt") {
					t.Errorf("%s: %q: want one of the plan's namespaces and its mgmt interface", topo, c)
				}
				continue
			}
			touched := 0
			for _, a := range c {
				if hostIfs[a] {
					touched++
				}
			}
			if touched != 1 {
				t.Errorf("%s: %q runs in testbed's namespace but does not name exactly one of the plan's host interfaces", topo, c)
			}
			if i := slices.Index(c, "netns"); i >= 0 && (i+1 >= len(c) || !ns[c[i+1]]) {
				t.Errorf("%s: %q moves a veth end outside the plan", topo, c)
			}
			if slices.Contains(c, "route") {
				t.Errorf("%s: %q adds a route: the management network has only its connected /30s", topo, c)
			}
		}
	}
}

func TestMgmtFlagAndValidation(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // Options.Mgmt, or an error containing it after "error:"
	}{
		{nil, ""},
		{[]string{"--mgmt"}, DefaultMgmtNet.String()},
		{[]string{"--mgmt=198.19.81.0/24"}, "198.19.81.0/24"},
		{[]string{"--mgmt=false"}, ""},
		{[]string{"--mgmt=198.19.81.1/24"}, "error:IPv4 network"},
		{[]string{"--mgmt=fd00::/64"}, "error:IPv4 network"},
		{[]string{"--mgmt=198.19.81.0/31"}, "error:IPv4 network"},
	} {
		o := DefaultOptions("chain")
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(&strings.Builder{})
		FabricFlags(fs, &o, true)
		err := fs.Parse(c.args)
		if want, ok := strings.CutPrefix(c.want, "error:"); ok {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: %v, want an error about %s", c.args, err, want)
			}
			continue
		}
		if err != nil || o.Mgmt != c.want {
			t.Errorf("%q: Mgmt %q, %v; want %q", c.args, o.Mgmt, err, c.want)
		}
	}
	// A network too small for the topology's switches.
	o := DefaultOptions("chain")
	o.Prefix, o.Mgmt = "rtb-chain-", "198.19.81.0/30"
	if _, err := NewPlan(o); err == nil || !strings.Contains(err.Error(), "room for 1") {
		t.Errorf("chain on a /30: %v, want no room", err)
	}
	o = DefaultOptions("multipath")
	o.Prefix, o.Mgmt, o.Paths = "rtb-mp-", "198.19.81.0/26", 14 // 16 switches, 16 /30s
	if _, err := NewPlan(o); err != nil {
		t.Errorf("16 switches on a /26: %v", err)
	}
}

// up refuses a management network that another testbed has, or that
// overlaps the host's own addresses.
func TestMgmtFree(t *testing.T) {
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs ip (iproute2) to list the host's routes")
	}
	plan := func(mgmt string) *Plan {
		return mustPlan(t, "link", func(o *Options) { o.Mgmt = mgmt })
	}
	other := &State{Name: "rtb-other", Plan: plan("198.19.81.0/24")}
	ctx := context.Background()
	if err := checkMgmtFree(ctx, plan("198.19.81.0/24"), []*State{other}); err == nil || !strings.Contains(err.Error(), "rtb-other") {
		t.Errorf("the other testbed's network: %v, want refused naming it", err)
	}
	if err := checkMgmtFree(ctx, plan("127.0.0.0/24"), nil); err == nil || !strings.Contains(err.Error(), "the host's") {
		t.Errorf("inside the host's loopback network: %v, want refused", err)
	}
	if err := checkMgmtFree(ctx, plan("198.19.82.0/24"), []*State{other}); err != nil {
		t.Errorf("a free network: %v", err)
	}
	if err := checkMgmtFree(ctx, plan(""), []*State{other}); err != nil {
		t.Errorf("no management network: %v", err)
	}
}
