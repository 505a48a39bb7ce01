package crc_test

import (
	"hash/crc32"
	"math/rand/v2"
	"strconv"
	"testing"

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
