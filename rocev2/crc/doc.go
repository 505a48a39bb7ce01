// Package crc computes the CRC-32 (IEEE, reflected) that RoCEv2's
// invariant CRC uses, exactly what hash/crc32.Update with IEEETable
// computes, faster on amd64 CPUs with AVX-512 VPCLMULQDQ.
//
// Why it exists: checking the ICRC of a 1 KB RoCEv2 frame was the
// largest single cost of tord's worker (BenchmarkWorkerForwardParts: about
// 58 ns of the 130 ns of BenchmarkWorkerForward/plain, 2026-11-29, AMD EPYC
// 2 vCPU, go1.26.8; docs/performance.md "Why not half"). hash/crc32's
// amd64 kernel folds 64 bytes a loop with 128-bit PCLMULQDQ into four
// accumulators, and from 1024 bytes with 512-bit VPCLMULQDQ into one: one
// accumulator makes each 64-byte step wait for the previous step's
// multiply. The kernel here (crc_amd64.s) keeps four 512-bit accumulators,
// 256 bytes a loop, so the multiplies of a loop are independent and it
// runs at the multiplier's throughput rather than its latency, from 256
// bytes on. DPDK ships an AVX-512 VPCLMULQDQ CRC (lib/net/net_crc_avx512.c)
// for the same reason; the folding is Intel's ("Fast CRC Computation for
// Generic Polynomials Using PCLMULQDQ Instruction", 2009), with the fold
// constants computed at init (foldTab) and checked against hash/crc32's.
//
// CheckMasked is the ICRC check itself: the CRC of a message whose first
// 64 bytes are ORed with a mask (the fields a router may change, set to
// ones), compared with the residue a message carrying its own CRC
// leaves. Its kernel (updateMasked) masks in a register and pads the
// last block with zeros in a register, so rocev2 need not write the
// frame, and folds all four accumulators' lanes straight into 96 bits
// before a two-multiply Barrett reduction. It needs AVX-512 BW and VBMI
// too (VPERMB), which every CPU with AVX-512 VPCLMULQDQ has.
//
// It is the one package with assembly outside afxdp and bpf, which the
// house rules (STYLE.md, rule 1) keep unsafe code and raw syscalls in.
// It deviates because the cost it removes is in every verified packet
// and no Go code reaches it (Go has no carry-less multiply intrinsic);
// it keeps the deviation small: two functions, no unsafe in Go code, its
// arguments checked by go vet's asmdecl, and everything it does not
// handle (short inputs, other CPUs and architectures, the up to 15
// bytes after the last 16-byte block) goes to hash/crc32 or Slicing8.
// UseWide(false) forces the hash/crc32 path; the tests compare the two
// for every length up to 4200 bytes, at several alignments and seeds,
// and fuzz them (FuzzUpdate).
//
// Safe for concurrent use (UseWide aside); nothing to set up.
package crc
