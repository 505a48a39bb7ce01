package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rocetor/afxdp/xdptest"
	"rocetor/nic/perf"
)

// The privileged tests run the real binary as a user would, with ip
// netns exec, in throw-away namespaces that xdptest deletes when the test
// ends (also on failure); every process they start is killed by then.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// build builds roceperf once per test binary.
func build(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "roceperf-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "roceperf")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	xdptest.RequireRoot(t, "XDP, AF_XDP and network namespaces")
	for _, tool := range append([]string{"go"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in PATH", tool)
		}
	}
}

// proc is a command running in a namespace.
type proc struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	errb   syncBuffer
	done   chan struct{}
	status int
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs bin args in ns; it is killed, if still running, when the
// test ends. ip netns exec execs bin in place (same PID, so signals
// reach it) and mounts the namespace's /sys.
func start(t *testing.T, ns *xdptest.Netns, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns.Name, bin}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		p.status = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to timeout for p to exit and returns its exit status.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.status
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%v still running after %v; stderr:\n%s", p.cmd.Args, timeout, p.errb.String())
		return -1
	}
}

// runIn runs bin args in ns to completion.
func runIn(t *testing.T, ns *xdptest.Netns, timeout time.Duration, bin string, args ...string) (int, string, string) {
	t.Helper()
	p := start(t, ns, bin, args...)
	code := p.wait(t, timeout)
	return code, p.out.String(), p.errb.String()
}

// serveOnce starts roceperf serve --once in ns and waits until it
// listens.
func serveOnce(t *testing.T, ns *xdptest.Netns, bin, dev string) *proc {
	t.Helper()
	p := start(t, ns, bin, "serve", "--dev", dev, "--once")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.errb.String(), "serving on"); time.Sleep(10 * time.Millisecond) {
		select {
		case <-p.done:
			t.Fatalf("server exited %d: %s", p.status, p.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not listening after 5s: %s", p.errb.String())
		}
	}
	return p
}

// twoHosts is h1 and h2 on one veth pair.
type twoHosts struct {
	h1, h2     *xdptest.Netns
	dev1, dev2 string
}

func newTwoHosts(t *testing.T) *twoHosts {
	t.Helper()
	h := &twoHosts{h1: xdptest.NewNetns(t), h2: xdptest.NewNetns(t)}
	v := xdptest.NewVeth(t, h.h1, h.h2)
	h.dev1, h.dev2 = v.A, v.B
	h.h1.IP(t, "addr", "add", "198.18.7.1/24", "dev", v.A)
	h.h2.IP(t, "addr", "add", "198.18.7.2/24", "dev", v.B)
	h.h1.IP(t, "addr", "add", "2001:db8:7::1/64", "dev", v.A, "nodad")
	h.h2.IP(t, "addr", "add", "2001:db8:7::2/64", "dev", v.B, "nodad")
	return h
}

