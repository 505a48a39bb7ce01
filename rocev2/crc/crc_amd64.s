#include "textflag.h"

// FOLD256 folds the next 256 bytes at SI into the four accumulators
// Z0-Z3 by the constants in Z4 (each accumulator's two multiplies and a
// three-way XOR with its new block), and moves SI and CX past them: the
// main loop of both kernels below.
#define FOLD256 \
	VMOVDQU64  0(SI), Z5; \
	VMOVDQU64  64(SI), Z6; \
	VMOVDQU64  128(SI), Z7; \
	VMOVDQU64  192(SI), Z8; \
	VPCLMULQDQ $0x00, Z4, Z0, Z9; \
	VPCLMULQDQ $0x11, Z4, Z0, Z0; \
	VPCLMULQDQ $0x00, Z4, Z1, Z10; \
	VPCLMULQDQ $0x11, Z4, Z1, Z1; \
	VPCLMULQDQ $0x00, Z4, Z2, Z11; \
	VPCLMULQDQ $0x11, Z4, Z2, Z2; \
	VPCLMULQDQ $0x00, Z4, Z3, Z12; \
	VPCLMULQDQ $0x11, Z4, Z3, Z3; \
	VPTERNLOGD $0x96, Z9, Z5, Z0; \
	VPTERNLOGD $0x96, Z10, Z6, Z1; \
	VPTERNLOGD $0x96, Z11, Z7, Z2; \
	VPTERNLOGD $0x96, Z12, Z8, Z3; \
	ADDQ       $256, SI; \
	SUBQ       $256, CX

// FOLD64 folds the 64-byte block in Z5 into the earliest accumulator
// (Z0, by 256 bytes with the constants in Z4), which then becomes the
// latest; the others move up a place. SI and CX move past the block.
#define FOLD64 \
	VPCLMULQDQ $0x00, Z4, Z0, Z9; \
	VPCLMULQDQ $0x11, Z4, Z0, Z10; \
	VPTERNLOGD $0x96, Z9, Z5, Z10; \
	VMOVDQA64  Z1, Z0; \
	VMOVDQA64  Z2, Z1; \
	VMOVDQA64  Z3, Z2; \
	VMOVDQA64  Z10, Z3; \
	ADDQ       $64, SI; \
	SUBQ       $64, CX

// func updateWide(crc uint32, p []byte) uint32
//
// Four 512-bit accumulators (Z0-Z3, 256 bytes a loop) fold the input
// with VPCLMULQDQ; each fold of an accumulator depends only on its own
// previous value, so the four chains overlap. 64-byte blocks left over
// are folded into them in turn, then the four are folded into Z3, its
// four 128-bit lanes into one, 16-byte blocks left over into that, and
// the 128-bit state is reduced to 32 bits with hash/crc32's Barrett step
// (its "finish", unchanged). The constants are ·foldTab (crc.go), loaded
// unaligned.
//
// On the 2 vCPU AMD EPYC machine a VPCLMULQDQ costs the same CPU time
// whether it multiplies 128, 256 or 512 bits (a throughput test of each,
// 2026-11-29), about 0.7 ns, so the kernel is bound by the 2 multiplies
// each 64-byte block needs: 1024 bytes took 24 ns of CPU against 34 ns in
// hash/crc32's one-accumulator 512-bit loop, 4096 bytes 87 against 151
// and 512 bytes 14 against 50 (its 128-bit loop; BenchmarkUpdate, CPU
// time of N and 5N iterations, medians of 3).
TEXT ·updateWide(SB), NOSPLIT, $0-36
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX

	VMOVDQU64 0(SI), Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVD     AX, X4      // zeroes the rest of Z4
	VPXORQ    Z4, Z0, Z0
	ADDQ      $256, SI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JB        tail64

	VMOVDQU64 ·foldTab+0(SB), Z4

loop256:
	FOLD256
	CMPQ       CX, $256
	JAE        loop256

tail64:
	// Up to three 64-byte blocks left: each is folded into the earliest
	// accumulator (Z0, by 256 bytes), which then becomes the latest; the
	// others move up a place (register renames, no work). The folds use
	// different accumulators, so they overlap as the main loop's do.
	CMPQ       CX, $64
	JB         fold4
	VMOVDQU64  ·foldTab+0(SB), Z4
	VMOVDQU64  0(SI), Z5
	FOLD64
	JMP        tail64

