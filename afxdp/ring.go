package afxdp

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// MaxRingSize is the largest ring size Options accepts. The kernel takes
// more, but 2^24 descriptors (256 MiB of tx descriptors) is far past any
// useful batch depth and keeps every index sum clear of overflow.
const MaxRingSize = 1 << 24

// ring is what the four AF_XDP rings have in common: the producer and
// consumer words shared with the kernel, the flags word, and this side's
// cached copies of both indices.
//
// Indices are free-running uint32 counters that wrap at 2^32; an entry's
// slot is index & mask. Because the size is a power of two that divides
// 2^32, "producer - consumer" is the number of filled entries even across
// the wrap, which is the arithmetic the kernel uses too (xsk_queue.h).
//
// Memory ordering. The kernel publishes with smp_store_release and reads
// with smp_load_acquire (see the comment block at the top of the kernel's
// net/xdp/xsk_queue.h). This side mirrors it:
//
//   - producer rings (fill, tx): write the entries, then atomic.StoreUint32
//     the producer word; before reusing a slot, atomic.LoadUint32 the
//     consumer word.
//   - consumer rings (rx, completion): atomic.LoadUint32 the producer word,
//     then read the entries; after reading them, atomic.StoreUint32 the
//     consumer word so the kernel may overwrite the slots.
//
// Go's sync/atomic operations are sequentially consistent, which is at
// least acquire (loads) and release (stores): on amd64 a load is a plain
// MOV under TSO and a store is XCHG, a full fence; on arm64 they are LDAR
// and STLR. The compiler does not move ordinary loads and stores across
// them. That is enough for the entries. It is also enough for the
// need_wakeup check after a submit, which needs the stronger store→load
// order (libxdp gets it from a release store plus a plain read; XCHG and
// STLR→LDAR give it here).
//
// A ring is owned by one goroutine at a time: the cached indices are plain
// fields and the shared words have exactly one writer on this side.
type ring struct {
	producer *uint32
	consumer *uint32
	flags    *uint32
	mask     uint32
	size     uint32

	// cachedProd and cachedCons are this side's view. On a producer ring
	// cachedProd runs ahead of *producer by what is reserved but not yet
	// submitted; on a consumer ring cachedCons runs ahead of *consumer by
	// what is peeked but not yet released.
	cachedProd uint32
	cachedCons uint32
}

// setup points r at the shared words of a ring that lives in mem (an mmap'd
// ring, or plain memory in tests playing the kernel).
func (r *ring) setup(mem []byte, off unix.XDPRingOffset, size uint32) {
	r.producer = (*uint32)(unsafe.Pointer(&mem[off.Producer]))
	r.consumer = (*uint32)(unsafe.Pointer(&mem[off.Consumer]))
	r.flags = (*uint32)(unsafe.Pointer(&mem[off.Flags]))
	r.size = size
	r.mask = size - 1
	r.cachedProd = atomic.LoadUint32(r.producer)
	r.cachedCons = atomic.LoadUint32(r.consumer)
}

// reserve claims up to n free slots for the producer side.
func (r *ring) reserve(n uint32) (idx, got uint32) {
	free := r.size - (r.cachedProd - r.cachedCons)
	if free < n {
		// Only look at the shared word when the cached view is short:
		// every look pulls a cache line the kernel writes.
		r.cachedCons = atomic.LoadUint32(r.consumer)
		free = r.size - (r.cachedProd - r.cachedCons)
	}
	got = min(n, free)
	idx = r.cachedProd
	r.cachedProd += got
	return idx, got
}

// submit publishes the n oldest reserved entries to the kernel.
func (r *ring) submit(n uint32) {
	atomic.StoreUint32(r.producer, atomic.LoadUint32(r.producer)+n)
}

// cancel gives back the n newest reserved, unsubmitted slots.
func (r *ring) cancel(n uint32) { r.cachedProd -= n }

// free is how many slots reserve could claim now.
func (r *ring) free() uint32 {
	r.cachedCons = atomic.LoadUint32(r.consumer)
	return r.size - (r.cachedProd - r.cachedCons)
}

// avail is how many entries peek could claim now.
func (r *ring) avail() uint32 {
	r.cachedProd = atomic.LoadUint32(r.producer)
	return r.cachedProd - r.cachedCons
}

// peek claims up to n filled entries for the consumer side.
func (r *ring) peek(n uint32) (idx, got uint32) {
	avail := r.cachedProd - r.cachedCons
	if avail < n {
		r.cachedProd = atomic.LoadUint32(r.producer)
		avail = r.cachedProd - r.cachedCons
	}
	got = min(n, avail)
	idx = r.cachedCons
	r.cachedCons += got
	return idx, got
}

// release hands the n oldest peeked entries back to the kernel.
func (r *ring) release(n uint32) {
	atomic.StoreUint32(r.consumer, atomic.LoadUint32(r.consumer)+n)
}

// entries views the descriptor array of a ring that lives in mem.
func entries[T uint64 | Desc](mem []byte, off unix.XDPRingOffset, size uint32) []T {
	return unsafe.Slice((*T)(unsafe.Pointer(&mem[off.Desc])), size)
}

// needWakeup reports whether the kernel set XDP_RING_NEED_WAKEUP.
func (r *ring) needWakeup() bool {
	return atomic.LoadUint32(r.flags)&unix.XDP_RING_NEED_WAKEUP != 0
}

