package xdptest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root, saying what for.
func RequireRoot(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: " + what)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip(8): " + what)
	}
}

var seq atomic.Uint32

// uniq returns a short name unique to this process and call, at most 15
// bytes with a 2-byte prefix (IFNAMSIZ is 16 with the NUL).
func uniq(prefix string) string {
	return fmt.Sprintf("%s%dx%d", prefix, os.Getpid(), seq.Add(1))
}

// Netns is a named network namespace (/run/netns/Name).
type Netns struct {
	Name string
}

// NewNetns creates a network namespace with its loopback up and deletes it
// when the test ends.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	n := &Netns{Name: uniq("rocetor-")}
	run(t, "ip", "netns", "add", n.Name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Errorf("delete netns %s: %v: %s", n.Name, err, out)
		}
	})
	n.IP(t, "link", "set", "lo", "up")
	return n
}

// IP runs `ip -n <ns> args...` and fails the test on error.
func (n *Netns) IP(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, "ip", append([]string{"-n", n.Name}, args...)...)
}

// Do runs f on an OS thread that has entered the namespace. Sockets f
// creates belong to the namespace and may be used from any thread
// afterwards; so do interface names f resolves. The thread is never
// returned to the Go scheduler: it exits with the goroutine, so no other
// goroutine ever runs in the namespace by accident.
func (n *Netns) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: see above.
		if unix.Gettid() == unix.Getpid() {
			// The main thread never exits (the runtime parks it), so it
			// would stay in the namespace, and /proc/<pid>/net, which
			// follows it, with it. Hold it and use another thread.
			err := n.Do(f)
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		fd, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", n.Name, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", n.Name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// Veth is a veth pair whose ends sit in two namespaces (or one), both up.
type Veth struct {
	A, B     string // interface names
	NsA, NsB *Netns
}

// NewVeth creates a veth pair with end A in a and end B in b, brings both
// up, and deletes the pair when the test ends (deleting either end, or its
// namespace, deletes both).
func NewVeth(t testing.TB, a, b *Netns) *Veth {
	t.Helper()
	v := &Veth{A: uniq("va"), B: uniq("vb"), NsA: a, NsB: b}
	a.IP(t, "link", "add", v.A, "type", "veth", "peer", "name", v.B, "netns", b.Name)
	t.Cleanup(func() {
		// Gone already if the namespace went first; that is fine.
		exec.Command("ip", "-n", a.Name, "link", "del", v.A).Run()
	})
	a.IP(t, "link", "set", v.A, "up")
	b.IP(t, "link", "set", v.B, "up")
	return v
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}