fold4:
	// Z3 ^= Z0 folded by 192 bytes, Z1 by 128, Z2 by 64.
	VMOVDQU64  ·foldTab+64(SB), Z4
	VMOVDQU64  ·foldTab+128(SB), Z5
	VMOVDQU64  ·foldTab+192(SB), Z6
	VPCLMULQDQ $0x00, Z4, Z0, Z7
	VPCLMULQDQ $0x11, Z4, Z0, Z8
	VPCLMULQDQ $0x00, Z5, Z1, Z9
	VPCLMULQDQ $0x11, Z5, Z1, Z10
	VPCLMULQDQ $0x00, Z6, Z2, Z11
	VPCLMULQDQ $0x11, Z6, Z2, Z12
	VPTERNLOGD $0x96, Z7, Z8, Z3
	VPTERNLOGD $0x96, Z9, Z10, Z11
	VPTERNLOGD $0x96, Z11, Z12, Z3

lanes:
	// Lanes 0-2 of Z3 folded by 48, 32 and 16 bytes (lane 3's constants
	// are zero), then xored together with lane 3 as it is.
	VMOVDQU64      ·foldTab+256(SB), Z4
	VPCLMULQDQ     $0x00, Z4, Z3, Z5
	VPCLMULQDQ     $0x11, Z4, Z3, Z6
	VPXORQ         Z5, Z6, Z5
	VEXTRACTI32X4  $3, Z3, X7
	VEXTRACTI64X4  $1, Z5, Y8
	VPXORQ         Y8, Y5, Y5
	VEXTRACTI128   $1, Y5, X8
	VPTERNLOGQ     $0x96, X7, X8, X5
	VZEROUPPER

	MOVOA X5, X1
	MOVOU ·foldTab+320(SB), X0
	CMPQ  CX, $16
	JB    finish

remain16:
	MOVOU     (SI), X10
	MOVOA     X1, X5
	PCLMULQDQ $0, X0, X1
	PCLMULQDQ $0x11, X0, X5
	PXOR      X5, X1
	PXOR      X10, X1
	ADDQ      $16, SI
	SUBQ      $16, CX
	CMPQ      CX, $16
	JAE       remain16

finish:
	// hash/crc32's ieeeCLMUL from here on, with X0 = fold(16).
	PCMPEQB   X3, X3
	PCLMULQDQ $1, X1, X0
	PSRLDQ    $8, X1
	PXOR      X0, X1

	MOVOA X1, X2
	MOVQ  ·foldTab+336(SB), X0

	// A 32-bit mask; the upper half does not matter.
	PSRLQ $32, X3

	PSRLDQ    $4, X2
	PAND      X3, X1
	PCLMULQDQ $0, X0, X1
	PXOR      X2, X1

	MOVOU ·foldTab+352(SB), X0

	MOVOA     X1, X2
	PAND      X3, X1
	PCLMULQDQ $0x10, X0, X1
	PAND      X3, X1
	PCLMULQDQ $0, X0, X1
	PXOR      X2, X1

	PEXTRD $1, X1, AX
	MOVL   AX, ret+32(FP)
	RET

// func updateMasked(crc uint32, p []byte, or *[64]byte) uint32
//
// updateWide for rocev2's ICRC check (CheckMasked), without writing the
// frame: the first 64-byte block is ORed with or (the fields the ICRC
// masks, set to ones) in a register, and the last, partial block is
// padded with zeros in a register, so that every block is 64 bytes and
// there is no 16-byte loop. Before, rocev2 set the masked fields in the
// frame and wrote the zeros into its spare capacity, and the kernel's
// first and last 64-byte loads, spanning those narrower stores, waited
// for them to reach the cache. len(p) >= 256.
TEXT ·updateMasked(SB), NOSPLIT, $0-44
	MOVL crc+0(FP), AX
	MOVQ p_base+8(FP), SI
	MOVQ p_len+16(FP), CX
	MOVQ or+32(FP), DX

	VMOVDQU64 0(SI), Z0
	VPORQ     0(DX), Z0, Z0
	VMOVDQU64 64(SI), Z1
	VMOVDQU64 128(SI), Z2
	VMOVDQU64 192(SI), Z3
	VMOVD     AX, X4
	VPXORQ    Z4, Z0, Z0
	VMOVDQU64 ·foldTab+0(SB), Z4
	ADDQ      $256, SI
	SUBQ      $256, CX
	CMPQ      CX, $256
	JB        mtail64

mloop256:
	FOLD256
	CMPQ       CX, $256
	JAE        mloop256

