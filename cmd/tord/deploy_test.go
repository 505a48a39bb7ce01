package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
	"rocetor/tor/llr"
	"rocetor/tor/pipeline"
	"rocetor/tor/telemetry"
	"rocetor/tor/trim"
)

// The files under deploy/ name tord's configuration fields and metrics;
// these tests hold them to what tord really reads and exports.
// deploy/deploy_test.go checks the rest (flags, promtool, systemd).

const deployDir = "../../deploy"

// Every configuration file under deploy/ loads and validates as tord's
// own: the example, the lines its comments suggest, the ConfigMap of the
// DaemonSet and the containerlab lab's switches. Each comes back
// unchanged from the file Config.Marshal writes of it.
func TestDeployConfigs(t *testing.T) {
	check := func(name string, b []byte) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "tord.yaml")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		y, err := cfg.Marshal("")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := pipeline.ParseConfig(y, name+" as Marshal writes it")
		back.File = cfg.File
		if err != nil || !reflect.DeepEqual(back, cfg) {
			t.Errorf("%s: round trip through Marshal (%v):\n%s\nread %+v\nwant %+v", name, err, y, back, cfg)
		}
	}
	example := readDeploy(t, "tord.yaml")
	check("tord.yaml", example)
	// "#   trim: {...}", "#   llr: {...}" and "#   ecn: {...}" are meant
	// to be uncommented.
	for _, line := range strings.Split(string(example), "\n") {
		if m := regexp.MustCompile(`^#\s+((trim|llr|ecn): \{.*\})`).FindStringSubmatch(line); m != nil {
			check("tord.yaml with "+m[2], append(slices.Clone(example), []byte("\n"+m[1]+"\n")...))
		}
	}

	var cm struct {
		Kind string
		Data map[string]string
	}
	found := false
	for _, doc := range yamlDocs(t, "kubernetes/daemonset.yaml") {
		if err := doc.Decode(&cm); err != nil {
			t.Fatal(err)
		}
		if cm.Kind == "ConfigMap" {
			found = true
			check("the ConfigMap's tord.yaml", []byte(cm.Data["tord.yaml"]))
		}
	}
	if !found {
		t.Error("kubernetes/daemonset.yaml has no ConfigMap")
	}

	lab, _ := filepath.Glob(filepath.Join(deployDir, "containerlab", "*.yaml"))
	if len(lab) == 0 {
		t.Error("no containerlab switch configurations")
	}
	for _, path := range lab {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		check(path, b)
	}
}

// series is what tord exports of one metric family.
type series struct {
	labels map[string]bool            // label names
	values map[string]map[string]bool // label → values seen, where the label's values are a closed set
}

// Labels every series has once Prometheus scraped it: the target's
// (deploy/prometheus/prometheus.yml adds role).
var targetLabels = []string{"job", "instance", "role"}

// tordCollector is one collector serve registers, built with minimal
// inputs, and the configuration that makes serve register it.
type tordCollector struct {
	when     string // the configuration that registers it, as docs/operations.md says it
	c        prometheus.Collector
	collects bool // collects without a switch; false: Describe only
}

// tordCollectors returns every collector serve registers (the switch's
// are tor/telemetry's), on two ports p0 and p1 with one stage, fwd. The llr collector comes twice, without
// and with a monitor, whose series only llr.monitor adds.
func tordCollectors() []tordCollector {
	ports := []string{"p0", "p1"}
	var queues []dataplane.QueueSnapshot
	for _, q := range dataplane.DefaultEgress(0, 1).Queues {
		queues = append(queues, dataplane.QueueSnapshot{Name: q.Name})
	}
	snap := dataplane.Snapshot{Ports: make([]dataplane.PortCounters, len(ports)), PortStats: make([]dataplane.PortStats, len(ports)),
		Queues: [][]dataplane.QueueSnapshot{queues, queues}, Stages: make([]dataplane.StageCounters, 1)}
	return []tordCollector{
		{"always", metrics.New(ports, []string{"fwd"}, fakeSource{snap}), true},
		// xdp and llr need a live XDP program or stage to collect.
		{"always", xdpCollector{}, false},
		{"always", collectors.NewGoCollector(), true},
		{"always", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), true},
		{"always", telemetry.NewTrust(ports, nil), true},
		{"with a `netrt:` section", telemetry.NewNetRT(ports, nil, nil), true},
		{"with an `llr:` section", telemetry.NewLLR(nil, nil, nil), false},
		{"with `llr.monitor`", telemetry.NewLLR(nil, nil, new(llr.Monitor)), false},
		{"with a `trim:` section", telemetry.NewTrim(ports, &trim.Config{}, nil), true},
		{"with an `int:` section", telemetry.NewINT(ports, 0, nil), true},
		{"with `dcp: true`, a `trim:` section or an impair rule that has `trim: true`", telemetry.NewHODrops([]metrics.Source{fakeSource{snap}}), true},
		{"with `forwarding.multipath: adaptive`", telemetry.NewAdaptive(ports, nil), true},
		{"with `impair:` rules", telemetry.NewImpair(ports, nil), true},
		{"with a `qos:` section", telemetry.NewQoS(ports, nil), true},
	}
}

