package fabric

import (
	"runtime"
	"testing"
)

// TestFrameMemOffHeap checks that a node's frame memory, reserved at
// tord's budget, is neither on the Go heap (where a k = 16 fat tree's
// 94 GB set the collector's goal and were cleared on reuse) nor smaller
// than its budget, and that its frames and free stack work.
func TestFrameMemOffHeap(t *testing.T) {
	const size = 2048
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	big, err := frameMem(1<<19, size) // 1 GiB
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapSys) - int64(before.HeapSys); grew > 16<<20 {
		t.Fatalf("the Go heap grew by %d bytes for %d frames", grew, big.Frames())
	}
	if a, ok := big.Alloc(); !ok || len(big.Room(a)) != size {
		t.Fatal("no frame from a large memory")
	}
	runtime.KeepAlive(big)
	const frames = 1024
	m, err := frameMem(frames, size)
	if err != nil {
		t.Fatal(err)
	}
	if m.Frames() != frames || m.Free() != frames || m.FrameSize() != size {
		t.Fatalf("frames %d free %d size %d, want %d, %d, %d", m.Frames(), m.Free(), m.FrameSize(), frames, frames, size)
	}
	// Every frame taken, written and given back: the stack holds them
	// all in the mapping, and they come back most recent first.
	addrs := make([]uint64, 0, frames)
	for {
		a, ok := m.Alloc()
		if !ok {
			break
		}
		m.Room(a)[0], m.Room(a)[size-1] = byte(a>>11), 1
		addrs = append(addrs, a)
	}
	if len(addrs) != frames {
		t.Fatalf("allocated %d frames of %d", len(addrs), frames)
	}
	for _, a := range addrs {
		m.Release(a)
	}
	if a, _ := m.Alloc(); a != addrs[len(addrs)-1] || m.Room(a)[0] != byte(a>>11) {
		t.Fatalf("got frame %d, want the last released, %d, with its bytes", a, addrs[len(addrs)-1])
	}
	runtime.KeepAlive(m)
}
