package crc

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"
)

// MinWide is the shortest input Update hands to the AVX-512 kernel: its
// first step loads four 64-byte blocks. Shorter inputs go to hash/crc32.
const MinWide = 256

// Update returns the CRC-32 (IEEE, reflected) of p continued from crc,
// exactly what crc32.Update(crc, crc32.IEEETable, p) returns. Where the
// CPU has AVX-512 VPCLMULQDQ (wide) and p is at least MinWide long, the
// multiple of 16 bytes at its start runs through the 512-bit kernel and
// the up to 15 left through Slicing8; otherwise all of p goes to
// hash/crc32.
func Update(crc uint32, p []byte) uint32 {
	if wide && len(p) >= MinWide {
		n := len(p) &^ 15
		crc = ^updateWide(^crc, p[:n])
		if n == len(p) {
			return crc
		}
		return Slicing8(crc, p[n:])
	}
	return crc32.Update(crc, crc32.IEEETable, p)
}

// Wide reports whether Update uses the AVX-512 kernel.
func Wide() bool { return wide }

// UseWide turns the AVX-512 kernel off (false) or back on where the CPU
// has it (true), and returns the previous setting: tests and benchmarks
// run the hash/crc32 path with it. Not safe to call while Update runs.
func UseWide(on bool) (was bool) {
	was, wide = wide, on && hasWide
	return was
}

// foldTab holds the kernel's constants, read by crc_amd64.s at the byte
// offsets given there. A pair (fold(d)) folds a 128-bit lane of the
// reflected CRC state forward by d bytes: its low 64 bits are multiplied
// by x^(8d+32) mod P and its high 64 bits by x^(8d-32) mod P, each
// bit-reflected and shifted left by one (Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction",
// Intel 2009, section 4; hash/crc32's amd64 kernel uses the d = 64 and
// d = 16 pairs, 0x154442bd4/0x1c6e41596 and 0x1751997d0/0x0ccaa009e,
// which TestFoldConstants checks these against).
//
//	  0: fold(256) four times: the main loop, four 64-byte accumulators
//	 64: fold(192), 128: fold(128), 192: fold(64), each four times: the
//	     four accumulators into one, and the 64-byte loop after it
//	256: fold(48), fold(32), fold(16), 0: the four lanes of a 512-bit
//	     register into one (the last lane is kept, not multiplied)
//	320: fold(16): the 16-byte loop
//	336: x^64 mod P (reflected, << 1), 0; 352: the Barrett constants
//	     of hash/crc32 (rupoly: P' and mu')
var foldTab = func() (t [46]uint64) {
	rep := func(at, d int) {
		for i := 0; i < 4; i++ {
			t[at/8+2*i], t[at/8+2*i+1] = fold(d)
		}
	}
	rep(0, 256)
	rep(64, 192)
	rep(128, 128)
	rep(192, 64)
	t[32], t[33] = fold(48)
	t[34], t[35] = fold(32)
	t[36], t[37] = fold(16)
	t[40], t[41] = fold(16)
	t[42] = xnReflected(64)
	t[44], t[45] = 0x1db710641, 0x1f7011641
	return t
}()

// fold returns the constants that fold a 128-bit lane forward by d bytes.
func fold(d int) (lo, hi uint64) {
	return xnReflected(8*d + 32), xnReflected(8*d - 32)
}

// xnReflected returns x^n mod P for the CRC-32 polynomial P = 0x104c11db7,
// bit-reflected and shifted left by one, as the reflected carry-less
// multiply kernels use it.
func xnReflected(n int) uint64 {
	const p = 0x04c11db7
	r := uint32(1)
	for i := 0; i < n; i++ {
		top := r & 0x80000000
		r <<= 1
		if top != 0 {
			r ^= p
		}
	}
	return uint64(bits.Reverse32(r)) << 1
}

// slicing8 holds the eight tables of the slicing-by-8 CRC-32 (IEEE,
// reflected): slicing8[0] is the classic byte table, slicing8[k][i] the
// CRC of byte i followed by k zero bytes.
var slicing8 = func() (t [8][256]uint32) {
	t[0] = *crc32.MakeTable(crc32.IEEE)
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][i] = c
		}
	}
	return t
}()

