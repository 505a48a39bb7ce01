package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"rocetor/afxdp/xdptest"
	"rocetor/dataplane/metrics"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// requireNetns skips t without root or the tools the namespace tests
// run.
func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and attach XDP")
	}
	for _, tool := range []string{"ip", "ping", "ethtool", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in PATH", tool)
		}
	}
}

// TestTord runs the real tord binary as a user would: built with go
// build, started with ip netns exec in the switch namespace of
//
//	h1 eth0 ── s1 [sw: tord] s2 ── eth0 h2
//	10.0.1.2/24  10.0.1.1/24   10.0.2.1/24  10.0.2.2/24
//	fd01::2/64   fd01::1/64    fd02::1/64   fd02::2/64
//
// with the kernel's forwarding off in sw, so that whatever crosses from h1
// to h2 was forwarded by tord. Each subtest checks what an operator would:
// health endpoints, ping, TCP, RoCEv2 frames bit for bit, the counters,
// a live route change, and a clean stop on SIGINT. Each subtest warms up
// the neighbours it needs, so any one of them can run alone with -run
// (except stop, which ends tord for the rest).
func TestTord(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	tp := newTopo(t)

	// Without tord nothing passes: the switch namespace does not forward.
	if out, err := tp.ping(tp.h1, "-c1", "-W0.5", "10.0.2.2"); exitCode(err) != 1 {
		t.Fatalf("before tord started, ping h1→h2 exited %v, want 1 (no reply):\n%s", err, out)
	}

	td := startTord(t, bin, tp.sw, "--ports", "s1,s2", "--metrics-addr", "127.0.0.1:9478", "--admin-addr", "127.0.0.1:9479",
		"--rate", "1G") // a shaped port also makes a PFC pause last 33 ms (pfc)
	started := time.Now()
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("tord ready after %v", time.Since(started).Round(time.Millisecond))

	t.Run("health", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, err := td.get(path)
			if err != nil || code != http.StatusOK {
				t.Errorf("GET %s = %d %q, %v; want 200", path, code, body, err)
			}
		}
	})

	t.Run("ping", func(t *testing.T) {
		for _, dst := range []string{"10.0.2.2", "fd02::2"} {
			tp.warmUp(t, dst)
			out, err := tp.ping(tp.h1, "-c3", "-i0.2", "-W2", dst)
			if err != nil {
				t.Errorf("ping %s after warm-up: %v\n%s", dst, err, out)
				continue
			}
			// The reply left h2 with TTL (hop limit) 64 and crossed
			// tord once.
			ttls := regexp.MustCompile(`ttl=(\d+)`).FindAllStringSubmatch(out, -1)
			if len(ttls) != 3 {
				t.Errorf("ping %s: %d replies, want 3:\n%s", dst, len(ttls), out)
			}
			for _, m := range ttls {
				if m[1] != "63" {
					t.Errorf("ping %s: reply with ttl=%s, want 63 (64 decremented once by tord):\n%s", dst, m[1], out)
					break
				}
			}
		}
	})

	t.Run("tcp", func(t *testing.T) {
		for _, c := range []struct{ network, dst string }{{"tcp4", "10.0.2.2"}, {"tcp6", "fd02::2"}} {
			t.Run(c.network, func(t *testing.T) {
				tp.warmUp(t, c.dst)
				tp.tcpTransfer(t, c.network, c.dst, 4<<20)
			})
		}
	})

	roceSent := 0 // RoCEv2 frames the roce subtest sent through tord
	t.Run("roce", func(t *testing.T) {
		// Every frame must arrive, in order. Nothing on the way may
		// drop one: each of h1's sends returns after the softirq that
		// runs s1's XDP program, so the veth ring (256) holds a few;
		// the AF_XDP rx ring (2048) holds the whole burst even if the
		// worker sleeps through it; 1000 × 590 bytes fit the 1 MiB
		// egress queue and the 2048-entry tx ring; each tx syscall
		// moves at most 256 frames into h2's backlog (1000); h2's
		// AF_PACKET buffer (8 MiB) holds them all. Under three CPU hogs
		// on two cores no frame was lost.
		const n = 1000
		tp.warmUp(t, "10.0.2.2")
		rx := xdptest.OpenPacket(t, tp.h2, "eth0")
		tx := xdptest.OpenPacket(t, tp.h1, "eth0")
		const qp = 0x1234
		sent := make([][]byte, n)
		for i := range sent {
			sent[i] = tp.roceFrame(t, qp, psn.New(uint32(i)), "10.0.2.2", payloadOf(i))
		}
		for i, f := range sent {
			if err := tx.Send(f); err != nil {
				t.Fatalf("send frame %d: %v", i, err)
			}
			roceSent++
		}
		buf := make([]byte, 9000)
		got := 0
		deadline := time.Now().Add(10 * time.Second)
		for got < n {
			k, err := rx.Recv(buf, time.Until(deadline), matchQP(qp))
			if err != nil {
				t.Fatalf("h2 received %d of %d frames: %v", got, n, err)
			}
			f := buf[:k]
			var m rocev2.Meta
			rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
			if m.Reason != rocev2.ReasonNone {
				t.Fatalf("frame %d arrived malformed: %v (ICRC checked)", got, m.Reason)
			}
			if m.PSN != psn.New(uint32(got)) {
				t.Fatalf("frame %d arrived with PSN %d: lost or reordered", got, m.PSN)
			}
			want := forwarded(sent[got], tp.s2MAC, tp.h2MAC)
			if err := sameForwarded(f, want); err != nil {
				t.Fatalf("frame %d: %v", got, err)
			}
			got++
		}
	})

	t.Run("metrics", func(t *testing.T) {
		// Ten frames with a broken IPv4 header checksum, to a routed
		// destination: tord must count each as malformed and drop it.
		tx := xdptest.OpenPacket(t, tp.h1, "eth0")
		const bad = 10
		for i := range bad {
			f := tp.roceFrame(t, 0x4321, psn.New(uint32(i)), "10.0.2.2", payloadOf(i))
			h := rocev2.IPv4(f[rocev2.EthernetLen:])
			binary.BigEndian.PutUint16(h[10:12], ^h.ComputeChecksum())
			if err := tx.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		badCk := `rocetor_drops_total{reason="malformed_bad_ip_checksum"}`
		atLeast := map[string]float64{
			`rocetor_port_rx_packets_total{port="s1"}`: float64(roceSent + bad),
			`rocetor_port_tx_packets_total{port="s2"}`: float64(roceSent),
			`rocetor_stage_packets_total{stage="fwd"}`: float64(roceSent + bad),
			badCk: bad,
		}
		var ms map[string]float64
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			ms, err = td.metrics()
			if err == nil && reached(ms, atLeast) || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatalf("scrape /metrics: %v", err)
		}
		for name, min := range atLeast {
			v, ok := ms[name]
			switch {
			case !ok:
				t.Errorf("%s missing from /metrics", name)
			case v < min:
				t.Errorf("%s = %v, want ≥ %v", name, v, min)
			}
		}
		if ms[badCk] != bad {
			t.Errorf("%s = %v, want exactly %d", badCk, ms[badCk], bad)
		}
		t.Logf("%s", pick(ms, "rocetor_drops_total", "rocetor_port_rx_packets_total", "rocetor_port_tx_packets_total", "rocetor_stage_packets_total"))
	})

	t.Run("route", func(t *testing.T) {
		tp.warmUp(t, "10.0.2.2") // resolves the gateway too
		p := tp.newProber(t, "10.0.3.5")
		if p.forwarded(t) {
			t.Fatal("frames to 10.0.3.5 reached h2 before the route to 10.0.3.0/24 existed")
		}
		tp.sw.IP(t, "route", "add", "10.0.3.0/24", "via", "10.0.2.2")
		added := time.Now()
		if !p.forwardedWithin(t, 5*time.Second, true) {
			t.Fatal("frames to 10.0.3.5 did not reach h2 within 5s of ip route add 10.0.3.0/24 via 10.0.2.2")
		}
		t.Logf("route added: first frame through after %v", time.Since(added).Round(time.Millisecond))
		tp.sw.IP(t, "route", "del", "10.0.3.0/24")
		if !p.forwardedWithin(t, 5*time.Second, false) {
			t.Fatal("frames to 10.0.3.5 still reach h2 5s after ip route del 10.0.3.0/24")
		}
	})

	t.Run("local", func(t *testing.T) {
		// An address the switch gets while tord runs belongs to the
		// kernel at once: the XDP program must pass its traffic up
		// instead of redirecting it to tord, which would drop it as
		// local.
		for _, a := range []struct{ addr, pfx string }{{"10.0.1.9", "/24"}, {"fd01::9", "/64"}} {
			tp.sw.IP(t, "addr", "add", a.addr+a.pfx, "dev", "s1")
			tp.warmUp(t, a.addr)
		}
	})

	t.Run("pfc", func(t *testing.T) {
		// h2 sends real 802.1Qbb PFC frames pausing priority 3 (the data
		// queue): tord must count each on s2 and hold s2's data queue
		// paused while they keep coming, then resume when they stop.
		tx := xdptest.OpenPacket(t, tp.h2, "eth0")
		frame := make([]byte, rocev2.MinFrameLen)
		if _, err := rocev2.BuildPFC(frame, tp.h2MAC, 1<<3, [8]uint16{3: 0xffff}); err != nil {
			t.Fatal(err)
		}
		pfcRx, paused := `rocetor_port_pfc_rx_frames_total{port="s2"}`, `rocetor_queue_paused{port="s2",queue="data"}`
		before, err := td.metrics()
		if err != nil {
			t.Fatal(err)
		}
		// 0xffff quanta at the port's 1 Gb/s are 33.5 ms: a frame every
		// millisecond keeps the queue paused even on a busy machine.
		const sent = 30
		sawPaused := false
		for i := 0; i < sent; i++ {
			if err := tx.Send(frame); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
			if i > 10 && i%5 == 0 {
				if ms, err := td.metrics(); err == nil && ms[paused] == 1 {
					sawPaused = true
				}
			}
		}
		if !sawPaused {
			t.Errorf("%s never 1 while PFC frames kept coming", paused)
		}
		var ms map[string]float64
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			ms, err = td.metrics()
			if err == nil && ms[pfcRx]-before[pfcRx] >= sent && ms[paused] == 0 || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := ms[pfcRx] - before[pfcRx]; got != sent {
			t.Errorf("%s rose by %v, want %d", pfcRx, got, sent)
		}
		if ms[paused] != 0 {
			t.Errorf("%s = %v after the PFC frames stopped, want 0", paused, ms[paused])
		}
	})

	t.Run("stop", func(t *testing.T) {
		if err := td.cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		select {
		case <-td.done:
		case <-time.After(10 * time.Second):
			t.Fatal("tord still running 10s after SIGINT")
		}
		t.Logf("tord stopped %v after SIGINT", time.Since(stopped).Round(time.Millisecond))
		if td.err != nil {
			t.Errorf("tord exited with %v after SIGINT, want status 0", td.err)
		}
		xdp := regexp.MustCompile(`(^|\s)(xdp|xdpgeneric|xdpdrv|xdpoffload)(\s|$)|prog/xdp`)
		for _, port := range []string{"s1", "s2"} {
			if out := tp.sw.IP(t, "-d", "link", "show", port); xdp.MatchString(out) {
				t.Errorf("XDP program still attached to %s after tord stopped:\n%s", port, out)
			}
		}
		if out, err := tp.ping(tp.h1, "-c1", "-W0.5", "10.0.2.2"); exitCode(err) != 1 {
			t.Errorf("after tord stopped, ping h1→h2 exited %v, want 1 (no reply):\n%s", err, out)
		}
	})
}

