package bpf

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
)

// TestEndpointMode loads the program in endpoint mode on A, registers an
// AF_XDP socket, and checks that A's RoCEv2 and MAC control reach the
// socket while everything else — host traffic to A, RoCEv2 to another
// address, other EtherTypes — reaches A's kernel, and that A still talks
// IPv4 and IPv6 with its socket taking RoCEv2.
func TestEndpointMode(t *testing.T) {
	xdptest.RequireRoot(t, "AF_XDP and XDP in a network namespace")
	for _, mode := range []Mode{ModeNative, ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) { testEndpointMode(t, mode) })
	}
}

func testEndpointMode(t *testing.T, mode Mode) {
	h := newTwoHosts(t)
	h.loadWith(t, mode, Options{Endpoint: true})
	if !h.prog.Endpoint() {
		t.Fatal("Endpoint() = false after loading in endpoint mode")
	}
	s, u, free := h.openSocket(t)
	if err := h.prog.Register(0, s.FD()); err != nil {
		t.Fatal(err)
	}

	other4 := netip.MustParseAddr("198.18.0.99")
	toSocket := map[string][]byte{
		"IPv4 RoCEv2 to A":        ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, addrA4)),
		"tagged IPv4 RoCEv2 to A": ethFrame(h.macA, h.macB, 7, 0x0800, ipv4UDP(addrB4, addrA4)),
		"IPv6 RoCEv2 to A":        ethFrame(h.macA, h.macB, 0, 0x86dd, ipv6UDP(addrB6, addrA6, 4791)),
		"PFC":                     ethFrame(h.macA, h.macB, 0, 0x8808, []byte{0x01, 0x01}),
		"tagged PFC":              ethFrame(h.macA, h.macB, 3, 0x8808, []byte{0x01, 0x01}),
	}
	toKernel := map[string][]byte{
		"IPv4 RoCEv2 not to A": ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, other4)),
		"IPv4 UDP 9 to A":      ethFrame(h.macA, h.macB, 0, 0x0800, udpPort(ipv4UDP(addrB4, addrA4), 20, 9)),
		"IPv6 UDP 9 to A":      ethFrame(h.macA, h.macB, 0, 0x86dd, ipv6UDP(addrB6, addrA6, 9)),
		"IPv4 fragment to A":   ethFrame(h.macA, h.macB, 0, 0x0800, fragment(ipv4UDP(addrB4, addrA4))),
		"link shim":            ethFrame(h.macA, h.macB, 0, 0x88b5, []byte("shim")),
		"LLDP":                 ethFrame(h.macA, h.macB, 0, 0x88cc, []byte("lldp")),
		"truncated IPv4":       ethFrame(h.macA, h.macB, 0, 0x0800, nil)[:14],
	}
	before := h.counters(t)
	h.sortFrames(t, s, u, free, toSocket, toKernel)
	var after Counters
	eventually(t, "the kernel-bound frames to be counted", func() bool {
		after = h.counters(t)
		return after.Passed()-before.Passed() >= uint64(len(toKernel))
	})
	t.Logf("counters before %+v after %+v", before, after)
	// Not to A, link shim, truncated: the three the switch would take.
	if d := after.PassOther - before.PassOther; d != 3 {
		t.Errorf("PassOther moved by %d, want 3", d)
	}
	// UDP 9 over IPv4 and IPv6 and the fragment, at least.
	if d := after.PassLocal - before.PassLocal; d < 3 {
		t.Errorf("PassLocal moved by %d, want ≥ 3", d)
	}
	if d := after.Redirected - before.Redirected; d != uint64(len(toSocket)) {
		t.Errorf("Redirected moved by %d, want %d", d, len(toSocket))
	}

	// A's host traffic still works while the socket takes RoCEv2.
	h.udpEcho(t, addrA4)
	h.udpEcho(t, addrA6)
}

// openSocket opens an AF_XDP socket on A's queue 0 with its fill ring
// stocked; it is closed when the test ends.
func (h *twoHosts) openSocket(t *testing.T) (*afxdp.Socket, *afxdp.UMEM, *afxdp.FrameStack) {
	t.Helper()
	u, err := afxdp.NewUMEM(afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	var s *afxdp.Socket
	err = h.a.Do(func() (err error) {
		s, err = afxdp.Open(h.veth.A, 0, u, afxdp.Options{RxSize: 256, FillSize: 256, TxSize: 64, CompletionSize: 64})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	free := afxdp.NewFrameStackFull(u)
	addrs := make([]uint64, 256)
	k := free.PopN(addrs)
	if got := s.Fill(addrs[:k]); got != k {
		t.Fatalf("Fill took %d of %d", got, k)
	}
	return s, u, free
}

// udpPort sets the UDP destination port of an IP packet whose UDP header
// starts at off.
func udpPort(pkt []byte, off int, port uint16) []byte {
	binary.BigEndian.PutUint16(pkt[off+2:], port)
	return pkt
}

// fragment makes an IPv4 packet a non-first fragment (offset 8 bytes).
func fragment(pkt []byte) []byte {
	binary.BigEndian.PutUint16(pkt[6:], 1)
	return pkt
}