// TestDirect runs each operation between two namespaces on one veth:
// the server checks WRITE and SEND data, the client READ data, and every
// byte must have arrived intact.
func TestDirect(t *testing.T) {
	requireTools(t)
	bin := build(t)
	h := newTwoHosts(t)
	cases := []struct {
		op, size string
		count    int
		qps      int
		to       string
	}{
		{"write", "1MiB", 20, 1, "198.18.7.2"},
		{"write", "4KiB", 200, 4, "198.18.7.2"},
		{"send", "1MiB", 20, 1, "198.18.7.2"},
		{"send", "4KiB", 200, 4, "[2001:db8:7::2]:18515"},
		{"read", "1MiB", 20, 1, "198.18.7.2"},
		{"read", "4KiB", 200, 4, "2001:db8:7::2"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%sx%d/%dqps/%s", c.op, c.size, c.count, c.qps, c.to), func(t *testing.T) {
			srv := serveOnce(t, h.h2, bin, h.dev2)
			code, out, errs := runIn(t, h.h1, 60*time.Second, bin, c.op, "--dev", h.dev1, "--to", c.to,
				"--size", c.size, "--count", strconv.Itoa(c.count), "--qps", strconv.Itoa(c.qps), "--json")
			if code != exitOK {
				t.Fatalf("client exit %d\nstdout: %s\nstderr: %s\nserver: %s", code, out, errs, srv.errb.String())
			}
			var r perf.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			t.Logf("%s %s × %d on %d QPs: %.2f Gbit/s, FCT p50 %.0f µs p99 %.0f µs, retx %d, timeouts %d",
				c.op, c.size, c.count, c.qps, r.GoodputGbps, r.FCT.P50, r.FCT.P99, r.RetxPackets, r.Timeouts)
			if r.Messages != c.count || r.Corrupt != 0 || r.VerifiedBytes != int64(r.Size)*int64(c.count) ||
				r.PacketsSent == 0 || r.PacketsReceived == 0 {
				t.Errorf("report %s", out)
			}
			if sc := srv.wait(t, 10*time.Second); sc != exitOK {
				t.Errorf("server exit %d: %s", sc, srv.errb.String())
			}
			// The server prints its view of the run as one JSON object.
			var sr perf.ServerReport
			if err := json.Unmarshal(bytes.TrimSpace(srv.out.Bytes()), &sr); err != nil || sr.Corrupt != 0 ||
				sr.ClientMessages != c.count || sr.Op != c.op || sr.Error != "" ||
				(c.op != "read" && sr.VerifiedBytes != r.VerifiedBytes) {
				t.Errorf("server printed %q (%v); log %s", srv.out.String(), err, srv.errb.String())
			}
		})
	}

	t.Run("nothing-listens", func(t *testing.T) {
		start := time.Now()
		code, out, errs := runIn(t, h.h1, 30*time.Second, bin, "write", "--dev", h.dev1, "--to", "198.18.7.2:18599",
			"--size", "4KiB", "--count", "10", "--json")
		if code != exitFailure || !strings.Contains(errs, "connect to 198.18.7.2:18599") || !strings.Contains(errs, "refused") {
			t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and connection refused", code, out, errs)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %v to fail", d)
		}
	})

	t.Run("no-such-host", func(t *testing.T) {
		// An address on the link that nobody has: the TCP connection
		// times out after --timeout.
		code, _, errs := runIn(t, h.h1, 30*time.Second, bin, "write", "--dev", h.dev1, "--to", "198.18.7.99",
			"--size", "4KiB", "--count", "10", "--timeout", "1s")
		if code != exitFailure || !strings.Contains(errs, "connect to 198.18.7.99:18515") {
			t.Fatalf("exit %d, stderr %q", code, errs)
		}
	})

	t.Run("sigint", func(t *testing.T) {
		// A server told to stop detaches and exits at once.
		p := start(t, h.h2, bin, "serve", "--dev", h.dev2)
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(p.errb.String(), "serving on"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("server not listening: %s", p.errb.String())
			}
		}
		p.cmd.Process.Signal(os.Interrupt)
		if code := p.wait(t, 5*time.Second); code != exitOK {
			t.Errorf("server exit %d after SIGINT: %s", code, p.errb.String())
		}
		if out := h.h2.IP(t, "link", "show", "dev", h.dev2); strings.Contains(out, "prog/xdp") {
			t.Errorf("XDP program left on %s:\n%s", h.dev2, out)
		}
	})
}

// directCase is one run of a TestDirect test: count messages of size
// by op on qps QPs from h1 to to.
type directCase struct {
	op, size string
	count    int
	qps      int
	to       string
}

// runDirect runs each case with --transport tr between two namespaces on
// one veth and checks what holds for every transport — the exit status,
// the JSON, every byte verified, no invalid request, a clean server exit —
// and, with ok, the transport's own fields of the report.
func runDirect(t *testing.T, tr string, cases []directCase, ok func(r *perf.Report) bool) {
	requireTools(t)
	bin := build(t)
	h := newTwoHosts(t)
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%sx%d/%dqps", c.op, c.size, c.count, c.qps), func(t *testing.T) {
			srv := serveOnce(t, h.h2, bin, h.dev2)
			code, out, errs := runIn(t, h.h1, 60*time.Second, bin, c.op, "--dev", h.dev1, "--to", c.to,
				"--size", c.size, "--count", strconv.Itoa(c.count), "--qps", strconv.Itoa(c.qps), "--transport", tr, "--json")
			if code != exitOK {
				t.Fatalf("client exit %d\nstdout: %s\nstderr: %s\nserver: %s", code, out, errs, srv.errb.String())
			}
			var r perf.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			t.Logf("%s %s × %d on %d QPs over %s: %.2f Gbit/s, FCT p50 %.0f µs p99 %.0f µs, retx %d, timeouts %d; QP %d+%d B",
				c.op, c.size, c.count, c.qps, tr, r.GoodputGbps, r.FCT.P50, r.FCT.P99, r.RetxPackets, r.Timeouts,
				r.QPContextBytes, r.QPQueueBytes)
			if r.Transport != tr || r.Messages != c.count || r.Corrupt != 0 || r.VerifiedBytes != int64(r.Size)*int64(c.count) ||
				r.Server == nil || r.QPQueueBytes == 0 || !ok(&r) {
				t.Errorf("report %s", out)
			}
			if r.Server != nil && r.Drops["nic_invalid_request"]+r.Server.Drops["nic_invalid_request"] != 0 {
				t.Errorf("invalid requests: %s", out)
			}
			if sc := srv.wait(t, 10*time.Second); sc != exitOK {
				t.Errorf("server exit %d: %s", sc, srv.errb.String())
			}
		})
	}
}

