package lab

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Golden tord configurations: for every testbed topology and a set of
// option combinations, the file testbed writes for each switch, all of a
// plan's switches in one file, in plan order, separated by "---".
//
//	go test ./tor/lab -run TestTordConfigGolden -update-golden

var updateGolden = flag.Bool("update-golden", false, "rewrite tor/lab/testdata/tordconfig from TordConfigs")

// goldenTopologies are the topologies with golden files.
var goldenTopologies = []string{"chain", "dumbbell", "multipath", "link"}

// goldenCombos are the option combinations with golden files; a
// combination a topology refuses has none there.
var goldenCombos = []struct {
	name string
	edit func(*Options)
}{
	{"default", nil},
	{"netrt", func(o *Options) { o.NetRT = true }},
	{"netrt-skew", func(o *Options) { o.NetRT = true; o.Paths = 3; o.Skew = 100 * time.Microsecond }},
	{"trim", func(o *Options) { o.Trim = true }},
	{"trim-threshold", func(o *Options) { o.Trim = true; o.TrimThreshold = "32KiB"; o.IncastDegree = 4 }},
	{"dcp", func(o *Options) { o.DCP = true }},
	{"llr-nb", func(o *Options) { o.LLR = "nb" }},
	{"llr-blocking", func(o *Options) { o.LLR = "blocking" }},
	{"llr-monitor", func(o *Options) { o.LLR = "nb"; o.LLRMonitor = true }},
	{"ecn", func(o *Options) { o.ECN = true }},
	{"ecn-profile", func(o *Options) { o.ECN = true; o.ECNMin = "20KB"; o.ECNMax = "100KB"; o.ECNPMax = 20 }},
	{"ecn-min", func(o *Options) { o.ECN = true; o.ECNMin = "10KiB" }},
	{"ecn-pmax", func(o *Options) { o.ECN = true; o.ECNPMax = 0.5 }},
	{"trust", func(o *Options) { o.Trust = true }},
	{"trust-netrt-llr", func(o *Options) { o.Trust = true; o.NetRT = true; o.LLR = "blocking" }},
	{"path-rates", func(o *Options) { o.PathRates = []string{"1G", "100M"} }},
	{"bottleneck", func(o *Options) { o.BottleneckRate = "200M" }},
	{"queue-limit", func(o *Options) { o.QueueLimit = "256KiB" }},
	{"workers2", func(o *Options) { o.Workers = 2 }},
	{"workers2-netrt-trim", func(o *Options) { o.Workers = 2; o.NetRT = true; o.Trim = true }},
	{"mgmt", func(o *Options) { o.Mgmt = DefaultMgmtNet.String() }},
	{"loss", func(o *Options) { o.Loss = 0.01 }},
	{"burst", func(o *Options) { o.Loss = 0.02; o.Burst = 4 }},
	{"corrupt", func(o *Options) { o.Corrupt = 1e-3 }},
	{"skew", func(o *Options) { o.Paths = 3; o.Skew = 100 * time.Microsecond }},
	{"one-way", func(o *Options) { o.Loss = 0.01; o.OneWay = true; o.Seed = 42 }},
	{"loss-corrupt-skew", func(o *Options) { o.Loss = 0.01; o.Corrupt = 1e-4; o.Skew = 1500 * time.Microsecond; o.Seed = 7 }},
	{"misc", func(o *Options) {
		o.Rate = "10G"
		o.Multipath = "adaptive"
		o.Poll = "busy"
		o.LogLevel = "debug"
		o.MetricsPort = 9600
	}},
	{"spray-unshaped", func(o *Options) { o.Rate = "0"; o.Multipath = "spray" }},
	{"rate-fraction", func(o *Options) { o.Rate = "2.5G" }},
	{"everything", func(o *Options) {
		o.NetRT, o.Trim, o.DCP, o.LLR, o.LLRMonitor, o.Trust, o.ECN = true, true, true, "nb", true, true, true
		o.TrimThreshold, o.IncastDegree = "128KiB", 16
		o.ECNMin, o.ECNMax, o.ECNPMax = "40KB", "160KB", 10
		o.QueueLimit, o.Workers, o.Mgmt = "512KiB", 2, DefaultMgmtNet.String()
		o.Loss, o.Burst, o.Corrupt, o.Skew, o.Seed = 0.005, 3, 1e-5, 20*time.Microsecond, 3
		o.Multipath = "adaptive"
		if o.Topology == "multipath" {
			o.PathRates = []string{"1G", "500M"}
		} else {
			o.BottleneckRate = "300M"
		}
	}},
}

const goldenDir = "testdata/tordconfig"

// goldenPlan returns the plan of a topology and combination, nil when
// the topology refuses the options.
func goldenPlan(topo string, edit func(*Options)) *Plan {
	o := DefaultOptions(topo)
	o.Prefix = DefaultPrefix(topo)
	if edit != nil {
		edit(&o)
	}
	p, err := NewPlan(o)
	if err != nil {
		return nil
	}
	return p
}

// goldenFile returns what TordConfigs and Marshal write for every
// switch of p, in plan order.
func goldenFile(t *testing.T, p *Plan) []byte {
	t.Helper()
	var out bytes.Buffer
	cfgs := p.TordConfigs()
	for i, n := range p.Switches() {
		b, err := cfgs[n.Name].Marshal(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(b)
	}
	return out.Bytes()
}

func TestTordConfigGolden(t *testing.T) {
	if !*updateGolden {
		t.Skip("writes golden files only with -update-golden")
	}
	if err := os.MkdirAll(goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, topo := range goldenTopologies {
		for _, c := range goldenCombos {
			p := goldenPlan(topo, c.edit)
			if p == nil {
				continue
			}
			name := filepath.Join(goldenDir, topo+"-"+c.name+".yaml")
			if err := os.WriteFile(name, goldenFile(t, p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
