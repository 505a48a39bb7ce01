package fabric

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"rocetor/tor/workload"
)

// TestFlowFileStats: a lossy WebSearch run over GBN (retransmissions
// and timeouts both) writes the same result and flow file on a second
// run with its seed; the flow file reads back into the records it was
// written from, and the statistics recomputed from it equal the run's,
// for the default bins and for others with a warm-up. Every
// retransmission and timeout the hosts counted belongs to some flow.
func TestFlowFileStats(t *testing.T) {
	flows := func(h int) []workload.Flow {
		d, _ := workload.LoadCDF("websearch")
		return workload.Poisson(h, d, 0.5, 10e9, 20e6, 256<<10, rand.New(rand.NewPCG(5, 5)))
	}
	o := Options{Seed: 5, Switch: "forwarding: {multipath: ecmp}\n" + lossy, Transport: "gbn"}
	res := run(t, "leafspine:leaves=2,spines=2,hosts=4", o, flows)
	var file bytes.Buffer
	if err := res.WriteFlows(&file); err != nil {
		t.Fatal(err)
	}
	// The same seed again: the same result and flow file, byte for byte.
	again := run(t, "leafspine:leaves=2,spines=2,hosts=4", o, flows)
	var file2 bytes.Buffer
	if err := again.WriteFlows(&file2); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) || !bytes.Equal(file.Bytes(), file2.Bytes()) {
		t.Fatal("two runs with one seed write different results or flow files")
	}
	if res.Completed < 20 || res.Measured != res.Completed {
		t.Fatalf("%d of %d flows completed, %d measured", res.Completed, res.Flows, res.Measured)
	}
	retx, timeouts := 0, 0
	for _, f := range res.Records {
		retx, timeouts = retx+f.Retransmits, timeouts+f.Timeouts
		if f.OK && (f.EndNs != f.StartNs+f.FCTNs || f.IdealNs <= 0 || f.Path == "-") {
			t.Errorf("record %+v: end is not start + FCT, or no ideal FCT or path", f)
		}
	}
	if h := res.HostCounters; retx == 0 || timeouts == 0 || int64(retx) != h["Retransmits"] || int64(timeouts) != h["Timeouts"] {
		t.Errorf("flows' retransmits %d and timeouts %d, the hosts' %d and %d", retx, timeouts, h["Retransmits"], h["Timeouts"])
	}
	recs, transport, err := ReadFlows(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != res.Completed || transport != "gbn" || strings.Count(file.String(), "\n") != res.Completed {
		t.Fatalf("%d records of %d completed flows, transport %q", len(recs), res.Completed, transport)
	}
	k := 0
	for _, f := range res.Records {
		if !f.OK {
			continue
		}
		f.Src, f.Dst, f.EndNs = -1, -1, 0
		if recs[k] != f {
			t.Fatalf("line %d reads back as %+v, written from %+v", k+1, recs[k], f)
		}
		k++
	}
	same := func(o StatsOptions, want *Result) {
		t.Helper()
		got := &Result{Records: recs}
		if err := got.Summarize(o); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stats(got), stats(want)) {
			t.Errorf("from the flow file with %+v:\n%s\nfrom the run:\n%s", o, stats(got), stats(want))
		}
	}
	same(StatsOptions{}, res)
	warm := StatsOptions{Bins: []int{20_000, 1_000_000}, ShortBelow: 100_000, WarmupNs: 5_000_000}
	if err := res.Summarize(warm); err != nil {
		t.Fatal(err)
	}
	if res.Measured == 0 || res.Measured >= res.Completed || len(res.FCT) != 3 || res.FCT[1].Range != "20KB–1MB" {
		t.Fatalf("warm-up 5 ms: %d of %d measured, bins %v", res.Measured, res.Completed, res.FCT)
	}
	warmMeasured := res.Measured
	same(warm, res)
	// A window that ends: the flows posted from 5 ms on for 2 ms, no
	// later one, whatever it did.
	window := warm
	window.MeasureNs = 2_000_000
	if err := res.Summarize(window); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range recs {
		if f.StartNs >= 5_000_000 && f.StartNs < 7_000_000 {
			want++
		}
	}
	if res.Measured != want || want == 0 || res.MeasureNs != 2_000_000 || want >= warmMeasured {
		t.Fatalf("window 5–7 ms: %d measured, %d posted in it, %d from 5 ms on", res.Measured, want, warmMeasured)
	}
	same(window, res)
	if err := res.Summarize(StatsOptions{MeasureNs: -1}); !errors.Is(err, ErrWindow) {
		t.Errorf("a negative window: %v", err)
	}
	t.Logf("%d flows, %d retransmitted packets and %d timeouts attributed; %d measured from 5 ms, %d from 5 to 7 ms",
		len(recs), retx, timeouts, warmMeasured, res.Measured)
}

// stats is the part of a Result Summarize sets, as JSON.
func stats(r *Result) string {
	b, _ := json.MarshalIndent(map[string]any{"warmup": r.WarmupNs, "measure": r.MeasureNs, "bins": r.Bins, "short": r.ShortBelow, "measured": r.Measured,
		"fct": r.FCT, "all": r.All, "short_b": r.Short, "long_b": r.Long, "goodput": r.GoodputGbps}, "", " ")
	return string(b)
}

// TestFlowPath: the spine FlowPath names for a flow between the leaves
// is the one that carried its data.
func TestFlowPath(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		o := Options{Seed: seed, Switch: "forwarding: {multipath: ecmp}\n"}
		const size = 256 << 10
		res := run(t, "leafspine:leaves=2,spines=4,hosts=1", o, func(int) []workload.Flow {
			return []workload.Flow{{Src: 0, Dst: 1, Size: size, After: -1}}
		})
		path := res.Records[0].Path
		hops := strings.Split(path, ">")
		if len(hops) != 3 {
			t.Fatalf("path %q: want leaf>spine>leaf", path)
		}
		for _, s := range res.SwitchResults {
			if !strings.HasPrefix(s.Name, "spine") {
				continue
			}
			var tx uint64
			for _, p := range s.Ports {
				tx += p.TxBytes
			}
			if carried := tx >= size; carried != (s.Name == hops[1]) {
				t.Errorf("seed %d: path %s, but %s sent %d bytes", seed, path, s.Name, tx)
			}
		}
	}
}

// TestBins: bins parse from sizes with units, in ascending order only.
func TestBins(t *testing.T) {
	b, err := ParseBins("10KB,100KiB,1MB")
	if err != nil || !reflect.DeepEqual(b, []int{10_000, 100 << 10, 1_000_000}) {
		t.Fatalf("ParseBins: %v, %v", b, err)
	}
	for _, s := range []string{"", "1MB,10KB", "10KB,10KB", "0,1", "x"} {
		if _, err := ParseBins(s); err == nil {
			t.Errorf("ParseBins(%q) accepted", s)
		}
	}
	if n := bucketName(100<<10, 0); n != "≥100KiB" {
		t.Errorf("bucket name %q", n)
	}
}
