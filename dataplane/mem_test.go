package dataplane

import (
	"math/rand/v2"
	"slices"
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

// TestPooledMems checks Mems that draw on one pool (NewPooledMems): each
// holds at most its budget, whatever the pool has free; a frame one
// frees is the next any of them takes, so together they touch only the
// most they held at once; and Frames, Free and InUse count each Mem's
// own, as NewMemAt's would.
func TestPooledMems(t *testing.T) {
	const size = 1152
	buf := make([]byte, 16*size)
	ms, err := NewPooledMems(buf, size, 2, []int{3, 5}, make([]uint64, 0, 8))
	if err != nil {
		t.Fatal(err)
	}
	a, b := ms[0], ms[1]
	var got []uint64
	for {
		x, ok := a.Alloc()
		if !ok {
			break
		}
		got = append(got, x)
	}
	if len(got) != 3 || a.InUse() != 3 || a.Free() != 0 || a.Frames() != 3 || b.Free() != 5 {
		t.Fatalf("the first Mem took %d frames (in use %d, free %d of %d; the other %d free), want its budget of 3",
			len(got), a.InUse(), a.Free(), a.Frames(), b.Free())
	}
	for _, x := range got {
		if x < 2*size || x >= 10*size || x%size != 0 {
			t.Fatalf("frame at %d: outside the pool's frames [2, 10) of %d bytes", x, size)
		}
	}
	// Freed by one, taken by the other, most recent first: nothing new
	// is touched.
	a.Release(got[0] + 10)
	a.Release(got[2])
	if x, _ := b.Alloc(); x != got[2] {
		t.Fatalf("the other Mem took frame %d, want %d, the last freed", x, got[2])
	}
	if x, _ := b.Alloc(); x != got[0] {
		t.Fatalf("the other Mem took frame %d, want %d", x, got[0])
	}
	if a.InUse() != 1 || a.Free() != 2 || b.InUse() != 2 || b.Free() != 3 {
		t.Fatalf("in use %d and %d, free %d and %d; want 1 and 2, 2 and 3", a.InUse(), b.InUse(), a.Free(), b.Free())
	}
	// A simulator's trade (dataplane/sim): a's frame got[1] moves to b,
	// which takes a free frame for it and gives that to a.
	y, _ := b.Alloc()
	a.Release(y)
	if a.InUse() != 0 || b.InUse() != 3 {
		t.Fatalf("after the trade in use %d and %d, want 0 and 3", a.InUse(), b.InUse())
	}
	b.Release(got[1])
	if x, _ := a.Alloc(); x != got[1] {
		t.Fatalf("took %d, want %d", x, got[1])
	}
	for _, c := range []struct {
		first   int
		budgets []int
		stack   int
	}{{0, []int{0}, 4}, {0, []int{4, 4}, 7}, {10, []int{4, 4}, 8}, {-1, []int{1}, 1}} {
		if _, err := NewPooledMems(buf, size, c.first, c.budgets, make([]uint64, 0, c.stack)); err == nil {
			t.Errorf("budgets %v from frame %d with a stack of %d accepted", c.budgets, c.first, c.stack)
		}
	}
}

// TestReleasePackets checks that Mem.releasePackets leaves a Mem as
// Release of each frame in turn does: the same free stack, in the same
// order (what Alloc hands out next, which a simulator's runs repeat
// by), and the same count in use, for frame sizes with and without a
// mask, and offsets into the frames.
func TestReleasePackets(t *testing.T) {
	for _, size := range []int{2048, 1536} {
		var mems [2]*Mem
		var pkts []Packet
		for k := range mems {
			m, err := NewMem(make([]byte, 64*size), size)
			if err != nil {
				t.Fatal(err)
			}
			mems[k] = m
			pkts = pkts[:0]
			for i := 0; i < 40; i++ {
				addr, _ := m.Alloc()
				pkts = append(pkts, Packet{Addr: addr + uint64(i%3)*64})
			}
		}
		mems[0].releasePackets(pkts[5:37])
		for i := 5; i < 37; i++ {
			mems[1].Release(pkts[i].Addr)
		}
		if a, b := mems[0], mems[1]; a.InUse() != b.InUse() || len(a.free) != len(b.free) {
			t.Fatalf("size %d: %d in use, %d free; Release leaves %d, %d", size, a.InUse(), len(a.free), b.InUse(), len(b.free))
		}
		for i := range mems[1].free {
			if mems[0].free[i] != mems[1].free[i] {
				t.Fatalf("size %d: free[%d] = %d, Release leaves %d", size, i, mems[0].free[i], mems[1].free[i])
			}
		}
	}
}

// TestReleasePacketsShared is TestReleasePackets for SharedMems: worker
// 0 releases, in one pass, frames of its own range and of worker 1's
// (transmitted for it), and both Mems end as Release of each left them,
// worker 1's frames back on its free stack once it reclaims them.
func TestReleasePacketsShared(t *testing.T) {
	var got [2][2]*Mem // [run][worker]
	for run := range got {
		h, err := NewHandoff(2, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ms, err := SharedMems(make([]byte, 2*64*2048), 2048, h)
		if err != nil {
			t.Fatal(err)
		}
		var pkts []Packet
		for i := range 40 {
			addr, _ := ms[i%3%2].Alloc() // two of worker 0's, one of worker 1's
			pkts = append(pkts, Packet{Addr: addr + uint64(i%5)*64})
		}
		if run == 0 {
			ms[0].releasePackets(pkts[3:35])
		} else {
			for i := 3; i < 35; i++ {
				ms[0].Release(pkts[i].Addr)
			}
		}
		ms[0].flushBack()
		ms[1].reclaim()
		got[run] = [2]*Mem{ms[0], ms[1]}
	}
	for w := range 2 {
		a, b := got[0][w], got[1][w]
		if a.InUse() != b.InUse() || !slices.Equal(a.free, b.free) {
			t.Errorf("worker %d: %d in use, free %v; Release leaves %d, %v", w, a.InUse(), a.free, b.InUse(), b.free)
		}
	}
	// Worker 1's frames are packets 1, 4, …, 37: 1 and 37 were not
	// released.
	if n := got[0][1].InUse(); n != 2 {
		t.Errorf("worker 1 has %d frames in use, want 2", n)
	}
}

// A held frame outlives its owner's release and goes back to the memory
// with its holder's, through Release and a port's releasePackets alike;
// a Mem that did not make room for holds refuses them; and Held tells a
// link that trades frames to copy this one.
func TestMemHolds(t *testing.T) {
	m, err := NewMem(make([]byte, 8*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Alloc()
	if m.Hold(a) {
		t.Fatal("Hold before EnableHolds")
	}
	m.EnableHolds()
	b, _ := m.Alloc()
	if !m.Hold(a+256) || !m.Held(a) || m.Held(b) || m.Shared() != 1 {
		t.Fatalf("held %v %v, shared %d", m.Held(a), m.Held(b), m.Shared())
	}
	m.releasePackets([]Packet{{Addr: a + 256}, {Addr: b}})
	if m.InUse() != 1 || m.Held(a) || m.Shared() != 0 {
		t.Fatalf("after the owner's release: %d in use, held %v, shared %d", m.InUse(), m.Held(a), m.Shared())
	}
	m.Release(a)
	if m.InUse() != 0 || m.Free() != 8 {
		t.Fatalf("after the holder's release: %d in use, %d free", m.InUse(), m.Free())
	}
	c, _ := m.Alloc()
	for i := range 255 {
		if !m.Hold(c) {
			t.Fatalf("hold %d refused", i+1)
		}
	}
	if m.Hold(c) {
		t.Fatal("a 256th holder taken")
	}
	for range 256 {
		m.Release(c)
	}
	if m.InUse() != 0 || m.Shared() != 0 {
		t.Fatalf("after 256 releases: %d in use, %d shared", m.InUse(), m.Shared())
	}

	// Pooled Mems (the simulator's) count holds over their pool's
	// frames, which any of them may hand out.
	ms, err := NewPooledMems(make([]byte, 16*1152), 1152, 4, []int{4, 8}, make([]uint64, 0, 12))
	if err != nil {
		t.Fatal(err)
	}
	ms[1].EnableHolds()
	var got []uint64
	for {
		a, ok := ms[1].Alloc()
		if !ok {
			break
		}
		got = append(got, a)
	}
	for _, a := range got {
		if !ms[1].Hold(a + 100) {
			t.Fatalf("frame %d of the pool not held", a)
		}
		ms[1].Release(a)
	}
	if ms[1].InUse() != len(got) || ms[0].Held(got[0]) {
		t.Fatalf("%d in use after the owners' releases, want %d; another Mem sees a hold", ms[1].InUse(), len(got))
	}
	for _, a := range got {
		ms[1].Release(a)
	}
	if ms[1].InUse() != 0 || ms[1].Shared() != 0 {
		t.Fatalf("%d in use, %d shared", ms[1].InUse(), ms[1].Shared())
	}
}
