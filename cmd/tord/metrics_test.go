package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"go.uber.org/zap"

	"rocetor/tor/fwd"
	"rocetor/tor/impair"
)

// metricsGolden is every rocetor_ family a switch with every stage on
// exports (tor/telemetry), as /metrics writes it, without the values;
// tor/telemetry's TestFamiliesGolden checks Register against it too,
// and rewrites it with -update.
const metricsGolden = "../../tor/telemetry/testdata/families.golden"

// goldenSwitch is a tord of two workers with every stage and every
// collector on, over in-memory ports: NetRT, trimming, llr with its
// monitor, DCP, adaptive multipath and impair rules.
func goldenSwitch(t *testing.T) (Config, *Switch) {
	t.Helper()
	cfg := handoffConfigs(t)["all"]
	cfg.Workers = 2
	cfg.DCP = true
	cfg.Forwarding.Multipath = "adaptive"
	cfg.LLR.Monitor = &LLRMonitorConfig{}
	cfg.Impair = impair.Config{Seed: 1, Rules: []impair.Rule{{Port: "s1", Direction: "egress", Loss: 0.01}}}
	cfg.QoS = &QoSConfig{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ms := newMemSwitches(t, cfg, &fwd.TableConfig{}, 1024)
	sw := &Switch{cfg: cfg, log: zap.NewNop()}
	for w, pl := range ms.pls {
		sw.adopt(w, pl)
	}
	if err := sw.openLLR(); err != nil { // the links' stages, and the monitor
		t.Fatal(err)
	}
	ms.settle()
	return cfg, sw
}

// TestMetricsGolden holds tord's /metrics to the families, help
// strings, types and label sets it served when the stages' collectors
// lived in this command, before they moved to tor/telemetry.
func TestMetricsGolden(t *testing.T) {
	cfg, sw := goldenSwitch(t)
	reg, err := registry(cfg, sw)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "rocetor_") {
			continue // Go's and the process's
		}
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text.String(), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			line = line[:i] + "\n" // the value
		}
		b.WriteString(line)
	}
	got := b.String()
	want, err := os.ReadFile(metricsGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		n := firstDiff(got, string(want))
		t.Errorf("/metrics differs from %s at line %d:\ngot:  %s\nwant: %s\n(a family changed on purpose: go test ./tor/telemetry -run TestFamiliesGolden -update)",
			metricsGolden, n, at(gl, n-1), at(wl, n-1))
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}
