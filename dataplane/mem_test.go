package dataplane

import (
	"math/rand/v2"
	"testing"
)

// TestMemStart checks the multiplication that aligns an address down to
// its frame against a division, for every frame size Mem takes, at frame
// boundaries and at random addresses up to the largest area.
func TestMemStart(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for size := 256; size <= 1<<16; size += 64 {
		m, err := NewMemAt(make([]byte, size), size, 0, 1, make([]uint64, 0, 1))
		if err != nil {
			t.Fatal(err)
		}
		d := uint64(size)
		check := func(a uint64) {
			if got, want := m.start(a), a/d*d; got != want {
				t.Fatalf("size %d: start(%d) = %d, want %d", size, a, got, want)
			}
		}
		for _, k := range []uint64{0, 1, 2, 1 << 20, (maxArea - 1) / d} {
			check(k * d)
			check(k*d + d - 1)
			if k > 0 {
				check(k*d - 1)
			}
		}
		for range 200 {
			check(r.Uint64N(maxArea))
		}
	}
}

// TestMemOddFrames runs a Mem of 1,152-byte frames (an MTU of 1,024 and
// its headers, tor/fabric): frames are 1,152 bytes apart, a frame's bytes
// end at its end, and an address inside a frame releases the frame.
func TestMemOddFrames(t *testing.T) {
	const size = 1152
	m, err := NewMem(make([]byte, 4*size), size)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for {
		a, ok := m.Alloc()
		if !ok {
			break
		}
		got = append(got, a)
	}
	if len(got) != 4 {
		t.Fatalf("allocated %d frames, want 4", len(got))
	}
	for _, a := range got {
		if a%size != 0 {
			t.Errorf("frame at %d is not on a %d-byte boundary", a, size)
		}
		if c := cap(m.Bytes(a+100, 10)); c != size-100 {
			t.Errorf("frame %d: bytes from offset 100 have room %d, want %d", a, c, size-100)
		}
		if r := len(m.Room(a + 64)); r != size-64 {
			t.Errorf("frame %d: room from offset 64 is %d, want %d", a, r, size-64)
		}
		if o := m.Offset(a + 300); o != 300 {
			t.Errorf("frame %d: offset %d, want 300", a, o)
		}
	}
	m.Release(got[2] + 700)
	if a, ok := m.Alloc(); !ok || a != got[2] {
		t.Errorf("released frame %d from inside it, then allocated %d (ok %v)", got[2], a, ok)
	}
	for _, bad := range []int{200, 1000, 1<<16 + 64} {
		if _, err := NewMem(make([]byte, 4096), bad); err == nil {
			t.Errorf("frame size %d accepted", bad)
		}
	}
}
