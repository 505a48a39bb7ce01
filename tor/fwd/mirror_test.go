package fwd

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"rocetor/rocev2"
)

var nsSeq atomic.Int32

// netnsAdd creates a throw-away network namespace named after the test
// process and removes it when the test ends, failed or not.
func netnsAdd(t *testing.T, what string) string {
	t.Helper()
	name := fmt.Sprintf("rocetor-fwd-%s-%d-%d", what, os.Getpid(), nsSeq.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("remove network namespace %s: %v: %s", name, err, out)
		}
	})
	return name
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// eventually polls cond until it holds or five seconds pass: the mirror
// applies changes within its coalescing window, but CI machines are slow.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lookup returns the route for dst in the current table as "prefix
// port/gateway …", "local", or "none".
func lookup(fib *FIB, dst string) string {
	t := fib.Load()
	if t == nil {
		return "no table"
	}
	r, local, ok := t.Lookup(netip.MustParseAddr(dst))
	switch {
	case !ok:
		return "none"
	case local:
		return "local"
	}
	s := r.Prefix.String()
	for _, nh := range r.NextHops {
		gw := "connected"
		if nh.Gateway.IsValid() {
			gw = nh.Gateway.String()
		}
		s += fmt.Sprintf(" %d/%s", nh.Port, gw)
	}
	return s
}

func linkMAC(t *testing.T, ns, dev string) rocev2.MAC {
	t.Helper()
	out := run(t, "ip", "-n", ns, "-br", "link", "show", dev)
	f := strings.Fields(out)
	if len(f) < 3 {
		t.Fatalf("ip link show %s: %q", dev, out)
	}
	mac, err := rocev2.ParseMAC(f[2])
	if err != nil {
		t.Fatal(err)
	}
	return mac
}

