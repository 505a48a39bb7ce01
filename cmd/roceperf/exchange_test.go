package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"rocetor/nic"
	"rocetor/nic/perf"
)

// fakeServer serves runs on a loopback listener with a fake device and
// returns its address and a channel with serve's exit code.
func fakeServer(t *testing.T, n *perf.FakeNet, o perf.ServerOptions) (string, <-chan int, *syncWriter) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	if o.MaxMR == 0 {
		o.MaxMR = 64 << 20
	}
	log := &syncWriter{w: &bytes.Buffer{}}
	sv := perf.NewServer(o, n.Device(), log, log)
	ctx, cancel := context.WithCancel(context.Background())
	code, finished := make(chan int, 1), make(chan struct{})
	go func() {
		defer close(finished)
		code <- exitCode(log, sv.Serve(ctx, ln))
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return ln.Addr().String(), code, log
}

// fakeClient runs a client command line against the fake network and
// returns the exit code, stdout and stderr.
func fakeClient(t *testing.T, n *perf.FakeNet, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runContext(t.Context(), args, &out, &errb, n.Open)
	return code, out.String(), errb.String()
}

func decode(t *testing.T, out string) perf.Report {
	t.Helper()
	var r perf.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	return r
}

// TestExchange runs every operation through the exchange, the post loop
// and verification, over loopback TCP and the fake fabric.
func TestExchange(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		for _, c := range []struct{ size, count, qps string }{{"1MiB", "20", "1"}, {"4KiB", "200", "4"}, {"100", "1000", "7"}} {
			t.Run(fmt.Sprintf("%s/%sx%s/%sqps", op, c.size, c.count, c.qps), func(t *testing.T) {
				n := perf.NewFakeNet()
				addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
				code, out, errs := fakeClient(t, n, op, "--dev", "fake0", "--to", addr, "--size", c.size,
					"--count", c.count, "--qps", c.qps, "--json")
				if code != exitOK {
					t.Fatalf("exit %d: %s%s", code, out, errs)
				}
				r := decode(t, out)
				if r.Messages != r.Count || r.Corrupt != 0 || r.VerifiedBytes != int64(r.Size)*int64(r.Count) ||
					r.Bytes != r.VerifiedBytes || r.Op != op || r.Transport != "gbn" || r.Server == nil {
					t.Errorf("report %s", out)
				}
				if r.FCT.Max < r.FCT.P50 || r.FCT.P50 <= 0 {
					t.Errorf("FCT %+v", r.FCT)
				}
			})
		}
	}
}

// TestExchangeDCP runs WRITE and SEND with --transport dcp through the
// exchange (the fake fabric has no transport: TestDirectDCP runs the
// real one), and shows a WRITE run that reuses the server's slots limit
// its depth to the slots per QP.
func TestExchangeDCP(t *testing.T) {
	for _, op := range []string{"write", "send"} {
		n := perf.NewFakeNet()
		addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
		code, out, errs := fakeClient(t, n, op, "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "100",
			"--qps", "2", "--transport", "dcp", "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s%s", op, code, out, errs)
		}
		if r := decode(t, out); r.Transport != "dcp" || r.Messages != 100 || r.Corrupt != 0 {
			t.Errorf("report %s", out)
		}
	}
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{MaxMR: 8 * 4096})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "100",
		"--qps", "2", "--transport", "dcp", "--json")
	if r := decode(t, out); code != exitOK || r.Depth != 4 || r.VerifiedBytes != 8*4096 {
		t.Errorf("exit %d, report %s%s: want depth 4 (8 slots over 2 QPs)", code, out, errs)
	}
}

// TestExchangeIRN runs WRITE, SEND and READ with --transport irn through
// the exchange (the fake fabric has no transport: nic/irn's tests run the
// real one in memory).
func TestExchangeIRN(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		n := perf.NewFakeNet()
		addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
		code, out, errs := fakeClient(t, n, op, "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "100",
			"--qps", "2", "--transport", "irn", "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s%s", op, code, out, errs)
		}
		if r := decode(t, out); r.Transport != "irn" || r.Messages != 100 || r.Corrupt != 0 {
			t.Errorf("report %s", out)
		}
	}
}

