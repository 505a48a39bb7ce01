package afxdp

import (
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeRing lays out a ring in Go memory the way the kernel lays out an
// mmap'd one, so the tests can play the kernel's side: producer, consumer
// and flags words on their own cache lines, then the entries.
type fakeRing struct {
	mem []byte
	off unix.XDPRingOffset
}

func newFakeRing(size uint32, entSize uintptr, start uint32) *fakeRing {
	off := unix.XDPRingOffset{Producer: 0, Consumer: 64, Flags: 128, Desc: 192}
	words := make([]uint64, (192+uintptr(size)*entSize)/8)
	f := &fakeRing{mem: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8), off: off}
	// Start both indices near the top of uint32 so every test crosses
	// the wrap.
	atomic.StoreUint32(f.word(off.Producer), start)
	atomic.StoreUint32(f.word(off.Consumer), start)
	return f
}

func (f *fakeRing) word(off uint64) *uint32 { return (*uint32)(unsafe.Pointer(&f.mem[off])) }
func (f *fakeRing) prod() uint32            { return atomic.LoadUint32(f.word(f.off.Producer)) }
func (f *fakeRing) cons() uint32            { return atomic.LoadUint32(f.word(f.off.Consumer)) }
func (f *fakeRing) setProd(v uint32)        { atomic.StoreUint32(f.word(f.off.Producer), v) }
func (f *fakeRing) setCons(v uint32)        { atomic.StoreUint32(f.word(f.off.Consumer), v) }
func (f *fakeRing) setFlags(v uint32)       { atomic.StoreUint32(f.word(f.off.Flags), v) }

func fillRing(f *fakeRing, size uint32) *FillRing {
	r := &FillRing{}
	r.setup(f.mem, f.off, size)
	r.addrs = entries[uint64](f.mem, f.off, size)
	return r
}

func rxRing(f *fakeRing, size uint32) *RxRing {
	r := &RxRing{}
	r.setup(f.mem, f.off, size)
	r.descs = entries[Desc](f.mem, f.off, size)
	return r
}

const nearWrap = ^uint32(0) - 5

func TestProducerRingWrap(t *testing.T) {
	const size = 8
	f := newFakeRing(size, 8, nearWrap)
	r := fillRing(f, size)
	kaddrs := entries[uint64](f.mem, f.off, size)

	idx, got := r.Reserve(5)
	if idx != nearWrap || got != 5 {
		t.Fatalf("Reserve(5) = %d, %d; want %d, 5", idx, got, nearWrap)
	}
	for i := range got {
		r.Set(idx+i, uint64(100+i))
	}
	if f.prod() != nearWrap {
		t.Fatalf("producer moved before Submit: %d", f.prod())
	}
	r.Submit(got)
	if f.prod() != nearWrap+5 {
		t.Fatalf("producer after Submit = %d, want %d", f.prod(), nearWrap+5)
	}
	// Only 3 slots are left until the kernel consumes.
	if r.Free() != 3 {
		t.Fatalf("Free() = %d, want 3", r.Free())
	}
	idx, got = r.Reserve(8)
	if idx != nearWrap+5 || got != 3 {
		t.Fatalf("Reserve(8) on 5/8 full = %d, %d; want %d, 3", idx, got, nearWrap+5)
	}
	if idx+got != 2 {
		t.Fatalf("index did not wrap: %d", idx+got)
	}
	for i := range got {
		r.Set(idx+i, uint64(200+i))
	}
	r.Submit(got)
	if _, got := r.Reserve(1); got != 0 {
		t.Fatalf("Reserve on a full ring got %d", got)
	}
	// Kernel consumes 6 entries, reading them in FIFO order across the
	// wrap of both the index and the slot array.
	want := []uint64{100, 101, 102, 103, 104, 200}
	c := f.cons()
	for i, w := range want {
		if a := kaddrs[(c+uint32(i))&(size-1)]; a != w {
			t.Fatalf("kernel entry %d = %d, want %d", i, a, w)
		}
	}
	f.setCons(c + 6)
	idx, got = r.Reserve(8)
	if got != 6 || idx != 2 {
		t.Fatalf("Reserve(8) after consume = %d, %d; want 2, 6", idx, got)
	}
	// Cancel the last 2: they are handed out again by the next Reserve.
	r.Cancel(2)
	idx, got = r.Reserve(2)
	if idx != 6 || got != 2 {
		t.Fatalf("Reserve after Cancel = %d, %d; want 6, 2", idx, got)
	}
}

