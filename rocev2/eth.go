package rocev2

import (
	"encoding/binary"
	"fmt"
)

// EtherType values the project reads or writes.
const (
	EtherTypeIPv4       = 0x0800
	EtherTypeARP        = 0x0806
	EtherTypeVLAN       = 0x8100
	EtherTypeIPv6       = 0x86dd
	EtherTypeMACControl = 0x8808
	EtherTypeLLDP       = 0x88cc
	// EtherTypeShim marks the link-retransmission shim. It is IEEE 802's
	// "local experimental EtherType 1", reserved for exactly this kind of
	// link-local protocol; it never leaves the protected link.
	EtherTypeShim = 0x88b5
)

// Header lengths in bytes.
const (
	EthernetLen = 14
	VLANTagLen  = 4
	// MinFrameLen is the shortest Ethernet frame without its FCS; builders
	// pad shorter frames with zeros.
	MinFrameLen = 60
)

// MAC is an Ethernet address.
type MAC [6]byte

// String formats m as six colon-separated hex bytes.
func (m MAC) String() string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

// ParseMAC parses the colon-separated form that String prints.
func ParseMAC(s string) (MAC, error) {
	var m MAC
	if len(s) != 17 {
		return m, fmt.Errorf("parse MAC %q: want 6 colon-separated hex bytes", s)
	}
	for i := 0; i < 6; i++ {
		if i > 0 && s[3*i-1] != ':' {
			return m, fmt.Errorf("parse MAC %q: want ':' between bytes", s)
		}
		hi, ok1 := unhex(s[3*i])
		lo, ok2 := unhex(s[3*i+1])
		if !ok1 || !ok2 {
			return m, fmt.Errorf("parse MAC %q: bad hex digit", s)
		}
		m[i] = hi<<4 | lo
	}
	return m, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// Ethernet is a view of an Ethernet II header, optionally followed by one
// 802.1Q tag. Callers check len(e) >= EthernetLen (and >= EthernetLen +
// VLANTagLen when Tagged) before using the accessors, as the classifier does.
type Ethernet []byte

// Dst returns the destination address.
func (e Ethernet) Dst() (m MAC) { copy(m[:], e[0:6]); return }

// Src returns the source address.
func (e Ethernet) Src() (m MAC) { copy(m[:], e[6:12]); return }

// SetDst sets the destination address.
func (e Ethernet) SetDst(m MAC) { copy(e[0:6], m[:]) }

// SetSrc sets the source address.
func (e Ethernet) SetSrc(m MAC) { copy(e[6:12], m[:]) }

// Type returns the outer EtherType (EtherTypeVLAN for a tagged frame).
func (e Ethernet) Type() uint16 { return binary.BigEndian.Uint16(e[12:14]) }

// SetType sets the outer EtherType.
func (e Ethernet) SetType(t uint16) { binary.BigEndian.PutUint16(e[12:14], t) }

// Tagged reports whether an 802.1Q tag follows the addresses.
func (e Ethernet) Tagged() bool { return e.Type() == EtherTypeVLAN }

// TCI returns the tag control information of a tagged frame.
func (e Ethernet) TCI() uint16 { return binary.BigEndian.Uint16(e[14:16]) }

// PCP returns the 802.1p priority code point of a tagged frame.
func (e Ethernet) PCP() uint8 { return uint8(e.TCI() >> 13) }

// VID returns the VLAN identifier of a tagged frame.
func (e Ethernet) VID() uint16 { return e.TCI() & 0x0fff }

// InnerType returns the EtherType of the payload: after the tag when
// tagged, else the outer type.
func (e Ethernet) InnerType() uint16 {
	if e.Tagged() {
		return binary.BigEndian.Uint16(e[16:18])
	}
	return e.Type()
}

// SetInnerType sets the EtherType of the payload.
func (e Ethernet) SetInnerType(t uint16) {
	if e.Tagged() {
		binary.BigEndian.PutUint16(e[16:18], t)
		return
	}
	e.SetType(t)
}

// HeaderLen returns 14, or 18 for a tagged frame.
func (e Ethernet) HeaderLen() int {
	if e.Tagged() {
		return EthernetLen + VLANTagLen
	}
	return EthernetLen
}
