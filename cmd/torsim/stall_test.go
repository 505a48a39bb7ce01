package main

import (
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
		args := append([]string{"--topo", "chain", "--rate", "10G", "--size", "256KiB", "--quiet", "--out", filepath.Join(dir, out)}, extra...)
		if err := run(t.Context(), args); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, out, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r fabric.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r.All.MeanFCTNs
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