func TestConsumerRingWrap(t *testing.T) {
	const size = 4
	f := newFakeRing(size, 16, nearWrap+4) // wraps after the 2nd entry
	r := rxRing(f, size)
	kdescs := entries[Desc](f.mem, f.off, size)

	if _, got := r.Peek(4); got != 0 {
		t.Fatalf("Peek on empty ring got %d", got)
	}
	// Kernel produces 3.
	p := f.prod()
	for i := range uint32(3) {
		kdescs[(p+i)&(size-1)] = Desc{Addr: uint64(i) * 4096, Len: 60 + i}
	}
	f.setProd(p + 3)
	if r.Available() != 3 {
		t.Fatalf("Available() = %d, want 3", r.Available())
	}

	idx, got := r.Peek(2)
	if idx != nearWrap+4 || got != 2 {
		t.Fatalf("Peek(2) = %d, %d", idx, got)
	}
	for i := range got {
		if d := r.Get(idx + i); d.Len != 60+i {
			t.Fatalf("entry %d len %d", i, d.Len)
		}
	}
	r.Release(got)
	if f.cons() != 0 {
		t.Fatalf("consumer after Release = %d, want 0 (wrapped)", f.cons())
	}
	idx, got = r.Peek(4)
	if got != 1 || r.Get(idx).Len != 62 {
		t.Fatalf("Peek(4) = %d entries, want the 1 left", got)
	}
	// Not released yet: the kernel must not see the slot as free.
	if f.cons() != 0 {
		t.Fatalf("consumer moved before Release")
	}
	r.Release(got)
	if f.cons() != 1 {
		t.Fatalf("consumer after wrap = %d, want 1", f.cons())
	}
}

func TestNeedWakeupFlag(t *testing.T) {
	f := newFakeRing(8, 8, 0)
	r := fillRing(f, 8)
	if r.NeedWakeup() {
		t.Fatal("NeedWakeup with flags 0")
	}
	f.setFlags(unix.XDP_RING_NEED_WAKEUP)
	if !r.NeedWakeup() {
		t.Fatal("NeedWakeup false with XDP_RING_NEED_WAKEUP set")
	}
}

// TestRingRandom runs a producer against a model consumer (the "kernel")
// with random batch sizes and checks FIFO order, that the producer never
// overruns the consumer, and that it always gets all the room there is.
func TestRingRandom(t *testing.T) {
	const size = 16
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFakeRing(size, 8, ^uint32(0)-1000)
	r := fillRing(f, size)
	kaddrs := entries[uint64](f.mem, f.off, size)
	var next, expect uint64
	for step := 0; step < 100000; step++ {
		if rng.IntN(2) == 0 {
			n := uint32(rng.IntN(size + 4))
			free := size - (f.prod() - f.cons())
			idx, got := r.Reserve(n)
			if got != min(n, free) {
				t.Fatalf("step %d: Reserve(%d) got %d with %d free", step, n, got, free)
			}
			for i := range got {
				r.Set(idx+i, next)
				next++
			}
			// Submit some, cancel the rest.
			sub := uint32(rng.IntN(int(got) + 1))
			r.Cancel(got - sub)
			next -= uint64(got - sub)
			r.Submit(sub)
		} else {
			avail := f.prod() - f.cons()
			if avail > size {
				t.Fatalf("step %d: producer %d ran %d ahead of consumer", step, f.prod(), avail)
			}
			k := uint32(rng.IntN(int(avail) + 1))
			c := f.cons()
			for i := range k {
				if a := kaddrs[(c+i)&(size-1)]; a != expect {
					t.Fatalf("step %d: kernel read %d, want %d", step, a, expect)
				}
				expect++
			}
			f.setCons(c + k)
		}
	}
	if expect == 0 {
		t.Fatal("nothing went through")
	}
}

func TestRingSizeValidation(t *testing.T) {
	u, err := NewUMEM(UMEMOptions{FrameSize: 2048, NumFrames: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	for _, o := range []Options{
		{RxSize: 1000},
		{TxSize: 3},
		{FillSize: -8},
		{CompletionSize: MaxRingSize * 2},
	} {
		// Validation comes before any syscall, so this needs no root.
		_, err := Open("lo", 0, u, o)
		if !errors.Is(err, ErrRingSize) {
			t.Errorf("Open(%+v) = %v, want ErrRingSize", o, err)
		}
	}
	for _, o := range []Options{{TxBudget: 16}, {TxSize: 64, TxBudget: 128}} {
		if _, err := Open("lo", 0, u, o); !errors.Is(err, ErrTxBudget) {
			t.Errorf("Open(%+v) = %v, want ErrTxBudget", o, err)
		}
	}
}
