package crc

import "golang.org/x/sys/cpu"

// hasWide says whether the CPU can run updateWide and updateMasked: they
// need AVX-512 Foundation and VL (EVEX ymm/xmm xor and ternary logic) and
// VPCLMULQDQ, BW and VBMI (updateMasked's 64-bit opmask and VPERMB),
// and PCLMULQDQ and SSE4.1 for the final reduction.
var hasWide = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL &&
	cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasAVX512BW &&
	cpu.X86.HasAVX512VBMI && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41

// updateWide returns the reflected CRC register (not inverted) after p,
// from the register crc. len(p) must be at least MinWide and a multiple
// of 16.
//
//go:noescape
func updateWide(crc uint32, p []byte) uint32

// wide says whether Update uses updateWide (UseWide).
var wide = hasWide

// updateMasked returns the reflected CRC register (not inverted) after
// p, whose first 64 bytes are ORed with or, followed by zeros up to the
// next multiple of 64 bytes, from the register crc. len(p) must be at
// least MinWide.
//
//go:noescape
func updateMasked(crc uint32, p []byte, or *[64]byte) uint32
