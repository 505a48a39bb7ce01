package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"rocetor/dataplane"
)

func TestParseClient(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "200"}
	o, err := parseClient("write", append(base, "--qps", "4", "--rate", "1G"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.size != 4096 || o.count != 200 || o.qps != 4 || o.rate != 1e9 || o.to != "10.0.0.2:18515" ||
		o.transport != "gbn" || o.mtu != 1024 || o.timeout != 10*time.Second || o.depth != 64 || o.poll != dataplane.Adaptive {
		t.Errorf("parsed %+v", o)
	}
	if o, err := parseClient("write", append(base, "--poll", "interrupt"), &bytes.Buffer{}); err != nil || o.poll != dataplane.Interrupt {
		t.Errorf("--poll interrupt: %+v, %v", o, err)
	}
	if o, err := parseClient("send", append(base, "--transport", "dcp"), &bytes.Buffer{}); err != nil || o.transport != "dcp" {
		t.Errorf("send over dcp: %+v, %v", o, err)
	}
	if o, err := parseClient("read", append(base, "--transport", "irn", "--rto", "2ms"), &bytes.Buffer{}); err != nil ||
		o.transport != "irn" || o.rto != 2*time.Millisecond {
		t.Errorf("read over irn: %+v, %v", o, err)
	}
	if _, err := parseClient("read", append(base, "--transport", "dcp"), &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "does not do read") {
		t.Errorf("read over dcp: %v, want a usage error", err)
	}
	for _, c := range []struct{ size, qps, depth int }{
		{1 << 20, 1, 2}, {4096, 1, 64}, {100, 1, 64}, {64 << 10, 1, 4}, {4096, 1000, 4}, {1 << 20, 1000, 1}, {4096, 100, 40},
	} {
		if d := autoDepth(c.size, c.qps); d != c.depth {
			t.Errorf("autoDepth(%d, %d) = %d, want %d", c.size, c.qps, d, c.depth)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "h", "--size", "1", "--count", "1"}, "--dev is required"},
		{[]string{"--dev", "e", "--size", "1", "--count", "1"}, "--to is required"},
		{append(base[:4:4], "--size", "0", "--count", "1"), "--size 0"},
		{append(base[:4:4], "--size", "2GiB", "--count", "1"), "--size 2147483648"},
		{append(base[:4:4], "--size", "lots", "--count", "1"), "invalid value"},
		{append(base, "--transport", "tcp"), `unknown transport "tcp"`},
		{append(base, "--mtu", "1500"), "--mtu 1500"},
		{append(base, "--qps", "0"), "--qps 0"},
		{append(base, "--qps", "8193"), "--qps 8193"},
		{append(base, "--count", "0"), "--count 0"},
		{append(base, "--timeout", "0s"), "--timeout"},
		{append(base, "--rate", "fast"), "invalid value"},
		{append(base, "--poll", "spin"), `poll mode "spin"`},
		{append(base, "--nope"), "flag provided but not defined"},
		{append(base, "extra"), `unexpected argument "extra"`},
		{[]string{"--dev", "e", "--to", "h", "--size", "1GiB", "--count", "1", "--qps", "2"}, "limit"},
		{[]string{"--dev", "e", "--to", "h:99999", "--size", "1", "--count", "1"}, "port"},
	} {
		_, err := parseClient("write", tc.args, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestManyQPs: 5,000 QPs (FaSR's concurrency, seed 001 §V-C) parse with
// one 4 KiB message in flight each, and every run's QPNs stay within 24
// bits whatever base it draws.
func TestManyQPs(t *testing.T) {
	o, err := parseClient("write", []string{"--dev", "e", "--to", "h", "--size", "4KiB", "--count", "20000", "--qps", "5000"}, &bytes.Buffer{})
	if err != nil || o.depth != 1 {
		t.Fatalf("5000 QPs: %+v, %v", o, err)
	}
	for range 10000 {
		if b := randomBase(); b < 0x100 || uint64(b)+maxQPs > 1<<24 {
			t.Fatalf("base QPN %#x: %d QPs from it leave the 24-bit space", b, maxQPs)
		}
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.2":        "10.0.0.2:18515",
		"10.0.0.2:7000":   "10.0.0.2:7000",
		"fd02::2":         "[fd02::2]:18515",
		"[fd02::2]":       "[fd02::2]:18515",
		"[fd02::2]:7000":  "[fd02::2]:7000",
		"server":          "server:18515",
		"server.lan:9000": "server.lan:9000",
	} {
		if got, err := hostPort(in); err != nil || got != want {
			t.Errorf("hostPort(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseServer(t *testing.T) {
	o, err := parseServer([]string{"--dev", "eth0", "--once", "--max-mr", "1MiB"}, &bytes.Buffer{})
	if err != nil || !o.once || o.maxMR != 1<<20 || o.listen != ":18515" || o.poll != dataplane.Adaptive {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	if o, err := parseServer([]string{"--dev", "eth0", "--poll", "busy"}, &bytes.Buffer{}); err != nil || o.poll != dataplane.Busy {
		t.Errorf("--poll busy: %+v, %v", o, err)
	}
	for _, args := range [][]string{{}, {"--dev", "e", "--listen", "nope"}, {"--dev", "e", "--max-mr", "0"}, {"--dev", "e", "--poll", "x"}} {
		if _, err := parseServer(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}

// TestUsageExit: bad flags and unknown commands exit 2 with a message;
// -h exits 0.
func TestUsageExit(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{nil, exitUsage, "usage"},
		{[]string{"fly"}, exitUsage, `unknown command "fly"`},
		{[]string{"write", "--dev", "e", "--to", "h", "--size", "0", "--count", "1"}, exitUsage, "--size 0"},
		{[]string{"send", "--dev", "e", "--to", "h", "--size", "1", "--count", "1", "--transport", "x"}, exitUsage, "unknown transport"},
		{[]string{"serve"}, exitUsage, "--dev is required"},
		{[]string{"read", "-h"}, exitOK, "usage"},
	} {
		var out, errb bytes.Buffer
		code := runContext(t.Context(), tc.args, &out, &errb, nil)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.msg) {
			t.Errorf("%q: exit %d, output %q; want exit %d and %q", tc.args, code, out.String()+errb.String(), tc.code, tc.msg)
		}
	}
}

func TestPercentile(t *testing.T) {
	var s []int64
	for i := int64(1); i <= 1000; i++ {
		s = append(s, i)
	}
	for _, tc := range []struct {
		q    float64
		want int64
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0, 1}} {
		if got := percentile(s, tc.q); got != tc.want {
			t.Errorf("percentile(1..1000, %v) = %d, want %d", tc.q, got, tc.want)
		}
	}
	if got := percentile([]int64{7}, 0.999); got != 7 {
		t.Errorf("one value: %d", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("no values: %d", got)
	}
	// Nearest rank: p99 of 10 values is the largest, p50 the fifth.
	ten := []int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
	if percentile(ten, 0.99) != 100 || percentile(ten, 0.5) != 50 {
		t.Errorf("p99, p50 of ten: %d, %d", percentile(ten, 0.99), percentile(ten, 0.5))
	}
	f := fctOf([]int64{3000, 1000, 2000})
	if f.P50 != 2 || f.Max != 3 || f.Mean != 2 {
		t.Errorf("fctOf = %+v", f)
	}
}

// TestReportWall: start and end are the run's ends on the wall clock,
// found from the session clock's reading at a known wall time; a run
// with nothing completed has neither.
func TestReportWall(t *testing.T) {
	wall := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	var r report
	r.setRun([]int64{500, 700}, 1_000, 3_001_000, 4096) // 3 ms on the session clock
	r.setWall(1_000, 3_001_000, 5_001_000, wall)        // read 2 ms after the last completion
	if want := wall.Add(-5 * time.Millisecond); !r.Start.Equal(want) || !r.End.Equal(wall.Add(-2*time.Millisecond)) {
		t.Errorf("start %v, end %v; want %v and 3 ms later", r.Start, r.End, want)
	}
	var none report
	none.setRun(nil, -1, 0, 4096)
	none.setWall(-1, 0, 10, wall)
	var b bytes.Buffer
	if none.writeJSON(&b); strings.Contains(b.String(), `"start"`) || !none.Start.IsZero() {
		t.Errorf("a run without completions has a start: %s", b.String())
	}
}

func TestPattern(t *testing.T) {
	const size = 1 << 20
	b := make([]byte, size)
	fill(b, 42)
	if err := check(b, 42); err != nil {
		t.Fatal(err)
	}
	if check(b, 43) == nil {
		t.Error("message 42's payload passes as message 43's")
	}
	b[777777] ^= 1
	if err := check(b, 42); err == nil || !strings.Contains(err.Error(), "byte 777777") {
		t.Errorf("flipped bit: %v", err)
	}
	b[777777] ^= 1
	// A chunk placed one MTU off shows.
	copy(b[4096:5120], b[3072:4096])
	if check(b, 42) == nil {
		t.Error("a chunk shifted by 1 KiB passes")
	}
	// Short messages too.
	for n := 1; n < 100; n++ {
		fill(b[:n], uint64(n))
		if err := check(b[:n], uint64(n)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReportDCP pins the DCP names of the JSON report and the table.
func TestReportDCP(t *testing.T) {
	d := &dcpCounters{HOBounced: 1, HOReturned: 2, HORetransmits: 3, FallbackTimeouts: 4, RetransQOverflows: 5,
		Duplicates: 6, TrackingBytes: 192, HONotReturned: 7}
	r := &report{Transport: "dcp", counters: counters{QPContextBytes: 732, QPQueueBytes: 2184, DCP: d,
		Drops: map[string]uint64{"dcp_retransq_full": 5}, HODrops: map[string]uint64{"dcp_retransq_full": 5}},
		Server: &counters{DCP: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"qp_context_bytes":732`, `"qp_queue_bytes":2184`, `"dcp":{`, `"ho_bounced":1`,
		`"ho_returned":2`, `"ho_retransmits":3`, `"ho_stale":0`, `"ho_duplicates":0`, `"retransq_overflows":5`,
		`"fallback_timeouts":4`, `"fallback_retransmits":0`, `"duplicates":6`, `"unanchored":0`, `"recounts":0`,
		`"poisoned":0`, `"deferred":0`, `"tracking_bytes_per_qp":192`, `"server":{`, `"ho_not_returned":7`,
		`"ho_drops":{"dcp_retransq_full":5}`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"HO returned 2", "HO retransmits 3", "RetransQ overflows 5", "fallback timeouts 4",
		"HO bounced 1 (not returned 7)", "HO drops ", "duplicates 6", "732 B context, 2184 B queues (DCP tracking 192 B)"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
}

// TestReportIRN pins the IRN names of the JSON report and the table.
func TestReportIRN(t *testing.T) {
	d := &irnCounters{OutOfOrder: 1, NACKsSent: 2, NACKsReceived: 3, SACKs: 4, Recoveries: 5, Retransmits: 6,
		TimeoutsLow: 7, TimeoutsHigh: 8, WindowFull: 9, MaxInFlight: 128, Window: 128, BitmapBytes: 64}
	r := &report{Transport: "irn", counters: counters{QPContextBytes: 552, QPQueueBytes: 4608, IRN: d},
		Server: &counters{IRN: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"irn":{`, `"out_of_order":1`, `"nacks_sent":2`, `"nacks_received":3`, `"sacks":4`,
		`"recoveries":5`, `"recovery_retransmits":6`, `"timeouts_low":7`, `"timeouts_high":8`, `"window_full":9`,
		`"max_in_flight":128`, `"window_packets":128`, `"bitmap_bytes_per_qp":64`, `"early_reads":0`,
		`"read_reissues":0`, `"duplicates":0`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"NACKs 3 (SACKs 4)", "recoveries 5", "timeouts low 7 high 8", "window 128",
		"out of order 1", "NACKs sent 2", "IRN bitmaps 64 B"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
}
