package lab

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"rocetor/tor/pipeline"
)

// Golden tord configurations: for every testbed topology and a set of
// option combinations, the file testbed writes for each switch, all of a
// plan's switches in one file, in plan order, separated by "---". The
// files in testdata/tordconfig were written by lab.TordConfig, the
// subset of tord's configuration testbed kept before it wrote
// pipeline.Config; TestTordConfigsMatchGolden holds what TordConfigs
// gives now to them, as tord reads them (pipeline.ParseConfig), not as
// text. Rewrite them only when the configuration is meant to change:
//
//	go test ./tor/lab -run TestTordConfigsMatchGolden -update-golden

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
	{"qos-ecn", func(o *Options) { o.QoS = true; o.ECN = true }},
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

// goldenRefused are the combinations whose ToRs' files tord refuses,
// and why: none. (multipath-netrt-skew's ToRs had 16384 frames, all
// taken by four ports' rings and none left for NetRT's pool and
// buffer; their golden file now has the 32768 TordConfigs gives them.)
var goldenRefused = map[string]string{}

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

// goldenFile returns what TordConfigs and MarshalTordConfig write for
// every switch of p, in plan order.
func goldenFile(t *testing.T, p *Plan) []byte {
	t.Helper()
	var out bytes.Buffer
	cfgs := p.TordConfigs()
	for i, n := range p.Switches() {
		b, err := MarshalTordConfig(n.Name, cfgs[n.Name])
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

// goldenHeader finds the switch a golden document is of.
var goldenHeader = regexp.MustCompile(`(?m)^# tord configuration of switch (\S+), written by testbed`)

// What testbed writes for each switch, and what the simulator is given,
// is what it wrote before, for tord: the same configuration once tord
// has read it.
func TestTordConfigsMatchGolden(t *testing.T) {
	if *updateGolden {
		writeGolden(t)
		return
	}
	n := 0
	for _, topo := range goldenTopologies {
		for _, c := range goldenCombos {
			name := filepath.Join(goldenDir, topo+"-"+c.name+".yaml")
			golden, err := os.ReadFile(name)
			p := goldenPlan(topo, c.edit)
			if p == nil {
				if err == nil {
					t.Errorf("%s: the options are refused now", name)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			n++
			cfgs := p.TordConfigs()
			docs := strings.Split(string(golden), "\n---\n")
			if len(docs) != len(cfgs) {
				t.Errorf("%s: %d switches, %d configurations now", name, len(docs), len(cfgs))
			}
			for _, doc := range docs {
				m := goldenHeader.FindStringSubmatch(doc)
				if m == nil || cfgs[m[1]] == nil {
					t.Errorf("%s: a document of no switch of the plan:\n%s", name, doc)
					continue
				}
				node, cfg := m[1], cfgs[m[1]]
				want, err := pipeline.ParseConfig([]byte(doc), name+" "+node)
				if err != nil {
					t.Fatal(err)
				}
				b, err := MarshalTordConfig(node, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if !goldenHeader.Match(b) {
					t.Errorf("%s %s: no header naming the switch:\n%s", name, node, b)
				}
				got, err := pipeline.ParseConfig(b, node+".yaml")
				if err != nil {
					t.Fatalf("%s %s: tord cannot read what testbed writes: %v\n%s", name, node, err, b)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s: tord reads\n%+v\nwhere it read\n%+v\nfrom\n%s\nnow from\n%s", name, node, got, want, doc, b)
				}
				switch err := got.Validate(); {
				case err != nil && goldenRefused[topo+"-"+c.name] == "":
					t.Errorf("%s %s: tord refuses what testbed writes: %v\n%s", name, node, err, b)
				case err == nil && goldenRefused[topo+"-"+c.name] != "" && got.NetRT.On():
					t.Errorf("%s %s: tord accepts it now: take it off goldenRefused", name, node)
				}
				if !reflect.DeepEqual(*cfg, got) {
					t.Errorf("%s %s: the simulator is given\n%+v\nwhere tord reads\n%+v", name, node, *cfg, got)
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("%d golden files, want at least 100", n)
	}
}

// writeGolden writes the golden files from TordConfigs.
func writeGolden(t *testing.T) {
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
