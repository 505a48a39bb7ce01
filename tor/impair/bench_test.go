package impair

import (
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// impairments are one rule per impairment, for the allocation test and
// the benchmarks.
type impairment struct {
	name string
	rule Rule
}

var impairments = []impairment{
	{"off", Rule{}},
	{"none", Rule{Port: "p1", Direction: "egress", Match: "roce", Opcodes: []string{"RC_ACKNOWLEDGE"}}},
	{"loss", Rule{Port: "p1", Direction: "egress", Loss: 0.01}},
	{"burst", Rule{Port: "p1", Direction: "egress", Burst: &Burst{Loss: 0.01, Length: 4}}},
	{"corrupt", Rule{Port: "p0", Direction: "ingress", Corrupt: 0.01}},
	{"duplicate", Rule{Port: "p1", Direction: "egress", Duplicate: 0.3}},
	{"reorder", Rule{Port: "p1", Direction: "egress", Reorder: &Reorder{P: 0.1, Delay: 20 * time.Microsecond}}},
	{"delay", Rule{Port: "p1", Direction: "egress", Delay: &Delay{Mean: 10 * time.Microsecond, Jitter: 5 * time.Microsecond}}},
	{"rate", Rule{Port: "p1", Direction: "egress", Rate: 10e9}},
}

func (r Rule) direction() Direction {
	d, _ := parseDirection(r.Direction)
	return d
}

// port returns the rig port of an impairment's rule.
func (c impairment) port() int {
	if c.rule.Port == "p0" {
		return 0
	}
	return 1
}

// rules returns a configuration with rule r, or none when r is the zero
// Rule ("off": the stage with nothing to do).
func rules(r Rule) Config {
	if r.Port == "" {
		return Config{}
	}
	return single(r)
}

// TestPacketPathAllocs asserts that no impairment allocates per packet,
// once the rule set is adopted and the worker is in a steady state.
func TestPacketPathAllocs(t *testing.T) {
	f := roce(t, rocev2.RCWriteMiddle, 0, 1000)
	for _, c := range impairments {
		r := newRig(t, rules(c.rule), rigOpt{})
		r.quiet()
		round := func() {
			for i := 0; i < 32; i++ {
				r.ports[0].Inject(f)
			}
			r.step(1000)
		}
		for i := 0; i < 200; i++ {
			round()
		}
		if a := testing.AllocsPerRun(500, round); a != 0 {
			t.Errorf("%s: %.1f allocations per batch", c.name, a)
		}
		if d := r.dir(c.port(), c.rule.direction()); c.name != "off" && c.name != "none" && d.Matched == 0 {
			t.Errorf("%s: rule never matched", c.name)
		}
		r.noLeak()
	}
}

// BenchmarkImpair runs the whole worker (receive, classify, cross,
// impair, queue, transmit) at 64 frames per microsecond step, and reports
// ns per packet. "off" has no rules and "none" one rule that matches
// nothing: the baselines.
func BenchmarkImpair(b *testing.B) {
	f := roce(b, rocev2.RCWriteMiddle, 0, 1000)
	for _, c := range impairments {
		if c.name != "off" && c.name != "none" && c.name != "loss" && c.name != "delay" {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b, rules(c.rule), rigOpt{})
			r.quiet()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := 0; k < dataplane.BatchSize; k++ {
					r.ports[0].Inject(f)
				}
				r.step(1000)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}
