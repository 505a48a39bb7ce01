package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// refLat is the latency summary computed the slow, obvious way from the
// sorted samples: the reference latStatsOf must agree with.
func refLat(samples []int64) latStats {
	s := slices.Clone(samples)
	slices.Sort(s)
	n := len(s)
	at := func(q float64) float64 { // nearest rank: the ceil(q·n)-th smallest
		r := int(math.Ceil(q * float64(n)))
		return float64(s[max(r, 1)-1])
	}
	med := float64(s[n/2])
	if n%2 == 0 {
		med = float64(s[n/2-1]+s[n/2]) / 2
	}
	var sum, sq float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(n)
	for _, v := range s {
		sq += (float64(v) - mean) * (float64(v) - mean)
	}
	us := func(v float64) float64 { return math.Round(v) / 1e3 }
	return latStats{Min: us(float64(s[0])), Max: us(float64(s[n-1])), Typical: us(med), Avg: us(mean),
		Stdev: us(math.Sqrt(sq / float64(n))), P99: us(at(0.99)), P999: us(at(0.999))}
}

// TestLatStats: the latency columns are the sorted samples' minimum,
// maximum, median, mean, deviation and nearest-rank percentiles, for
// counts odd and even, small and large, with ties, in any order.
func TestLatStats(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 1))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 1000, 1001, 4096, 100000} {
		s := make([]int64, n)
		for i := range s {
			// A long tail, as latencies have, and ties.
			s[i] = 1000 + rng.Int64N(500) + int64(rng.ExpFloat64()*2000)/10*10
		}
		got, want := latStatsOf(s), refLat(s)
		for name, pair := range map[string][2]float64{
			"t_min": {got.Min, want.Min}, "t_max": {got.Max, want.Max}, "t_typical": {got.Typical, want.Typical},
			"t_avg": {got.Avg, want.Avg}, "t_stdev": {got.Stdev, want.Stdev}, "p99": {got.P99, want.P99},
			"p99.9": {got.P999, want.P999},
		} {
			if math.Abs(pair[0]-pair[1]) > 0.0015 {
				t.Errorf("%d samples: %s = %v, want %v", n, name, pair[0], pair[1])
			}
		}
		// Each order-statistic column is one of the samples.
		for _, v := range []float64{got.Min, got.Max, got.P99, got.P999} {
			if !slices.Contains(s, int64(math.Round(v*1e3))) {
				t.Errorf("%d samples: %v µs is not a sample", n, v)
			}
		}
	}
	// Pinned by hand: 1..1000 µs.
	var s []int64
	for i := int64(1000); i >= 1; i-- {
		s = append(s, i*1000)
	}
	l := latStatsOf(s)
	if l.Min != 1 || l.Max != 1000 || l.Typical != 500.5 || l.Avg != 500.5 || l.P99 != 990 || l.P999 != 999 ||
		math.Abs(l.Stdev-288.675) > 0.001 {
		t.Errorf("1..1000 µs: %+v", l)
	}
	if z := latStatsOf(nil); z != (latStats{}) {
		t.Errorf("no samples: %+v", z)
	}
}

// TestPeak: perftest's BW peak is the best messages-per-time of any
// stretch from a post to a later completion.
func TestPeak(t *testing.T) {
	// Four 1000-byte messages posted at 0 and completing at 10, 20, 30
	// and 40 µs: the best stretch is all four in 40 µs, 100 ns each,
	// 80 Gbit/s... of 8000 bits per 100 ns = 80 Gb/s.
	posts := []int64{0, 0, 0, 0}
	dones := []int64{10000, 20000, 30000, 40000}
	if g := peakGbps(posts, dones, 1000); g != 0.8 {
		t.Errorf("peak %v Gbit/s, want 0.8", g)
	}
	// A later burst is faster: messages 2 and 3 posted at 30 µs and
	// done at 31 and 32 µs: 2 × 8000 bits in 2 µs = 8 Gbit/s.
	posts = []int64{0, 0, 30000, 30000}
	dones = []int64{10000, 20000, 31000, 32000}
	if g := peakGbps(posts, dones, 1000); g != 8 {
		t.Errorf("peak %v Gbit/s, want 8", g)
	}
	if g := peakGbps(nil, nil, 1000); g != 0 {
		t.Errorf("no messages: %v", g)
	}
}

