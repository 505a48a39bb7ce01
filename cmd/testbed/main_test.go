package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Usage errors exit 2 before anything needs root, so these run anywhere.
func TestCLIUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage:"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"up"}, "TOPOLOGY"},
		{[]string{"up", "ring"}, `topology "ring"`},
		{[]string{"up", "chain", "--loss", "2"}, "loss"},
		{[]string{"up", "chain", "--prefix", "no_dash"}, "--prefix"},
		{[]string{"up", "dumbbell", "--senders", "0"}, "--senders"},
		{[]string{"up", "chain", "--bogus"}, "bogus"},
		{[]string{"up", "chain", "extra"}, "TOPOLOGY"},
		{[]string{"run"}, "EXPERIMENT"},
		{[]string{"run", "nope"}, "unknown experiment"},
		{[]string{"run", "loss-sweep", "--losses", "x"}, "--losses"},
		{[]string{"run", "loss-sweep", "stray"}, "unexpected argument"},
		{[]string{"down", "extra"}, "no arguments"},
		{[]string{"metrics"}, "NODE"},
		{[]string{"blast", "extra"}, "testbed blast"},
		{[]string{"blast", "--rate", "0"}, "testbed blast"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("testbed %q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

func TestCLIListAndHelp(t *testing.T) {
	code, out, _ := runCLI("list")
	if code != 0 || !strings.Contains(out, "loss-sweep") || !strings.Contains(out, "demo") {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("help", "run", "loss-sweep")
	for _, flag := range []string{"-losses", "-transports", "-size", "-count", "-qps", "-json", "-md", "-plot", "-reuse", "-keep", "-bin", "-burst", "-rate"} {
		if code != 0 || !strings.Contains(out, flag) {
			t.Errorf("help run loss-sweep lacks %s (exit %d)", flag, code)
		}
	}
	code, out, _ = runCLI("help", "up")
	for _, flag := range []string{"-loss", "-burst", "-senders", "-paths", "-multipath", "-prefix", "-state", "-mgmt", "-trust"} {
		if code != 0 || !strings.Contains(out, flag) {
			t.Errorf("help up lacks %s (exit %d)", flag, code)
		}
	}
}

func TestCLIStatusEmpty(t *testing.T) {
	code, out, stderr := runCLI("status", "--state", t.TempDir(), "--prefix", "rtbnothing-")
	if code != 0 || !strings.Contains(out, "no testbed") {
		t.Errorf("status on an empty state dir: exit %d\n%s%s", code, out, stderr)
	}
}

// TestWorkersFlag: testbed run and up take --workers and refuse a bad
// one before anything needs root.
func TestWorkersFlag(t *testing.T) {
	code, _, stderr := runCLI("run", "llr-loss", "--workers", "99")
	if code != 2 || !strings.Contains(stderr, "--workers 99") {
		t.Errorf("run llr-loss --workers 99: exit %d, %q; want 2 and the reason", code, stderr)
	}
	code, out, _ := runCLI("help", "up")
	if code != 0 || !strings.Contains(out, "-workers") {
		t.Errorf("help up: exit %d, no --workers in\n%s", code, out)
	}
}

// TestCLIMgmtFlag: up refuses a management network that is no IPv4
// network before anything needs root.
func TestCLIMgmtFlag(t *testing.T) {
	if code, _, stderr := runCLI("up", "chain", "--mgmt=nonsense"); code != 2 || !strings.Contains(stderr, "mgmt") {
		t.Errorf("up --mgmt=nonsense: exit %d, %s", code, stderr)
	}
}

// TestCLIPlot: testbed plot draws a record's plots again, with the
// flags of its recorded command line, and names the files.
func TestCLIPlot(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "record.json")
	res := &lab.Results{Experiment: "loss-sweep", Command: "testbed run loss-sweep --losses 0,0.01 --transports gbn"}
	for _, loss := range []string{"0", "0.01"} {
		res.Runs = append(res.Runs, lab.Run{Point: map[string]string{"transport": "gbn", "loss": loss}, Repeat: 1,
			Perf: &lab.PerfResult{Client: lab.Summary{GoodputGbps: 0.9, FCT: lab.FCT{P99: 100}}}})
	}
	if err := res.WriteJSON(record); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI("plot", record, dir)
	if _, err := os.Stat(filepath.Join(dir, "goodput.png")); code != 0 || err != nil || !strings.Contains(out, "goodput.png") {
		t.Errorf("plot: exit %d, %v, printed %q%s", code, err, out, stderr)
	}
	if code, _, stderr := runCLI("plot", record); code != 2 || !strings.Contains(stderr, "RECORD DIR") {
		t.Errorf("one argument: exit %d, %s", code, stderr)
	}
	res.Experiment = "nope"
	if err := res.WriteJSON(record); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI("plot", record, dir); code != 2 || !strings.Contains(stderr, "unknown experiment") {
		t.Errorf("an unknown experiment: exit %d, %s", code, stderr)
	}
}
