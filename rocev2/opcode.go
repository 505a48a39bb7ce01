package rocev2

import "strconv"

// Opcode is the BTH opcode: the top three bits name the transport (RC, UC,
// RD, UD, CNP, manufacturer-specific), the low five the operation.
type Opcode uint8

// Transport returns the transport bits of the opcode (op & 0xe0).
func (op Opcode) Transport() uint8 { return uint8(op) & 0xe0 }

// Transports, as the top three opcode bits.
const (
	TransportRC     = 0x00
	TransportUC     = 0x20
	TransportRD     = 0x40
	TransportUD     = 0x60
	TransportCNP    = 0x80
	TransportVendor = 0xc0
)

// RC, UC and UD opcodes (IBA vol. 1 §9.2, table 38; FLUSH 0x1c and ATOMIC
// WRITE 0x1d from release 1.5, numbered as in Linux's ib_pack.h), the
// RoCEv2 congestion notification packet (annex A17) and the project's
// manufacturer-specific opcode for NetRT messages.
const (
	RCSendFirst          Opcode = 0x00
	RCSendMiddle         Opcode = 0x01
	RCSendLast           Opcode = 0x02
	RCSendLastImm        Opcode = 0x03
	RCSendOnly           Opcode = 0x04
	RCSendOnlyImm        Opcode = 0x05
	RCWriteFirst         Opcode = 0x06
	RCWriteMiddle        Opcode = 0x07
	RCWriteLast          Opcode = 0x08
	RCWriteLastImm       Opcode = 0x09
	RCWriteOnly          Opcode = 0x0a
	RCWriteOnlyImm       Opcode = 0x0b
	RCReadRequest        Opcode = 0x0c
	RCReadResponseFirst  Opcode = 0x0d
	RCReadResponseMiddle Opcode = 0x0e
	RCReadResponseLast   Opcode = 0x0f
	RCReadResponseOnly   Opcode = 0x10
	RCAck                Opcode = 0x11
	RCAtomicAck          Opcode = 0x12
	RCCompareSwap        Opcode = 0x13
	RCFetchAdd           Opcode = 0x14
	RCSendLastInvalidate Opcode = 0x16
	RCSendOnlyInvalidate Opcode = 0x17
	RCFlush              Opcode = 0x1c
	RCAtomicWrite        Opcode = 0x1d
	UCSendFirst          Opcode = 0x20
	UCSendMiddle         Opcode = 0x21
	UCSendLast           Opcode = 0x22
	UCSendLastImm        Opcode = 0x23
	UCSendOnly           Opcode = 0x24
	UCSendOnlyImm        Opcode = 0x25
	UCWriteFirst         Opcode = 0x26
	UCWriteMiddle        Opcode = 0x27
	UCWriteLast          Opcode = 0x28
	UCWriteLastImm       Opcode = 0x29
	UCWriteOnly          Opcode = 0x2a
	UCWriteOnlyImm       Opcode = 0x2b
	UDSendOnly           Opcode = 0x64
	UDSendOnlyImm        Opcode = 0x65
	CNP                  Opcode = 0x81
	NetRTOpcode          Opcode = 0xc0
)

// Ext is a set of extension headers. The order of the constants is the
// order the headers follow the BTH on the wire (IBA §9.2; a FLUSH carries
// its FETH before its RETH, as the 1.5 release and Linux rxe place them);
// DCPExt, the project's own, comes first of all when present; SACKETH,
// also the project's, follows the AETH of an RC ACK, and SETH, the
// project's too, the standard headers of a SEND in the OOO layout.
// ExtNetRT stays last: Build and the tests loop over the fixed-size
// headers below it.
type Ext uint16

// Extension headers.
const (
	ExtDCP       Ext = 1 << iota // DCP extension header (project format)
	ExtDETH                      // datagram extended transport header, 8 bytes
	ExtFETH                      // flush extended transport header, 4 bytes; precedes the RETH of a FLUSH
	ExtRETH                      // RDMA extended transport header, 16 bytes
	ExtAtomicETH                 // atomic extended transport header, 28 bytes
	ExtAETH                      // ACK extended transport header, 4 bytes
	ExtAtomicAck                 // atomic ACK extended transport header, 8 bytes
	ExtImmDt                     // immediate data, 4 bytes
	ExtIETH                      // invalidate extended transport header, 4 bytes
	ExtSACK                      // selective-ACK extension header of an RC ACK (project format), 8 bytes
	ExtSETH                      // SEND placement header of the OOO layout (project format), 8 bytes
	ExtNetRT                     // NetRT message header (project format), 4 or 20 bytes
	extCount     = iota
)