// TestPerftestFlags: perftest's spellings mean what roceperf's do, the
// server may come last, and the defaults are perftest's.
func TestPerftestFlags(t *testing.T) {
	o, err := parseClient("write-bw", []string{"--dev", "eth0", "-s", "4096", "-n", "10", "-q", "2", "-m", "2048",
		"-t", "8", "-r", "16", "-F", "-p", "7000", "10.0.0.2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.size != 4096 || o.count != 10 || o.qps != 2 || o.mtu != 2048 || o.depth != 8 || o.rxDepth != 16 ||
		o.to != "10.0.0.2:7000" || o.lat {
		t.Errorf("parsed %+v", o)
	}
	// Flags after the server, as perftest users type them.
	o, err = parseClient("send-lat", []string{"--dev", "eth0", "10.0.0.2", "-n", "50", "--json"}, &bytes.Buffer{})
	if err != nil || !o.lat || o.size != defaultLatSize || o.count != 50 || o.depth != 1 || !o.json {
		t.Errorf("send-lat: %+v, %v", o, err)
	}
	o, err = parseClient("read", []string{"--dev", "e", "--to", "h"}, &bytes.Buffer{})
	if err != nil || o.size != defaultBWSize || o.count != defaultBWCount {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseClient("write", []string{"--dev", "e", "--to", "h", "-D", "3", "-a"}, &bytes.Buffer{})
	if err != nil || o.duration != 3*time.Second || o.count != 0 || !o.all || !o.depthAuto {
		t.Errorf("-D 3 -a: %+v, %v", o, err)
	}
	o, err = parseClient("write", []string{"--dev", "e", "--to", "h", "--duration", "250ms"}, &bytes.Buffer{})
	if err != nil || o.duration != 250*time.Millisecond {
		t.Errorf("--duration 250ms: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"send-lat", []string{"--dev", "e", "--to", "h", "-b"}, "bidirectional"},
		{"write-lat", []string{"--dev", "e", "--to", "h", "-q", "2"}, "one QP"},
		{"write", []string{"--to", "h"}, "verbs device"},
		{"write", []string{"--dev", "e", "--to", "h", "-D", "soon"}, "seconds"},
		{"write", []string{"--dev", "e", "--to", "h", "--snaplen", "10", "--pcap", "/dev/null"}, "--snaplen 10"},
	} {
		if _, err := parseClient(tc.cmd, tc.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error with %q", tc.cmd, tc.args, err, tc.want)
		}
	}
	if got := sweepSizes(); len(got) != 23 || got[0] != 2 || got[22] != 8<<20 {
		t.Errorf("sweep sizes %v", got)
	}
}

// TestLatency runs each latency test through the exchange and the fake
// fabric: every message is answered, checked, and one sample taken per
// iteration.
func TestLatency(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		for _, size := range []string{"2", "4KiB", "1MiB"} {
			t.Run(op+"/"+size, func(t *testing.T) {
				n := newFakeNet()
				addr, _, log := fakeServer(t, n, serverOpts{})
				code, out, errs := fakeClient(t, n, op+"-lat", "--dev", "f", "--to", addr, "-s", size, "-n", "300", "--json")
				if code != exitOK {
					t.Fatalf("exit %d: %s%s\nserver: %s", code, out, errs, log.String())
				}
				r := decode(t, out)
				l := r.Lat
				if l == nil || r.Messages != 300 || r.Count != 300 || r.Corrupt != 0 || r.VerifiedBytes != int64(r.Size)*300 ||
					r.QPs != 1 || r.Depth != 1 {
					t.Fatalf("report %s", out)
				}
				if !(l.Min > 0 && l.Min <= l.Typical && l.Typical <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max &&
					l.Min <= l.Avg && l.Avg <= l.Max) {
					t.Errorf("latency columns out of order: %+v", l)
				}
				if op != "read" && r.Server.PacketsReceived == 0 && op == "send" {
					t.Errorf("the server received nothing: %s", out)
				}
			})
		}
	}
}

// TestReadLatSamples: read-lat's samples are the READs' completion
// times, which the fake fabric sets to 1000 + i mod 100 ns for message
// i, so the columns are known exactly: not only printed, but the
// samples' own statistics.
func TestReadLatSamples(t *testing.T) {
	n := newFakeNet()
	addr, _, _ := fakeServer(t, n, serverOpts{})
	code, out, errs := fakeClient(t, n, "read-lat", "--dev", "f", "--to", addr, "-n", "1000", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var want []int64
	for i := range 1000 {
		want = append(want, int64(1000+i%100))
	}
	if r := decode(t, out); r.Lat == nil || *r.Lat != latStatsOf(want) || r.Lat.Min != 1 || r.Lat.Max != 1.099 ||
		r.Lat.Typical != 1.05 || r.Lat.P99 != 1.098 || r.Lat.P999 != 1.099 {
		t.Errorf("lat_us %+v, want %+v", r.Lat, latStatsOf(want))
	}
	// The table has perftest's columns and the same figures.
	addr, _, _ = fakeServer(t, n, serverOpts{})
	_, table, _ := fakeClient(t, n, "read-lat", "--dev", "f", "--to", addr, "-n", "1000")
	for _, k := range []string{"RDMA_Read Latency Test", " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]",
		" 2       1000           1.00           1.10         1.05               1.05           0.03             1.10                   1.10"} {
		if !strings.Contains(table, k) {
			t.Errorf("table lacks %q:\n%s", k, table)
		}
	}
}

// TestBWTable: a bandwidth run prints perftest's table, in MB/s by
// default and Gb/s with --report-gbits, with the peak at least the
// average, and the JSON carries the same figures.
func TestBWTable(t *testing.T) {
	n := newFakeNet()
	addr, _, _ := fakeServer(t, n, serverOpts{})
	_, table, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "4096", "-n", "200", "--cpu-util")
	for _, k := range []string{"RDMA_Write BW Test", " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
		" 4096       200 ", "verified  819200 bytes, 0 corrupt", "CPU"} {
		if !strings.Contains(table, k) {
			t.Errorf("table lacks %q:\n%s%s", k, table, errs)
		}
	}
	addr, _, _ = fakeServer(t, n, serverOpts{})
	_, table, _ = fakeClient(t, n, "send", "--dev", "f", "--to", addr, "-s", "4096", "-n", "200", "--report-gbits")
	if !strings.Contains(table, "BW peak[Gb/sec]    BW average[Gb/sec]") {
		t.Errorf("--report-gbits:\n%s", table)
	}
	addr, _, _ = fakeServer(t, n, serverOpts{})
	_, out, _ := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "4096", "-n", "200", "--json", "--cpu-util")
	r := decode(t, out)
	if r.BWPeakGbps < r.GoodputGbps || r.MsgRateMpps <= 0 || r.CPUUtilPct == nil {
		t.Errorf("peak %v, average %v, rate %v, cpu %v", r.BWPeakGbps, r.GoodputGbps, r.MsgRateMpps, r.CPUUtilPct)
	}
}

// TestDuration: -D runs for a time, then completes messages 0 to
// count-1 and no more, which the server verifies: WRITE on its slots,
// SEND each, READ at the client.
func TestDuration(t *testing.T) {
	for _, op := range []string{"write", "send", "read", "write-lat", "send-lat"} {
		t.Run(op, func(t *testing.T) {
			n := newFakeNet()
			addr, _, log := fakeServer(t, n, serverOpts{})
			start := time.Now()
			code, out, errs := fakeClient(t, n, op, "--dev", "f", "--to", addr, "-s", "1KiB", "-q", qpsFor(op), "-D", "200ms", "--json")
			if code != exitOK {
				t.Fatalf("exit %d: %s%s\n%s", code, out, errs, log.String())
			}
			r := decode(t, out)
			if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
				t.Errorf("ran %v for -D 200ms", d)
			}
			// A WRITE run is verified on the server's last slots
			// (65535 for 3 QPs: a timed run has at most 65536),
			// every other run message by message.
			verified := int64(r.Count) * 1024
			if op == "write" {
				verified = int64(min(r.Count, 65535)) * 1024
			}
			if r.Count < 10 || r.Messages != r.Count || r.VerifiedBytes != verified || r.Corrupt != 0 ||
				r.DurationSet != 0.2 {
				t.Errorf("report %s", out)
			}
			if op == "write" || op == "send" {
				sr := waitLines(t, log, 1)[0]
				if sr.ClientMessages != r.Count || sr.Corrupt != 0 {
					t.Errorf("server: %s", log.String())
				}
			}
		})
	}
}

func qpsFor(op string) string {
	if strings.HasSuffix(op, "-lat") {
		return "1"
	}
	return "3"
}

// TestSweep: -a runs every size from 2 B to 8 MiB, one row each, and
// one JSON object each with --json.
func TestSweep(t *testing.T) {
	n := newFakeNet()
	addr, _, _ := fakeServer(t, n, serverOpts{})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-a", "-n", "4", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 23 {
		t.Fatalf("%d JSON lines, want 23:\n%s", len(lines), out)
	}
	for i, l := range lines {
		r := decode(t, l)
		if r.Size != 2<<i || r.Messages != 4 || r.VerifiedBytes != 4*int64(r.Size) {
			t.Errorf("size %d: %s", 2<<i, l)
		}
	}
	addr, _, _ = fakeServer(t, n, serverOpts{})
	code, table, _ := fakeClient(t, n, "send-lat", "--dev", "f", "--to", addr, "-a", "-n", "3")
	if code != exitOK || strings.Count(table, "t_typical") != 1 || !strings.Contains(table, " "+strconv.Itoa(8<<20)+" ") ||
		!strings.Contains(table, "23 sizes: verified") {
		t.Errorf("send-lat -a:\n%s", table)
	}
}

