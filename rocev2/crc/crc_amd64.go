package crc

import "golang.org/x/sys/cpu"

// hasWide says whether the CPU can run updateWide: it needs AVX-512
// Foundation and VL (EVEX ymm/xmm xor and ternary logic) and VPCLMULQDQ,
// and PCLMULQDQ and SSE4.1 for its final reduction.
var hasWide = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL &&
	cpu.X86.HasAVX512VPCLMULQDQ && cpu.X86.HasPCLMULQDQ && cpu.X86.HasSSE41

// updateWide returns the reflected CRC register (not inverted) after p,
// from the register crc. len(p) must be at least MinWide and a multiple
// of 16.
//
//go:noescape
func updateWide(crc uint32, p []byte) uint32

// wide says whether Update uses updateWide (UseWide).
var wide = hasWide