// TestJSONNames pins the names testbed automation parses.
func TestJSONNames(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "1KiB", "--count", "10", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"transport", "op", "size", "count", "qps", "messages", "bytes", "duration_s",
		"goodput_gbps", "fct_us", "retx_packets", "timeouts", "naks_received", "naks_sent", "packets_sent",
		"packets_received", "verified_bytes", "corrupt"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, out)
		}
	}
	f, _ := m["fct_us"].(map[string]any)
	for _, k := range []string{"p50", "p99", "p999", "mean", "max"} {
		if _, ok := f[k]; !ok {
			t.Errorf("fct_us lacks %q: %s", k, out)
		}
	}
	// The table names the same figures.
	addr, _, _ = fakeServer(t, n, perf.ServerOptions{})
	_, table, _ := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "1KiB", "--count", "10")
	for _, k := range []string{"goodput", "FCT", "p99.9", "retransmitted", "verified"} {
		if !strings.Contains(table, k) {
			t.Errorf("table lacks %q:\n%s", k, table)
		}
	}
}

// TestSmallServerRegion: a WRITE run larger than the server's region is
// verified on its last slots, which one QP each wrote.
func TestSmallServerRegion(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{MaxMR: 10 * 4096})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "100",
		"--qps", "3", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	r := decode(t, out)
	// 10 slots fit; 9, a multiple of 3 QPs, are used.
	if r.Messages != 100 || r.VerifiedBytes != 9*4096 || r.Corrupt != 0 {
		t.Errorf("report %s", out)
	}
}

// TestCorruption: a changed byte anywhere fails the run on both sides,
// whichever side checks it.
func TestCorruption(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		t.Run(op, func(t *testing.T) {
			n := perf.NewFakeNet()
			n.Tamper = func(_ nic.Op, id uint64, b []byte) nic.Status {
				if id == 7 {
					b[len(b)/2] ^= 0x40
				}
				return nic.StatusOK
			}
			addr, code, log := fakeServer(t, n, perf.ServerOptions{Once: true})
			exit, out, errs := fakeClient(t, n, op, "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "50",
				"--qps", "2", "--json")
			if exit != exitFailure || !strings.Contains(errs, "data corruption") {
				t.Fatalf("exit %d, stderr %q; want 1 and data corruption", exit, errs)
			}
			if r := decode(t, out); r.Corrupt != 1 || !strings.Contains(r.Error, "message 7") {
				t.Errorf("report %s", out)
			}
			sc := <-code
			if op != "read" && (sc != exitFailure || !strings.Contains(log.String(), `"corrupt":1`)) {
				t.Errorf("server exit %d, log %q", sc, log)
			}
		})
	}
}

// TestRetryExceeded: a work request that fails ends the run with exit 1
// and the status in the message.
func TestRetryExceeded(t *testing.T) {
	n := perf.NewFakeNet()
	n.Tamper = func(_ nic.Op, id uint64, _ []byte) nic.Status {
		if id == 5 {
			return nic.StatusRetryExceeded
		}
		return nic.StatusOK
	}
	addr, code, _ := fakeServer(t, n, perf.ServerOptions{Once: true})
	exit, _, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "1KiB", "--count", "20")
	if exit != exitFailure || !strings.Contains(errs, "retry_exceeded") {
		t.Fatalf("exit %d, stderr %q", exit, errs)
	}
	if sc := <-code; sc != exitFailure {
		t.Errorf("server exit %d, want 1 (the client failed)", sc)
	}
}