// buildTord builds the binary under test from this package.
func buildTord(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tord")
	start := time.Now()
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built tord in %v", time.Since(start).Round(time.Millisecond))
	return bin
}

// topo is the three namespaces and the MACs the frames need.
type topo struct {
	h1, sw, h2                 *xdptest.Netns
	h1MAC, s1MAC, s2MAC, h2MAC rocev2.MAC
}

// newTopo builds h1 — sw — h2. xdptest deletes the namespaces, and with
// them the veths, when the test ends, also on failure.
func newTopo(t *testing.T) *topo {
	t.Helper()
	return newTopoQueues(t, 1)
}

// newTopoQueues is newTopo with veths of q rx and tx queues on each side,
// for tord's workers to own one each.
func newTopoQueues(t *testing.T, q int) *topo {
	t.Helper()
	tp := &topo{h1: xdptest.NewNetns(t), sw: xdptest.NewNetns(t), h2: xdptest.NewNetns(t)}
	// No duplicate address detection on the interfaces to come: while
	// a port's link-local address is tentative (1–2 s after link-up) the
	// kernel sends no neighbour solicitation for a managed entry, which
	// has no packet to take a source address from, so tord could not
	// resolve IPv6 neighbours until DAD ends. Ports that have been up a
	// while, as in production, are in the state this gives at once. The
	// switch namespace does not forward: only tord does.
	sysctls := map[*xdptest.Netns][]string{
		tp.h1: {"net.ipv6.conf.default.accept_dad=0"},
		tp.h2: {"net.ipv6.conf.default.accept_dad=0"},
		tp.sw: {"net.ipv6.conf.default.accept_dad=0", "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"},
	}
	for ns, kvs := range sysctls {
		if out, err := nsExec(ns, "sysctl", append([]string{"-qw"}, kvs...)...); err != nil {
			t.Fatalf("sysctl %s in %s: %v\n%s", kvs, ns.Name, err, out)
		}
	}
	hosts := []struct {
		ns         *xdptest.Netns
		port       string
		v4, v6     string // host addresses
		gw4, gw6   string // the switch's addresses on that port
		pfx4, pfx6 string
	}{
		{tp.h1, "s1", "10.0.1.2", "fd01::2", "10.0.1.1", "fd01::1", "/24", "/64"},
		{tp.h2, "s2", "10.0.2.2", "fd02::2", "10.0.2.1", "fd02::1", "/24", "/64"},
	}
	for _, h := range hosts {
		qs := []string{"numtxqueues", strconv.Itoa(q), "numrxqueues", strconv.Itoa(q)}
		h.ns.IP(t, slices.Concat([]string{"link", "add", "eth0"}, qs, []string{"type", "veth", "peer", "name", h.port}, qs, []string{"netns", tp.sw.Name})...)
		h.ns.IP(t, "addr", "add", h.v4+h.pfx4, "dev", "eth0")
		h.ns.IP(t, "addr", "add", h.v6+h.pfx6, "dev", "eth0")
		tp.sw.IP(t, "addr", "add", h.gw4+h.pfx4, "dev", h.port)
		tp.sw.IP(t, "addr", "add", h.gw6+h.pfx6, "dev", h.port)
		h.ns.IP(t, "link", "set", "eth0", "up")
		tp.sw.IP(t, "link", "set", h.port, "up")
		h.ns.IP(t, "route", "add", "default", "via", h.gw4)
		h.ns.IP(t, "-6", "route", "add", "default", "via", h.gw6)
		// The host's TCP/UDP checksums would otherwise stay unfilled
		// (CHECKSUM_PARTIAL): tord forwards the frame from its AF_XDP
		// socket and no device on the way computes them.
		if out, err := nsExec(h.ns, "ethtool", "-K", "eth0", "tx", "off"); err != nil {
			t.Fatalf("ethtool -K eth0 tx off in %s: %v\n%s", h.ns.Name, err, out)
		}
	}
	for _, m := range []struct {
		mac  *rocev2.MAC
		ns   *xdptest.Netns
		name string
	}{{&tp.h1MAC, tp.h1, "eth0"}, {&tp.s1MAC, tp.sw, "s1"}, {&tp.s2MAC, tp.sw, "s2"}, {&tp.h2MAC, tp.h2, "eth0"}} {
		copy(m.mac[:], m.ns.Interface(t, m.name).HardwareAddr)
	}
	return tp
}

