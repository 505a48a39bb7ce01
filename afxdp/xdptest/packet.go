package xdptest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Interface looks up ifname inside the namespace.
func (n *Netns) Interface(t testing.TB, ifname string) *net.Interface {
	t.Helper()
	var ifi *net.Interface
	err := n.Do(func() (err error) {
		ifi, err = net.InterfaceByName(ifname)
		return err
	})
	if err != nil {
		t.Fatalf("interface %s in %s: %v", ifname, n.Name, err)
	}
	return ifi
}

// PacketConn is a raw AF_PACKET socket on one interface: it sends whole
// Ethernet frames and receives every frame that arrives on the interface,
// the view of a host plugged into a switch port.
type PacketConn struct {
	fd      int
	ifindex int
}

// OpenPacket opens an AF_PACKET socket on ifname in namespace n, closed
// when the test ends.
func OpenPacket(t testing.TB, n *Netns, ifname string) *PacketConn {
	t.Helper()
	var c *PacketConn
	err := n.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		// Tests read after sending hundreds of frames; the default
		// buffer (about 200 small frames) would drop some.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20); err != nil {
			unix.Close(fd)
			return err
		}
		c = &PacketConn{fd: fd, ifindex: ifi.Index}
		return nil
	})
	if err != nil {
		t.Fatalf("af_packet on %s in %s: %v", ifname, n.Name, err)
	}
	t.Cleanup(func() { unix.Close(c.fd) })
	return c
}

// Send transmits one Ethernet frame.
func (c *PacketConn) Send(frame []byte) error {
	return unix.Sendto(c.fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: c.ifindex})
}

// Recv waits up to timeout for an incoming frame (frames this host sent
// are skipped) that match accepts, copies it into buf and returns its
// length. A nil match accepts every frame.
func (c *PacketConn) Recv(buf []byte, timeout time.Duration, match func([]byte) bool) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("af_packet receive: no matching frame in %v: %w", timeout, unix.ETIMEDOUT)
		}
		tv := unix.NsecToTimeval(left.Nanoseconds())
		if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return 0, err
		}
		n, from, err := unix.Recvfrom(c.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if match == nil || match(buf[:n]) {
			return n, nil
		}
	}
}

// htons converts to network byte order, as AF_PACKET wants its protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