// exported returns every metric family tord can register, by name, with
// histograms' _bucket, _sum and _count series. It describes every
// collector serve registers, and collects those that run without a
// switch, which gives the label values of the closed sets (reasons,
// queues, causes, states, outcomes, classes, directions).
func exported(t *testing.T) map[string]*series {
	t.Helper()
	var runnable, describeOnly []prometheus.Collector
	for _, c := range tordCollectors() {
		if c.collects {
			runnable = append(runnable, c.c)
		} else {
			describeOnly = append(describeOnly, c.c)
		}
	}

	out := map[string]*series{}
	add := func(name string) *series {
		s := out[name]
		if s == nil {
			s = &series{labels: map[string]bool{}, values: map[string]map[string]bool{}}
			out[name] = s
		}
		return s
	}
	descRE := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	ch := make(chan *prometheus.Desc, 4096)
	for _, c := range append(slices.Clone(runnable), describeOnly...) {
		c.Describe(ch)
	}
	close(ch)
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		s := add(m[1])
		for _, l := range strings.Split(m[2], ",") {
			if l != "" {
				s.labels[l] = true
			}
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(runnable...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	closed := map[string]bool{"reason": true, "queue": true, "cause": true, "state": true, "outcome": true, "class": true, "direction": true}
	for _, mf := range mfs {
		names := []string{mf.GetName()}
		if mf.GetType().String() == "HISTOGRAM" || mf.GetType().String() == "SUMMARY" {
			names = append(names, mf.GetName()+"_sum", mf.GetName()+"_count")
			if mf.GetType().String() == "HISTOGRAM" {
				names = append(names, mf.GetName()+"_bucket")
				add(mf.GetName() + "_bucket").labels["le"] = true
			}
		}
		for _, name := range names {
			s := add(name)
			for _, m := range mf.GetMetric() {
				for _, lp := range m.GetLabel() {
					s.labels[lp.GetName()] = true
					if closed[lp.GetName()] {
						if s.values[lp.GetName()] == nil {
							s.values[lp.GetName()] = map[string]bool{}
						}
						s.values[lp.GetName()][lp.GetValue()] = true
					}
				}
			}
			for l := range out[mf.GetName()].labels {
				s.labels[l] = true
			}
		}
	}
	return out
}

type fakeSource struct{ s dataplane.Snapshot }

func (f fakeSource) Snapshot() dataplane.Snapshot { return f.s }

// The collector list above is every collector tord has: each metric name
// the sources of tord, dataplane/metrics and tor/telemetry define is
// among the exported.
func TestDeployCollectorListComplete(t *testing.T) {
	have := exported(t)
	nameRE := regexp.MustCompile(`(?:newDesc|gaugeOf|counterOf|desc)(?:\[[^\]]*\])?\("([a-z0-9_]+)"|"(rocetor_[a-z0-9_]+)"`)
	var files []string
	for _, dir := range []string{".", "../../dataplane/metrics", "../../tor/telemetry"} {
		more, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(more) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		files = append(files, more...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range nameRE.FindAllStringSubmatch(string(b), -1) {
			name := m[2]
			if m[1] != "" {
				name = "rocetor_" + m[1]
			}
			if have[name] == nil {
				t.Errorf("%s defines %s, which exported() does not know: add its collector to the list", f, name)
			}
		}
	}
}

// Every metric, label and label value that the alerting rules, their
// tests and the Grafana dashboard use is one tord exports.
func TestDeployMetricNames(t *testing.T) {
	have := exported(t)
	var exprs []labelledExpr

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string
				Expr        string
				Annotations map[string]string
			}
		}
	}
	rulesText := readDeploy(t, "prometheus/rules.yml")
	if err := yaml.Unmarshal(rulesText, &rules); err != nil {
		t.Fatal(err)
	}
	nrules := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			nrules++
			var used []string
			for _, a := range r.Annotations {
				for _, m := range regexp.MustCompile(`\$labels\.([a-z_]+)`).FindAllStringSubmatch(a, -1) {
					used = append(used, m[1])
				}
			}
			exprs = append(exprs, labelledExpr{"rules.yml " + r.Alert, r.Expr, used})
		}
	}
	if nrules == 0 {
		t.Fatal("rules.yml has no rules")
	}

	var rtests struct {
		Tests []struct {
			InputSeries []struct{ Series string } `yaml:"input_series"`
		}
	}
	rtestText := readDeploy(t, "prometheus/rules_test.yml")
	if err := yaml.Unmarshal(rtestText, &rtests); err != nil {
		t.Fatal(err)
	}
	for _, tc := range rtests.Tests {
		for _, s := range tc.InputSeries {
			exprs = append(exprs, labelledExpr{"rules_test.yml", s.Series, nil})
		}
	}

	dashText := readDeploy(t, "grafana/rocetor.json")
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr, LegendFormat string }
		}
	}
	if err := json.Unmarshal(dashText, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			var used []string
			for _, m := range regexp.MustCompile(`\{\{\s*([a-z_]+)\s*\}\}`).FindAllStringSubmatch(tg.LegendFormat, -1) {
				used = append(used, m[1])
			}
			exprs = append(exprs, labelledExpr{"rocetor.json " + p.Title, tg.Expr, used})
		}
	}

	// Any rocetor_ name anywhere in the files, annotations included.
	for file, text := range map[string][]byte{"rules.yml": rulesText, "rules_test.yml": rtestText, "rocetor.json": dashText} {
		for _, name := range regexp.MustCompile(`\brocetor_[a-z0-9_]+`).FindAllString(string(text), -1) {
			if have[name] == nil {
				t.Errorf("%s: %s is not a metric tord exports", file, name)
			}
		}
	}
	for _, e := range exprs {
		e.check(t, have)
	}
}

