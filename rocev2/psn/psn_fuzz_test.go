package psn

import (
	"math"
	"testing"
)

// wrapInto reduces n modulo 2^bits into the signed range [-2^(bits-1),
// 2^(bits-1)), the slow way, with 64-bit arithmetic that cannot overflow.
func wrapInto(n int64, bits uint) int64 {
	m := int64(1) << bits
	r := ((n % m) + m) % m
	if r >= m/2 {
		r -= m
	}
	return r
}

// FuzzPSN checks Add, Diff, Less, LessEq and InWindow against each other
// and against plain modular arithmetic.
func FuzzPSN(f *testing.F) {
	f.Add(uint32(0), uint32(0), 0, 0)
	f.Add(uint32(Mask), uint32(0), 1, 1)
	f.Add(uint32(1<<23), uint32(0), -(1 << 23), 1<<24)
	f.Add(uint32(0xffffffff), uint32(12345), math.MinInt, math.MaxInt)
	f.Add(uint32(5), uint32(Mask-4), 1<<32+7, 1<<32+1)
	f.Fuzz(func(t *testing.T, a, b uint32, n, w int) {
		p, q := New(a), New(b)
		if uint32(p) != a&Mask || uint32(q) > Mask {
			t.Fatalf("New(%#x) = %#x", a, p)
		}
		d := q.Diff(p)
		if int64(d) != wrapInto(int64(b&Mask)-int64(a&Mask), Bits) {
			t.Fatalf("%d.Diff(%d) = %d", q, p, d)
		}
		if p.Add(d) != q {
			t.Fatalf("%d.Add(%d.Diff(%d)) = %d", p, q, p, p.Add(d))
		}
		if d != -(1<<(Bits-1)) && p.Diff(q) != -d {
			t.Fatalf("Diff is not antisymmetric: %d and %d", d, p.Diff(q))
		}
		if p.Less(q) != (p.Diff(q) < 0) || p.LessEq(q) != (p.Diff(q) <= 0) || p.Less(p) || !p.LessEq(p) {
			t.Fatalf("Less/LessEq disagree with Diff for %d, %d", p, q)
		}
		r := p.Add(n)
		if uint32(r) > Mask || int64(r.Diff(p)) != wrapInto(int64(n), Bits) {
			t.Fatalf("%d.Add(%d) = %d, Diff back %d", p, n, r, r.Diff(p))
		}
		if r.Add(-n) != p {
			t.Fatalf("%d.Add(%d).Add(%d) = %d", p, n, -n, r.Add(-n))
		}
		// InWindow(base, w): the forward distance from base is below w.
		fwd := (int64(b&Mask) - int64(a&Mask) + 1<<Bits) % (1 << Bits)
		if want := w > 0 && fwd < int64(w); q.InWindow(p, w) != want {
			t.Fatalf("%d.InWindow(%d, %d) = %v, want %v", q, p, w, !want, want)
		}
	})
}

// FuzzLink does the same for the 17-bit link sequence and its wire parts.
func FuzzLink(f *testing.F) {
	f.Add(uint16(0xffff), false, uint16(0), true, 1)
	f.Add(uint16(0), true, uint16(0xffff), false, -1)
	f.Add(uint16(0x4000), true, uint16(0xc000), false, 1<<16)
	f.Add(uint16(7), false, uint16(7), false, math.MinInt)
	f.Fuzz(func(t *testing.T, s1 uint16, e1 bool, s2 uint16, e2 bool, n int) {
		l, m := LinkOf(s1, e1), LinkOf(s2, e2)
		if l.Seq() != s1 || l.Era() != e1 {
			t.Fatalf("LinkOf(%#x, %v) reads back %#x %v", s1, e1, l.Seq(), l.Era())
		}
		val := func(s uint16, e bool) int64 {
			if e {
				return int64(s) + 1<<16
			}
			return int64(s)
		}
		d := m.Diff(l)
		if int64(d) != wrapInto(val(s2, e2)-val(s1, e1), LinkBits) || l.Add(d) != m {
			t.Fatalf("%#x.Diff(%#x) = %d", m, l, d)
		}
		if d != -(1<<(LinkBits-1)) && l.Diff(m) != -d {
			t.Fatalf("Diff is not antisymmetric: %d and %d", d, l.Diff(m))
		}
		if l.Less(m) != (l.Diff(m) < 0) || l.Less(l) {
			t.Fatalf("Less disagrees with Diff")
		}
		r := l.Add(n)
		if int64(r.Diff(l)) != wrapInto(int64(n), LinkBits) || r.Add(-n) != l || uint32(r) >= 1<<LinkBits {
			t.Fatalf("%#x.Add(%d) = %#x", l, n, r)
		}
		// One step past 0xffff toggles the era.
		if l.Seq() == 0xffff && (l.Add(1).Era() == l.Era() || l.Add(1).Seq() != 0) {
			t.Fatalf("%#x.Add(1) = %#x: the era must toggle", l, l.Add(1))
		}
	})
}
