package lab

import (
	"flag"
	"net/netip"
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
		if m.HostIface != MgmtHostIface(p.Node(m.Node).Netns) {
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
	if len(p.Mgmt) != 0 || p.TordConfigs()["core"].MetricsAddr != "127.0.0.1:9478" {
		t.Errorf("without --mgmt: %+v", p.Mgmt)
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