// nsExec runs a command inside ns.
func nsExec(ns *xdptest.Netns, name string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.Name, name}, args...)...).CombinedOutput()
	return string(out), err
}

// ping runs ping(8) in ns with numeric output.
func (tp *topo) ping(ns *xdptest.Netns, args ...string) (string, error) {
	return nsExec(ns, "ping", append([]string{"-n"}, args...)...)
}

// exitCode is the exit status of a finished command, 0 for success and
// -1 when it did not run or died of a signal.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}

// warmUp pings dst from h1 until a reply comes, so that tord's neighbours
// for h1 and dst (and h2 as a gateway) are resolved: the first packets to
// an unresolved neighbour are dropped as no_neighbour while the kernel
// resolves it.
func (tp *topo) warmUp(t *testing.T, dst string) {
	t.Helper()
	start := time.Now()
	for tries, deadline := 1, start.Add(10*time.Second); ; tries++ {
		out, err := tp.ping(tp.h1, "-c1", "-W0.3", dst)
		if err == nil {
			if tries > 1 {
				t.Logf("warm-up: first reply from %s after %d pings, %v", dst, tries, time.Since(start).Round(time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ping reply from %s within 10s:\n%s", dst, out)
		}
		time.Sleep(20 * time.Millisecond) // poll interval; ping itself waits up to 0.3s
	}
}

// tcpTransfer sends size random bytes over one TCP connection from h1 to
// dst in h2 and checks that exactly they arrive.
func (tp *topo) tcpTransfer(t *testing.T, network, dst string, size int) {
	t.Helper()
	var ln net.Listener
	if err := tp.h2.Do(func() (err error) {
		ln, err = net.Listen(network, net.JoinHostPort(dst, "0"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		n   int64
		sum []byte
		err error
	}
	res := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			res <- result{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		h := sha256.New()
		n, err := io.Copy(h, c)
		res <- result{n, h.Sum(nil), err}
	}()

	data := make([]byte, size)
	rand.NewChaCha8([32]byte{'t', 'o', 'r', 'd'}).Read(data)
	want := sha256.Sum256(data)
	var c net.Conn
	if err := tp.h1.Do(func() (err error) {
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).Dial(network, ln.Addr().String())
		return err
	}); err != nil {
		t.Fatalf("dial %v from h1: %v", ln.Addr(), err)
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(20 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := <-res // bounded by the receiver's deadline
	if r.err != nil {
		t.Fatalf("h2 received %d of %d bytes: %v", r.n, size, r.err)
	}
	if r.n != int64(size) || !bytes.Equal(r.sum, want[:]) {
		t.Fatalf("h2 received %d bytes with sha256 %x, want %d bytes with %x", r.n, r.sum, size, want)
	}
	d := time.Since(start)
	t.Logf("%d MiB intact in %v (%.0f Mbit/s)", size>>20, d.Round(time.Millisecond), float64(size)*8/d.Seconds()/1e6)
}

// roceFrame builds an RC RDMA WRITE Only from h1 to dst through s1.
func (tp *topo) roceFrame(t *testing.T, qp uint32, seq psn.PSN, dst string, payload []byte) []byte {
	t.Helper()
	s := rocev2.Spec{
		Src: tp.h1MAC, Dst: tp.s1MAC,
		SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr(dst),
		TTL: 64, Opcode: rocev2.RCWriteOnly, DestQP: qp, PSN: seq, AckReq: true,
		VA: 0x7f0000000000 + uint64(seq)*uint64(len(payload)), RKey: 0xbeef, DMALen: uint32(len(payload)),
		Payload: payload,
	}
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &s)
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// payloadOf is frame i's payload: 512 bytes no other frame carries.
func payloadOf(i int) []byte {
	p := make([]byte, 512)
	r := rand.New(rand.NewPCG(uint64(i), 0x726f6365))
	for j := range p {
		p[j] = byte(r.Uint32())
	}
	return p
}

// matchQP accepts well-formed-enough RoCEv2 frames to one destination QP.
func matchQP(qp uint32) func([]byte) bool {
	return func(f []byte) bool {
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(f, &m)
		return m.Kind == rocev2.KindRoCE && m.Flow.QP == qp
	}
}

// forwarded is what a router makes of IPv4 frame f: new MACs, the TTL
// one less and the header checksum to match; nothing else changes.
func forwarded(f []byte, src, dst rocev2.MAC) []byte {
	g := bytes.Clone(f)
	e := rocev2.Ethernet(g)
	e.SetSrc(src)
	e.SetDst(dst)
	h := rocev2.IPv4(g[rocev2.EthernetLen:])
	h[8]--
	h.SetChecksum()
	return g
}

// sameForwarded compares a received frame with the expected one, naming
// the first thing that differs.
func sameForwarded(got, want []byte) error {
	ge, we := rocev2.Ethernet(got), rocev2.Ethernet(want)
	gh, wh := rocev2.IPv4(got[rocev2.EthernetLen:]), rocev2.IPv4(want[rocev2.EthernetLen:])
	switch {
	case len(got) != len(want):
		return fmt.Errorf("length %d, want %d", len(got), len(want))
	case ge.Src() != we.Src() || ge.Dst() != we.Dst():
		return fmt.Errorf("MACs %v → %v, want %v → %v (s2 → h2)", ge.Src(), ge.Dst(), we.Src(), we.Dst())
	case gh.TTL() != wh.TTL():
		return fmt.Errorf("TTL %d, want %d", gh.TTL(), wh.TTL())
	case !gh.ChecksumValid():
		return fmt.Errorf("IPv4 header checksum %#04x is wrong", gh.Checksum())
	case !bytes.Equal(got, want):
		for i := range got {
			if got[i] != want[i] {
				return fmt.Errorf("byte %d is %#02x, want %#02x (payload or headers changed)", i, got[i], want[i])
			}
		}
	}
	return nil
}

// prober tells whether frames to one destination cross tord: it sends a
// probe there, then a marker to h2 itself, and reads at h2 until that
// marker. tord's one worker keeps the order of a port's frames, so a
// probe that was forwarded arrives before its marker, and no wait is
// needed to conclude that one was not.
type prober struct {
	tp     *topo
	dst    string
	rx, tx *xdptest.PacketConn
	seq    uint32
	buf    []byte
}

const probeQP, markerQP = 0x0bad, 0x0bee

func (tp *topo) newProber(t *testing.T, dst string) *prober {
	return &prober{tp: tp, dst: dst, rx: xdptest.OpenPacket(t, tp.h2, "eth0"),
		tx: xdptest.OpenPacket(t, tp.h1, "eth0"), buf: make([]byte, 9000)}
}

// forwarded sends one probe and its marker and reports whether the probe
// reached h2, with tord's rewriting.
func (p *prober) forwarded(t *testing.T) bool {
	t.Helper()
	p.seq++
	seq := psn.New(p.seq)
	probe := p.tp.roceFrame(t, probeQP, seq, p.dst, payloadOf(int(p.seq)))
	marker := p.tp.roceFrame(t, markerQP, seq, "10.0.2.2", payloadOf(int(p.seq)))
	for _, f := range [][]byte{probe, marker} {
		if err := p.tx.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	seen := false
	for {
		n, err := p.rx.Recv(p.buf, 2*time.Second, func(f []byte) bool {
			var m rocev2.Meta
			rocev2.Classifier{}.Classify(f, &m)
			return m.Kind == rocev2.KindRoCE && m.PSN == seq && (m.Flow.QP == probeQP || m.Flow.QP == markerQP)
		})
		if err != nil {
			t.Fatalf("marker %d did not reach h2: %v", p.seq, err)
		}
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(p.buf[:n], &m)
		if m.Flow.QP == markerQP {
			return seen
		}
		if err := sameForwarded(p.buf[:n], forwarded(probe, p.tp.s2MAC, p.tp.h2MAC)); err != nil {
			t.Fatalf("probe to %s: %v", p.dst, err)
		}
		seen = true
	}
}

// forwardedWithin probes until forwarded reports want, or gives up after
// timeout.
func (p *prober) forwardedWithin(t *testing.T, timeout time.Duration, want bool) bool {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if p.forwarded(t) == want {
			return true
		}
	}
	return false
}

// tordProc is the running binary.
type tordProc struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when tord has exited
	err     error         // Wait's result, set before done closes
	logPath string
	client  *http.Client
	base    string
}

// startTord starts tord in ns and stops it, with SIGKILL if it still
// runs, when the test ends; that cleanup runs before the namespaces go.
func startTord(t *testing.T, bin string, ns *xdptest.Netns, args ...string) *tordProc {
	t.Helper()
	td := &tordProc{done: make(chan struct{}), logPath: filepath.Join(t.TempDir(), "tord.log")}
	logf, err := os.Create(td.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	// ip netns exec execs tord in place (same PID, so signals reach it)
	// and mounts the namespace's own /sys, which preflight reads.
	td.cmd = exec.Command("ip", append([]string{"netns", "exec", ns.Name, bin}, args...)...)
	td.cmd.Stdout, td.cmd.Stderr = logf, logf
	if err := td.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		td.err = td.cmd.Wait()
		close(td.done)
	}()
	t.Cleanup(func() {
		select {
		case <-td.done:
		default:
			td.cmd.Process.Kill()
			<-td.done
		}
		if t.Failed() {
			t.Logf("tord's log:\n%s", td.log())
		}
	})

	// The metrics listener is on loopback in the switch namespace: dial
	// from there.
	addr := "127.0.0.1:9478"
	for i, a := range args {
		if a == "--metrics-addr" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	td.base = "http://" + addr
	td.client = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = ns.Do(func() error {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		},
	}}
	t.Cleanup(td.client.CloseIdleConnections)
	return td
}

func (td *tordProc) log() string {
	b, _ := os.ReadFile(td.logPath)
	return string(b)
}

func (td *tordProc) get(path string) (int, string, error) {
	resp, err := td.client.Get(td.base + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// waitReady polls /readyz until it answers 200, tord exits, or timeout.
func (td *tordProc) waitReady(timeout time.Duration) error {
	var code int
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case <-td.done:
			return fmt.Errorf("tord exited before it was ready: %v", td.err)
		default:
		}
		if code, _, err = td.get("/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
	}
	return fmt.Errorf("/readyz not 200 within %v: last %d, %v", timeout, code, err)
}

// metrics scrapes /metrics and flattens it to values keyed by name and
// sorted labels, e.g. rocetor_drops_total{reason="no_route"}.
func (td *tordProc) metrics() (map[string]float64, error) {
	resp, err := td.client.Get(td.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return metrics.Parse(resp.Body)
}

func reached(ms, atLeast map[string]float64) bool {
	for k, v := range atLeast {
		if ms[k] < v {
			return false
		}
	}
	return true
}

// pick formats the nonzero series of the named metrics, for the log.
func pick(ms map[string]float64, names ...string) string {
	var lines []string
	for k, v := range ms {
		for _, n := range names {
			if strings.HasPrefix(k, n+"{") && v != 0 {
				lines = append(lines, fmt.Sprintf("%s %v", k, v))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestTordTrim runs tord with DCP trimming on s2, the port toward h2,
// shaped to 50 Mb/s, and sends a burst of DCP data frames (DSCP 26: tag
// 10) from h1 far faster than s2 drains them:
//
//	h1 eth0 ── s1 [sw: tord, trim on s2 at 50 Mb/s] s2 ── eth0 h2
//
// h2 must receive every PSN exactly once, either whole (1106 bytes, tag
// 10) or as a 66-byte header-only packet (tag 11) with a valid ICRC, both
// kinds must occur, and tord's metrics must count exactly the trims h2
// saw, with no drop on s2's control queue.
func TestTordTrim(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	tp := newTopo(t)
	cfg := filepath.Join(t.TempDir(), "tord.yaml")
	if err := os.WriteFile(cfg, []byte(`
ports: [s1, s2]
metrics_addr: 127.0.0.1:9478
admin_addr: ""
egress: {rate: 50M}
trim:
  threshold: 16KiB
  ports: [s2]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	td := startTord(t, bin, tp.sw, "--config", cfg)
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	tp.warmUp(t, "10.0.2.2")

	const n, qp = 400, 0x7777
	rx := xdptest.OpenPacket(t, tp.h2, "eth0")
	tx := xdptest.OpenPacket(t, tp.h1, "eth0")
	b := make([]byte, 2048)
	for i := 0; i < n; i++ {
		s := rocev2.Spec{Src: tp.h1MAC, Dst: tp.s1MAC,
			SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.2"),
			DCP: true, DSCP: 26, Opcode: rocev2.RCWriteMiddle, DestQP: qp, PSN: psn.New(uint32(i)),
			MSN: 1, VA: 0x10000 + uint64(i)*1024, RKey: 0xbeef, DMALen: n * 1024, Payload: payloadOf(i)[:512]}
		s.Payload = append(s.Payload, payloadOf(i + n)[:512]...)
		k, err := rocev2.Build(b, &s)
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Send(b[:k]); err != nil {
			t.Fatalf("send frame %d: %v", i, err)
		}
	}
	dcp := rocev2.Classifier{DCP: true, VerifyICRC: true}
	seen := make([]bool, n)
	var full, ho int
	buf := make([]byte, 9000)
	for deadline := time.Now().Add(10 * time.Second); full+ho < n; {
		k, err := rx.Recv(buf, time.Until(deadline), func(f []byte) bool {
			var m rocev2.Meta
			dcp.Classify(f, &m)
			return m.Kind == rocev2.KindRoCE && m.Flow.QP == qp
		})
		if err != nil {
			t.Fatalf("h2 received %d whole and %d header-only of %d: %v", full, ho, n, err)
		}
		var m rocev2.Meta
		dcp.Classify(buf[:k], &m)
		switch {
		case m.Reason != rocev2.ReasonNone:
			t.Fatalf("frame of PSN %d arrived malformed: %v (ICRC checked)", m.PSN, m.Reason)
		case int(m.PSN) >= n || seen[m.PSN]:
			t.Fatalf("PSN %d arrived twice or was never sent", m.PSN)
		case m.Tag == rocev2.DCPHeaderOnly && k == 66:
			ho++
		case m.Tag == rocev2.DCPData && k == 1106:
			full++
		default:
			t.Fatalf("PSN %d arrived as %d bytes with DCP tag %v", m.PSN, k, m.Tag)
		}
		seen[m.PSN] = true
	}
	t.Logf("h2 received %d whole and %d header-only packets of %d", full, ho, n)
	if full == 0 || ho == 0 {
		t.Fatalf("%d whole, %d header-only: want both (trimming above a 16 KiB queue at 50 Mb/s)", full, ho)
	}
	want := map[string]float64{
		`rocetor_trim_trimmed_packets_total{port="s2"}`:                   float64(ho),
		`rocetor_trim_ho_packets_total{port="s2"}`:                        float64(ho),
		`rocetor_trim_trimmed_bytes_total{port="s2"}`:                     float64(ho * (1106 - 66)),
		`rocetor_queue_dequeued_packets_total{port="s2",queue="control"}`: float64(ho),
		`rocetor_queue_drops_total{port="s2",queue="control"}`:            0,
		`rocetor_trim_dropped_total{class="ack",port="s2"}`:               0,
	}
	var ms map[string]float64
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ms, err = td.metrics()
		if err == nil && reached(ms, want) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("scrape /metrics: %v", err)
	}
	for name, v := range want {
		if got, ok := ms[name]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	if _, ok := ms[`rocetor_trim_trimmed_packets_total{port="s1"}`]; ok {
		t.Error("s1 does not trim, yet has trim series")
	}
	t.Logf("%s", pick(ms, "rocetor_trim_trimmed_packets_total", "rocetor_trim_dropped_total", "rocetor_queue_dequeued_packets_total", "rocetor_drops_total"))
}