// Extension header lengths in bytes.
const (
	BTHLen       = 12
	DCPLen       = 8
	DETHLen      = 8
	RETHLen      = 16
	AtomicETHLen = 28
	AETHLen      = 4
	AtomicAckLen = 8
	ImmDtLen     = 4
	IETHLen      = 4
	FETHLen      = 4
	SACKLen      = 8
	SETHLen      = 8
	ICRCLen      = 4
	CNPLen       = 16 // reserved bytes a CNP carries after the BTH
)

var extLens = [extCount]uint8{DCPLen, DETHLen, FETHLen, RETHLen, AtomicETHLen, AETHLen, AtomicAckLen, ImmDtLen, IETHLen, SACKLen, SETHLen, 0}

var extNames = [extCount]string{"DCPETH", "DETH", "FETH", "RETH", "AtomicETH", "AETH", "AtomicAckETH", "ImmDt", "IETH", "SACKETH", "SETH", "NetRT"}

// String lists the headers in the set in wire order, joined by '+'.
func (e Ext) String() string {
	s := ""
	for i := 0; i < extCount; i++ {
		if e&(1<<i) != 0 {
			if s != "" {
				s += "+"
			}
			s += extNames[i]
		}
	}
	return s
}

// Len returns the total length of the fixed-size headers in the set.
// ExtNetRT counts zero: its length depends on the message type. It is a
// table lookup: Classify and ExtOff call it per packet.
func (e Ext) Len() int { return int(extSetLens[e&(1<<extCount-1)]) }

// extSetLens holds Len of every set of the extCount headers (at most 100).
var extSetLens = func() (t [1 << extCount]uint8) {
	for e := range t {
		for i := 0; i < extCount; i++ {
			if e&(1<<i) != 0 {
				t[e] += extLens[i]
			}
		}
	}
	return t
}()

// offset returns where header x starts, relative to the end of the BTH, in
// a packet that carries the set e.
func (e Ext) offset(x Ext) int { return (e & (x - 1)).Len() }

// Opcode flags.
const (
	opKnown     = 1 << iota
	opFirst     // first packet of a multi-packet message
	opMiddle    // middle packet
	opLast      // last packet
	opOnly      // the only packet of a message
	opPayload   // carries a payload
	opRequest   // sent by a requester
	opResponse  // sent by a responder (ACKs, read responses)
	opWrite     // an RDMA WRITE (DCP puts a RETH in every one)
	opSend      // a SEND
	opImmediate // carries immediate data
)

type opInfo struct {
	name  string
	ext   Ext
	flags uint16
}

