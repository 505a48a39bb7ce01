package bpf

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
)

func TestCounterEnum(t *testing.T) {
	// Counters reads each reason by name; a reason added in xdp.c must
	// get a field there too.
	if xdpCounterCOUNTER_MAX != 8 {
		t.Fatalf("xdp.c has %d counters; update Counters and this test", xdpCounterCOUNTER_MAX)
	}
}

func TestAddrKey(t *testing.T) {
	for _, s := range []string{"198.18.0.1", "2001:db8::1", "fe80::1"} {
		a := netip.MustParseAddr(s)
		if got := keyAddr(addrKey(a)); got != a {
			t.Errorf("keyAddr(addrKey(%v)) = %v", a, got)
		}
	}
	// The C side compares the IPv4 destination at w[3] with ::ffff at
	// w[2]; in memory that is 00 00 ff ff c6 12 00 01.
	k := addrKey(netip.MustParseAddr("198.18.0.1"))
	if k.W[0] != 0 || k.W[1] != 0 {
		t.Fatalf("v4-mapped key %x", k.W)
	}
}

func TestParseGetLink(t *testing.T) {
	if _, err := parseGetLink([]byte{1, 2}); err == nil {
		t.Fatal("short netlink answer accepted")
	}
}

func TestLoadMaps(t *testing.T) {
	xdptest.RequireRoot(t, "loading BPF programs")
	p, err := Load(Options{MaxQueues: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if id, err := p.ID(); err != nil || id == 0 {
		t.Fatalf("ID() = %v, %v", id, err)
	}
	if err := p.Register(4, 0); !errors.Is(err, ErrQueue) {
		t.Fatalf("Register(4) with 4 queues = %v, want ErrQueue", err)
	}
	if err := p.Unregister(3); err != nil {
		t.Fatalf("Unregister of an empty queue: %v", err)
	}
	set := func(addrs ...netip.Addr) {
		t.Helper()
		if err := p.SetLocalAddrs(addrs); err != nil {
			t.Fatal(err)
		}
		got := map[netip.Addr]bool{}
		var k xdpAddr16
		var v uint8
		it := p.objs.LocalAddrs.Iterate()
		for it.Next(&k, &v) {
			got[keyAddr(k)] = true
		}
		if len(got) != len(addrs) {
			t.Fatalf("map holds %v, want %v", got, addrs)
		}
		for _, a := range addrs {
			if !got[a] {
				t.Fatalf("map holds %v, want %v", got, addrs)
			}
		}
	}
	set(addrA4, addrA6)
	set(addrA6, addrB4)
	set()
	if err := p.SetLocalAddrs([]netip.Addr{{}}); !errors.Is(err, ErrAddr) {
		t.Fatalf("zero Addr: %v", err)
	}
	c, err := p.Counters()
	if err != nil || c != (Counters{}) {
		t.Fatalf("fresh counters %+v, %v", c, err)
	}
}

// queryIf is queryXDP by name, in the calling thread's namespace.
func queryIf(ifname string) (xdpState, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return xdpState{}, err
	}
	return queryXDP(ifi.Index)
}

func TestAttachDetach(t *testing.T) {
	xdptest.RequireRoot(t, "attaching XDP in a network namespace")
	h := newTwoHosts(t)
	p, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id, _ := p.ID()
	for _, mode := range []Mode{ModeAuto, ModeNative, ModeGeneric} {
		var got Mode
		var st xdpState
		err := h.a.Do(func() (err error) {
			if got, err = p.Attach(h.veth.A, mode); err != nil {
				return err
			}
			st, err = queryIf(h.veth.A)
			return err
		})
		if err != nil {
			t.Fatalf("Attach(%v): %v", mode, err)
		}
		t.Logf("Attach(%s, %v) on veth: %v mode", h.veth.A, mode, got)
		want := mode
		if mode == ModeAuto {
			want = ModeNative // veth has native XDP
		}
		if got != want {
			t.Errorf("Attach(%v) = %v, want %v", mode, got, want)
		}
		progs := st.programs()
		if len(progs) != 1 || progs[0].id != uint32(id) || progs[0].mode != want {
			t.Errorf("netlink shows %+v, want program %d in %v mode", progs, id, want)
		}
		if ifn, m := p.Attached(); ifn != h.veth.A || m != got {
			t.Errorf("Attached() = %s, %v", ifn, m)
		}
		if _, err := p.Attach(h.veth.A, mode); !errors.Is(err, ErrAttached) {
			t.Errorf("second Attach = %v, want ErrAttached", err)
		}
		if err := p.Detach(); err != nil {
			t.Fatal(err)
		}
		h.a.Do(func() (err error) {
			st, err = queryIf(h.veth.A)
			return err
		})
		if len(st.programs()) != 0 {
			t.Fatalf("after Detach netlink shows %+v", st.programs())
		}
	}
	if err := p.Detach(); err != nil {
		t.Fatalf("Detach when detached: %v", err)
	}
}

// TestGenericFallback: loopback has no native XDP, so auto mode falls back
// to generic and forced native mode says why it failed.
func TestGenericFallback(t *testing.T) {
	xdptest.RequireRoot(t, "attaching XDP in a network namespace")
	ns := xdptest.NewNetns(t)
	p, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var native error
	var got Mode
	err = ns.Do(func() (err error) {
		_, native = p.Attach("lo", ModeNative)
		got, err = p.Attach("lo", ModeAuto)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("forced native on lo: %v; auto: %v", native, got)
	if !errors.Is(native, ErrNoNative) || !strings.Contains(native.Error(), "lo") {
		t.Errorf("native Attach on lo = %v, want ErrNoNative naming lo", native)
	}
	if got != ModeGeneric {
		t.Errorf("auto Attach on lo = %v, want generic", got)
	}
}

// TestHostTrafficPasses checks that with the program attached and no
// socket registered, the hosts still talk (ARP, ND and host-addressed
// traffic pass) and the counters say why each frame passed.
func TestHostTrafficPasses(t *testing.T) {
	xdptest.RequireRoot(t, "attaching XDP in a network namespace")
	h := newTwoHosts(t)
	h.load(t, ModeAuto)
	h.udpEcho(t, addrA4)
	h.udpEcho(t, addrA6)
	c := h.counters(t)
	t.Logf("after UDP echo over IPv4 and IPv6: %+v", c)
	if c.PassARP == 0 || c.PassND == 0 || c.PassLocal < 2 {
		t.Fatalf("counters %+v: want ARP, ND and local traffic passed", c)
	}
	if c.Redirected != 0 {
		t.Fatalf("redirected %d frames with no socket registered", c.Redirected)
	}

	// Switch traffic with no socket on the queue falls back to the
	// kernel and is counted as such.
	before := c
	const n = 10
	for range n {
		h.send(t, ethFrame(h.macA, h.macB, 0, 0x88b5, []byte("shim")))
	}
	eventually(t, "NoSocket to count the shim frames", func() bool {
		return h.counters(t).NoSocket >= before.NoSocket+n
	})
}

// TestRedirect registers an AF_XDP socket and checks which frames reach it
// and which the kernel keeps.
func TestRedirect(t *testing.T) {
	xdptest.RequireRoot(t, "AF_XDP and XDP in a network namespace")
	for _, mode := range []Mode{ModeNative, ModeGeneric} {
		t.Run(mode.String(), func(t *testing.T) { testRedirect(t, mode) })
	}
}

func testRedirect(t *testing.T, mode Mode) {
	h := newTwoHosts(t)
	h.load(t, mode)

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
	if err := h.prog.Register(0, s.FD()); err != nil {
		t.Fatal(err)
	}

	toSocket := map[string][]byte{
		"link shim":        ethFrame(h.macA, h.macB, 0, 0x88b5, []byte("shim")),
		"PFC":              ethFrame(h.macA, h.macB, 0, 0x8808, []byte{0x01, 0x01}),
		"tagged shim":      ethFrame(h.macA, h.macB, 100, 0x88b5, []byte("tagged")),
		"IPv4 not local":   ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, netip.MustParseAddr("198.18.0.99"))),
		"tagged IPv4 RoCE": ethFrame(h.macA, h.macB, 7, 0x0800, ipv4UDP(addrB4, netip.MustParseAddr("198.18.1.1"))),
		// Too short for its IPv4 header: the switch counts it as
		// malformed. (Shorter than an Ethernet header cannot be sent:
		// AF_PACKET refuses it with EINVAL.)
		"truncated IPv4": ethFrame(h.macA, h.macB, 0, 0x0800, nil)[:14],
	}
	toKernel := map[string][]byte{
		"LLDP":        ethFrame(h.macA, h.macB, 0, 0x88cc, []byte("lldp")),
		"tagged ARP":  ethFrame(h.macA, h.macB, 100, 0x0806, make([]byte, 28)),
		"IPv4 to A":   ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, addrA4)),
		"tagged LLDP": ethFrame(h.macA, h.macB, 5, 0x88cc, []byte("lldp")),
		// Link-scope multicast and broadcast belong to the kernel.
		"IPv4 224.0.0.5":  ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, netip.MustParseAddr("224.0.0.5"))),
		"IPv4 broadcast":  ethFrame(h.macA, h.macB, 0, 0x0800, ipv4UDP(addrB4, netip.MustParseAddr("255.255.255.255"))),
		"IPv6 MLD report": ethFrame(h.macA, h.macB, 0, 0x86dd, ipv6ICMP(netip.MustParseAddr("fe80::1"), netip.MustParseAddr("ff02::16"), 143)),
	}
	before := h.counters(t)
	h.sortFrames(t, s, u, free, toSocket, toKernel)
	after := h.counters(t)
	t.Logf("counters before %+v after %+v", before, after)
	if d := after.PassLLDP - before.PassLLDP; d != 2 {
		t.Errorf("PassLLDP moved by %d, want 2", d)
	}
	if d := after.PassLink - before.PassLink; d < 3 {
		t.Errorf("PassLink moved by %d, want at least the 3 link-scope frames", d)
	}
	if after.PassARP-before.PassARP < 1 || after.PassLocal-before.PassLocal < 1 {
		t.Errorf("tagged ARP or local IPv4 not passed")
	}
	if after.Redirected-before.Redirected < uint64(len(toSocket)) {
		t.Errorf("Redirected moved by %d, want >= %d", after.Redirected-before.Redirected, len(toSocket))
	}

	// Host traffic still works with the socket taking switch traffic.
	h.udpEcho(t, addrA4)
	h.udpEcho(t, addrA6)

	// Unregistered, the queue's switch traffic goes back to the kernel.
	if err := h.prog.Unregister(0); err != nil {
		t.Fatal(err)
	}
	mid := h.counters(t)
	h.send(t, toSocket["link shim"])
	eventually(t, "NoSocket after Unregister", func() bool { return h.counters(t).NoSocket > mid.NoSocket })
}

