package rocev2

import "encoding/binary"

// MAC control opcodes (IEEE 802.3 annex 31A and 802.1Qbb).
const (
	MACControlPause = 0x0001 // 802.3x PAUSE: one pause time for the link
	MACControlPFC   = 0x0101 // 802.1Qbb PFC: a pause time per priority
)

// MACControlDst is the reserved multicast address MAC control frames go to.
var MACControlDst = MAC{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}

// PFC and PAUSE frame lengths after the 14-byte Ethernet header, without
// padding to MinFrameLen.
const (
	PauseLen = 4  // opcode(2) time(2)
	PFCLen   = 20 // opcode(2) class-enable vector(2) eight times(16)
)

// MACControl is a view of a MAC control payload (after the Ethernet header
// with EtherType 0x8808).
//
//	PAUSE: bytes 0-1 opcode 0x0001, bytes 2-3 pause time in quanta
//	PFC:   bytes 0-1 opcode 0x0101, bytes 2-3 class-enable vector (bit i
//	       enables priority i; the high byte is zero), bytes 4-19 the pause
//	       time of priorities 0–7, two bytes each
//
// One quantum is 512 bit times at the link speed.
type MACControl []byte

// Opcode returns the MAC control opcode.
func (c MACControl) Opcode() uint16 { return binary.BigEndian.Uint16(c[0:2]) }

// PauseTime returns the pause time of a PAUSE frame.
func (c MACControl) PauseTime() uint16 { return binary.BigEndian.Uint16(c[2:4]) }

// ClassEnable returns the class-enable vector of a PFC frame.
func (c MACControl) ClassEnable() uint8 { return c[3] }

// Time returns the pause time of priority p (0–7) in a PFC frame.
func (c MACControl) Time(p int) uint16 { return binary.BigEndian.Uint16(c[4+2*p:]) }

// PauseQuanta converts a pause time in quanta into nanoseconds at a link
// rate in bits per second.
func PauseQuanta(quanta uint16, bitsPerSec uint64) uint64 {
	if bitsPerSec == 0 {
		return 0
	}
	return uint64(quanta) * 512 * 1e9 / bitsPerSec
}

// BuildPFC writes a PFC frame from src into b and returns its length
// (MinFrameLen). Priority i is paused for times[i] quanta when bit i of
// enable is set; a zero time with the bit set resumes it.
func BuildPFC(b []byte, src MAC, enable uint8, times [8]uint16) (int, error) {
	if len(b) < MinFrameLen {
		return 0, ErrShortBuffer
	}
	clear(b[:MinFrameLen])
	putMACControlHeader(b, src, MACControlPFC)
	b[17] = enable
	for i, t := range times {
		binary.BigEndian.PutUint16(b[18+2*i:], t)
	}
	return MinFrameLen, nil
}

// BuildPause writes an 802.3x PAUSE frame from src into b and returns its
// length (MinFrameLen).
func BuildPause(b []byte, src MAC, quanta uint16) (int, error) {
	if len(b) < MinFrameLen {
		return 0, ErrShortBuffer
	}
	clear(b[:MinFrameLen])
	putMACControlHeader(b, src, MACControlPause)
	binary.BigEndian.PutUint16(b[16:18], quanta)
	return MinFrameLen, nil
}

func putMACControlHeader(b []byte, src MAC, op uint16) {
	e := Ethernet(b)
	e.SetDst(MACControlDst)
	e.SetSrc(src)
	e.SetType(EtherTypeMACControl)
	binary.BigEndian.PutUint16(b[14:16], op)
}