// TestMirror runs the mirror in a throw-away namespace: the initial dump,
// live route additions and deletions, a multipath route in each family,
// routes through interfaces that are not ports, static neighbours, and
// managed neighbour requests that make the kernel resolve a peer in a
// second namespace, through a veth pair.
func TestMirror(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	sw := netnsAdd(t, "sw")
	peer := netnsAdd(t, "peer")
	ip := func(args ...string) { t.Helper(); run(t, append([]string{"ip", "-n", sw}, args...)...) }
	ipPeer := func(args ...string) { t.Helper(); run(t, append([]string{"ip", "-n", peer}, args...)...) }

	// Ports: v0 (a veth to the peer namespace), d0, d1. x0 belongs to
	// the namespace but not to the switch.
	ip("link", "add", "v0", "type", "veth", "peer", "name", "v0p")
	ip("link", "set", "v0p", "netns", peer)
	// Veth pairs with both ends in the namespace stand in for dummy
	// interfaces, which sandboxed kernels often lack.
	for _, d := range []string{"d0", "d1", "x0"} {
		ip("link", "add", d, "type", "veth", "peer", "name", d+"p")
		ip("link", "set", d+"p", "up")
	}
	for _, a := range [][2]string{
		{"v0", "10.77.0.1/24"}, {"d0", "10.78.0.1/24"}, {"d1", "10.79.0.1/24"}, {"x0", "10.80.0.1/24"},
	} {
		ip("addr", "add", a[1], "dev", a[0])
	}
	for _, a := range [][2]string{{"v0", "fd77::1/64"}, {"d0", "fd78::1/64"}, {"d1", "fd79::1/64"}} {
		ip("-6", "addr", "add", a[1], "dev", a[0], "nodad")
	}
	for _, d := range []string{"v0", "d0", "d1", "x0", "lo"} {
		ip("link", "set", d, "up")
	}
	ipPeer("addr", "add", "10.77.0.2/24", "dev", "v0p")
	ipPeer("addr", "add", "10.77.0.3/24", "dev", "v0p")
	ipPeer("-6", "addr", "add", "fd77::2/64", "dev", "v0p", "nodad")
	ipPeer("link", "set", "v0p", "up")
	ipPeer("link", "set", "lo", "up")
	ip("route", "add", "10.40.0.0/16", "via", "10.80.0.9", "dev", "x0") // not through a port
	ip("neigh", "add", "10.78.0.9", "lladdr", "02:00:00:00:78:09", "dev", "d0", "nud", "permanent")
	peerMAC := linkMAC(t, peer, "v0p")

	fib := &FIB{}
	misses := NewMisses(64)
	m, err := NewMirror(MirrorConfig{
		Ports: []string{"v0", "d0", "d1"}, FIB: fib, Misses: misses, Logger: zaptest.NewLogger(t),
		Netns:     "/var/run/netns/" + sw,
		Multipath: Multipath{Groups: []Policy{{Prefix: netip.MustParsePrefix("10.60.0.0/16"), Mode: Spray}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); m.Close() })
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}

	t.Run("dump", func(t *testing.T) {
		for dst, want := range map[string]string{
			"10.77.0.9":   "10.77.0.0/24 0/connected",
			"10.78.0.200": "10.78.0.0/24 1/connected",
			"10.79.0.7":   "10.79.0.0/24 2/connected",
			"fd78::5":     "fd78::/64 1/connected",
			"10.77.0.1":   "local",
			"10.80.0.1":   "local", // every address of the namespace is the switch's own
			"fd77::1":     "local",
			"10.80.0.5":   "none", // x0 is not a port
			"10.40.1.1":   "none",
			"fe80::1":     "none", // link-local routes are not forwarded
		} {
			if got := lookup(fib, dst); got != want {
				t.Errorf("%s: %q, want %q", dst, got, want)
			}
		}
		mac, ok := fib.Load().Neighbour(1, netip.MustParseAddr("10.78.0.9"))
		if !ok || mac != (rocev2.MAC{2, 0, 0, 0, 0x78, 9}) {
			t.Errorf("static neighbour 10.78.0.9: %v %v", mac, ok)
		}
	})

	t.Run("live", func(t *testing.T) {
		ip("route", "add", "10.50.0.0/16", "via", "10.78.0.9", "dev", "d0")
		eventually(t, "route add not mirrored", func() bool { return lookup(fib, "10.50.1.1") == "10.50.0.0/16 1/10.78.0.9" })
		ip("route", "replace", "10.50.0.0/16", "via", "10.79.0.9", "dev", "d1")
		eventually(t, "route replace not mirrored", func() bool { return lookup(fib, "10.50.1.1") == "10.50.0.0/16 2/10.79.0.9" })
		ip("route", "del", "10.50.0.0/16")
		eventually(t, "route del not mirrored", func() bool { return lookup(fib, "10.50.1.1") == "none" })

		ip("route", "add", "10.60.0.0/16", "nexthop", "via", "10.78.0.9", "dev", "d0", "nexthop", "via", "10.79.0.9", "dev", "d1", "weight", "2")
		eventually(t, "multipath route not mirrored", func() bool {
			return lookup(fib, "10.60.3.4") == "10.60.0.0/16 1/10.78.0.9 2/10.79.0.9 2/10.79.0.9"
		})
		if mode, _, _ := fib.Load().Mode(netip.MustParseAddr("10.60.3.4")); mode != Spray {
			t.Errorf("multipath group mode %v, want spray from its policy", mode)
		}
		ip("-6", "route", "add", "fd60::/48", "nexthop", "via", "fd78::9", "dev", "d0", "nexthop", "via", "fd79::9", "dev", "d1")
		eventually(t, "IPv6 multipath route not mirrored", func() bool {
			return lookup(fib, "fd60::1") == "fd60::/48 1/fd78::9 2/fd79::9"
		})
		// A multipath route with one next hop through x0 keeps the other.
		ip("route", "add", "10.61.0.0/16", "nexthop", "via", "10.80.0.9", "dev", "x0", "nexthop", "via", "10.79.0.9", "dev", "d1")
		eventually(t, "partly foreign multipath route not mirrored", func() bool {
			return lookup(fib, "10.61.0.1") == "10.61.0.0/16 2/10.79.0.9"
		})
		ip("route", "add", "blackhole", "10.62.0.0/16")
		eventually(t, "blackhole not mirrored", func() bool { return lookup(fib, "10.62.0.1") == "10.62.0.0/16" })
		// An address added to a port is local at once.
		ip("addr", "add", "10.79.0.100/24", "dev", "d1")
		eventually(t, "new local address not mirrored", func() bool { return lookup(fib, "10.79.0.100") == "local" })
		// Deleting the link's address takes its connected route with it,
		// without a route notification for IPv4.
		ip("addr", "flush", "dev", "d1")
		eventually(t, "routes of a removed address not withdrawn", func() bool {
			return lookup(fib, "10.79.0.7") == "none" && lookup(fib, "10.61.0.1") == "none"
		})
		ip("neigh", "replace", "10.78.0.9", "lladdr", "02:00:00:00:78:0a", "dev", "d0", "nud", "permanent")
		eventually(t, "neighbour change not mirrored", func() bool {
			mac, _ := fib.Load().Neighbour(1, netip.MustParseAddr("10.78.0.9"))
			return mac == rocev2.MAC{2, 0, 0, 0, 0x78, 0x0a}
		})
	})

	t.Run("managed", func(t *testing.T) {
		// The stage reports 10.77.0.2 missing on port 0; the mirror adds
		// a managed entry; the kernel ARPs through the veth; the peer
		// answers; the entry comes back to us as a neighbour.
		a := netip.MustParseAddr("10.77.0.2").As16()
		if !misses.Add(0, &a) {
			t.Fatal("miss ring full")
		}
		eventually(t, "managed neighbour 10.77.0.2 not resolved", func() bool {
			mac, ok := fib.Load().Neighbour(0, netip.MustParseAddr("10.77.0.2"))
			return ok && mac == peerMAC
		})
		if out := run(t, "ip", "-n", sw, "neigh", "show", "10.77.0.2", "dev", "v0"); !strings.Contains(out, "managed") {
			t.Errorf("kernel entry is not managed: %q", out)
		}
		// A route through an unresolved IPv6 gateway: the mirror asks
		// for it when it builds the table, before any packet needs it.
		// On links brought up a moment ago the kernel's first neighbour
		// solicitation is often lost and it solicits again a second
		// later (seen with plain `ip neigh add … managed` too), so this
		// takes one to two seconds here.
		ip("-6", "route", "add", "fd90::/48", "via", "fd77::2", "dev", "v0")
		eventually(t, "IPv6 gateway fd77::2 not resolved ahead of traffic", func() bool {
			mac, ok := fib.Load().Neighbour(0, netip.MustParseAddr("fd77::2"))
			return ok && mac == peerMAC
		})
		if s := m.Stats(); s.Requests < 2 || s.ReqErrors != 0 {
			t.Errorf("stats %+v: want ≥ 2 requests, no errors", s)
		}
	})

	t.Run("resync", func(t *testing.T) {
		// End the subscriptions as a lost notification (ENOBUFS) would:
		// the mirror must subscribe again and dump everything.
		m.sub.close()
		ip("route", "add", "10.52.0.0/16", "via", "10.78.0.9", "dev", "d0")
		eventually(t, "route added after a lost subscription not mirrored", func() bool {
			return m.Stats().Resyncs == 1 && lookup(fib, "10.52.0.1") == "10.52.0.0/16 1/10.78.0.9"
		})
		ip("route", "del", "10.52.0.0/16")
		eventually(t, "new subscription does not work", func() bool { return lookup(fib, "10.52.0.1") == "none" })
	})

	t.Run("fallback", func(t *testing.T) {
		// Without managed entries, a datagram through the kernel's stack
		// makes it resolve the address once.
		m2, err := NewMirror(MirrorConfig{Ports: []string{"v0"}, FIB: &FIB{}, Netns: "/var/run/netns/" + sw, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer m2.Close()
		m2.managed = false
		m2.ifindex = []int{linkIndex(t, sw, "v0")}
		if _, err := m2.resolve(0, netip.MustParseAddr("10.77.0.3")); err != nil {
			t.Fatal(err)
		}
		eventually(t, "fallback did not resolve 10.77.0.3", func() bool {
			mac, ok := fib.Load().Neighbour(0, netip.MustParseAddr("10.77.0.3"))
			return ok && mac == peerMAC
		})
		if s := m2.Stats(); s.Fallbacks != 1 || s.Requests != 0 {
			t.Errorf("stats %+v: want one fallback, no request", s)
		}
	})
	if s := m.Stats(); s.Builds < 5 {
		t.Errorf("stats %+v: want a build per change", s)
	}
}

func linkIndex(t *testing.T, ns, dev string) int {
	t.Helper()
	out := run(t, "ip", "-n", ns, "-o", "link", "show", dev)
	var idx int
	if _, err := fmt.Sscanf(out, "%d:", &idx); err != nil {
		t.Fatalf("ifindex of %s: %q: %v", dev, out, err)
	}
	return idx
}

// TestMirrorConfig checks the errors a caller can act on.
func TestMirrorConfig(t *testing.T) {
	if _, err := NewMirror(MirrorConfig{Ports: []string{"x"}}); err == nil {
		t.Error("mirror without a FIB accepted")
	}
	if _, err := NewMirror(MirrorConfig{FIB: &FIB{}}); err == nil {
		t.Error("mirror without ports accepted")
	}
	if _, err := NewMirror(MirrorConfig{FIB: &FIB{}, Ports: []string{"x"}, Netns: "/nonexistent/ns"}); err == nil {
		t.Error("missing namespace accepted")
	}
	if os.Geteuid() != 0 {
		return
	}
	m, err := NewMirror(MirrorConfig{FIB: &FIB{}, Ports: []string{"rocetor-no-such-if"}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "rocetor-no-such-if") {
		t.Errorf("Start with a missing interface: %v", err)
	}
}