// TestDirectDCP runs WRITE and SEND with --transport dcp between two
// namespaces on one veth: DCP data packets, DCP ACKs and the DCP
// classifier on both real endpoints, every byte checked, and the DCP
// counters and per-QP memory in both reports. (No switch trims here:
// nic/dcp's tests trim, reorder and lose in memory.)
func TestDirectDCP(t *testing.T) {
	runDirect(t, "dcp", []directCase{
		{"write", "1MiB", 20, 1, "198.18.7.2"},
		{"write", "4KiB", 200, 4, "[2001:db8:7::2]:18515"},
		{"send", "64KiB", 50, 2, "198.18.7.2"},
	}, func(r *perf.Report) bool { return r.DCP != nil && r.Server.DCP != nil && r.DCP.TrackingBytes != 0 })
}

// TestDirectIRN runs WRITE, SEND and READ with --transport irn between
// two namespaces on one veth: the OOO layout (a RETH in every WRITE
// packet, a SETH in every SEND packet) and SACK ACKs on both real
// endpoints, every byte checked, and IRN's counters in both reports.
// (Nothing is lost here: nic/irn's tests lose, duplicate and reorder in
// memory.)
func TestDirectIRN(t *testing.T) {
	runDirect(t, "irn", []directCase{
		{"write", "1MiB", 20, 1, "198.18.7.2"},
		{"send", "64KiB", 50, 2, "[2001:db8:7::2]:18515"},
		{"read", "256KiB", 20, 2, "198.18.7.2"},
	}, func(r *perf.Report) bool { return r.IRN != nil && r.Server.IRN != nil && r.IRN.BitmapBytes != 0 })
}

