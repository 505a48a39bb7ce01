package main

import (
	"bytes"
	"strings"
	"testing"
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
