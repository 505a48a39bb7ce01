package afxdp

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// PacketSender is a send-only AF_PACKET socket bound to one interface:
// it transmits whole Ethernet frames, as a host plugged into a switch
// port would, bypassing the kernel's stack (testbed's blaster forges
// frames with it). It receives nothing: its protocol is 0, so no frame
// is queued to it. It lives here because raw sockets stay in afxdp.
// Safe for concurrent use; the zero value is not ready.
type PacketSender struct {
	fd      int
	ifindex int
}

// OpenPacketSender opens a send-only packet socket on ifname in the
// calling thread's network namespace (enter one first to send from a
// testbed host).
func OpenPacketSender(ifname string) (*PacketSender, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s: %w", ifname, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("packet socket on %s: %w", ifname, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind packet socket to %s: %w", ifname, err)
	}
	return &PacketSender{fd: fd, ifindex: ifi.Index}, nil
}

// Send transmits one Ethernet frame, as given (no padding, no FCS). The
// frame is copied before Send returns.
func (s *PacketSender) Send(frame []byte) error {
	return unix.Sendto(s.fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: s.ifindex})
}

// Close closes the socket.
func (s *PacketSender) Close() error { return unix.Close(s.fd) }
