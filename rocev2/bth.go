package rocev2

import (
	"encoding/binary"

	"rocetor/rocev2/psn"
)

// BTH is a view of the 12-byte InfiniBand base transport header.
//
//	byte 0     opcode
//	byte 1     SE(1) M(1) PadCnt(2) TVer(4)
//	bytes 2-3  P_Key
//	byte 4     FECN(1) BECN(1) reserved(6)   ("resv8a", masked in the ICRC)
//	bytes 5-7  destination QP
//	byte 8     AckReq(1) reserved(7)
//	bytes 9-11 PSN
type BTH []byte

// Opcode returns the opcode.
func (b BTH) Opcode() Opcode { return Opcode(b[0]) }

// SE returns the solicited event bit.
func (b BTH) SE() bool { return b[1]&0x80 != 0 }

// MigReq returns the migration request bit.
func (b BTH) MigReq() bool { return b[1]&0x40 != 0 }

// PadCount returns the number of pad bytes (0–3) before the ICRC.
func (b BTH) PadCount() int { return int(b[1]>>4) & 3 }

// TVer returns the transport header version; 0 is the only one defined.
func (b BTH) TVer() uint8 { return b[1] & 0x0f }

// PKey returns the partition key.
func (b BTH) PKey() uint16 { return binary.BigEndian.Uint16(b[2:4]) }

// FECN returns the forward explicit congestion notification bit.
func (b BTH) FECN() bool { return b[4]&0x80 != 0 }

// BECN returns the backward explicit congestion notification bit.
func (b BTH) BECN() bool { return b[4]&0x40 != 0 }

// DestQP returns the 24-bit destination queue pair number.
func (b BTH) DestQP() uint32 { return binary.BigEndian.Uint32(b[4:8]) & 0xffffff }

// AckReq returns the acknowledge request bit.
func (b BTH) AckReq() bool { return b[8]&0x80 != 0 }

// PSN returns the packet sequence number.
func (b BTH) PSN() psn.PSN { return psn.PSN(binary.BigEndian.Uint32(b[8:12]) & psn.Mask) }

// SetOpcode sets the opcode.
func (b BTH) SetOpcode(op Opcode) { b[0] = uint8(op) }

// SetFlags sets SE, MigReq and the pad count and clears TVer to 0.
func (b BTH) SetFlags(se, migReq bool, pad int) {
	b[1] = bit(se, 0x80) | bit(migReq, 0x40) | uint8(pad&3)<<4
}

// SetPKey sets the partition key.
func (b BTH) SetPKey(k uint16) { binary.BigEndian.PutUint16(b[2:4], k) }

// SetDestQP sets the destination QP, keeping the FECN/BECN byte.
func (b BTH) SetDestQP(qp uint32) {
	binary.BigEndian.PutUint32(b[4:8], uint32(b[4])<<24|qp&0xffffff)
}

// SetECN sets the FECN and BECN bits.
func (b BTH) SetECN(fecn, becn bool) { b[4] = b[4]&0x3f | bit(fecn, 0x80) | bit(becn, 0x40) }

// SetPSN sets the PSN, keeping the AckReq byte.
func (b BTH) SetPSN(p psn.PSN) {
	binary.BigEndian.PutUint32(b[8:12], uint32(b[8])<<24|uint32(p)&psn.Mask)
}

// SetAckReq sets the acknowledge request bit.
func (b BTH) SetAckReq(a bool) { b[8] = b[8]&0x7f | bit(a, 0x80) }

func bit(v bool, m uint8) uint8 {
	if v {
		return m
	}
	return 0
}

func put24(b []byte, v uint32) { b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v) }

func get24(b []byte) uint32 { return uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]) }