// labelledExpr is a PromQL expression and the labels its users (alert
// annotations, legends) read from its result.
type labelledExpr struct {
	where, expr string
	used        []string
}

var (
	selectorRE = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
	groupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	metricRE   = regexp.MustCompile(`\b((?:rocetor|go|process)_[a-z0-9_]+|up)\b`)
)

func (e labelledExpr) check(t *testing.T, have map[string]*series) {
	t.Helper()
	avail := map[string]bool{}
	for _, l := range targetLabels {
		avail[l] = true
	}
	for _, name := range metricRE.FindAllString(e.expr, -1) {
		if name == "up" {
			continue
		}
		s := have[name]
		if s == nil {
			t.Errorf("%s: %s is not a metric tord exports", e.where, name)
			continue
		}
		for l := range s.labels {
			avail[l] = true
		}
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(e.expr, -1) {
		s := have[sel[1]]
		if sel[1] == "up" || s == nil {
			continue
		}
		for _, m := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			label, op, value := m[1], m[2], m[3]
			if !s.labels[label] && !slices.Contains(targetLabels, label) {
				t.Errorf("%s: %s has no label %q (has %s)", e.where, sel[1], label, keys(s.labels))
				continue
			}
			if vals := s.values[label]; op == "=" && vals != nil && !vals[value] {
				t.Errorf("%s: %s{%s=%q}: tord exports only %s", e.where, sel[1], label, value, keys(vals))
			}
		}
	}
	for _, g := range groupingRE.FindAllStringSubmatch(e.expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !avail[l] {
				t.Errorf("%s: groups by %q, which none of its metrics has", e.where, l)
			}
		}
	}
	for _, l := range e.used {
		if !avail[l] {
			t.Errorf("%s: reads label %q, which none of its metrics has", e.where, l)
		}
	}
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func readDeploy(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// yamlDocs returns the documents of a multi-document YAML file.
func yamlDocs(t *testing.T, name string) []*yaml.Node {
	t.Helper()
	d := yaml.NewDecoder(bytes.NewReader(readDeploy(t, name)))
	var out []*yaml.Node
	for {
		var n yaml.Node
		if err := d.Decode(&n); err != nil {
			break
		}
		out = append(out, &n)
	}
	return out
}
