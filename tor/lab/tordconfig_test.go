package lab

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
	"rocetor/tor/impair"
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
		if c.Egress.Rate != "10G" {
			t.Errorf("%s: egress rate %q, want 10G", name, c.Egress.Rate)
		}
		if (c.Impair != nil) != (name == "core") {
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

// The file testbed writes is one tord accepts: every field is one of
// tord's (strict decoding), the rate parses, and the impair section
// validates against the switch's ports with tor/impair's own checks.
func TestTordConfigFileValidates(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Options)
	}{
		{"bernoulli", func(o *Options) { o.Loss = 0.01 }},
		{"burst", func(o *Options) { o.Loss = 0.01; o.Burst = 4 }},
		{"corrupt", func(o *Options) { o.Corrupt = 1e-3 }},
		{"clean", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := mustPlan(t, "chain", c.edit)
			for node, cfg := range p.TordConfigs() {
				b, err := cfg.Marshal(node)
				if err != nil {
					t.Fatal(err)
				}
				var back TordConfig
				if err := decodeStrict(b, &back); err != nil {
					t.Fatalf("%s: %v\n%s", node, err, b)
				}
				var r dataplane.Rate
				if err := r.UnmarshalText([]byte(back.Egress.Rate)); err != nil || r != 1e9 {
					t.Errorf("%s: rate %q = %d, %v; want 1e9", node, back.Egress.Rate, r, err)
				}
				var doc struct {
					Impair impair.Config `yaml:"impair"`
				}
				d := yaml.NewDecoder(bytes.NewReader(b))
				if err := d.Decode(&doc); err != nil {
					t.Fatalf("%s: impair section: %v", node, err)
				}
				if err := doc.Impair.Validate(cfg.Ports); err != nil {
					t.Errorf("%s: impair section does not validate: %v\n%s", node, err, b)
				}
				if c.edit != nil && node == "core" && len(doc.Impair.Rules) != 2 {
					t.Errorf("core: %d rules after decoding, want 2 (both ways):\n%s", len(doc.Impair.Rules), b)
				}
			}
		})
	}
}

// Only the impair section's own keys appear: strict decoding of the
// section into impair.Config would reject a field tord does not know.
func TestImpairSectionStrict(t *testing.T) {
	m := Impairment{Loss: 0.02, Burst: 3, Corrupt: 1e-4, Seed: 7}
	ic := m.Impair("tor2")
	var c impair.Config
	if err := yamlRoundTrip(ic, &c); err != nil {
		t.Fatalf("impair section does not decode strictly into impair.Config: %v", err)
	}
	if c.Seed != 7 || len(c.Rules) != 2 || c.Rules[0].Burst == nil || c.Rules[0].Burst.Loss != 0.02 ||
		c.Rules[0].Burst.Length != 3 || c.Rules[0].Corrupt != 1e-4 || c.Rules[0].Loss != 0 {
		t.Errorf("decoded %+v (burst %+v)", c, c.Rules[0].Burst)
	}
	if err := c.Validate([]string{"tor1", "tor2"}); err != nil {
		t.Error(err)
	}
	if (Impairment{}).Impair("tor2") != nil {
		t.Error("a zero impairment made an impair section")
	}
}

func TestTordConfigHeader(t *testing.T) {
	p := mustPlan(t, "link", nil)
	b, err := p.TordConfigs()["tor1"].Marshal("tor1")
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
				if cfg.NetRT != nil {
					t.Errorf("%s %s: netrt section %+v on a core switch", c.topo, node, cfg.NetRT)
				}
				continue
			}
			if cfg.NetRT == nil || !slices.Equal(cfg.NetRT.Fabric, want) || cfg.XDP.Frames != netRTFrames {
				t.Errorf("%s %s: netrt %+v, frames %d; want fabric %v and %d frames", c.topo, node, cfg.NetRT, cfg.XDP.Frames, want, netRTFrames)
			}
			b, err := cfg.Marshal(node)
			if err != nil {
				t.Fatal(err)
			}
			var back TordConfig
			if err := decodeStrict(b, &back); err != nil || back.NetRT == nil || back.NetRT.Hold != "20ms" {
				t.Errorf("%s %s: round trip %+v, %v\n%s", c.topo, node, back.NetRT, err, b)
			}
		}
	}
	for node, cfg := range mustPlan(t, "chain", nil).TordConfigs() {
		if cfg.NetRT != nil {
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
	if got := p.ImpairOf("core1", m); got != nil {
		t.Errorf("core1: %+v, want no rule", got)
	}
	for node, want := range map[string]string{"core2": "100µs", "core3": "200µs"} {
		ic := p.ImpairOf(node, m)
		if ic == nil || len(ic.Rules) != 1 || ic.Rules[0].Delay == nil || ic.Rules[0].Delay.Mean != want || ic.Rules[0].Port != "tor2" {
			t.Fatalf("%s: %+v, want one rule delaying by %s toward tor2", node, ic, want)
		}
		var c impair.Config
		if err := yamlRoundTrip(ic, &c); err != nil || c.Rules[0].Delay == nil || c.Rules[0].Delay.Mean.String() != want {
			t.Errorf("%s: decoded %+v, %v", node, c, err)
		}
		if err := c.Validate([]string{"tor1", "tor2"}); err != nil {
			t.Errorf("%s: %v", node, err)
		}
	}
	if p.TordConfigs()["core2"].Impair == nil {
		t.Error("TordConfigs left out core2's delay")
	}
}

// With --skew the ToRs hold back a gap's first request for the paths'
// delay spread and a margin; without it they ask at once.
func TestNetRTRequestDelay(t *testing.T) {
	p := mustPlan(t, "multipath", func(o *Options) { o.Paths = 4; o.Skew = 100 * time.Microsecond; o.NetRT = true })
	if got := p.TordConfigs()["tor2"].NetRT.RequestDelay; got != "500µs" {
		t.Errorf("request delay %q, want 500µs (3 × 100 µs + 200 µs)", got)
	}
	p = mustPlan(t, "chain", func(o *Options) { o.NetRT = true })
	if got := p.TordConfigs()["tor2"].NetRT.RequestDelay; got != "" {
		t.Errorf("request delay %q without skew, want none", got)
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
		if cfg.Trust == nil || !slices.Equal(cfg.Trust.Hosts, w[0]) || !slices.Equal(cfg.Trust.PFCPorts, w[1]) {
			t.Errorf("%s: trust %+v, want hosts %v, pfc_ports %v", node, cfg.Trust, w[0], w[1])
			continue
		}
		b, err := cfg.Marshal(node)
		if err != nil {
			t.Fatal(err)
		}
		var back TordConfig
		if err := decodeStrict(b, &back); err != nil || back.Trust == nil || back.Trust.Hosts == nil {
			t.Errorf("%s: round trip %+v, %v\n%s", node, back.Trust, err, b)
		}
	}
	for node, cfg := range mustPlan(t, "chain", nil).TordConfigs() {
		if cfg.Trust != nil {
			t.Errorf("%s: trust section without --trust", node)
		}
	}
}