// TestRxDepth: -r sets the receives the server posts per QP for SEND,
// separately from the client's send depth (-t); without it the server
// posts at least twice the depth.
func TestRxDepth(t *testing.T) {
	sv := &server{o: serverOpts{maxMR: 64 << 20}}
	h := hello{Version: protoVersion, Op: "send", Transport: "gbn", QPs: 2, Size: 4096, Count: 100, MTU: 1024,
		Depth: 8, TimeoutMS: 1000, QP: make([]qpWire, 2)}
	p, err := sv.planRun(h)
	if err != nil || p.rq < 16 {
		t.Errorf("default: %d receives per QP, %v; want at least 16", p.rq, err)
	}
	h.RxDepth = 24
	if p, err := sv.planRun(h); err != nil || p.rq != 24 || p.mem != 2*24*4096 {
		t.Errorf("rx depth 24: %d receives per QP, %d B, %v", p.rq, p.mem, err)
	}
	h.RxDepth = 5000
	if _, err := sv.planRun(h); err == nil {
		t.Error("rx depth 5000 accepted")
	}
	// Through the exchange: a SEND run with -t 4 -r 8 verifies.
	n := newFakeNet()
	addr, _, _ := fakeServer(t, n, serverOpts{})
	code, out, errs := fakeClient(t, n, "send", "--dev", "f", "--to", addr, "-s", "1KiB", "-n", "500", "-t", "4", "-r", "8", "--json")
	if r := decode(t, out); code != exitOK || r.Depth != 4 || r.Corrupt != 0 || r.VerifiedBytes != 500*1024 {
		t.Errorf("exit %d: %s%s", code, out, errs)
	}
}

