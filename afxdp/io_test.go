package afxdp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// fakeSocket is a Socket whose four rings live in Go memory, for testing
// the batch helpers without a kernel.
type fakeSocket struct {
	*Socket
	rx, tx, fill, comp *fakeRing
}

func newFakeSocket(size uint32) *fakeSocket {
	f := &fakeSocket{Socket: &Socket{needWakeup: true},
		rx: newFakeRing(size, 16, nearWrap), tx: newFakeRing(size, 16, nearWrap),
		fill: newFakeRing(size, 8, nearWrap), comp: newFakeRing(size, 8, nearWrap)}
	r := &f.rings
	r.Rx.setup(f.rx.mem, f.rx.off, size)
	r.Rx.descs = entries[Desc](f.rx.mem, f.rx.off, size)
	r.Tx.setup(f.tx.mem, f.tx.off, size)
	r.Tx.descs = entries[Desc](f.tx.mem, f.tx.off, size)
	r.Fill.setup(f.fill.mem, f.fill.off, size)
	r.Fill.addrs = entries[uint64](f.fill.mem, f.fill.off, size)
	r.Completion.setup(f.comp.mem, f.comp.off, size)
	r.Completion.addrs = entries[uint64](f.comp.mem, f.comp.off, size)
	return f
}

// loop plays a kernel that receives every filled frame (as a 64-byte
// frame) and completes every transmitted one.
func (f *fakeSocket) loop(size uint32) {
	fa := entries[uint64](f.fill.mem, f.fill.off, size)
	rd := entries[Desc](f.rx.mem, f.rx.off, size)
	for f.fill.cons() != f.fill.prod() && f.rx.prod()-f.rx.cons() < size {
		c, p := f.fill.cons(), f.rx.prod()
		rd[p&(size-1)] = Desc{Addr: fa[c&(size-1)] + 256, Len: 64}
		f.fill.setCons(c + 1)
		f.rx.setProd(p + 1)
	}
	td := entries[Desc](f.tx.mem, f.tx.off, size)
	ca := entries[uint64](f.comp.mem, f.comp.off, size)
	for f.tx.cons() != f.tx.prod() && f.comp.prod()-f.comp.cons() < size {
		c, p := f.tx.cons(), f.comp.prod()
		ca[p&(size-1)] = td[c&(size-1)].Addr
		f.tx.setCons(c + 1)
		f.comp.setProd(p + 1)
	}
}

func TestBatchHelpers(t *testing.T) {
	const size = 8
	f := newFakeSocket(size)
	addrs := []uint64{0, 4096, 8192, 12288, 16384, 20480, 24576, 28672, 32768, 36864}
	if n := f.Fill(addrs); n != size {
		t.Fatalf("Fill took %d of 10 with an 8-slot ring", n)
	}
	f.loop(size)
	descs := make([]Desc, 16)
	n := f.Receive(descs)
	if n != size || descs[0].Addr != 256 || descs[7].Addr != 28672+256 {
		t.Fatalf("Receive = %d, first %+v last %+v", n, descs[0], descs[7])
	}
	if f.Receive(descs) != 0 {
		t.Fatal("second Receive on a drained ring")
	}
	// Forward what came in: the same addresses go to tx.
	if m := f.Transmit(descs[:n]); m != n {
		t.Fatalf("Transmit = %d", m)
	}
	f.loop(size)
	done := make([]uint64, 16)
	if c := f.Complete(done); c != n || done[3] != 12288+256 {
		t.Fatalf("Complete = %d, done[3] = %d", c, done[3])
	}
}

func TestBatchHelpersNoAlloc(t *testing.T) {
	const size = 64
	f := newFakeSocket(size)
	addrs := make([]uint64, 32)
	for i := range addrs {
		addrs[i] = uint64(i) * 4096
	}
	descs := make([]Desc, 32)
	done := make([]uint64, 32)
	// need_wakeup off in the flags: Wakeup must not make a syscall (and
	// with fd 0 it would have nothing to talk to).
	n := testing.AllocsPerRun(1000, func() {
		k := f.Fill(addrs)
		f.loop(size)
		k = f.Receive(descs[:k])
		f.Transmit(descs[:k])
		if err := f.Wakeup(); err != nil {
			t.Fatal(err)
		}
		f.loop(size)
		f.Complete(done)
	})
	if n != 0 {
		t.Fatalf("batch path allocates %v per run", n)
	}
	if w := f.Wakeups(); w.Tx != 0 {
		t.Fatalf("Wakeup made %d syscalls with need_wakeup clear", w.Tx)
	}
	f.tx.setFlags(unix.XDP_RING_NEED_WAKEUP)
	f.fd = -1 // sendto fails with EBADF, counted all the same
	if err := f.Wakeup(); err != nil {
		t.Fatalf("Wakeup with an empty tx ring = %v, want no syscall", err)
	}
	f.Transmit(descs[:1])
	if err := f.Wakeup(); err != unix.EBADF {
		t.Fatalf("Wakeup with flag set on a bad fd = %v, want EBADF", err)
	}
	if w := f.Wakeups(); w.Tx != 1 {
		t.Fatalf("Wakeups().Tx = %d, want 1", w.Tx)
	}
}