// Slicing8 continues crc (as crc32.Update returns it) over h with a
// slicing-by-8 loop, for short inputs. Unlike crc32.Update and Update it
// lets a stack buffer stay on the stack.
func Slicing8(crc uint32, h []byte) uint32 {
	t := &slicing8
	c := ^crc
	for len(h) >= 8 {
		c ^= binary.LittleEndian.Uint32(h)
		c = t[7][c&0xff] ^ t[6][c>>8&0xff] ^ t[5][c>>16&0xff] ^ t[4][c>>24] ^
			t[3][h[4]] ^ t[2][h[5]] ^ t[1][h[6]] ^ t[0][h[7]]
		h = h[8:]
	}
	// The rest, under 8 bytes, in a 4-byte and a 2-byte step before the
	// last byte: each byte-wise step waits on the one before it, and the
	// up to 15 bytes rocev2's icrcOwned hands over were 4% of
	// BenchmarkWorkerForward/plain byte by byte (pprof, 2026-11-28).
	if len(h) >= 4 {
		c ^= binary.LittleEndian.Uint32(h)
		c = t[3][c&0xff] ^ t[2][c>>8&0xff] ^ t[1][c>>16&0xff] ^ t[0][c>>24]
		h = h[4:]
	}
	if len(h) >= 2 {
		c ^= uint32(binary.LittleEndian.Uint16(h))
		c = t[1][c&0xff] ^ t[0][c>>8&0xff] ^ c>>16
		h = h[2:]
	}
	if len(h) == 1 {
		c = t[0][byte(c)^h[0]] ^ c>>8
	}
	return ^c
}

// Residue is what Update returns over any bytes followed by their own
// CRC-32 in little-endian order, from any starting crc: a message that
// carries its CRC checks out when the CRC over it and the CRC field is
// this constant, with no separate comparison.
const Residue = 0x2144df1c

// zeroResidue[z] is what Update returns over a message that checks out
// (Residue) followed by z zero bytes: a zero byte shifts the CRC register
// and adds nothing, so that is a constant too. updateMasked pads with up
// to 63 zeros.
var zeroResidue = func() (t [64]uint32) {
	t[0] = Residue
	for z := 1; z < len(t); z++ {
		t[z] = Slicing8(t[z-1], []byte{0})
	}
	return t
}()

// CheckMasked reports whether p, with its first 64 bytes ORed with or,
// checks out from crc: whether Update(crc, p') == Residue for that p'.
// p is not written. It is how rocev2 checks an ICRC with the fields a
// router may change masked to ones without writing the frame; p must be
// at least 64 bytes long.
//
// Where Update has its AVX-512 kernel and p is at least MinWide long,
// the mask is applied to the first 64-byte block in a register and the
// pass is padded with zeros to a multiple of 64 bytes by a masked load
// of the last block (updateMasked); otherwise the first 64 bytes are
// masked in a copy on the stack and run through Slicing8, the rest
// through Update.
func CheckMasked(crc uint32, p []byte, or *[64]byte) bool {
	if wide && len(p) >= MinWide {
		return ^updateMasked(^crc, p, or) == zeroResidue[-len(p)&63]
	}
	var h [64]byte
	for i := 0; i < len(h); i += 8 {
		binary.LittleEndian.PutUint64(h[i:], binary.LittleEndian.Uint64(p[i:])|binary.LittleEndian.Uint64(or[i:]))
	}
	return Update(Slicing8(crc, h[:]), p[len(h):]) == Residue
}

// shiftTab[i] = i: updateMasked loads its VPERMB indexes from it.
var shiftTab = func() (t [128]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	return t
}()

// mergeTab holds updateMasked's constants for its last step (the byte
// offsets are crc_amd64.s's): 0-255, for each of the four accumulators
// in turn and each 128-bit lane D bytes before the end of the message,
// x^(8D+95) mod P and x^(8D+31) mod P, each bit-reflected into 64 bits
// (xnRev64), so that a lane's two products, read with x^0 at bit 127,
// add up to the lane's share of the message times x^32, mod P, in under
// 96 bits; 256: floor(x^96/P) without its x^64 term, divided by x and
// reflected, for the Barrett reduction of those 96 bits; 264: P - x^32,
// reflected.
var mergeTab = func() (t [34]uint64) {
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			d := (3-i)*64 + (3-j)*16
			t[8*i+2*j], t[8*i+2*j+1] = xnRev64(8*d+95), xnRev64(8*d+31)
		}
	}
	t[32] = barrettMu()
	t[33] = bits.Reverse64(0x04c11db7)
	return t
}()

// xnRev64 returns x^n mod P bit-reflected into 64 bits: the coefficient
// of x^j at bit 63-j.
func xnRev64(n int) uint64 {
	return xnReflected(n) >> 1 << 32
}

// barrettMu returns floor(x^96/P) - x^64, divided by x and reflected into
// 64 bits (x^j at bit 63-j): x^96 divided by P bit by bit, a 33-bit
// window of the remainder sliding down from x^96.
func barrettMu() uint64 {
	const p = 0x104c11db7
	var q uint64 // quotient coefficients x^63..x^0 (x^64's is 1)
	w := uint64(1) << 32
	for d := 96; d >= 32; d-- {
		if w>>32&1 != 0 {
			if d-32 < 64 {
				q |= 1 << (d - 32)
			}
			w ^= p
		}
		w <<= 1
	}
	if q&1 != 0 {
		panic("crc: floor(x^96/P) has an x^0 term")
	}
	return bits.Reverse64(q >> 1)
}