var opTable = [256]opInfo{
	RCSendFirst:          {"RC_SEND_FIRST", 0, opFirst | opPayload | opRequest | opSend},
	RCSendMiddle:         {"RC_SEND_MIDDLE", 0, opMiddle | opPayload | opRequest | opSend},
	RCSendLast:           {"RC_SEND_LAST", 0, opLast | opPayload | opRequest | opSend},
	RCSendLastImm:        {"RC_SEND_LAST_WITH_IMMEDIATE", ExtImmDt, opLast | opPayload | opRequest | opSend | opImmediate},
	RCSendOnly:           {"RC_SEND_ONLY", 0, opOnly | opPayload | opRequest | opSend},
	RCSendOnlyImm:        {"RC_SEND_ONLY_WITH_IMMEDIATE", ExtImmDt, opOnly | opPayload | opRequest | opSend | opImmediate},
	RCWriteFirst:         {"RC_RDMA_WRITE_FIRST", ExtRETH, opFirst | opPayload | opRequest | opWrite},
	RCWriteMiddle:        {"RC_RDMA_WRITE_MIDDLE", 0, opMiddle | opPayload | opRequest | opWrite},
	RCWriteLast:          {"RC_RDMA_WRITE_LAST", 0, opLast | opPayload | opRequest | opWrite},
	RCWriteLastImm:       {"RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", ExtImmDt, opLast | opPayload | opRequest | opWrite | opImmediate},
	RCWriteOnly:          {"RC_RDMA_WRITE_ONLY", ExtRETH, opOnly | opPayload | opRequest | opWrite},
	RCWriteOnlyImm:       {"RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", ExtRETH | ExtImmDt, opOnly | opPayload | opRequest | opWrite | opImmediate},
	RCReadRequest:        {"RC_RDMA_READ_REQUEST", ExtRETH, opOnly | opRequest},
	RCReadResponseFirst:  {"RC_RDMA_READ_RESPONSE_FIRST", ExtAETH, opFirst | opPayload | opResponse},
	RCReadResponseMiddle: {"RC_RDMA_READ_RESPONSE_MIDDLE", 0, opMiddle | opPayload | opResponse},
	RCReadResponseLast:   {"RC_RDMA_READ_RESPONSE_LAST", ExtAETH, opLast | opPayload | opResponse},
	RCReadResponseOnly:   {"RC_RDMA_READ_RESPONSE_ONLY", ExtAETH, opOnly | opPayload | opResponse},
	RCAck:                {"RC_ACKNOWLEDGE", ExtAETH, opOnly | opResponse},
	RCAtomicAck:          {"RC_ATOMIC_ACKNOWLEDGE", ExtAETH | ExtAtomicAck, opOnly | opResponse},
	RCCompareSwap:        {"RC_COMPARE_SWAP", ExtAtomicETH, opOnly | opRequest},
	RCFetchAdd:           {"RC_FETCH_ADD", ExtAtomicETH, opOnly | opRequest},
	RCSendLastInvalidate: {"RC_SEND_LAST_WITH_INVALIDATE", ExtIETH, opLast | opPayload | opRequest | opSend},
	RCSendOnlyInvalidate: {"RC_SEND_ONLY_WITH_INVALIDATE", ExtIETH, opOnly | opPayload | opRequest | opSend},
	RCFlush:              {"RC_FLUSH", ExtRETH | ExtFETH, opOnly | opRequest},
	RCAtomicWrite:        {"RC_ATOMIC_WRITE", ExtRETH, opOnly | opPayload | opRequest},
	UCSendFirst:          {"UC_SEND_FIRST", 0, opFirst | opPayload | opRequest | opSend},
	UCSendMiddle:         {"UC_SEND_MIDDLE", 0, opMiddle | opPayload | opRequest | opSend},
	UCSendLast:           {"UC_SEND_LAST", 0, opLast | opPayload | opRequest | opSend},
	UCSendLastImm:        {"UC_SEND_LAST_WITH_IMMEDIATE", ExtImmDt, opLast | opPayload | opRequest | opSend | opImmediate},
	UCSendOnly:           {"UC_SEND_ONLY", 0, opOnly | opPayload | opRequest | opSend},
	UCSendOnlyImm:        {"UC_SEND_ONLY_WITH_IMMEDIATE", ExtImmDt, opOnly | opPayload | opRequest | opSend | opImmediate},
	UCWriteFirst:         {"UC_RDMA_WRITE_FIRST", ExtRETH, opFirst | opPayload | opRequest | opWrite},
	UCWriteMiddle:        {"UC_RDMA_WRITE_MIDDLE", 0, opMiddle | opPayload | opRequest | opWrite},
	UCWriteLast:          {"UC_RDMA_WRITE_LAST", 0, opLast | opPayload | opRequest | opWrite},
	UCWriteLastImm:       {"UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", ExtImmDt, opLast | opPayload | opRequest | opWrite | opImmediate},
	UCWriteOnly:          {"UC_RDMA_WRITE_ONLY", ExtRETH, opOnly | opPayload | opRequest | opWrite},
	UCWriteOnlyImm:       {"UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", ExtRETH | ExtImmDt, opOnly | opPayload | opRequest | opWrite | opImmediate},
	UDSendOnly:           {"UD_SEND_ONLY", ExtDETH, opOnly | opPayload | opRequest | opSend},
	UDSendOnlyImm:        {"UD_SEND_ONLY_WITH_IMMEDIATE", ExtDETH | ExtImmDt, opOnly | opPayload | opRequest | opSend | opImmediate},
	CNP:                  {"CNP", 0, opOnly | opPayload},
	NetRTOpcode:          {"NETRT", ExtNetRT, opOnly},
}

