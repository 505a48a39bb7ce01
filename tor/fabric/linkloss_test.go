package fabric

import (
	"reflect"
	"strings"
	"testing"

	"rocetor/tor/impair"
	"rocetor/tor/topo"
)

func fatTree(t *testing.T) topo.Topology {
	t.Helper()
	tp, err := topo.Parse("fattree:k=4", topo.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// TestRacks: Racks groups hosts as Build puts them under their ToRs.
func TestRacks(t *testing.T) {
	tp := fatTree(t)
	n, err := Build(tp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	racks := Racks(tp)
	if len(racks) != len(n.Hosts) {
		t.Fatalf("%d racks for %d hosts", len(racks), len(n.Hosts))
	}
	for i := range racks {
		for j := range racks {
			if (racks[i] == racks[j]) != (n.Hosts[i].ToR == n.Hosts[j].ToR) {
				t.Fatalf("hosts %d and %d: racks %d, %d; ToRs %d, %d", i, j, racks[i], racks[j], n.Hosts[i].ToR, n.Hosts[j].ToR)
			}
		}
	}
	if racks[0] != 0 || racks[1] != 0 || racks[2] != 1 || racks[15] != 7 {
		t.Errorf("racks %v", racks)
	}
}

// rulesOf returns the impair rules of switch name.
func rulesOf(t *testing.T, n *Network, name string) []impair.Rule {
	for _, s := range n.Switches {
		if s.Name == name {
			return s.Cfg.Impair.Rules
		}
	}
	t.Fatalf("no switch %s", name)
	return nil
}

// TestLinkLoss: a link-loss file puts its rates on the right ports of
// the built switches' configurations: both ends of a fabric link on
// egress, a host link at the switch's end both ways.
func TestLinkLoss(t *testing.T) {
	ll, err := ParseLinkLoss(strings.NewReader(`# named links
tor0-0 agg0-1 1e-3
tor1-1-h0 tor1-1 0.01 corrupt   # a host link
`))
	if err != nil {
		t.Fatal(err)
	}
	yaml := "impair:\n  rules: [{port: core0, direction: egress, loss: 0.5}]\n"
	n, err := Build(fatTree(t), Options{LinkLoss: ll, SwitchFor: map[string]string{"agg0-0": yaml}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]impair.Rule{
		"tor0-0": {{Port: "agg0-1", Direction: "egress", Loss: 1e-3}},
		"agg0-1": {{Port: "tor0-0", Direction: "egress", Loss: 1e-3}},
		"tor1-1": {{Port: "tor1-1-h0", Direction: "egress", Corrupt: 0.01}, {Port: "tor1-1-h0", Direction: "ingress", Corrupt: 0.01}},
		"agg0-0": {{Port: "core0", Direction: "egress", Loss: 0.5}}, // the YAML's alone
		"tor2-0": nil,
	}
	for sw, w := range want {
		got := rulesOf(t, n, sw)
		if len(got) != len(w) {
			t.Errorf("%s: rules %+v, want %+v", sw, got, w)
			continue
		}
		for i := range w {
			g := got[i]
			if g.Port != w[i].Port || g.Direction != w[i].Direction || g.Loss != w[i].Loss || g.Corrupt != w[i].Corrupt {
				t.Errorf("%s rule %d: %+v, want %+v", sw, i, g, w[i])
			}
		}
	}
	if _, err := Build(fatTree(t), Options{LinkLoss: &LinkLoss{Links: []LinkRate{{A: "tor0-0", B: "core0", Rate: 0.1}}}}); err == nil {
		t.Error("a link that is not there: no error")
	}
	// llr on host ports: the hosts' NICs run llr at their ends
	// (TestMechLLRHost).
	if n, err := Build(fatTree(t), Options{Switch: "llr: {ports: [all]}\n"}); err != nil || n.Hosts[0].LLR == nil || n.Hosts[15].LLR == nil {
		t.Errorf("llr on host ports: %v", err)
	}
	for _, bad := range []string{"tor0-0 agg0-1", "a b 2", "draw spine 0.1 1:1e-5:1e-4", "draw fabric 0.1 1:1e-4:1e-5"} {
		if _, err := ParseLinkLoss(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestLinkLossDraw: a distribution line impairs about its fraction of
// the links of its kind, at rates within its buckets, the same on every
// build of a seed.
func TestLinkLossDraw(t *testing.T) {
	ll, err := ParseLinkLoss(strings.NewReader("draw fabric 0.5 47.23:1e-8:1e-5 18.43:1e-5:1e-4 21.66:1e-4:1e-3 12.67:1e-3:1e-2 corrupt\n"))
	if err != nil {
		t.Fatal(err)
	}
	tp := fatTree(t)
	a, err := ll.rates(tp, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ll.rates(tp, 1)
	c, _ := ll.rates(tp, 2)
	impaired, same, other := 0, true, false
	for li, l := range tp.Links {
		host := tp.Nodes[l.A].Role == topo.Host || tp.Nodes[l.B].Role == topo.Host
		if a[li].rate > 0 {
			impaired++
			if host || !a[li].corrupt || a[li].rate < 1e-8 || a[li].rate >= 1e-2 {
				t.Errorf("link %d: %+v", li, a[li])
			}
		}
		same = same && a[li] == b[li]
		other = other || a[li] != c[li]
	}
	if impaired < 8 || impaired > 24 { // 32 fabric links, half of them
		t.Errorf("%d of 32 fabric links impaired, want about 16", impaired)
	}
	if !same || !other {
		t.Errorf("same seed same draws %v; another seed other draws %v", same, other)
	}
	n, err := Build(tp, Options{LinkLoss: ll, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := ll.Draw(tp, 1); len(d) != impaired || !reflect.DeepEqual(d, n.links()) {
		t.Errorf("Draw gives %v, a network built at the seed %v", d, n.links())
	}
	rules := 0
	for _, s := range n.Switches {
		rules += len(s.Cfg.Impair.Rules)
	}
	if rules != 2*impaired {
		t.Errorf("%d rules for %d impaired fabric links, want one per end", rules, impaired)
	}
}
