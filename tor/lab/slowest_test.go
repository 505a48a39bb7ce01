package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/fabric"
)

// TestSlowest checks the per-bin list a cell keeps: the n slowest
// completed flows of each bin, slowest first, ties in flow order, with
// what befell them; a failed flow is not in it.
func TestSlowest(t *testing.T) {
	rec := func(size int, fct, ideal int64, timeouts int, ok bool) fabric.FlowRecord {
		return fabric.FlowRecord{Size: size, FCTNs: fct, IdealNs: ideal, Timeouts: timeouts, OK: ok}
	}
	recs := []fabric.FlowRecord{
		rec(1000, 10_000, 1_000, 0, true),      // 0: bin <10000, slowdown 10
		rec(9999, 500_000, 1_000, 2, true),     // 1: slowdown 500, two timeouts
		rec(10_000, 2_000, 1_000, 0, true),     // 2: bin 10000-100000, slowdown 2
		rec(2000, 10_000, 1_000, 0, true),      // 3: slowdown 10, a tie with 0
		rec(3000, 900_000, 1_000, 0, false),    // 4: failed: not listed
		rec(20_000_000, 8_000, 1_000, 1, true), // 5: bin >=10000000
		rec(5000, 4_000, 1_000, 0, true),       // 6: the bin's fourth
	}
	got := slowest(recs, 3)
	want := []struct {
		bin  string
		flow int
	}{{"<10000", 1}, {"<10000", 0}, {"<10000", 3}, {"10000-100000", 2}, {">=10000000", 5}}
	if len(got) != len(want) {
		t.Fatalf("slowest: %+v: want %d flows", got, len(want))
	}
	for i, w := range want {
		if got[i].Bin != w.bin || got[i].Flow != w.flow {
			t.Errorf("slowest[%d] = %s flow %d, want %s flow %d", i, got[i].Bin, got[i].Flow, w.bin, w.flow)
		}
	}
	if got[0].Slowdown != 500 || got[0].Timeouts != 2 || got[0].Size != 9999 {
		t.Errorf("slowest[0] = %+v: want slowdown 500, 2 timeouts, 9999 B", got[0])
	}
}

// TestWriteFlowFile: --flows names a directory that need not exist yet
// (irn-fabric once ran a paper-scale cell to the end and then failed on
// it); the file is the cell's completed flows, named by point and seed.
func TestWriteFlowFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "flows")
	r := &fabric.Result{Records: []fabric.FlowRecord{
		{Size: 1000, StartNs: 5, FCTNs: 10_000, IdealNs: 1_000, OK: true},
		{Size: 2000, StartNs: 6, FCTNs: 1, OK: false},
	}}
	pt := map[string]string{"scheme": "roce+pfc", "cc": "none", "gbn_window": "-"}
	if err := writeFlowFile(dir, r, pt, 2); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "seed2-none-roce+pfc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 1 {
		t.Errorf("%d lines, want the one completed flow:\n%s", n, b)
	}
}
