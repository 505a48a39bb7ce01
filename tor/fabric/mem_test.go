package fabric

import (
	"runtime"
	"testing"
)

// TestFrameMemsOffHeap checks that the nodes' frame memories, reserved
// at tord's budgets, are neither on the Go heap (where a k = 16 fat
// tree's 94 GB set the collector's goal and were cleared on reuse) nor
// smaller than their budgets; that nodes with one frame size share an
// area, each in its own range; and that frames and free stacks work.
func TestFrameMemsOffHeap(t *testing.T) {
	const size = 2048
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	frames := []int{1 << 19, 1024, 512} // 1 GiB, then two small ones
	mems, err := frameMems(frames, []int{size, size, 4096}, []int{0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 16<<20 {
		t.Fatalf("the Go heap grew by %d bytes for %d frames", grew, frames[0])
	}
	for i, m := range mems {
		if m.Frames() != frames[i] || m.Free() != frames[i] {
			t.Fatalf("memory %d: %d frames, %d free, want %d", i, m.Frames(), m.Free(), frames[i])
		}
	}
	big, m, other := mems[0], mems[1], mems[2]
	if &big.Buf()[0] != &m.Buf()[0] || &m.Buf()[0] == &other.Buf()[0] {
		t.Fatal("nodes with one frame size must share an area, others not")
	}
	a, ok := big.Alloc()
	b, _ := m.Alloc()
	if !ok || a == b || len(big.Room(a)) != size {
		t.Fatalf("frames %d and %d of two ranges", a, b)
	}
	m.Release(b)
	// Every frame taken, written and given back: the stack holds them
	// all in the mapping, and they come back most recent first.
	addrs := make([]uint64, 0, frames[1])
	for {
		a, ok := m.Alloc()
		if !ok {
			break
		}
		m.Room(a)[0], m.Room(a)[size-1] = byte(a>>11), 1
		addrs = append(addrs, a)
	}
	if len(addrs) != frames[1] {
		t.Fatalf("allocated %d frames of %d", len(addrs), frames[1])
	}
	for _, a := range addrs {
		m.Release(a)
	}
	if a, _ := m.Alloc(); a != addrs[len(addrs)-1] || m.Room(a)[0] != byte(a>>11) {
		t.Fatalf("got frame %d, want the last released, %d, with its bytes", a, addrs[len(addrs)-1])
	}
	runtime.KeepAlive(mems)
}

// TestFrameSlots checks that the nodes' frames are the MTU and the most
// a frame adds to it (frameRoom: headers, INT tail with HPCC, llr shim)
// rounded up to 64 bytes, not tord's power of two, and that a
// memory of such frames hands out whole, disjoint frames.
func TestFrameSlots(t *testing.T) {
	for _, c := range []struct {
		mtu, size int
		cc        string
		want      int
	}{
		{1024, 2048, "hpcc", 1280}, {256, 2048, "hpcc", 512}, {512, 2048, "hpcc", 768}, {4096, 4096, "hpcc", 4096},
		{1024, 4096, "hpcc", 1280}, {1024, 2048, "none", 1152}, {1024, 2048, "dcqcn", 1152}, {256, 2048, "none", 384},
	} {
		n := &Network{Opts: Options{MTU: c.mtu, CC: c.cc}}
		if got := n.slot(c.size); got != c.want {
			t.Errorf("MTU %d, %d-byte frames, cc %s: slot %d, want %d", c.mtu, c.size, c.cc, got, c.want)
		}
	}
	n := &Network{Opts: Options{MTU: 1024}}
	size := n.slot(hostFrameSize)
	mems, err := frameMems([]int{8, 8}, []int{size, size}, []int{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, m := range mems {
		for {
			a, ok := m.Alloc()
			if !ok {
				break
			}
			if a%uint64(size) != 0 || seen[a] || len(m.Room(a)) != size {
				t.Fatalf("frame at %d: not a whole %d-byte frame of its own", a, size)
			}
			seen[a] = true
			m.Room(a)[size-1] = 1
		}
	}
	if len(seen) != 16 {
		t.Fatalf("%d frames, want 16", len(seen))
	}
	runtime.KeepAlive(mems)
}

// TestFramePool checks that the nodes of one partition draw their frames
// from one pool (frameArea): frames one node freed are the next another
// takes, so a run touches the most its nodes held at once; and that a
// node of another partition, another goroutine's, never gets them.
func TestFramePool(t *testing.T) {
	const size = 1280
	mems, err := frameMems([]int{64, 64, 64}, []int{size, size, size}, []int{0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b, other := mems[0], mems[1], mems[2]
	used := map[uint64]bool{}
	var got []uint64
	for range 64 {
		x, ok := a.Alloc()
		if !ok {
			t.Fatal("a node could not take its budget")
		}
		used[x] = true
		got = append(got, x)
	}
	if _, ok := a.Alloc(); ok {
		t.Fatal("a node took more than its budget")
	}
	for _, x := range got {
		a.Release(x)
	}
	for range 64 {
		if x, _ := b.Alloc(); !used[x] {
			t.Fatalf("the partition's second node took frame %d, not one the first freed: its frames touch new pages", x)
		}
	}
	for range 64 {
		if x, _ := other.Alloc(); used[x] {
			t.Fatalf("a node of another partition took frame %d of the first's pool", x)
		}
	}
	runtime.KeepAlive(mems)
}
