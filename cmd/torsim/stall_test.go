package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/fabric"
)

// TestStallFlag: --stall reaches the switches it names (their pauses
// stretch the flows' completion), and a spec that does not parse or
// names no node is refused.
func TestStallFlag(t *testing.T) {
	dir := t.TempDir()
	mean := func(out string, extra ...string) float64 {
		return freeResult(t, filepath.Join(dir, out), append([]string{"--topo", "chain", "--rate", "10G", "--size", "256KiB"}, extra...)...).All.MeanFCTNs
	}
	plain, stalled := mean("plain"), mean("stalled", "--stall", "tor*:100us/200us:fixed")
	if stalled <= plain {
		t.Errorf("mean FCT %v ns with tor1 and tor2 off half the time, %v without", stalled, plain)
	}
	if err := run(t.Context(), []string{"--topo", "chain", "--quiet", "--stall", "tor1:1ms"}); err == nil || !strings.Contains(err.Error(), "no DUR/PERIOD") {
		t.Errorf("--stall tor1:1ms: %v, want no DUR/PERIOD", err) // the flag package keeps the text only
	}
	if err := run(t.Context(), []string{"--topo", "chain", "--quiet", "--stall", "tor9:1ms/50ms"}); !errors.Is(err, fabric.ErrStall) {
		t.Errorf("--stall tor9:1ms/50ms: %v, want ErrStall", err)
	}
}

// TestJitterFlag: torsim run's --jitter reaches the experiment's
// simulations — netrt-incast's 15-sender GBN cell under it is the
// free-form run of the same fabric with --jitter, not the cell without —
// and a negative one is refused.
func TestJitterFlag(t *testing.T) {
	dir := t.TempDir()
	cell := func(name string, extra ...string) float64 {
		p := filepath.Join(dir, name+".json")
		runTorsim(t, cmdRun, append([]string{"netrt-incast", "--scale", "ci", "--senders", "15", "--schemes", "gbn", "--record", p}, extra...)...)
		return readRecord(t, p).Runs[0].Fabric.All.MeanFCTNs
	}
	plain, jittered := cell("plain"), cell("jittered", "--jitter", "177ns")
	sw := filepath.Join(dir, "q.yaml")
	if err := os.WriteFile(sw, []byte("egress: {queue_limit: 1MiB}\necn: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	free := freeResult(t, filepath.Join(dir, "free"), "--topo", "leafspine:leaves=16,spines=1,hosts=1", "--rate", "50G", "--delay", "500ns",
		"--fabric-delay", "500ns", "--transport", "gbn", "--cc", "dcqcn", "--rto", "200us", "--gbn-window", "489", "--switch", sw,
		"--workload", "sequential-incast", "--incast", "15", "--jitter", "177ns")
	if jittered == plain || jittered != free.All.MeanFCTNs {
		t.Errorf("mean FCT %v ns with --jitter, %v without, %v in the free-form run with it", jittered, plain, free.All.MeanFCTNs)
	}
	var sink bytes.Buffer
	if err := cmdRun(t.Context(), []string{"netrt-incast", "--scale", "ci", "--jitter", "-1ns"}, &sink, &sink); err == nil {
		t.Error("--jitter -1ns was accepted")
	}
}

// freeResult runs free-form torsim with args into out, quietly, and
// returns its result.json.
func freeResult(t *testing.T, out string, args ...string) *fabric.Result {
	t.Helper()
	if err := run(t.Context(), append(args, "--out", out, "--quiet")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r fabric.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}
