package bpf

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
)

// Test addresses: 198.18.0.0/15 is the benchmarking range (RFC 2544) and
// 2001:db8::/32 the documentation prefix, both only ever inside the test's
// own namespaces.
var (
	addrA4 = netip.MustParseAddr("198.18.0.1")
	addrB4 = netip.MustParseAddr("198.18.0.2")
	addrA6 = netip.MustParseAddr("2001:db8::1")
	addrB6 = netip.MustParseAddr("2001:db8::2")
)

// twoHosts is host A (the switch port, where the XDP program goes) and host
// B (a server plugged into it), each in its own throw-away namespace, joined
// by a veth pair with IPv4 and IPv6 addresses on both ends.
type twoHosts struct {
	a, b   *xdptest.Netns
	veth   *xdptest.Veth
	macA   net.HardwareAddr
	macB   net.HardwareAddr
	prog   *Program
	mode   Mode
	packet *xdptest.PacketConn // AF_PACKET on B's end
}

func newTwoHosts(t *testing.T) *twoHosts {
	t.Helper()
	h := &twoHosts{a: xdptest.NewNetns(t), b: xdptest.NewNetns(t)}
	h.veth = xdptest.NewVeth(t, h.a, h.b)
	h.a.IP(t, "addr", "add", addrA4.String()+"/24", "dev", h.veth.A)
	h.a.IP(t, "addr", "add", addrA6.String()+"/64", "dev", h.veth.A, "nodad")
	h.b.IP(t, "addr", "add", addrB4.String()+"/24", "dev", h.veth.B)
	h.b.IP(t, "addr", "add", addrB6.String()+"/64", "dev", h.veth.B, "nodad")
	h.macA = h.a.Interface(t, h.veth.A).HardwareAddr
	h.macB = h.b.Interface(t, h.veth.B).HardwareAddr
	h.packet = xdptest.OpenPacket(t, h.b, h.veth.B)
	return h
}

// load loads a program with A's addresses as local and attaches it to A's
// end in mode.
func (h *twoHosts) load(t *testing.T, mode Mode) {
	t.Helper()
	h.loadWith(t, mode, Options{})
}

// loadWith is load with more options; LocalAddrs is always A's.
func (h *twoHosts) loadWith(t *testing.T, mode Mode, o Options) {
	t.Helper()
	o.LocalAddrs = []netip.Addr{addrA4, addrA6}
	p, err := Load(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	h.prog = p
	err = h.a.Do(func() (err error) {
		h.mode, err = p.Attach(h.veth.A, mode)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// udpEcho runs a UDP echo server on A and checks that B reaches it at dst:
// the round trip needs ARP or ND both ways and A's kernel to see the
// datagram, which is what the XDP program must let through.
func (h *twoHosts) udpEcho(t *testing.T, dst netip.Addr) {
	t.Helper()
	var srv net.PacketConn
	err := h.a.Do(func() (err error) {
		srv, err = net.ListenPacket("udp", net.JoinHostPort(dst.String(), "0"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := srv.ReadFrom(buf)
			if err != nil {
				return
			}
			srv.WriteTo(buf[:n], from)
		}
	}()
	var c net.Conn
	err = h.b.Do(func() (err error) {
		c, err = net.Dial("udp", srv.LocalAddr().String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 64)
	for try := 0; try < 5; try++ {
		msg := fmt.Sprintf("echo %v try %d", dst, try)
		c.Write([]byte(msg))
		c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) == msg {
			return
		}
	}
	t.Fatalf("no UDP echo from %v through the XDP program", dst)
}

// ethFrame builds an Ethernet frame from B to A, with an optional 802.1Q
// tag (vid > 0), padded to the 60-byte minimum.
func ethFrame(dst, src net.HardwareAddr, vid uint16, etherType uint16, payload []byte) []byte {
	b := make([]byte, 0, 64+len(payload))
	b = append(b, dst...)
	b = append(b, src...)
	if vid > 0 {
		b = binary.BigEndian.AppendUint16(b, 0x8100)
		b = binary.BigEndian.AppendUint16(b, vid)
	}
	b = binary.BigEndian.AppendUint16(b, etherType)
	b = append(b, payload...)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// ipv4UDP is a minimal IPv4/UDP packet (checksums are not looked at by
// the XDP program).
func ipv4UDP(src, dst netip.Addr) []byte {
	b := make([]byte, 28)
	b[0] = 0x45
	binary.BigEndian.PutUint16(b[2:], 28)
	b[8], b[9] = 64, 17
	s, d := src.As4(), dst.As4()
	copy(b[12:], s[:])
	copy(b[16:], d[:])
	binary.BigEndian.PutUint16(b[20:], 4791) // RoCEv2 port, for show
	binary.BigEndian.PutUint16(b[22:], 4791)
	binary.BigEndian.PutUint16(b[24:], 8)
	return b
}

// ipv6UDP is a minimal IPv6/UDP packet to port dport.
func ipv6UDP(src, dst netip.Addr, dport uint16) []byte {
	b := make([]byte, 48)
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], 8)
	b[6], b[7] = 17, 64
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	binary.BigEndian.PutUint16(b[40:], 4791)
	binary.BigEndian.PutUint16(b[42:], dport)
	binary.BigEndian.PutUint16(b[44:], 8)
	return b
}

// ipv6ICMP returns an IPv6 header and a 4-byte ICMPv6 message of the
// given type, as an MLDv2 report (143) to ff02::16 would start.
func ipv6ICMP(src, dst netip.Addr, typ byte) []byte {
	b := make([]byte, 44)
	b[0] = 0x60
	binary.BigEndian.PutUint16(b[4:], 4)
	b[6], b[7] = 58, 1
	s, d := src.As16(), dst.As16()
	copy(b[8:], s[:])
	copy(b[24:], d[:])
	b[40] = typ
	return b
}

func (h *twoHosts) counters(t *testing.T) Counters {
	t.Helper()
	c, err := h.prog.Counters()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *twoHosts) send(t *testing.T, frames ...[]byte) {
	t.Helper()
	for _, f := range frames {
		if err := h.packet.Send(f); err != nil {
			t.Fatal(err)
		}
	}
}

// eventually polls cond for up to two seconds: frames cross the veth in
// softirq context, after Send has returned.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// sortFrames sends every frame of both sets from host B and checks that
// each frame of toSocket, and none of toKernel, reaches socket s on A
// within a bounded wait; received frames go back to free.
func (h *twoHosts) sortFrames(t *testing.T, s *afxdp.Socket, u *afxdp.UMEM, free *afxdp.FrameStack, toSocket, toKernel map[string][]byte) {
	t.Helper()
	for _, f := range toSocket {
		h.send(t, f)
	}
	for _, f := range toKernel {
		h.send(t, f)
	}
	descs := make([]afxdp.Desc, 64)
	got := map[string]bool{}
	deadline := time.Now().Add(3 * time.Second)
	for len(got) < len(toSocket) && time.Now().Before(deadline) {
		if _, err := s.Poll(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		n := s.Receive(descs)
		for _, d := range descs[:n] {
			b := u.Frame(d.Addr, int(d.Len))
			for name, f := range toSocket {
				if string(b) == string(f) {
					got[name] = true
				}
			}
			for name, f := range toKernel {
				if string(b) == string(f) {
					t.Errorf("%s reached the socket", name)
				}
			}
			free.Push(u.FrameStart(d.Addr))
		}
	}
	for name := range toSocket {
		if !got[name] {
			t.Errorf("%s did not reach the socket", name)
		}
	}
}
