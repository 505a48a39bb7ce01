package topo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"rocetor/dataplane/sim"
)

// linksFull is each link as "a—b rate delay".
func linksFull(t Topology) []string {
	var out []string
	for _, l := range t.Links {
		out = append(out, fmt.Sprintf("%s—%s %d %d", t.Nodes[l.A].Name, t.Nodes[l.B].Name, l.RateBps, l.Delay/sim.Nanosecond))
	}
	return out
}

// TestTopologyFile: rocetor's format, with a link that takes its tier's
// rate and delay; tiers and parts derived from the distance to hosts.
func TestTopologyFile(t *testing.T) {
	ti := Tiers{HostRate: 25e9, HostDelay: 2 * sim.Microsecond, FabricRate: 10e9, FabricDelay: 3 * sim.Microsecond}
	tp, err := Parse("file:testdata/two-racks.topo", ti)
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []string{"h1/host/0/host", "h2/host/0/host", "h3/host/0/host", "h4/host/0/host",
		"leaf1/switch/1/tor", "leaf2/switch/1/tor", "spine/switch/2/spine"}
	wantLinks := []string{"h1—leaf1 100000000000 1000", "h2—leaf1 100000000000 1000", "h3—leaf2 100000000000 1000",
		"h4—leaf2 25000000000 2000", "leaf1—spine 400000000000 500", "leaf2—spine 400000000000 500"}
	if tp.Name != "two-racks" || !slices.Equal(nodes(tp), wantNodes) || !slices.Equal(linksFull(tp), wantLinks) {
		t.Errorf("got %s\n%q\n%q\nwant two-racks\n%q\n%q", tp.Name, nodes(tp), linksFull(tp), wantNodes, wantLinks)
	}
}

// TestNS3Topology: ns-3's topology.txt, by content (file:) and by name
// (ns3:): hosts h<id>, switches s<id>, three switch tiers.
func TestNS3Topology(t *testing.T) {
	wantNodes := []string{"h0/host/0/host", "h1/host/0/host", "h2/host/0/host", "h3/host/0/host",
		"s4/switch/1/tor", "s5/switch/1/tor", "s6/switch/2/agg", "s7/switch/2/agg", "s8/switch/3/core", "s9/switch/3/core"}
	for _, spec := range []string{"file:testdata/ns3-fattree.txt", "ns3:testdata/ns3-fattree.txt"} {
		tp, err := Parse(spec, DefaultTiers())
		if err != nil {
			t.Fatal(err)
		}
		l := linksFull(tp)
		if !slices.Equal(nodes(tp), wantNodes) || len(l) != 12 || l[0] != "h0—s4 100000000000 1000" || l[11] != "s7—s9 400000000000 2000" {
			t.Errorf("%s: got\n%q\n%q", spec, nodes(tp), l)
		}
		if h := tp.Hosts(); !slices.Equal(h, []int{0, 1, 2, 3}) {
			t.Errorf("%s: hosts %v", spec, h)
		}
	}
}

// TestTopologyFileErrors: a bad file names its line and what is wrong.
func TestTopologyFileErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"node h1 host\nnode t switch\nlink h1 t 100G 1us\nlink h1 x\n", "x.topo:4: link to x, which no node line declares"},
		{"node h1 host\nnode h1 switch\n", "x.topo:2: node h1 declared twice"},
		{"node h1 router\n", "x.topo:1: node h1: role \"router\""},
		{"node h1 host\n\n# c\nnode t switch\nlink h1 t 100X 1us\n", "x.topo:5: rate \"100X\""},
		{"node h1 host\nnode t switch\nlink h1 t 100G 1\n", "x.topo:3: delay \"1\""},
		{"node h1 host\nnode t switch\nnode u switch\nlink h1 t\nlink h1 u\n", "x.topo:5: host h1 has a second link (to u)"},
		{"node h1 host\nnode h2 host\nlink h1 h2\n", "x.topo:3: link h1–h2 joins two hosts"},
		{"node h1 host\nnode h2 host\nnode t switch\nnode a switch\nnode b switch\nlink h1 t\nlink h2 t\nlink a b\n", "x.topo:8: switch a reaches no host"},
		{"node h1 host\nnode t switch\nlink h1 t\nswitch t\n", "x.topo:4: \"switch\": want node or link"},
		{"node h1 host tier=2\n", "x.topo:1: node h1: \"tier=2\""},
		{"node eth0/1 switch\n", "x.topo:1: node name \"eth0/1\""},
		{"node h1 host\nnode t switch\nlink t t\n", "x.topo:3: link from t to itself"},
		{"node h1 host\nnode h2 host\nnode t switch\nnode u switch\nlink h1 t\nlink h2 t\nlink t u\n", "x.topo:7: switch u has one link"},
	} {
		_, err := ParseFile(strings.NewReader(c.text), "x.topo", "x", DefaultTiers())
		if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want …%s…", c.text, err, c.want)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0.01\n", "t.txt:4: error rate \"0.01\""},
		{"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n", "t.txt:3: end of file after 1 links, the header says 2"},
		{"3 1 1\n2 1\n", "t.txt:2: 2 switch ids, the header says 1"},
		{"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 5 100Gbps 0.001ms 0\n", "t.txt:4: link 1–5"},
		{"3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 fast 0.001ms 0\n", "t.txt:4: rate \"fast\""},
		{"3 1 1\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gbps 0.001ms 0\n", "t.txt:4: \"1 2 100Gbps 0.001ms 0\" after the 1 links"},
		{"3 1 1\n2\n0 2 100Gbps 0.001ms 0\n", "t.txt: host h1 has no link"},
	} {
		_, err := ParseNS3(strings.NewReader(c.text), "t.txt", "t")
		if !errors.Is(err, ErrFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want …%s…", c.text, err, c.want)
		}
	}
	if _, err := Parse("file:testdata/none.topo", DefaultTiers()); !errors.Is(err, ErrFile) {
		t.Errorf("missing file: %v", err)
	}
}
