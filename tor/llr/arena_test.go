package llr

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestArenaPos: a ring whose size is a power of two finds positions by
// its mask, others by division; both agree with the division and the
// records read back intact through wraps and skipped tails. Once empty
// the next record lies at buf[0] (base moves), and some records wrap
// round buf's end, which read puts together.
func TestArenaPos(t *testing.T) {
	for _, size := range []int{4096, 3000} {
		a := newArena(size, 16)
		if (a.mask != 0) != (size == 4096) {
			t.Fatalf("size %d: mask %#x", size, a.mask)
		}
		rng := rand.New(rand.NewPCG(3, 4))
		var held []uint32
		var want [][]byte
		wrapped, rewound := 0, 0
		for i := range 2000 {
			if len(held) > 0 && (rng.IntN(2) == 0 || len(held) == 16) {
				got := make([]byte, a.length(held[0]))
				if a.read(held[0], got) != len(got) || !bytes.Equal(got, want[0]) {
					t.Fatalf("size %d step %d: record %d changed", size, i, held[0])
				}
				a.free(held[0])
				held, want = held[1:], want[1:]
				continue
			}
			f := bytes.Repeat([]byte{byte(i)}, 60+rng.IntN(900))
			empty := a.records() == 0
			if h, ok := a.put(f); ok {
				if _, ok := a.get(h); !ok {
					wrapped++
				}
				if r := a.rec[h&uint32(len(a.rec)-1)]; empty && r.off == a.base {
					rewound++
				}
				if b, ok := a.get(h); ok && !bytes.Equal(b, f) {
					t.Fatalf("size %d: get of a fresh record differs", size)
				}
				if r := a.rec[h&uint32(len(a.rec)-1)]; a.pos(r.off) != r.off%uint64(size) {
					t.Fatalf("size %d: pos(%d) = %d", size, r.off, a.pos(r.off))
				}
				held, want = append(held, h), append(want, f)
			}
			if a.span() > size {
				t.Fatalf("size %d: span %d over budget", size, a.span())
			}
		}
		if wrapped == 0 || rewound < 100 {
			t.Fatalf("size %d: %d records wrapped, %d put at buf[0] once empty", size, wrapped, rewound)
		}
	}
}