mtail64:
	CMPQ       CX, $64
	JB         mpartial
	VMOVDQU64  0(SI), Z5
mblock:
	FOLD64
	JG         mtail64
	JMP        mfold4

mpartial:
	// r = CX < 64 bytes left: the last 64 bytes of p, moved down by
	// 64-r bytes (VPERMB, indexes shiftTab[64-r:]) with the top 64-r
	// zeroed (K1), so that nothing past p is read. A masked load of
	// the r bytes would do the same in one instruction, but where its
	// masked-off bytes cross into the next page it cost about 500 ns on
	// the 2 vCPU AMD EPYC machine (BenchmarkCheckMasked placed across a
	// page boundary, 2026-11-29), and frames end anywhere.
	TESTQ    CX, CX
	JZ       mfold4
	MOVQ     $1, AX
	SHLQ     CX, AX
	DECQ     AX
	KMOVQ    AX, K1
	LEAQ     ·shiftTab+64(SB), DX
	SUBQ     CX, DX
	VMOVDQU64 (DX), Z6
	VPERMB.Z -64(SI)(CX*1), Z6, K1, Z5
	JMP      mblock

mfold4:
	// Every 128-bit lane of the four accumulators, D bytes before the
	// end, folded straight into T = (the message)·x^32 mod P as a
	// polynomial of degree below 96 (bits 32-127 of X10, x^0 at bit
	// 127): its low qword multiplied by x^(8D+95) mod P, its high one
	// by x^(8D+31) mod P (·mergeTab, 0-255), all 32 products added.
	// updateWide folds the accumulators into one, its lanes into one
	// and then reduces 128 bits in four steps: six multiplies one after
	// another, here three, and two fewer in all. Against updateWide's
	// steps in updateMasked, BenchmarkWorkerForward/plain's CPU time per
	// frame went from 170.0 to 161.9 ns by medians of 10 paired rounds,
	// the median paired difference −2.6 ns (2M frames each, GOMAXPROCS=1,
	// perf stat -e task-clock, 2026-11-29, a loaded machine): within the
	// noise, and BenchmarkICRCVerify/covered=988 alone showed no
	// difference (+0.9 ns, 12 rounds): a loop of checks overlaps one
	// check's tail with the next one's blocks.
	VMOVDQU64  ·mergeTab+0(SB), Z4
	VMOVDQU64  ·mergeTab+64(SB), Z5
	VMOVDQU64  ·mergeTab+128(SB), Z6
	VMOVDQU64  ·mergeTab+192(SB), Z7
	VPCLMULQDQ $0x00, Z4, Z0, Z8
	VPCLMULQDQ $0x11, Z4, Z0, Z9
	VPCLMULQDQ $0x00, Z5, Z1, Z10
	VPCLMULQDQ $0x11, Z5, Z1, Z11
	VPCLMULQDQ $0x00, Z6, Z2, Z12
	VPCLMULQDQ $0x11, Z6, Z2, Z13
	VPCLMULQDQ $0x00, Z7, Z3, Z14
	VPCLMULQDQ $0x11, Z7, Z3, Z15
	VPTERNLOGD $0x96, Z8, Z9, Z10
	VPTERNLOGD $0x96, Z11, Z12, Z13
	VPTERNLOGD $0x96, Z14, Z15, Z10
	VPXORQ     Z13, Z10, Z10
	VEXTRACTI64X4 $1, Z10, Y11
	VPXORQ        Y11, Y10, Y10
	VEXTRACTI128  $1, Y10, X11
	VPXORQ        X11, X10, X10
	VZEROUPPER

	// Barrett reduction of T: q = floor(T/P) from its top 64
	// coefficients Th (T>>32) as Th + floor(Th·mu'/x^64), mu' =
	// floor(x^96/P) - x^64, whose x^0 coefficient is zero, so that the
	// multiply by mu'/x leaves floor(…) in the low qword; then the CRC
	// is the low 32 coefficients of T + q·(P - x^32), the product's
	// shifted up by one bit to line up with T's.
	MOVOU     ·mergeTab+256(SB), X0
	MOVOA     X10, X1
	PSRLDQ    $4, X1
	MOVOA     X1, X2
	PCLMULQDQ $0x00, X0, X2
	PXOR      X1, X2
	PCLMULQDQ $0x10, X0, X2
	PSLLQ     $1, X2
	PXOR      X10, X2
	PEXTRD    $3, X2, AX
	MOVL      AX, ret+40(FP)
	RET