// TestSilentEndpoint: a peer whose endpoint never completes anything
// fails the run after --timeout, not never.
func TestSilentEndpoint(t *testing.T) {
	n := perf.NewFakeNet()
	n.Silent = true
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	start := time.Now()
	exit, _, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "1KiB", "--count", "20",
		"--timeout", "300ms")
	if exit != exitFailure || !strings.Contains(errs, "no completion for 300ms") {
		t.Fatalf("exit %d, stderr %q", exit, errs)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestServerRefuses: what the server cannot serve comes back as a clear
// error on both sides.
func TestServerRefuses(t *testing.T) {
	n := perf.NewFakeNet()
	addr, code, log := fakeServer(t, n, perf.ServerOptions{Once: true, MaxMR: 1 << 20})
	exit, _, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "1MiB", "--count", "4", "--qps", "2")
	if exit != exitFailure || !strings.Contains(errs, "server refused the run: bad size: 2 QPs × 1048576 B exceed the server's --max-mr") {
		t.Fatalf("exit %d, stderr %q", exit, errs)
	}
	if sc := <-code; sc != exitFailure || !strings.Contains(log.String(), "bad size") {
		t.Errorf("server exit %d, log %q", sc, log)
	}
}

// TestNothingListens: a server that is not there fails fast.
func TestNothingListens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	exit, out, errs := fakeClient(t, perf.NewFakeNet(), "read", "--dev", "f", "--to", addr, "--size", "1", "--count", "1", "--json")
	if exit != exitFailure || !strings.Contains(errs, "connect to "+addr) || !strings.Contains(errs, "refused") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", exit, out, errs)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v", d)
	}
}

// TestSilentServer: a server that accepts but never answers fails the
// client after --timeout.
func TestSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			time.Sleep(3 * time.Second)
			c.Close()
		}
	}()
	start := time.Now()
	exit, _, errs := fakeClient(t, perf.NewFakeNet(), "write", "--dev", "f", "--to", ln.Addr().String(), "--size", "1",
		"--count", "1", "--timeout", "200ms")
	if exit != exitFailure || !strings.Contains(errs, "nothing in 200ms") {
		t.Fatalf("exit %d, stderr %q", exit, errs)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestInterrupt: a cancelled client stops at once with exit 1.
func TestInterrupt(t *testing.T) {
	n := perf.NewFakeNet()
	n.Silent = true
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	open := func(string) (perf.Device, func(), error) { return n.Device(), func() {}, nil }
	start := time.Now()
	code := runContext(ctx, []string{"write", "--dev", "f", "--to", addr, "--size", "1", "--count", "5"}, &out, &errb, open)
	if code != exitFailure || !strings.Contains(errb.String(), "interrupted") || time.Since(start) > 2*time.Second {
		t.Errorf("exit %d after %v, stderr %q", code, time.Since(start), errb.String())
	}
}

// TestBDP: --bdp sizes both ends' SR state for one BDP — IRN's bitmaps
// (a power of two at least that long) and FaSR's pool — and the reports
// say so; an impossible BDP is a usage error.
func TestBDP(t *testing.T) {
	for _, c := range []struct {
		transport         string
		bdp, shared, perQ int
	}{
		{"fasr", 500, 784, 8},
		{"irn", 512, 0, 4*512/8 + 16},
		{"fasr", 128, 232, 8},
	} {
		n := perf.NewFakeNet()
		addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
		code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "10",
			"--qps", "2", "--transport", c.transport, "--bdp", fmt.Sprint(min(c.bdp, 500)), "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s%s", c.transport, code, out, errs)
		}
		r := decode(t, out)
		for _, e := range []*perf.Counters{&r.Counters, r.Server} {
			if e == nil || e.SRBDPPackets != c.bdp || e.SRSharedBytes != c.shared || e.SRStateBytesPerQP != c.perQ {
				t.Errorf("%s --bdp %d: %s", c.transport, c.bdp, out)
			}
		}
	}
	for _, bdp := range []string{"0", "-1", "65537"} {
		if _, err := parseClient("write", []string{"--dev", "f", "--to", "x", "--size", "1", "--count", "1", "--bdp", bdp}, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("--bdp %s: %v", bdp, err)
		}
	}
}

// syncWriter lets the server's goroutine log while a test reads.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
