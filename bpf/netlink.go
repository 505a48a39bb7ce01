package bpf

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// IFLA_XDP_ATTACHED values (linux/if_link.h); x/sys/unix does not carry
// them.
const (
	xdpAttachedNone  = 0
	xdpAttachedDrv   = 1
	xdpAttachedSKB   = 2
	xdpAttachedHW    = 3
	xdpAttachedMulti = 4
)

// xdpState is what rtnetlink reports about the XDP programs on one
// interface (the IFLA_XDP attribute of RTM_GETLINK).
type xdpState struct {
	attached uint8  // xdpAttached*
	progID   uint32 // the program when one mode is attached
	drvID    uint32 // per mode, when several are (xdpAttachedMulti)
	skbID    uint32
	hwID     uint32
}

// programs lists the attached programs as (mode, program ID) pairs.
func (s xdpState) programs() []attachedProg {
	var out []attachedProg
	switch s.attached {
	case xdpAttachedDrv:
		out = append(out, attachedProg{ModeNative, s.progID})
	case xdpAttachedSKB:
		out = append(out, attachedProg{ModeGeneric, s.progID})
	case xdpAttachedHW:
		out = append(out, attachedProg{modeOffload, s.progID})
	case xdpAttachedMulti:
		for _, p := range []attachedProg{{ModeNative, s.drvID}, {ModeGeneric, s.skbID}, {modeOffload, s.hwID}} {
			if p.id != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}

type attachedProg struct {
	mode Mode
	id   uint32
}

// queryXDP asks rtnetlink, in the calling thread's network namespace,
// which XDP programs are attached to ifindex. The bpf syscall cannot tell:
// BPF_PROG_QUERY does not cover XDP, and a program attached through
// netlink (ip link, older loaders) has no bpf_link to list.
func queryXDP(ifindex int) (xdpState, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return xdpState{}, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)

	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfInfomsg)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.RTM_GETLINK)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence number
	// ifinfomsg: family 0 (AF_UNSPEC), then the index at offset 4.
	ne.PutUint32(req[unix.SizeofNlMsghdr+4:], uint32(ifindex))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return xdpState{}, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 64<<10)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return xdpState{}, fmt.Errorf("netlink receive: %w", err)
	}
	return parseGetLink(buf[:n])
}

// parseGetLink finds IFLA_XDP in an RTM_GETLINK answer.
func parseGetLink(b []byte) (xdpState, error) {
	ne := binary.NativeEndian
	var st xdpState
	if len(b) < unix.SizeofNlMsghdr {
		return st, fmt.Errorf("netlink: short answer (%d bytes)", len(b))
	}
	l, typ := int(ne.Uint32(b[0:])), ne.Uint16(b[4:])
	if l > len(b) || l < unix.SizeofNlMsghdr {
		return st, fmt.Errorf("netlink: bad message length %d", l)
	}
	b = b[:l]
	switch typ {
	case unix.NLMSG_ERROR:
		if len(b) >= unix.SizeofNlMsghdr+4 {
			if e := int32(ne.Uint32(b[unix.SizeofNlMsghdr:])); e != 0 {
				return st, fmt.Errorf("netlink: %w", unix.Errno(-e))
			}
		}
		return st, fmt.Errorf("netlink: unexpected ack")
	case unix.RTM_NEWLINK:
	default:
		return st, fmt.Errorf("netlink: unexpected message type %d", typ)
	}
	attrs := b[min(len(b), unix.SizeofNlMsghdr+unix.SizeofIfInfomsg):]
	xdp, ok := findAttr(attrs, unix.IFLA_XDP)
	if !ok {
		return st, nil // a kernel without XDP reports nothing
	}
	if v, ok := findAttr(xdp, unix.IFLA_XDP_ATTACHED); ok && len(v) >= 1 {
		st.attached = v[0]
	}
	for _, f := range []struct {
		typ uint16
		dst *uint32
	}{
		{unix.IFLA_XDP_PROG_ID, &st.progID},
		{unix.IFLA_XDP_DRV_PROG_ID, &st.drvID},
		{unix.IFLA_XDP_SKB_PROG_ID, &st.skbID},
		{unix.IFLA_XDP_HW_PROG_ID, &st.hwID},
	} {
		if v, ok := findAttr(xdp, f.typ); ok && len(v) >= 4 {
			*f.dst = ne.Uint32(v)
		}
	}
	return st, nil
}

// findAttr returns the payload of the first rtattr of type typ in b.
func findAttr(b []byte, typ uint16) ([]byte, bool) {
	ne := binary.NativeEndian
	for len(b) >= 4 {
		l := int(ne.Uint16(b[0:]))
		t := ne.Uint16(b[2:]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if l < 4 || l > len(b) {
			return nil, false
		}
		if t == typ {
			return b[4:l], true
		}
		// Attributes are padded to 4 bytes.
		b = b[min(len(b), (l+unix.NLMSG_ALIGNTO-1)&^(unix.NLMSG_ALIGNTO-1)):]
	}
	return nil, false
}