// TestStaleProgram: a program someone else attached makes Attach fail with
// an error that names it and says how to remove it.
func TestStaleProgram(t *testing.T) {
	xdptest.RequireRoot(t, "attaching XDP in a network namespace")
	h := newTwoHosts(t)
	h.load(t, ModeAuto) // held by a bpf_link of this process
	id, _ := h.prog.ID()

	other, err := Load(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	attach := func(mode Mode) error {
		return h.a.Do(func() error {
			_, err := other.Attach(h.veth.A, mode)
			return err
		})
	}

	err = attach(ModeAuto)
	var be *BusyError
	if !errors.As(err, &be) || !errors.Is(err, ErrBusy) {
		t.Fatalf("Attach over a linked program = %v, want a BusyError", err)
	}
	t.Logf("bpf_link held: %v", err)
	if be.ProgramID != id || be.ProgramName != ProgramName || be.LinkID == 0 || be.Mode != ModeNative {
		t.Errorf("BusyError %+v, want program %d %q in a link, native", be, id, ProgramName)
	}
	if !strings.Contains(err.Error(), h.veth.A) || !strings.Contains(err.Error(), "bpftool link show id") {
		t.Errorf("message lacks the interface or the hint: %v", err)
	}
	// Generic over native is refused too (EEXIST, not EBUSY).
	if err := attach(ModeGeneric); !errors.Is(err, ErrBusy) {
		t.Errorf("generic Attach over native = %v, want ErrBusy", err)
	}
	if err := h.prog.Detach(); err != nil {
		t.Fatal(err)
	}

	// A program attached through netlink, as a crashed loader or an
	// operator leaves it, survives its process.
	for _, tc := range []struct {
		ipMode string
		mode   Mode
		off    string
	}{
		{"xdp", ModeNative, "xdp"},
		{"xdpgeneric", ModeGeneric, "xdpgeneric"},
	} {
		h.a.IP(t, "link", "set", "dev", h.veth.A, tc.ipMode, "obj", "xdp_bpfel.o", "sec", "xdp")
		err := attach(ModeAuto)
		if !errors.As(err, &be) {
			t.Fatalf("Attach over a netlink %s program = %v, want a BusyError", tc.ipMode, err)
		}
		t.Logf("netlink %s: %v", tc.ipMode, err)
		hint := "ip link set dev " + h.veth.A + " " + tc.off + " off"
		if be.LinkID != 0 || be.Mode != tc.mode || be.ProgramName != ProgramName || !strings.Contains(err.Error(), hint) {
			t.Errorf("BusyError %+v; want no link, %v mode, hint %q", be, tc.mode, hint)
		}
		// Following the hint frees the interface.
		h.a.IP(t, strings.Fields(strings.TrimPrefix(hint, "ip "))...)
		if err := attach(ModeAuto); err != nil {
			t.Fatalf("Attach after %q: %v", hint, err)
		}
		if err := other.Detach(); err != nil {
			t.Fatal(err)
		}
	}
}
