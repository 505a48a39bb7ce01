package fabric

import (
	"encoding/json"
	"strings"
	"testing"

	"rocetor/tor/topo"
)

// TestNoHostRead: the simulator reads nothing from the machine it runs
// on. A switch port named like a host interface ("lo": tor1's port
// toward a tor2 renamed lo) gets the same llr configuration and the run
// the same result as one named otherwise; before pipeline.NewPlan took
// its MTU lookup as an injected function, llr's largest frame came from
// the host's lo.
func TestNoHostRead(t *testing.T) {
	runAs := func(name string) (string, string) {
		tp := topo.Link(topo.DefaultTiers())
		tp.Nodes = append([]topo.NodeSpec(nil), tp.Nodes...)
		tp.Nodes[tp.Index("tor2")].Name = name
		n, err := Build(tp, Options{Seed: 1, Switch: "llr: {ports: [fabric]}\n" + lossy})
		if err != nil {
			t.Fatal(err)
		}
		var llrCfg []byte
		for _, s := range n.Switches {
			if s.Pipe.LLR != nil {
				b, _ := json.Marshal(s.Pipe.LLR.Config())
				llrCfg = append(llrCfg, b...)
			}
		}
		res, err := n.Run(both(64<<10), RunOptions{QPs: 1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 2 {
			t.Fatalf("%s: completed %d of 2 flows", name, res.Completed)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(llrCfg), strings.ReplaceAll(string(b), `"`+name+`"`, `"NAME"`)
	}
	cfgLo, resLo := runAs("lo")
	cfgZz, resZz := runAs("zz")
	if cfgLo != cfgZz {
		t.Errorf("llr configuration with a port named lo\n%s\nnamed zz\n%s", cfgLo, cfgZz)
	}
	if resLo != resZz {
		t.Errorf("result with a port named lo\n%s\nnamed zz\n%s", resLo, resZz)
	}
}
