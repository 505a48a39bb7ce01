package host

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"rocetor/afxdp/xdptest"
	"rocetor/nic"
	"rocetor/nic/gbn"
	"rocetor/rocev2"
)

// pair is hosts A and B in throw-away namespaces, joined by a veth.
type pair struct {
	a, b       *xdptest.Netns
	veth       *xdptest.Veth
	macB       rocev2.MAC
	a4, b4     netip.Addr
	a6, b6     netip.Addr
	unassigned netip.Addr // on the link's subnet, owned by nobody
}

func newPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{a: xdptest.NewNetns(t), b: xdptest.NewNetns(t),
		a4: netip.MustParseAddr("198.18.5.1"), b4: netip.MustParseAddr("198.18.5.2"),
		a6: netip.MustParseAddr("2001:db8:5::1"), b6: netip.MustParseAddr("2001:db8:5::2"),
		unassigned: netip.MustParseAddr("198.18.5.77")}
	p.veth = xdptest.NewVeth(t, p.a, p.b)
	p.a.IP(t, "addr", "add", p.a4.String()+"/24", "dev", p.veth.A)
	p.a.IP(t, "addr", "add", p.a6.String()+"/64", "dev", p.veth.A, "nodad")
	p.b.IP(t, "addr", "add", p.b4.String()+"/24", "dev", p.veth.B)
	p.b.IP(t, "addr", "add", p.b6.String()+"/64", "dev", p.veth.B, "nodad")
	copy(p.macB[:], p.b.Interface(t, p.veth.B).HardwareAddr)
	return p
}

// open opens a Host on A's end, closed when the test ends.
func (p *pair) open(t *testing.T) *Host {
	t.Helper()
	var h *Host
	err := p.a.Do(func() (err error) {
		h, err = Open(Config{Dev: p.veth.A})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Error(err)
		}
	})
	return h
}

func TestOpen(t *testing.T) {
	xdptest.RequireRoot(t, "XDP and AF_XDP in a network namespace")
	p := newPair(t)
	h := p.open(t)
	t.Logf("XDP %v, socket %v", h.XDPMode(), h.BindMode())
	if !h.HasAddr(p.a4) || !h.HasAddr(p.a6) || h.HasAddr(p.b4) {
		t.Errorf("addresses %v", h.Addrs())
	}
	if a, err := h.Addr(p.b6); err != nil || a != p.a6 {
		t.Errorf("Addr(%v) = %v, %v", p.b6, a, err)
	}
	out := p.a.IP(t, "link", "show", "dev", p.veth.A)
	if !strings.Contains(out, "prog/xdp") {
		t.Errorf("no XDP program on %s after Open:\n%s", p.veth.A, out)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if out := p.a.IP(t, "link", "show", "dev", p.veth.A); strings.Contains(out, "prog/xdp") {
		t.Errorf("XDP program left on %s after Close:\n%s", p.veth.A, out)
	}

	// What cannot work says why.
	p.a.IP(t, "link", "add", "bare0", "type", "veth", "peer", "name", "bare1")
	for dev, want := range map[string]string{"nosuch0": "nosuch0", "bare0": "has no IP address"} {
		err := p.a.Do(func() error {
			h, err := Open(Config{Dev: dev})
			if err == nil {
				h.Close()
			}
			return err
		})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want an error with %q", dev, err, want)
		}
	}
}

func TestNextHop(t *testing.T) {
	xdptest.RequireRoot(t, "XDP and neighbour tables in a network namespace")
	p := newPair(t)
	h := p.open(t)
	nextHop := func(peer netip.Addr, timeout time.Duration) (mac rocev2.MAC, err error) {
		err = p.a.Do(func() error {
			mac, err = h.NextHop(context.Background(), peer, timeout)
			return err
		})
		return mac, err
	}
	// Nothing is resolved yet: NextHop makes the kernel ask, with the
	// XDP program passing ARP and ND both ways.
	for _, peer := range []netip.Addr{p.b4, p.b6} {
		start := time.Now()
		mac, err := nextHop(peer, 3*time.Second)
		if err != nil || mac != p.macB {
			t.Fatalf("NextHop(%v) = %v, %v; want %v", peer, mac, err, p.macB)
		}
		t.Logf("NextHop(%v) resolved in %v", peer, time.Since(start).Round(time.Millisecond))
	}
	start := time.Now()
	_, err := nextHop(p.unassigned, 500*time.Millisecond)
	if !errors.Is(err, ErrUnresolved) || time.Since(start) > 2*time.Second {
		t.Errorf("NextHop(nobody) = %v after %v, want ErrUnresolved after 500ms", err, time.Since(start))
	}
	t.Logf("nobody: %v", err)
	// A peer routed out of another interface is refused.
	p.a.IP(t, "link", "add", "other0", "type", "veth", "peer", "name", "other1")
	p.a.IP(t, "link", "set", "other0", "up")
	p.a.IP(t, "link", "set", "other1", "up")
	p.a.IP(t, "addr", "add", "198.19.0.1/24", "dev", "other0")
	if _, err := nextHop(netip.MustParseAddr("198.19.0.2"), time.Second); err == nil || !strings.Contains(err.Error(), "leaves through other0") {
		t.Errorf("NextHop via other0 = %v", err)
	}
}

func TestSessions(t *testing.T) {
	xdptest.RequireRoot(t, "XDP and AF_XDP in a network namespace")
	p := newPair(t)
	h := p.open(t)
	cfg := func() SessionConfig {
		tr, err := gbn.New(gbn.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return SessionConfig{Endpoint: nic.Config{IP: p.a4, Transport: tr, MaxQPs: 4}}
	}
	s, err := h.NewSession(cfg())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.NewSession(cfg()); !errors.Is(err, ErrSessionRunning) {
		t.Errorf("second session = %v, want ErrSessionRunning", err)
	}
	if _, err := s.Endpoint().CreateQP(nic.QPOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Start()
	time.Sleep(10 * time.Millisecond)
	s.Stop()
	s.Stop() // idempotent
	bad := cfg()
	bad.Endpoint.IP = p.b4
	if _, err := h.NewSession(bad); err == nil || !strings.Contains(err.Error(), "not an address of") {
		t.Errorf("session on B's address = %v", err)
	}
	s2, err := h.NewSession(cfg())
	if err != nil {
		t.Fatalf("session after Stop: %v", err)
	}
	s2.Start()
	// Close stops the running session.
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}
