package crc_test

import (
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"rocetor/rocev2/crc"
)

// TestFoldConstants checks the generator against the constants hash/crc32's
// amd64 kernel hard-codes: the 64- and 16-byte folds and x^64 mod P.
func TestFoldConstants(t *testing.T) {
	for _, c := range []struct {
		d      int
		lo, hi uint64
	}{{64, 0x154442bd4, 0x1c6e41596}, {16, 0x1751997d0, 0x0ccaa009e}} {
		if lo, hi := crc.Fold(c.d); lo != c.lo || hi != c.hi {
			t.Errorf("fold(%d) = %#x, %#x, want %#x, %#x", c.d, lo, hi, c.lo, c.hi)
		}
	}
	if got := crc.XnReflected(64); got != 0x163cd6124 {
		t.Errorf("x^64 = %#x, want 0x163cd6124", got)
	}
	// updateMasked's Barrett constants: floor(x^96/P) - x^64, over x and
	// reflected (Linux's crc-pclmul-template has floor(x^95/P) reflected,
	// 0xb4e5b025f7011641, the same bits shifted by one), and P - x^32
	// reflected (hash/crc32's 0xedb88320 in the top half).
	if m := crc.MergeTab; m[32] != 0xb4e5b025f7011640 || m[33] != 0xedb88320<<32 {
		t.Errorf("Barrett constants %#x, %#x", m[32], m[33])
	}
}

// paths runs f with Update on the wide kernel (where the CPU has it) and
// on hash/crc32.
func paths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	defer crc.UseWide(crc.UseWide(false))
	for _, w := range []bool{true, false} {
		if crc.UseWide(w); crc.Wide() != w {
			t.Log("no AVX-512 VPCLMULQDQ: wide path not run")
			continue
		}
		name := "crc32"
		if w {
			name = "wide"
		}
		t.Run(name, f)
	}
}

// TestUpdate compares Update with hash/crc32 for every length from 0 to
// 4200, at several alignments of the input and several seeds.
func TestUpdate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4200+64)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	paths(t, func(t *testing.T) {
		for _, off := range []int{0, 1, 7, 16, 33, 63} {
			for _, seed := range []uint32{0, 0xffffffff, 0x12345678} {
				for n := 0; n <= 4200; n++ {
					p := buf[off : off+n]
					want := crc32.Update(seed, crc32.IEEETable, p)
					if got := crc.Update(seed, p); got != want {
						t.Fatalf("len %d off %d seed %#x: %#x, want %#x", n, off, seed, got, want)
					}
				}
			}
		}
	})
}

// TestUpdateBits flips each single bit of a 1 KB input: the wide kernel
// must see every bit of every lane.
func TestUpdateBits(t *testing.T) {
	p := make([]byte, 1024)
	paths(t, func(t *testing.T) {
		for i := 0; i < len(p)*8; i++ {
			p[i/8] ^= 1 << (i % 8)
			want := crc32.ChecksumIEEE(p)
			if got := crc.Update(0, p); got != want {
				t.Fatalf("bit %d: %#x, want %#x", i, got, want)
			}
			p[i/8] ^= 1 << (i % 8)
		}
	})
}

