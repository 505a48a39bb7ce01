package afxdp_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"time"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
	"rocetor/bpf"
)

// port is one switch port: end A of a veth pair in the switch's namespace,
// with the XDP program attached, and end B in a host's namespace with an
// AF_PACKET socket playing the host.
type port struct {
	sw, host   *xdptest.Netns
	veth       *xdptest.Veth
	macA, macB net.HardwareAddr
	prog       *bpf.Program
	xdpMode    bpf.Mode
	pkt        *xdptest.PacketConn
}

func newPort(t *testing.T, sw, host *xdptest.Netns) *port {
	t.Helper()
	p := &port{sw: sw, host: host, veth: xdptest.NewVeth(t, sw, host)}
	p.macA = sw.Interface(t, p.veth.A).HardwareAddr
	p.macB = host.Interface(t, p.veth.B).HardwareAddr
	prog, err := bpf.Load(bpf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	p.prog = prog
	err = sw.Do(func() (err error) {
		p.xdpMode, err = prog.Attach(p.veth.A, bpf.ModeAuto)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p.pkt = xdptest.OpenPacket(t, host, p.veth.B)
	return p
}

// open opens a socket on queue 0 of the port's switch end and closes it
// when the test ends. The caller fills it, then registers it: a frame
// redirected to a socket with an empty fill ring is dropped.
func (p *port) open(t *testing.T, u *afxdp.UMEM, opts afxdp.Options) *afxdp.Socket {
	t.Helper()
	s, err := p.tryOpen(u, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// register sends the port's queue 0 to s.
func (p *port) register(t *testing.T, s *afxdp.Socket) {
	t.Helper()
	if err := p.prog.Register(0, s.FD()); err != nil {
		t.Fatal(err)
	}
}

func (p *port) tryOpen(u *afxdp.UMEM, opts afxdp.Options) (*afxdp.Socket, error) {
	var s *afxdp.Socket
	err := p.sw.Do(func() (err error) {
		s, err = afxdp.Open(p.veth.A, 0, u, opts)
		return err
	})
	return s, err
}

func newUMEM(t *testing.T, opts afxdp.UMEMOptions) *afxdp.UMEM {
	t.Helper()
	u, err := afxdp.NewUMEM(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := u.Close(); err != nil {
			t.Error(err)
		}
	})
	return u
}

// shimFrame is a link-shim EtherType frame (which the XDP program sends to
// the socket) carrying a recognisable payload.
func shimFrame(dst, src net.HardwareAddr, tag string, seq int) []byte {
	b := make([]byte, 0, 64)
	b = append(b, dst...)
	b = append(b, src...)
	b = binary.BigEndian.AppendUint16(b, 0x88b5)
	b = fmt.Appendf(b, "%s %06d", tag, seq)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// fill hands up to n frames from free to the socket's fill ring.
func fill(t *testing.T, s *afxdp.Socket, free *afxdp.FrameStack, n int) {
	t.Helper()
	addrs := make([]uint64, n)
	k := free.PopN(addrs)
	got := s.Fill(addrs[:k])
	free.PushN(addrs[got:k])
}

// receive polls s until want frames carrying tag arrived or two seconds
// passed, and returns their descriptors in order. Other frames (the hosts'
// own IPv6 chatter: MLD reports, router solicitations) go back to free.
func receive(t *testing.T, s *afxdp.Socket, free *afxdp.FrameStack, tag string, want int) []afxdp.Desc {
	t.Helper()
	u := s.UMEM()
	var out []afxdp.Desc
	buf := make([]afxdp.Desc, 64)
	for deadline := time.Now().Add(2 * time.Second); len(out) < want && time.Now().Before(deadline); {
		if _, err := s.Poll(50 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		n := s.Receive(buf)
		for _, d := range buf[:n] {
			if hasTag(u.Frame(d.Addr, int(d.Len)), tag) {
				out = append(out, d)
			} else {
				free.Push(u.FrameStart(d.Addr))
			}
		}
	}
	if len(out) < want {
		t.Fatalf("received %d of %d %q frames", len(out), want, tag)
	}
	return out
}

func hasTag(frame []byte, tag string) bool {
	return len(frame) > 14 && bytes.HasPrefix(frame[14:], []byte(tag))
}

// hostRecv collects want frames with the given tag on the host side.
func hostRecv(t *testing.T, c *xdptest.PacketConn, tag string, want int) [][]byte {
	t.Helper()
	var out [][]byte
	buf := make([]byte, 2048)
	for len(out) < want {
		n, err := c.Recv(buf, 2*time.Second, func(b []byte) bool { return hasTag(b, tag) })
		if err != nil {
			t.Fatalf("host received %d of %d %q frames: %v", len(out), want, tag, err)
		}
		out = append(out, bytes.Clone(buf[:n]))
	}
	return out
}