// TestBidirectional: -b runs the same messages both ways at once over
// the in-memory fabric, each way verified by its receiver, and the
// table sums them as perftest's does.
func TestBidirectional(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		for _, extra := range [][]string{{"-n", "300"}, {"-D", "200ms"}} {
			t.Run(op+"/"+extra[0], func(t *testing.T) {
				n := newFakeNet()
				addr, _, log := fakeServer(t, n, serverOpts{})
				args := append([]string{op, "--dev", "f", "--to", addr, "-s", "4096", "-q", "3", "-b", "--json"}, extra...)
				code, out, errs := fakeClient(t, n, args...)
				if code != exitOK {
					t.Fatalf("exit %d: %s%s\nserver: %s", code, out, errs, log.String())
				}
				r := decode(t, out)
				v := r.Reverse
				if v == nil || r.Corrupt != 0 || v.Corrupt != 0 || v.Messages < 10 || v.VerifiedBytes == 0 ||
					(extra[0] == "-n" && (v.Messages != 300 || r.Messages != 300)) {
					t.Fatalf("report %s", out)
				}
				if op != "write" && v.VerifiedBytes != int64(v.Messages)*4096 {
					t.Errorf("way back verified %d bytes of %d messages", v.VerifiedBytes, v.Messages)
				}
			})
		}
	}
	n := newFakeNet()
	addr, _, _ := fakeServer(t, n, serverOpts{})
	_, table, _ := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "4096", "-n", "100", "-b")
	if !strings.Contains(table, "Bidirectional") || !strings.Contains(table, "way back  100 messages") {
		t.Errorf("table:\n%s", table)
	}
	if _, err := parseClient("write-lat", []string{"--dev", "e", "--to", "h", "-b"}, &bytes.Buffer{}); err == nil {
		t.Error("write-lat -b accepted")
	}
}
