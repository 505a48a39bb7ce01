package fabric

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
	"rocetor/tor/trim"
	"rocetor/tor/workload"
)

func run(t *testing.T, shape string, o Options, flows func(hosts int) []workload.Flow) *Result {
	t.Helper()
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = 10e9, 10e9
	tp, err := topo.Parse(shape, ti)
	if err != nil {
		t.Fatal(err)
	}
	o.MaxQPs = QPsNeeded(flows(len(tp.Hosts())), 1)
	n, err := Build(tp, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(flows(len(n.Hosts)), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	return res
}

// TestChainWrite: one WRITE over the chain completes at about its ideal
// FCT, the pipeline forwards every packet.
func TestChainWrite(t *testing.T) {
	res := run(t, "chain", Options{Seed: 1}, func(int) []workload.Flow {
		return []workload.Flow{{Src: 0, Dst: 1, Size: 1 << 20, After: -1}}
	})
	if res.Completed != 1 {
		t.Fatalf("completed %d of 1: %+v", res.Completed, res)
	}
	if s := res.All.P50Slowdown; s > 1.2 {
		t.Errorf("slowdown %.3f on an empty chain", s)
	}
	if res.HostCounters["Retransmits"] != 0 || len(res.Drops) != 0 {
		t.Errorf("retransmits %d, drops %v on a clean chain", res.HostCounters["Retransmits"], res.Drops)
	}
	t.Logf("FCT %d ns, slowdown %.3f, %d events, %d steps (%d idle)", res.All.P50FCTNs, res.All.P50Slowdown, res.Events, res.Steps, res.IdleSteps)
}

// TestIdealFCTLargeFlow: a lone 4 MB WRITE on an empty chain finishes
// at about its ideal FCT, which is at least its bits at line rate. Past
// 2.3 MB the ideal's bits × picoseconds once wrapped 64 bits, so that
// flows this size had ideal FCTs of a few µs and slowdowns in the
// hundreds.
func TestIdealFCTLargeFlow(t *testing.T) {
	const size = 4_000_000
	res := run(t, "chain", Options{Seed: 1}, func(int) []workload.Flow {
		return []workload.Flow{{Src: 0, Dst: 1, Size: size, After: -1}}
	})
	if res.Completed != 1 {
		t.Fatalf("completed %d of 1", res.Completed)
	}
	f := res.Records[0]
	if line := int64(size * 8 / 10); f.IdealNs < line { // 10 Gbit/s: 0.8 ns a byte
		t.Errorf("ideal FCT %d ns, below the %d ns of its bits at line rate", f.IdealNs, line)
	}
	if s := f.Slowdown(); s > 1.2 {
		t.Errorf("slowdown %.3f (FCT %d ns, ideal %d ns) alone on an empty chain", s, f.FCTNs, f.IdealNs)
	}
}

// TestDeterminism: the same seed gives byte-identical JSON.
func TestDeterminism(t *testing.T) {
	flows := func(h int) []workload.Flow {
		d, _ := workload.LoadCDF("websearch")
		return workload.Poisson(h, d, 0.5, 10e9, 5e6, 1<<20, rand.New(rand.NewPCG(3, 3)))
	}
	o := Options{Seed: 3, Switch: "ecn: {}\nforwarding: {multipath: ecmp}\n", Transport: "irn", CC: "dcqcn"}
	var out [2][]byte
	for i := range out {
		res := run(t, "leafspine:leaves=2,spines=2,hosts=4", o, flows)
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
		if res.Completed == 0 {
			t.Fatalf("no flow completed of %d", res.Flows)
		}
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("two runs with one seed differ")
	}
}

// TestSendAndQPs: SEND flows (a receive posted for each) and several QPs
// per pair, every flow over its pair's QPs in turn.
func TestSendAndQPs(t *testing.T) {
	tp, err := topo.Parse("dumbbell:hosts=2", topo.DefaultTiers())
	if err != nil {
		t.Fatal(err)
	}
	flows := workload.AllToAll(4, 64<<10)
	flows = append(flows, flows...)
	n, err := Build(tp, Options{Seed: 1, Transport: "irn", MaxQPs: QPsNeeded(flows, 3)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(flows, RunOptions{Op: nic.OpSend, QPs: 3})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	if res.Completed != len(flows) || res.HostCounters["RNRNAKsSent"] != 0 {
		t.Fatalf("completed %d of %d, RNR NAKs %d", res.Completed, len(flows), res.HostCounters["RNRNAKsSent"])
	}
	if n.QPs(0, 1) != 3 {
		t.Fatalf("%d QPs from host 0 to 1, want 3", n.QPs(0, 1))
	}
}

// TestSwitchFor: a switch named, or matched by a pattern, is built from
// its own YAML.
func TestSwitchFor(t *testing.T) {
	tp := topo.FatTree(4, topo.DefaultTiers())
	n, err := Build(tp, Options{Seed: 1, Switch: "ecn: {}\n", SwitchFor: map[string]string{
		"core*": "forwarding: {multipath: spray}\n", "core0": "trim: {}\n"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range n.Switches {
		switch {
		case s.Name == "core0":
			if s.Cfg.Trim == nil || s.Cfg.ECN != nil {
				t.Errorf("core0 not from its own YAML")
			}
		case s.Name[:4] == "core":
			if s.Cfg.Forwarding.Multipath != "spray" || s.Cfg.Trim != nil {
				t.Errorf("%s not from core*", s.Name)
			}
		default:
			if s.Cfg.ECN == nil {
				t.Errorf("%s not from the template", s.Name)
			}
		}
	}
}

// TestSwitchConfigs: a switch given as a value is built from it, before
// SwitchFor and the template, and the value given stays as it was.
func TestSwitchConfigs(t *testing.T) {
	tp := topo.FatTree(4, topo.DefaultTiers())
	core0 := pipeline.DefaultConfig()
	core0.Trim = &trim.Config{Ports: []string{"fabric"}}
	core0.Egress.PortRates = map[string]dataplane.Rate{}
	given := core0.Clone()
	n, err := Build(tp, Options{Seed: 1, Switch: "ecn: {}\n", SwitchFor: map[string]string{"core*": "forwarding: {multipath: spray}\n"},
		SwitchConfigs: map[string]*pipeline.Config{"core0": &core0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range n.Switches {
		switch {
		case s.Name == "core0":
			if s.Cfg.Trim == nil || len(s.Cfg.Trim.Ports) != len(s.Cfg.Ports) || s.Cfg.ECN != nil || s.Cfg.Forwarding.Multipath != "ecmp" {
				t.Errorf("core0 not from its value: %+v", s.Cfg)
			}
		case s.Name[:4] == "core":
			if s.Cfg.Forwarding.Multipath != "spray" || s.Cfg.Trim != nil {
				t.Errorf("%s not from core*", s.Name)
			}
		default:
			if s.Cfg.ECN == nil {
				t.Errorf("%s not from the template", s.Name)
			}
		}
	}
	if !reflect.DeepEqual(core0, given) {
		t.Errorf("Build changed the configuration it was given:\n%+v\nwas\n%+v", core0, given)
	}
}

// TestHostPauseRate: a host times PFC quanta at its link's rate, as a
// NIC does, so a pause from a 1 Gbit/s ToR lasts what the ToR meant.
func TestHostPauseRate(t *testing.T) {
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = 1e9, 10e9
	n, err := Build(topo.Chain(1, ti), Options{Seed: 1, MaxQPs: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range n.Hosts {
		if r := h.Node.W.Egress(0).PauseRateBps(); r != 1e9 {
			t.Errorf("%s times PFC quanta at %d bit/s, want its link's 1e9", h.Name, r)
		}
	}
}
