// Package rocev2 reads and writes the frames rocetor carries: Ethernet with
// an optional 802.1Q tag, IPv4, IPv6, UDP, the InfiniBand transport headers
// of RoCEv2 (BTH, RETH, AETH, ImmDt, DETH, IETH, AtomicETH, AtomicAckETH,
// FETH) with their invariant CRC, 802.3x PAUSE and 802.1Qbb PFC frames, and
// the formats the project adds: NetRT messages (seed 000, §III-C/D), the
// DCP tag, extension header and header-only packet (seed 002, §4.2–§4.5),
// the SACK header of selective-repeat ACKs (seed 004, §3.1; seed 001,
// §III-B), the OOO request layout for out-of-order placement (seed 001,
// §IV-D), and the link-retransmission shim (seed 003, §3.5 and appendix
// A).
// docs/wire-formats.md documents those byte by byte.
//
// Headers are views: a named []byte type (BTH, IPv4, Shim, …) with getters
// and setters that index the frame directly. A view does not check bounds
// beyond what the slice itself enforces; Classify checks them once, fills a
// Meta with the offsets, and everything after indexes freely. Build writes
// whole frames into a caller's buffer. Neither allocates, and a malformed
// frame is a Reason in the Meta, never an error or a panic, so the packet
// path can count it and move on.
//
// Views, Meta, Classifier and Spec have no hidden state: they are safe to
// copy, and safe for concurrent use as long as no two goroutines write the
// same frame. Classify never writes the frame; ClassifyOwned, SetICRC and
// Build compute the ICRC in place, masking the variant fields in the frame
// for the length of one CRC pass, and so need a frame nothing else reads
// meanwhile; ClassifyOwned may also zero the frame's spare capacity, past
// len(b) up to cap(b). (Where rocev2/crc has its AVX-512 kernel, the
// ICRC check of most packets writes nothing: see icrcVerify.) gopacket layers for tools live in rocev2/layers;
// the packet path never goes through gopacket.
package rocev2
