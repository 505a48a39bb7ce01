package rocev2

import (
	"encoding/binary"
	"strconv"
)

// RETH is a view of the 16-byte RDMA extended transport header.
type RETH []byte

// VA returns the remote virtual address.
func (r RETH) VA() uint64 { return binary.BigEndian.Uint64(r[0:8]) }

// RKey returns the remote key.
func (r RETH) RKey() uint32 { return binary.BigEndian.Uint32(r[8:12]) }

// DMALen returns the length of the whole RDMA operation in bytes.
func (r RETH) DMALen() uint32 { return binary.BigEndian.Uint32(r[12:16]) }

// Set sets all three fields.
func (r RETH) Set(va uint64, rkey, dmaLen uint32) {
	binary.BigEndian.PutUint64(r[0:8], va)
	binary.BigEndian.PutUint32(r[8:12], rkey)
	binary.BigEndian.PutUint32(r[12:16], dmaLen)
}

// AETH syndrome types (bits 7:5 of the syndrome).
const (
	SyndromeACK    = 0 << 5
	SyndromeRNRNak = 1 << 5
	SyndromeNAK    = 3 << 5
)

// NAK codes (bits 4:0 of a NAK syndrome).
const (
	NakPSNSeqError   = 0
	NakInvalidReq    = 1
	NakRemoteAccess  = 2
	NakRemoteOpError = 3
	NakInvalidRDReq  = 4
)

// Syndrome is the AETH syndrome byte.
type Syndrome uint8

// Type returns SyndromeACK, SyndromeRNRNak, SyndromeNAK, or the reserved 0x40.
func (s Syndrome) Type() uint8 { return uint8(s) & 0xe0 }

// Value returns the low five bits: the credit count of an ACK, the timer
// of an RNR NAK, or the NAK code.
func (s Syndrome) Value() uint8 { return uint8(s) & 0x1f }

// IsACK, IsNAK and IsRNR classify the syndrome.
func (s Syndrome) IsACK() bool { return s.Type() == SyndromeACK }
func (s Syndrome) IsNAK() bool { return s.Type() == SyndromeNAK }
func (s Syndrome) IsRNR() bool { return s.Type() == SyndromeRNRNak }

// String names the syndrome, e.g. "ACK(credits=31)" or "NAK(PSN_SEQ_ERROR)".
func (s Syndrome) String() string {
	switch s.Type() {
	case SyndromeACK:
		return "ACK(credits=" + strconv.Itoa(int(s.Value())) + ")"
	case SyndromeRNRNak:
		return "RNR_NAK(timer=" + strconv.Itoa(int(s.Value())) + ")"
	case SyndromeNAK:
		switch s.Value() {
		case NakPSNSeqError:
			return "NAK(PSN_SEQ_ERROR)"
		case NakInvalidReq:
			return "NAK(INVALID_REQUEST)"
		case NakRemoteAccess:
			return "NAK(REMOTE_ACCESS_ERROR)"
		case NakRemoteOpError:
			return "NAK(REMOTE_OPERATIONAL_ERROR)"
		case NakInvalidRDReq:
			return "NAK(INVALID_RD_REQUEST)"
		}
		return "NAK(" + strconv.Itoa(int(s.Value())) + ")"
	}
	return "RESERVED(" + strconv.Itoa(int(s)) + ")"
}

// ACKSyndrome returns an ACK syndrome advertising credits (0–31; 31 means
// the responder does not use end-to-end credits).
func ACKSyndrome(credits uint8) Syndrome { return Syndrome(SyndromeACK | credits&0x1f) }

// NAKSyndrome returns a NAK syndrome with the given code.
func NAKSyndrome(code uint8) Syndrome { return Syndrome(SyndromeNAK | code&0x1f) }

// RNRSyndrome returns an RNR NAK syndrome with the given timer code.
func RNRSyndrome(timer uint8) Syndrome { return Syndrome(SyndromeRNRNak | timer&0x1f) }

// AETH is a view of the 4-byte ACK extended transport header.
type AETH []byte

// Syndrome returns the syndrome byte.
func (a AETH) Syndrome() Syndrome { return Syndrome(a[0]) }

// MSN returns the 24-bit message sequence number.
func (a AETH) MSN() uint32 { return get24(a[1:4]) }

// Set sets the syndrome and MSN.
func (a AETH) Set(s Syndrome, msn uint32) { a[0] = uint8(s); put24(a[1:4], msn) }

// ImmDt is a view of the 4-byte immediate data header.
type ImmDt []byte

// Value returns the immediate data as a big-endian word.
func (i ImmDt) Value() uint32 { return binary.BigEndian.Uint32(i) }

// Set sets the immediate data.
func (i ImmDt) Set(v uint32) { binary.BigEndian.PutUint32(i, v) }

// IETH is a view of the 4-byte invalidate extended transport header.
type IETH []byte

// RKey returns the remote key to invalidate.
func (i IETH) RKey() uint32 { return binary.BigEndian.Uint32(i) }

// Set sets the remote key.
func (i IETH) Set(rkey uint32) { binary.BigEndian.PutUint32(i, rkey) }

// DETH is a view of the 8-byte datagram extended transport header.
type DETH []byte

// QKey returns the queue key.
func (d DETH) QKey() uint32 { return binary.BigEndian.Uint32(d[0:4]) }

// SrcQP returns the 24-bit source queue pair number.
func (d DETH) SrcQP() uint32 { return get24(d[5:8]) }

// Set sets the queue key and source QP; the reserved byte is zeroed.
func (d DETH) Set(qkey, srcQP uint32) {
	binary.BigEndian.PutUint32(d[0:4], qkey)
	d[4] = 0
	put24(d[5:8], srcQP)
}

// AtomicETH is a view of the 28-byte atomic extended transport header.
type AtomicETH []byte

// VA returns the remote virtual address.
func (a AtomicETH) VA() uint64 { return binary.BigEndian.Uint64(a[0:8]) }

// RKey returns the remote key.
func (a AtomicETH) RKey() uint32 { return binary.BigEndian.Uint32(a[8:12]) }

// SwapAdd returns the swap (compare-and-swap) or add (fetch-and-add) operand.
func (a AtomicETH) SwapAdd() uint64 { return binary.BigEndian.Uint64(a[12:20]) }

// Compare returns the compare operand.
func (a AtomicETH) Compare() uint64 { return binary.BigEndian.Uint64(a[20:28]) }

// Set sets all four fields.
func (a AtomicETH) Set(va uint64, rkey uint32, swapAdd, compare uint64) {
	binary.BigEndian.PutUint64(a[0:8], va)
	binary.BigEndian.PutUint32(a[8:12], rkey)
	binary.BigEndian.PutUint64(a[12:20], swapAdd)
	binary.BigEndian.PutUint64(a[20:28], compare)
}

// AtomicAck is a view of the 8-byte atomic ACK extended transport header.
type AtomicAck []byte

// OrigData returns the value the remote location held before the atomic.
func (a AtomicAck) OrigData() uint64 { return binary.BigEndian.Uint64(a) }

// Set sets the original data.
func (a AtomicAck) Set(v uint64) { binary.BigEndian.PutUint64(a, v) }

// FETH is a view of the 4-byte flush extended transport header.
type FETH []byte

// Selectivity returns the placement type and selectivity level bits.
func (f FETH) Selectivity() uint32 { return binary.BigEndian.Uint32(f) }

// Set sets the header word.
func (f FETH) Set(v uint32) { binary.BigEndian.PutUint32(f, v) }