// TestThroughTord runs a WRITE from h1 to h2 through tord (h1 — sw — h2,
// the kernel's forwarding off in sw): every RoCEv2 frame roceperf sent
// must have entered tord's port s1.
func TestThroughTord(t *testing.T) {
	requireTools(t, "ethtool")
	bin := build(t)
	tord := filepath.Join(t.TempDir(), "tord")
	if out, err := exec.Command("go", "build", "-o", tord, "rocetor/cmd/tord").CombinedOutput(); err != nil {
		t.Fatalf("go build tord: %v\n%s", err, out)
	}
	h1, sw, h2 := xdptest.NewNetns(t), xdptest.NewNetns(t), xdptest.NewNetns(t)
	if out, err := exec.Command("ip", "netns", "exec", sw.Name, "sysctl", "-qw", "net.ipv4.ip_forward=0").CombinedOutput(); err != nil {
		t.Fatalf("sysctl: %v %s", err, out)
	}
	// h2 hangs off s2 through a kernel bridge in its own namespace: the
	// frames tord sends and h2's endpoint takes both bypass the kernel's
	// packet taps (AF_XDP transmit, XDP redirect), so the bridge is where
	// rocedump can watch them, like a mirror port.
	tap := xdptest.NewNetns(t)
	tap.IP(t, "link", "add", "br0", "type", "bridge")
	tap.IP(t, "link", "add", "name", "a", "type", "veth", "peer", "name", "s2", "netns", sw.Name)
	tap.IP(t, "link", "add", "name", "b", "type", "veth", "peer", "name", "eth0", "netns", h2.Name)
	for _, l := range []string{"a", "b"} {
		tap.IP(t, "link", "set", "dev", l, "master", "br0")
		tap.IP(t, "link", "set", "dev", l, "up")
	}
	tap.IP(t, "link", "set", "br0", "up")
	for _, h := range []struct {
		ns         *xdptest.Netns
		port, host string
		gw         string
	}{{h1, "s1", "10.0.1.2/24", "10.0.1.1"}, {h2, "s2", "10.0.2.2/24", "10.0.2.1"}} {
		if h.ns == h1 {
			h.ns.IP(t, "link", "add", "eth0", "type", "veth", "peer", "name", h.port, "netns", sw.Name)
		}
		h.ns.IP(t, "addr", "add", h.host, "dev", "eth0")
		sw.IP(t, "addr", "add", h.gw+"/24", "dev", h.port)
		h.ns.IP(t, "link", "set", "eth0", "up")
		sw.IP(t, "link", "set", h.port, "up")
		h.ns.IP(t, "route", "add", "default", "via", h.gw)
		// The connection exchange is TCP from the kernel, whose
		// checksums veth leaves unfilled (CHECKSUM_PARTIAL) and no
		// device fills after tord's AF_XDP socket forwards the frame.
		if out, err := exec.Command("ip", "netns", "exec", h.ns.Name, "ethtool", "-K", "eth0", "tx", "off").CombinedOutput(); err != nil {
			t.Fatalf("ethtool: %v %s", err, out)
		}
	}
	td := start(t, sw, tord, "--ports", "s1,s2", "--metrics-addr", "127.0.0.1:9478", "--admin-addr", "")
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = sw.Do(func() error {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
	defer client.CloseIdleConnections()
	get := func(path string) (string, error) {
		resp, err := client.Get("http://127.0.0.1:9478" + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return string(b), err
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := get("/readyz"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tord not ready: %s", td.errb.String())
		}
	}
	rxS1 := func() float64 {
		body, err := get("/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^rocetor_port_rx_packets_total\{port="s1"\} (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no rocetor_port_rx_packets_total{port=\"s1\"} in /metrics")
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	before := rxS1()
	// rocedump watches what tord sends to h2: every RoCEv2 frame must
	// decode with a good ICRC after tord rewrote MACs and TTL.
	dump := filepath.Join(t.TempDir(), "rocedump")
	if out, err := exec.Command("go", "build", "-o", dump, "rocetor/cmd/rocedump").CombinedOutput(); err != nil {
		t.Fatalf("go build rocedump: %v\n%s", err, out)
	}
	capture := start(t, tap, dump, "-i", "a", "-json")
	srv := serveOnce(t, h2, bin, "eth0")
	code, out, errs := runIn(t, h1, 60*time.Second, bin, "write", "--dev", "eth0", "--to", "10.0.2.2",
		"--size", "64KiB", "--count", "100", "--qps", "2", "--json")
	if code != exitOK {
		t.Fatalf("client exit %d\nstdout: %s\nstderr: %s\nserver: %s\ntord: %s", code, out, errs, srv.errb.String(), td.errb.String())
	}
	var r perf.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Messages != 100 || r.Corrupt != 0 || r.VerifiedBytes != 100*64<<10 {
		t.Errorf("report %s", out)
	}
	// tord's counters are published about once a millisecond and
	// scraped as they stand: wait for them to catch up.
	var rx float64
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		rx = rxS1() - before
		if rx >= float64(r.PacketsSent) || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("through tord: %.2f Gbit/s, FCT p50 %.0f µs; roceperf sent %d packets, tord's s1 received %.0f frames (the TCP exchange too)",
		r.GoodputGbps, r.FCT.P50, r.PacketsSent, rx)
	if float64(r.PacketsSent) > rx {
		t.Errorf("roceperf sent %d packets but tord's s1 received %.0f", r.PacketsSent, rx)
	}
	if sc := srv.wait(t, 10*time.Second); sc != exitOK {
		t.Errorf("server exit %d: %s", sc, srv.errb.String())
	}
	capture.cmd.Process.Signal(os.Interrupt)
	if code := capture.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("rocedump exit %d: %s", code, capture.errb.String())
	}
	roce, bad := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(capture.out.String()), "\n") {
		var f struct {
			Kind   string `json:"kind"`
			ICRCOK *bool  `json:"icrc_ok"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("rocedump line %q: %v", line, err)
		}
		if f.Kind == "roce" {
			roce++
			if f.ICRCOK == nil || !*f.ICRCOK {
				bad++
			}
		}
	}
	t.Logf("rocedump behind s2: %d RoCEv2 frames, %d with a bad ICRC", roce, bad)
	// The capture starts while the exchange runs; it may miss the first
	// frames but must see most of the 6400 data packets.
	if roce < 1000 || bad != 0 {
		t.Errorf("rocedump saw %d RoCEv2 frames, %d with a bad ICRC; want ≥ 1000 and none bad", roce, bad)
	}
}