func init() {
	for i := range opTable {
		if opTable[i].name != "" {
			opTable[i].flags |= opKnown
		}
	}
}

// Known reports whether the opcode is one this package decodes. RD opcodes
// (0x40–0x5f) are not: no RoCE NIC implements reliable datagram.
func (op Opcode) Known() bool { return opTable[op].flags&opKnown != 0 }

// String returns the opcode's name, or "OPCODE_0xNN" for unknown ones.
func (op Opcode) String() string {
	if n := opTable[op].name; n != "" {
		return n
	}
	return "OPCODE_0x" + strconv.FormatUint(uint64(op)|0x100, 16)[1:]
}

// Ext returns the extension headers the standard puts after the BTH.
func (op Opcode) Ext() Ext { return opTable[op].ext }

// HasPayload reports whether packets with this opcode carry data.
func (op Opcode) HasPayload() bool { return opTable[op].flags&opPayload != 0 }

// IsFirst, IsMiddle, IsLast and IsOnly place the packet within its message.
func (op Opcode) IsFirst() bool  { return opTable[op].flags&opFirst != 0 }
func (op Opcode) IsMiddle() bool { return opTable[op].flags&opMiddle != 0 }
func (op Opcode) IsLast() bool   { return opTable[op].flags&opLast != 0 }
func (op Opcode) IsOnly() bool   { return opTable[op].flags&opOnly != 0 }

// IsRequest reports whether a requester sends this opcode.
func (op Opcode) IsRequest() bool { return opTable[op].flags&opRequest != 0 }

// IsResponse reports whether a responder sends this opcode.
func (op Opcode) IsResponse() bool { return opTable[op].flags&opResponse != 0 }

// IsWrite reports whether this is an RDMA WRITE packet.
func (op Opcode) IsWrite() bool { return opTable[op].flags&opWrite != 0 }

// IsSend reports whether this is a SEND packet.
func (op Opcode) IsSend() bool { return opTable[op].flags&opSend != 0 }

// HasImmediate reports whether the packet carries immediate data.
func (op Opcode) HasImmediate() bool { return opTable[op].flags&opImmediate != 0 }

// SACKExt returns the extension headers of a packet with this opcode that
// would carry the set e in a fabric whose acknowledgements carry SACK
// information (Classifier.SACK): an RC ACK with an AETH gets the SACKETH
// after it. Every other packet, and a DCP header-only packet returned as
// an ACK (no AETH), keeps e.
func (op Opcode) SACKExt(e Ext) Ext {
	if op == RCAck && e&ExtAETH != 0 {
		return e | ExtSACK
	}
	return e
}

// OOOExt returns the extension headers of a packet with this opcode that
// would carry the set e in the OOO layout (Classifier.OOO), whose
// requests carry what a receiver needs to place each packet on arrival,
// in any order (seed 001 §IV-D, for IRN and FaSR): a RETH in every WRITE
// packet, as in DCP, and a SETH in every SEND packet. Other opcodes keep
// e. A DCP header-only packet keeps its DCPETH alone: callers do not
// apply the layout to it.
func (op Opcode) OOOExt(e Ext) Ext {
	switch f := opTable[op].flags; {
	case f&opWrite != 0:
		return e | ExtRETH
	case f&opSend != 0:
		return e | ExtSETH
	}
	return e
}

// DCPExt returns the extension headers of a DCP packet with this opcode and
// tag (seed 002, §4.4): the DCP header first; a RETH in every WRITE packet,
// not only the first; and nothing but the DCP header in a header-only
// packet, whose payload and other headers the trimming switch removed.
func (op Opcode) DCPExt(tag DCPTag) Ext {
	switch tag {
	case DCPNone:
		return op.Ext()
	case DCPHeaderOnly:
		return ExtDCP
	}
	e := op.Ext() | ExtDCP
	if op.IsWrite() {
		e |= ExtRETH
	}
	return e
}
