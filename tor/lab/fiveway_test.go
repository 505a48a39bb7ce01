package lab

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/fabric"
)

// five-way's flags: what it refuses, and the scale's defaults.
func TestFiveWaySetup(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--schemes", "gbn,tcp"}, "scheme \"tcp\""},
		{[]string{"--scenarios", "flood"}, "scenario \"flood\""},
		{[]string{"--cc", "timely"}, "--cc \"timely\""},
		{[]string{"--corrupt", "0.5"}, "--corrupt"},
		{[]string{"--scale", "ci", "--incast", "8"}, "--incast 8"}, // 8 hosts at ci
	} {
		e := newFiveWay()
		parseExperiment(t, e, c.args...)
		if _, err := e.Setup(); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error naming %s", c.args, err, c.want)
		}
	}
	e := newFiveWay()
	parseExperiment(t, e, "--scale", "ci")
	if _, err := e.Setup(); err != nil {
		t.Fatal(err)
	}
	if len(e.schemeList) != len(fiveSchemes) || e.incast != 6 || e.duration.Microseconds() != 500 {
		t.Errorf("ci: %d schemes, incast %d, %v", len(e.schemeList), e.incast, e.duration)
	}
}

// The plots draw bars on a log axis from a record's groups, one far
// above the others (DCP under corruption) included.
func TestFiveWayPlots(t *testing.T) {
	var runs []Run
	for i, s := range fiveSchemes {
		for _, scen := range fiveScenarios {
			sd := 1.5 + float64(i)
			if s.name == "dcp" && scen == "corrupt" {
				sd = 1000
			}
			runs = append(runs, Run{Point: map[string]string{"scheme": s.name, "scenario": scen, "cc": "none"}, Repeat: 1,
				Fabric: &FabricRun{All: fabric.Bucket{MeanSlowdown: sd, P99Slowdown: 2 * sd}}})
		}
	}
	dir := t.TempDir()
	files, err := WritePlots(dir, newFiveWay().Plots(), GroupRuns(runs))
	if err != nil || len(files) != 2 {
		t.Fatalf("plots %q: %v", files, err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 || filepath.Dir(f) != dir {
			t.Errorf("%s: %v", f, err)
		}
	}
}
