package lab

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"rocetor/tor/impair"
	"rocetor/tor/pipeline"
)

func TestChainTordConfigs(t *testing.T) {
	p := mustPlan(t, "chain", func(o *Options) { o.Loss = 0.01; o.Rate = "10G" })
	cfgs := p.TordConfigs()
	if len(cfgs) != 3 {
		t.Fatalf("%d configs, want one per switch (3)", len(cfgs))
	}
	for _, name := range []string{"tor1", "core", "tor2"} {
		c := cfgs[name]
		if c == nil {
			t.Fatalf("no config for %s", name)
		}
		if c.Poll != "adaptive" || c.Workers != 1 {
			t.Errorf("%s: poll %q, workers %d; want adaptive, 1", name, c.Poll, c.Workers)
		}
		if c.MetricsAddr != "127.0.0.1:9478" || c.AdminAddr != "127.0.0.1:9479" {
			t.Errorf("%s: metrics %q admin %q, want loopback 9478 and 9479", name, c.MetricsAddr, c.AdminAddr)
		}
		if c.Egress.Rate != 10e9 {
			t.Errorf("%s: egress rate %d, want 10G", name, c.Egress.Rate)
		}
		if (len(c.Impair.Rules) > 0) != (name == "core") {
			t.Errorf("%s: impair %+v; want rules on core only", name, c.Impair)
		}
	}
	ic := cfgs["core"].Impair
	if len(ic.Rules) != 2 {
		t.Fatalf("core: %d impair rules, want 2", len(ic.Rules))
	}
	for i, dir := range []string{"egress", "ingress"} {
		r := ic.Rules[i]
		if r.Port != "tor2" || r.Direction != dir || r.Match != "fabric" || r.Loss != 0.01 || r.Burst != nil {
			t.Errorf("core's rule %+v, want %s tor2, fabric, loss 0.01", r, dir)
		}
	}
	m := Impairment{Loss: 0.01, OneWay: true}
	if ic := m.Impair("tor2"); len(ic.Rules) != 1 || ic.Rules[0].Direction != "egress" {
		t.Errorf("one way: %+v, want the egress rule alone", ic.Rules)
	}
}

// The file testbed writes is one tord accepts: tord reads it strictly
// (every field is one of tord's), validates it, the rate is the
// options', and core's impair section has its rules both ways.
func TestTordConfigFileValidates(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
	}{
		{"bernoulli", func(o *Options) { o.Loss = 0.01 }},
		{"burst", func(o *Options) { o.Loss = 0.01; o.Burst = 4 }},
		{"corrupt", func(o *Options) { o.Corrupt = 1e-3 }},
		{"clean", nil},
		{"tord-cpu", func(o *Options) { o.Poll = "interrupt"; o.TordCPU = "fifo:10" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustPlan(t, "chain", c.edit)
			for node, cfg := range p.TordConfigs() {
				b, err := MarshalTordConfig(node, cfg)
				if err != nil {
					t.Fatal(err)
				}
				back, err := pipeline.ParseConfig(b, node+".yaml")
				if err != nil {
					t.Fatalf("%s: %v\n%s", node, err, b)
				}
				if err := back.Validate(); err != nil {
					t.Errorf("%s: tord refuses the file: %v\n%s", node, err, b)
				}
				if back.Egress.Rate != 1e9 || !strings.Contains(string(b), "\n  rate: 1G\n") {
					t.Errorf("%s: rate %d; want 1G\n%s", node, back.Egress.Rate, b)
				}
				if c.name == "tord-cpu" && (back.CPU.Policy != "fifo" || back.CPU.Priority != 10) {
					t.Errorf("%s: cpu %+v, want fifo priority 10\n%s", node, back.CPU, b)
				}
				if c.edit != nil && c.name != "tord-cpu" && node == "core" && len(back.Impair.Rules) != 2 {
					t.Errorf("core: %d rules after decoding, want 2 (both ways):\n%s", len(back.Impair.Rules), b)
				}
			}
		})
	}
}

// The impairment's rules are tor/impair's own and pass its checks.
func TestImpairSection(t *testing.T) {
	m := Impairment{Loss: 0.02, Burst: 3, Corrupt: 1e-4, Seed: 7}
	c := m.Impair("tor2")
	if c.Seed != 7 || len(c.Rules) != 2 || c.Rules[0].Burst == nil || c.Rules[0].Burst.Loss != 0.02 ||
		c.Rules[0].Burst.Length != 3 || c.Rules[0].Corrupt != 1e-4 || c.Rules[0].Loss != 0 {
		t.Errorf("impair section %+v (burst %+v)", c, c.Rules[0].Burst)
	}
	if c.Rules[0].Burst == c.Rules[1].Burst {
		t.Error("the egress and ingress rules share their burst")
	}
	if err := c.Validate([]string{"tor1", "tor2"}); err != nil {
		t.Error(err)
	}
	if z := (Impairment{}).Impair("tor2"); !reflect.DeepEqual(z, impair.Config{}) {
		t.Errorf("a zero impairment made an impair section %+v", z)
	}
}

func TestTordConfigHeader(t *testing.T) {
	p := mustPlan(t, "link", nil)
	b, err := MarshalTordConfig("tor1", p.TordConfigs()["tor1"])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "# tord configuration of switch tor1") || strings.Contains(string(b), "impair:") {
		t.Errorf("config:\n%s", b)
	}
}