// TestSlicing8 compares Slicing8 with hash/crc32 for short inputs.
func TestSlicing8(t *testing.T) {
	p := make([]byte, 100)
	for i := range p {
		p[i] = byte(i*7 + 3)
	}
	for n := 0; n <= len(p); n++ {
		for _, seed := range []uint32{0, 0xdeadbeef} {
			if got, want := crc.Slicing8(seed, p[:n]), crc32.Update(seed, crc32.IEEETable, p[:n]); got != want {
				t.Fatalf("len %d seed %#x: %#x, want %#x", n, seed, got, want)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	p := make([]byte, 1024)
	if n := testing.AllocsPerRun(100, func() { crc.Update(0, p) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzUpdate(f *testing.F) {
	f.Add(uint32(0), []byte("123456789"))
	f.Add(uint32(0xffffffff), make([]byte, 300))
	f.Add(uint32(7), make([]byte, 1031))
	f.Fuzz(func(t *testing.T, seed uint32, p []byte) {
		want := crc32.Update(seed, crc32.IEEETable, p)
		if got := crc.Update(seed, p); got != want {
			t.Fatalf("len %d: %#x, want %#x", len(p), got, want)
		}
	})
}

// BenchmarkUpdate measures Update against crc32.Update at the lengths
// rocev2's ICRC check runs:
//
//	go test -run '^$' -bench Update -count 8 ./rocev2/crc/ > /tmp/crc.txt
//	benchstat -col /kernel /tmp/crc.txt
func BenchmarkUpdate(b *testing.B) {
	p := make([]byte, 4096)
	for _, n := range []int{256, 512, 1008, 1024, 4096} {
		b.Run(fmtLen("wide", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc.Update(0, p[:n])
			}
		})
		b.Run(fmtLen("crc32", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				crc32.Update(0, crc32.IEEETable, p[:n])
			}
		})
	}
}

func fmtLen(s string, n int) string { return "kernel=" + s + "/len=" + strconv.Itoa(n) }

// TestCheckMasked checks CheckMasked against hash/crc32 over the masked
// copy for every length from 64 to 2100 bytes, at several offsets, with
// a random mask over the first 60 bytes: a message that carries its CRC
// checks out, one with a flipped bit that the mask does not cover does
// not. It also places messages so that their last 64 bytes straddle a
// page boundary, where updateMasked must not read past the end.
func TestCheckMasked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	buf := make([]byte, 3*4096)
	for i := range buf {
		buf[i] = byte(r.Uint32())
	}
	var or [64]byte
	for i := range or[:60] {
		if r.IntN(5) == 0 {
			or[i] = byte(r.Uint32())
		}
	}
	check := func(t *testing.T, p []byte) {
		t.Helper()
		n := len(p)
		m := append([]byte(nil), p...)
		for i := range or {
			m[i] |= or[i]
		}
		seed := r.Uint32()
		c := crc32.Update(seed, crc32.IEEETable, m[:n-4])
		p[n-4], p[n-3], p[n-2], p[n-1] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		if !crc.CheckMasked(seed, p, &or) {
			t.Fatalf("n %d: valid message does not check out", n)
		}
		i, bit := r.IntN(n), byte(1)<<r.IntN(8)
		for i < len(or) && or[i]&bit != 0 {
			i, bit = r.IntN(n), byte(1)<<r.IntN(8)
		}
		p[i] ^= bit
		if crc.CheckMasked(seed, p, &or) {
			t.Fatalf("n %d: bit %#x of byte %d flipped, still checks out", n, bit, i)
		}
		p[i] ^= bit
	}
	paths(t, func(t *testing.T) {
		for n := 64; n <= 2100; n++ {
			for _, off := range []int{0, 3, 14, 63} {
				check(t, buf[off:off+n])
			}
		}
		page := 4096 - int(uintptr(unsafe.Pointer(&buf[0]))&4095)
		for end := page + 4096 - 70; end <= page+4096+70; end++ {
			for _, n := range []int{256, 300, 988, 1000} {
				// Capacity ends with the message: nothing after it may be read.
				check(t, buf[end-n:end:end])
			}
		}
	})
}

func TestCheckMaskedAllocs(t *testing.T) {
	p := make([]byte, 1024)
	var or [64]byte
	paths(t, func(t *testing.T) {
		if n := testing.AllocsPerRun(100, func() { crc.CheckMasked(0, p, &or) }); n != 0 {
			t.Fatalf("%v allocations", n)
		}
	})
}

func FuzzCheckMasked(f *testing.F) {
	f.Add(uint32(0), make([]byte, 64), make([]byte, 300))
	f.Add(uint32(7), []byte{1, 0xff, 2}, make([]byte, 1031))
	f.Fuzz(func(t *testing.T, seed uint32, mask, p []byte) {
		if len(p) < 64 {
			return
		}
		var or [64]byte
		copy(or[:], mask)
		m := append([]byte(nil), p...)
		for i := range or {
			m[i] |= or[i]
		}
		want := crc32.Update(seed, crc32.IEEETable, m) == crc.Residue
		defer crc.UseWide(crc.UseWide(true))
		for _, w := range []bool{true, false} {
			crc.UseWide(w)
			if got := crc.CheckMasked(seed, p, &or); got != want {
				t.Fatalf("wide %v, len %d: %v, want %v", crc.Wide(), len(p), got, want)
			}
		}
	})
}

func BenchmarkCheckMasked(b *testing.B) {
	p := make([]byte, 4096)
	var or [64]byte
	for _, n := range []int{988, 1024} {
		b.Run(fmtLen("wide", n), func(b *testing.B) {
			for b.Loop() {
				crc.CheckMasked(0, p[:n], &or)
			}
		})
	}
}
