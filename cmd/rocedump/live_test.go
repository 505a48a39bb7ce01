package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// netns is a throw-away network namespace with a veth pair in it, deleted
// (veths and all) when the test ends, whether it passed or not.
type netns struct {
	ip       string // path of the ip command
	name     string
	cap, inj string // capture and injection ends of the veth pair
}

func newNetns(t *testing.T) *netns {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs the ip command (iproute2) to create network namespaces")
	}
	pid := os.Getpid()
	n := &netns{ip: ip, name: fmt.Sprintf("rocedump-test-%d", pid), cap: fmt.Sprintf("rdc%d", pid), inj: fmt.Sprintf("rdi%d", pid)}
	n.run(t, "netns", "add", n.name)
	t.Cleanup(func() {
		if out, err := exec.Command(ip, "netns", "del", n.name).CombinedOutput(); err != nil {
			t.Errorf("delete netns %s: %v: %s", n.name, err, out)
		}
	})
	// No IPv6 autoconfiguration: the kernel's own router solicitations
	// would be frames rocedump counts.
	n.run(t, "netns", "exec", n.name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	n.run(t, "-n", n.name, "link", "add", "name", n.cap, "type", "veth", "peer", "name", n.inj)
	n.run(t, "-n", n.name, "link", "set", n.cap, "up")
	n.run(t, "-n", n.name, "link", "set", n.inj, "up")
	return n
}

func (n *netns) run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// inject sends frames out of the injection end through an AF_PACKET
// socket opened inside the namespace. The socket is made on an OS thread
// moved into the namespace and locked to a goroutine that ends without
// unlocking it, so the runtime discards the thread rather than reuse it
// in the wrong namespace.
func (n *netns) inject(t *testing.T, frames ...[]byte) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		done <- func() error {
			f, err := os.Open("/var/run/netns/" + n.name)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns: %w", err)
			}
			ifi, err := net.InterfaceByName(n.inj)
			if err != nil {
				return err
			}
			fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0) // protocol 0: send only
			if err != nil {
				return err
			}
			defer unix.Close(fd)
			for _, b := range frames {
				to := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
				copy(to.Addr[:], b[:6])
				if err := unix.Sendto(fd, b, 0, to); err != nil {
					return fmt.Errorf("send: %w", err)
				}
			}
			return nil
		}()
	}()
	if err := <-done; err != nil {
		t.Fatalf("inject into %s/%s: %v", n.name, n.inj, err)
	}
}

// capture is rocedump running live inside the namespace: the test binary
// itself (see TestMain), started with ip netns exec.
type capture struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr chan string
	exit   chan error
}

func (n *netns) capture(t *testing.T, args ...string) *capture {
	t.Helper()
	cmd := exec.Command(n.ip, append([]string{"netns", "exec", n.name, os.Args[0], "-i", n.cap}, args...)...)
	cmd.Env = append(os.Environ(), "ROCEDUMP_AS_MAIN=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &capture{cmd: cmd, lines: make(chan string, 100), stderr: make(chan string, 100), exit: make(chan error, 1)}
	t.Cleanup(func() { cmd.Process.Kill() }) // a no-op once it has exited
	pump := func(r io.Reader, ch chan string) {
		s := bufio.NewScanner(r)
		for s.Scan() {
			ch <- s.Text()
		}
		close(ch)
	}
	go pump(stderr, c.stderr)
	go func() {
		pump(stdout, c.lines)
		c.exit <- cmd.Wait()
	}()
	// Frames sent before the socket is bound would be missed.
	select {
	case l, ok := <-c.stderr:
		if !ok || !strings.HasPrefix(l, "listening on "+n.cap) {
			t.Fatalf("rocedump did not start listening: %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("rocedump did not start listening within 10s")
	}
	return c
}

func (c *capture) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			t.Fatal("rocedump ended before printing the expected line")
		}
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no line from rocedump within 10s")
	}
	return ""
}

func (c *capture) wait(t *testing.T) (code int, stderr string) {
	t.Helper()
	select {
	case <-c.exit:
		var rest []string
		for l := range c.stderr {
			rest = append(rest, l)
		}
		return c.cmd.ProcessState.ExitCode(), strings.Join(rest, "\n")
	case <-time.After(10 * time.Second):
		t.Fatal("rocedump did not exit within 10s")
	}
	return -1, ""
}

// TestLive captures frames injected on a veth pair in a throw-away
// namespace: a RoCEv2 WRITE, a PFC frame and a shim-wrapped READ response
// with -json until SIGINT, then two frames with -c 2, after which
// rocedump must stop by itself.
func TestLive(t *testing.T) {
	n := newNetns(t)

	c := n.capture(t, "-json")
	pfc := make([]byte, rocev2.MinFrameLen)
	rocev2.BuildPFC(pfc, macA, 0x08, [8]uint16{3: 500})
	resp := withShim(build(t, &rocev2.Spec{SrcIP: v4B, DstIP: v4A, Opcode: rocev2.RCReadResponseOnly, DestQP: 0x99,
		PSN: 7, Syndrome: rocev2.ACKSyndrome(31), Payload: []byte("data")}), psn.LinkOf(1, false), rocev2.ShimOriginal, psn.LinkOf(0, false))
	n.inject(t, build(t, writeFirst()), pfc, resp)
	var got []map[string]any
	for len(got) < 3 {
		var o map[string]any
		l := c.next(t)
		if err := json.Unmarshal([]byte(l), &o); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, o)
	}
	want := []map[string]any{
		{"frame": 1.0, "kind": "roce", "opcode_name": "RC_RDMA_WRITE_FIRST", "psn": 100.0, "src": "10.0.0.1", "icrc_ok": true},
		{"frame": 2.0, "kind": "mac-control", "pfc_enable": 8.0, "pfc_times": []any{0.0, 0.0, 0.0, 500.0, 0.0, 0.0, 0.0, 0.0}},
		{"frame": 3.0, "kind": "roce", "opcode_name": "RC_RDMA_READ_RESPONSE_ONLY", "dqpn": 153.0, "shim_type": "original", "icrc_ok": true},
	}
	for i := range want {
		for k, v := range want[i] {
			if !equalJSON(got[i][k], v) {
				t.Errorf("frame %d: %s = %v, want %v", i+1, k, got[i][k], v)
			}
		}
	}
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code, stderr := c.wait(t); code != 0 || !strings.Contains(stderr, "3 frames captured") {
		t.Errorf("after SIGINT: exit %d, stderr %q; want 0 and a count of 3", code, stderr)
	}

	c = n.capture(t, "-c", "2")
	n.inject(t, build(t, writeFirst()), arp())
	if l := c.next(t); !strings.HasSuffix(l, "10.0.0.1:49170 > 10.0.0.2 RC_RDMA_WRITE_FIRST qp=0x000012 psn=100 len=13 icrc=ok va=0x1000 rkey=0x77 dlen=8192") {
		t.Errorf("line 1: %q", l)
	}
	if l := c.next(t); !strings.Contains(l, "other ethertype=0x0806(arp)") {
		t.Errorf("line 2: %q", l)
	}
	if code, stderr := c.wait(t); code != 0 || !strings.Contains(stderr, "2 frames captured") {
		t.Errorf("with -c 2: exit %d, stderr %q", code, stderr)
	}
}
