package main

import (
	"bytes"
	"rocetor/nic/perf"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPerftestFlags: perftest's spellings mean what roceperf's do, the
// server may come last, and the defaults are perftest's.
func TestPerftestFlags(t *testing.T) {
	o, err := parseClient("write-bw", []string{"--dev", "eth0", "-s", "4096", "-n", "10", "-q", "2", "-m", "2048",
		"-t", "8", "-r", "16", "-F", "-p", "7000", "10.0.0.2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.Size != 4096 || o.Count != 10 || o.QPs != 2 || o.MTU != 2048 || o.Depth != 8 || o.RxDepth != 16 ||
		o.To != "10.0.0.2:7000" || o.Lat {
		t.Errorf("parsed %+v", o)
	}
	// Flags after the server, as perftest users type them.
	o, err = parseClient("send-lat", []string{"--dev", "eth0", "10.0.0.2", "-n", "50", "--json"}, &bytes.Buffer{})
	if err != nil || !o.Lat || o.Size != defaultLatSize || o.Count != 50 || o.Depth != 1 || !o.JSON {
		t.Errorf("send-lat: %+v, %v", o, err)
	}
	o, err = parseClient("read", []string{"--dev", "e", "--to", "h"}, &bytes.Buffer{})
	if err != nil || o.Size != defaultBWSize || o.Count != defaultBWCount {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseClient("write", []string{"--dev", "e", "--to", "h", "-D", "3", "-a"}, &bytes.Buffer{})
	if err != nil || o.Duration != 3*time.Second || o.Count != 0 || !o.All || !o.DepthAuto {
		t.Errorf("-D 3 -a: %+v, %v", o, err)
	}
	o, err = parseClient("write", []string{"--dev", "e", "--to", "h", "--duration", "250ms"}, &bytes.Buffer{})
	if err != nil || o.Duration != 250*time.Millisecond {
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
}

// TestLatency runs each latency test through the exchange and the fake
// fabric: every message is answered, checked, and one sample taken per
// iteration.
func TestLatency(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		for _, size := range []string{"2", "4KiB", "1MiB"} {
			t.Run(op+"/"+size, func(t *testing.T) {
				n := perf.NewFakeNet()
				addr, _, log := fakeServer(t, n, perf.ServerOptions{})
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
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	code, out, errs := fakeClient(t, n, "read-lat", "--dev", "f", "--to", addr, "-n", "1000", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	var want []int64
	for i := range 1000 {
		want = append(want, int64(1000+i%100))
	}
	if r := decode(t, out); r.Lat == nil || *r.Lat != perf.LatStatsOf(want) || r.Lat.Min != 1 || r.Lat.Max != 1.099 ||
		r.Lat.Typical != 1.05 || r.Lat.P99 != 1.098 || r.Lat.P999 != 1.099 {
		t.Errorf("lat_us %+v, want %+v", r.Lat, perf.LatStatsOf(want))
	}
	// The table has perftest's columns and the same figures.
	addr, _, _ = fakeServer(t, n, perf.ServerOptions{})
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
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	_, table, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "4096", "-n", "200", "--cpu-util")
	for _, k := range []string{"RDMA_Write BW Test", " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]",
		" 4096       200 ", "verified  819200 bytes, 0 corrupt", "CPU"} {
		if !strings.Contains(table, k) {
			t.Errorf("table lacks %q:\n%s%s", k, table, errs)
		}
	}
	addr, _, _ = fakeServer(t, n, perf.ServerOptions{})
	_, table, _ = fakeClient(t, n, "send", "--dev", "f", "--to", addr, "-s", "4096", "-n", "200", "--report-gbits")
	if !strings.Contains(table, "BW peak[Gb/sec]    BW average[Gb/sec]") {
		t.Errorf("--report-gbits:\n%s", table)
	}
	addr, _, _ = fakeServer(t, n, perf.ServerOptions{})
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
			n := perf.NewFakeNet()
			addr, _, log := fakeServer(t, n, perf.ServerOptions{})
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
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
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
	addr, _, _ = fakeServer(t, n, perf.ServerOptions{})
	code, table, _ := fakeClient(t, n, "send-lat", "--dev", "f", "--to", addr, "-a", "-n", "3")
	if code != exitOK || strings.Count(table, "t_typical") != 1 || !strings.Contains(table, " "+strconv.Itoa(8<<20)+" ") ||
		!strings.Contains(table, "23 sizes: verified") {
		t.Errorf("send-lat -a:\n%s", table)
	}
}

// TestRxDepth: -r sets the receives the server posts per QP for SEND,
// separately from the client's send depth (-t), and such a run
// verifies (nic/perf's TestRxDepthPlan checks the server's plan).
func TestRxDepth(t *testing.T) {
	// Through the exchange: a SEND run with -t 4 -r 8 verifies.
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
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
				n := perf.NewFakeNet()
				addr, _, log := fakeServer(t, n, perf.ServerOptions{})
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
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	_, table, _ := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "-s", "4096", "-n", "100", "-b")
	if !strings.Contains(table, "Bidirectional") || !strings.Contains(table, "way back  100 messages") {
		t.Errorf("table:\n%s", table)
	}
	if _, err := parseClient("write-lat", []string{"--dev", "e", "--to", "h", "-b"}, &bytes.Buffer{}); err == nil {
		t.Error("write-lat -b accepted")
	}
}