// Desc describes one frame on an rx or tx ring. Its layout is the kernel's
// struct xdp_desc.
type Desc struct {
	// Addr is the UMEM address of the frame's first byte. On rx it is
	// past the frame start by the UMEM headroom plus XDP_PACKET_HEADROOM;
	// UMEM.FrameStart recovers the frame.
	Addr uint64
	// Len is the frame length in bytes.
	Len uint32
	// Options is zero except for multi-buffer frames (XDP_PKT_CONTD),
	// which this package does not enable.
	Options uint32
}

// FillRing hands free UMEM frames to the kernel for receiving. Producer
// side: Reserve, Set each slot, Submit. Not safe for concurrent use.
type FillRing struct {
	ring
	addrs []uint64
}

// Reserve claims up to n slots and returns the index of the first and how
// many it got (fewer when the ring is fuller than that).
func (r *FillRing) Reserve(n uint32) (idx, got uint32) { return r.reserve(n) }

// Set puts a frame address in the reserved slot idx. The kernel owns the
// frame from Submit until it shows up on an rx ring.
func (r *FillRing) Set(idx uint32, addr uint64) { r.addrs[idx&r.mask] = addr }

// Submit publishes the n oldest reserved slots.
func (r *FillRing) Submit(n uint32) { r.submit(n) }

// Free is how many slots Reserve could claim now.
func (r *FillRing) Free() uint32 { return r.free() }

// Cancel gives back the n newest reserved slots, unsubmitted.
func (r *FillRing) Cancel(n uint32) { r.cancel(n) }

// NeedWakeup reports whether the driver sleeps until poll or recvfrom
// (Socket.Poll, Socket.WakeupRx) tells it the fill ring has frames.
func (r *FillRing) NeedWakeup() bool { return r.needWakeup() }

// Size is the number of slots.
func (r *FillRing) Size() uint32 { return r.size }

// CompletionRing returns the frames the kernel has finished transmitting.
// Consumer side: Peek, Get each entry, Release. Not safe for concurrent use.
type CompletionRing struct {
	ring
	addrs []uint64
}

// Peek claims up to n completed entries and returns the index of the
// first and how many it got.
func (r *CompletionRing) Peek(n uint32) (idx, got uint32) { return r.peek(n) }

// Get returns the address of the completed frame in slot idx, as it was
// given in the tx descriptor. The frame is the caller's again.
func (r *CompletionRing) Get(idx uint32) uint64 { return r.addrs[idx&r.mask] }

// Release frees the n oldest peeked slots for the kernel.
func (r *CompletionRing) Release(n uint32) { r.release(n) }

// Available is how many entries Peek could claim now.
func (r *CompletionRing) Available() uint32 { return r.avail() }

// Size is the number of slots.
func (r *CompletionRing) Size() uint32 { return r.size }

// RxRing carries received frames from the kernel. Consumer side: Peek, Get
// each entry, Release. Not safe for concurrent use.
type RxRing struct {
	ring
	descs []Desc
}

// Peek claims up to n received entries and returns the index of the first
// and how many it got.
func (r *RxRing) Peek(n uint32) (idx, got uint32) { return r.peek(n) }

// Get returns the descriptor in slot idx. The frame it names belongs to the
// caller from now on; the slot itself is reused after Release, so copy the
// descriptor before releasing.
func (r *RxRing) Get(idx uint32) Desc { return r.descs[idx&r.mask] }

// Release frees the n oldest peeked slots for the kernel.
func (r *RxRing) Release(n uint32) { r.release(n) }

// Available is how many entries Peek could claim now: the received frames
// waiting for the worker.
func (r *RxRing) Available() uint32 { return r.avail() }

// Size is the number of slots.
func (r *RxRing) Size() uint32 { return r.size }

// TxRing carries frames to transmit to the kernel. Producer side: Reserve,
// Set each slot, Submit, then Socket.Wakeup. Not safe for concurrent use.
type TxRing struct {
	ring
	descs []Desc
}

// Reserve claims up to n slots and returns the index of the first and how
// many it got.
func (r *TxRing) Reserve(n uint32) (idx, got uint32) { return r.reserve(n) }

// Set puts a descriptor in the reserved slot idx. The kernel owns the frame
// from Submit until its address comes back on the completion ring.
func (r *TxRing) Set(idx uint32, d Desc) { r.descs[idx&r.mask] = d }

// Submit publishes the n oldest reserved slots.
func (r *TxRing) Submit(n uint32) { r.submit(n) }

// Free is how many slots Reserve could claim now: how many frames
// Socket.Transmit would take.
func (r *TxRing) Free() uint32 { return r.free() }

// Cancel gives back the n newest reserved slots, unsubmitted.
func (r *TxRing) Cancel(n uint32) { r.cancel(n) }

// NeedWakeup reports whether the kernel transmits only after a sendto
// (Socket.Wakeup). In copy mode it is always set.
func (r *TxRing) NeedWakeup() bool { return r.needWakeup() }

// Size is the number of slots.
func (r *TxRing) Size() uint32 { return r.size }

// Pending is the number of submitted descriptors the kernel has not yet
// taken off the ring (it may still be sending frames it took).
func (r *TxRing) Pending() uint32 {
	return atomic.LoadUint32(r.producer) - atomic.LoadUint32(r.consumer)
}