// With --netrt the ToRs get a netrt section whose fabric ports are the
// ones toward switches, and a UMEM with room for pool and buffer; core
// switches get none.
func TestNetRTTordConfigs(t *testing.T) {
	for _, c := range []struct {
		topo   string
		fabric map[string][]string
	}{
		{"chain", map[string][]string{"tor1": {"core"}, "tor2": {"core"}}},
		{"multipath", map[string][]string{"tor1": {"core1", "core2"}, "tor2": {"core1", "core2"}}},
		{"link", map[string][]string{"tor1": {"tor2"}, "tor2": {"tor1"}}},
	} {
		p := mustPlan(t, c.topo, func(o *Options) { o.NetRT = true })
		for node, cfg := range p.TordConfigs() {
			want, tor := c.fabric[node]
			if !tor {
				if cfg.NetRT.On() {
					t.Errorf("%s %s: netrt section %+v on a core switch", c.topo, node, cfg.NetRT)
				}
				continue
			}
			if !slices.Equal(cfg.NetRT.Fabric, want) || cfg.XDP.Frames != netRTFrames {
				t.Errorf("%s %s: netrt %+v, frames %d; want fabric %v and %d frames", c.topo, node, cfg.NetRT, cfg.XDP.Frames, want, netRTFrames)
			}
			b, err := MarshalTordConfig(node, cfg)
			if err != nil {
				t.Fatal(err)
			}
			back, err := pipeline.ParseConfig(b, node)
			if err != nil || back.NetRT.Hold != 20*time.Millisecond || !strings.Contains(string(b), "\n  hold: 20ms\n") {
				t.Errorf("%s %s: round trip %+v, %v\n%s", c.topo, node, back.NetRT, err, b)
			}
		}
	}
	for node, cfg := range mustPlan(t, "chain", nil).TordConfigs() {
		if cfg.NetRT.On() {
			t.Errorf("%s: netrt section without --netrt", node)
		}
	}
}

// --skew delays site k by k × skew: on the multipath topology core1's
// path is the shortest, core3's the longest, and without loss core1 has
// no rule at all.
func TestImpairOfSkew(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Paths = 3; o.Skew = 100 * time.Microsecond })
	m := p.Options.Impairment()
	if got := p.ImpairOf("core1", m); len(got.Rules) != 0 {
		t.Errorf("core1: %+v, want no rule", got)
	}
	for node, want := range map[string]time.Duration{"core2": 100 * time.Microsecond, "core3": 200 * time.Microsecond} {
		c := p.ImpairOf(node, m)
		if len(c.Rules) != 1 || c.Rules[0].Delay == nil || c.Rules[0].Delay.Mean != want || c.Rules[0].Port != "tor2" {
			t.Fatalf("%s: %+v, want one rule delaying by %s toward tor2", node, c, want)
		}
		if err := c.Validate([]string{"tor1", "tor2"}); err != nil {
			t.Errorf("%s: %v", node, err)
		}
	}
	if len(p.TordConfigs()["core2"].Impair.Rules) == 0 {
		t.Error("TordConfigs left out core2's delay")
	}
}

// With --skew the ToRs hold back a gap's first request for the paths'
// delay spread and a margin; without it they ask at once.
func TestNetRTRequestDelay(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Paths = 4; o.Skew = 100 * time.Microsecond; o.NetRT = true })
	if got := p.TordConfigs()["tor2"].NetRT.RequestDelay; got != 500*time.Microsecond {
		t.Errorf("request delay %v, want 500µs (3 × 100 µs + 200 µs)", got)
	}
	p = mustPlan(t, "chain", func(o *Options) { o.NetRT = true })
	if got := p.TordConfigs()["tor2"].NetRT.RequestDelay; got != 0 {
		t.Errorf("request delay %v without skew, want none", got)
	}
}

// --trust gives every switch a trust section: its host ports, and PFC
// honoured from its switch ports only; core has no hosts, an empty list
// that stays in the file. Without --trust no switch has one.
func TestTrustTordConfigs(t *testing.T) {
	want := map[string][2][]string{
		"tor1": {{"h1"}, {"core"}},
		"core": {{}, {"tor1", "tor2"}},
		"tor2": {{"h2"}, {"core"}},
	}
	p := mustPlan(t, "chain", func(o *Options) { o.NetRT, o.LLR, o.Trust = true, "blocking", true })
	for node, cfg := range p.TordConfigs() {
		w := want[node]
		if cfg.Trust.PFCPorts == nil || !slices.Equal(cfg.Trust.Hosts, w[0]) || !slices.Equal(*cfg.Trust.PFCPorts, w[1]) {
			t.Errorf("%s: trust %+v, want hosts %v, pfc_ports %v", node, cfg.Trust, w[0], w[1])
			continue
		}
		b, err := MarshalTordConfig(node, cfg)
		if err != nil {
			t.Fatal(err)
		}
		back, err := pipeline.ParseConfig(b, node)
		if err != nil || back.Trust.Hosts == nil || back.Trust.PFCPorts == nil {
			t.Errorf("%s: round trip %+v, %v\n%s", node, back.Trust, err, b)
		}
	}
	for node, cfg := range mustPlan(t, "chain", nil).TordConfigs() {
		if cfg.Trust.Hosts != nil || cfg.Trust.PFCPorts != nil {
			t.Errorf("%s: trust section without --trust", node)
		}
	}
}
