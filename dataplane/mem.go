package dataplane

import (
	"errors"
	"fmt"
	"math/bits"
)

// Mem is the frame memory of one worker: a byte area cut into equal frames
// addressed by offset, with a stack of free frame addresses. Under AF_XDP
// the area is the UMEM shared by all the worker's sockets, so a frame moves
// from one port's rx ring to another's tx ring without a copy; under the
// in-memory port it is an ordinary slice. It is owned by one worker and
// not safe for concurrent use. SharedMems cuts one area among the workers
// of a switch, so that they hand frames to each other (Handoff).
type Mem struct {
	buf       []byte
	frameSize int
	// mask is frameSize-1 when frameSize is a power of two, which
	// aligns an address down to its frame's start; else 0, and magic
	// does it by multiplication (start).
	mask  uint64
	magic uint64
	free  []uint64 // frames given back, most recent last
	fresh int      // frames never handed out: the last fresh of buf
	inUse int
	// lo and hi bound this Mem's own frames in buf (byte offsets): all
	// of buf, unless SharedMems cut buf among the workers of a switch.
	lo, hi uint64
	// share, with SharedMems, carries frames this Mem frees that
	// another worker's Mem owns back to it; id is this worker's index.
	share *Handoff
	id    int
	owed  [][]uint64 // frames freed while the ring back was full, by owner
	// pool, with NewPooledMems, holds the free frames in place of free
	// and fresh: the Mem counts its frames (inUse) against its own
	// budget, the frames of [lo, hi).
	pool *memPool
	// holds counts, per frame from frame number held0 on, the holders a
	// frame has beyond its one owner (Hold); nil until EnableHolds, and
	// then Release frees a frame only once none is left. A frame is
	// held and let go on the Mem of the worker that holds it (llr's Tx
	// buffer: the worker that owns the link also transmits on it and
	// takes its completions; NetRT's pool in place: only for frames the
	// worker sends by its own port, Ctx.OwnsPort), so the count is this
	// Mem's alone. The Mems of one pool
	// (NewPooledMems) share the array, each frame counted by the Mem
	// that holds it.
	holds  []uint8
	held0  uint64
	nheld  int   // holders of all frames: while none, Release does not look
	nshift uint8 // log2(frameSize) when it is a power of two
}

// memPool is the free frames of the Mems of one NewPooledMems.
type memPool struct {
	free  []uint64 // frames given back, most recent last
	fresh int      // frames never handed out: the last fresh below hi
	lo    uint64   // the pool's first frame, for its holds
	hi    uint64
	holds []uint8 // the pool's frames' hold counts, made by the first EnableHolds
}

// Errors from NewMem.
var ErrMemSize = errors.New("dataplane: frame memory size")

// NewMem cuts buf into frames of frameSize bytes, all free. frameSize is
// a multiple of 64 from 256 to 65,536 (checkFrameSize).
func NewMem(buf []byte, frameSize int) (*Mem, error) {
	if err := checkFrameSize(buf, frameSize); err != nil {
		return nil, err
	}
	n := len(buf) / frameSize
	if n == 0 {
		return nil, fmt.Errorf("%w: %d bytes hold no %d-byte frame", ErrMemSize, len(buf), frameSize)
	}
	// The stack's room is reserved, not touched: it fills as frames
	// come back, so Release never allocates.
	return NewMemAt(buf, frameSize, 0, n, make([]uint64, 0, n))
}

// NewMemAt returns a Mem of the n frames of buf from frame first on,
// its addresses those of buf as a whole, with the free stack's room
// given: stack, whose capacity must hold n. Mems over one buf may trade
// frames: a frame one of them allocated may be released to another,
// each keeping its count (Frames, Free, InUse) of n. The simulator
// (tor/fabric) puts its nodes' memories in one mapping this way, off the
// Go heap, so that a frame crosses a link by trading it for the
// receiver's free frame instead of a copy (dataplane/sim). Mems over one
// buf share no state: a set of them is for one goroutine.
func NewMemAt(buf []byte, frameSize, first, n int, stack []uint64) (*Mem, error) {
	if err := checkFrameSize(buf, frameSize); err != nil {
		return nil, err
	}
	if first < 0 || n <= 0 || (first+n)*frameSize > len(buf) {
		return nil, fmt.Errorf("%w: frames [%d, %d) of %d bytes", ErrMemSize, first, first+n, len(buf))
	}
	if cap(stack) < n {
		return nil, fmt.Errorf("%w: a free stack of %d for %d frames", ErrMemSize, cap(stack), n)
	}
	m := &Mem{buf: buf, frameSize: frameSize, free: stack[:0], fresh: n,
		lo: uint64(first * frameSize), hi: uint64((first + n) * frameSize)}
	if frameSize&(frameSize-1) == 0 {
		m.mask = uint64(frameSize - 1)
		m.nshift = uint8(bits.TrailingZeros(uint(frameSize)))
	} else {
		m.magic = ^uint64(0)/uint64(frameSize) + 1
	}
	return m, nil
}

// NewPooledMems returns len(budgets) Mems over the frames of buf from
// frame first on, Σ budgets of them, that draw on one pool of free
// frames: Mem i may hold budgets[i] frames at a time (Frames, Free and
// InUse count them as NewMemAt's would), but takes any free frame of the
// pool, the most recently freed first, and frees into the pool. stack is
// the pool's free stack, of capacity Σ budgets. Like Mems over one buf
// from NewMemAt they trade frames, and a set of them is for one
// goroutine.
//
// It is for a simulator, whose memories are budgets — the frames tord's
// UMEM would have — far larger than what a run holds: with a free stack
// each, a run touches the sum over the Mems of the most each one held,
// where with one pool it touches the most they held together (tor/fabric:
// a k = 8 fat tree's permutation held at most 16,090 frames at once and
// touched 24,023 with a stack each).
func NewPooledMems(buf []byte, frameSize, first int, budgets []int, stack []uint64) ([]*Mem, error) {
	total := 0
	for _, b := range budgets {
		if b <= 0 {
			return nil, fmt.Errorf("%w: a budget of %d frames", ErrMemSize, b)
		}
		total += b
	}
	if first < 0 || cap(stack) < total || (first+total)*frameSize > len(buf) {
		return nil, fmt.Errorf("%w: a pool of %d frames from frame %d in %d bytes, with a free stack of %d",
			ErrMemSize, total, first, len(buf), cap(stack))
	}
	pool := &memPool{free: stack[:0], fresh: total, lo: uint64(first * frameSize), hi: uint64((first + total) * frameSize)}
	ms := make([]*Mem, len(budgets))
	for i, b := range budgets {
		m, err := NewMemAt(buf, frameSize, first, b, stack)
		if err != nil {
			return nil, err
		}
		m.free, m.fresh, m.pool = nil, 0, pool
		ms[i], first = m, first+b
	}
	return ms, nil
}

// maxArea bounds a Mem's area so that start's multiplication is exact.
const maxArea = 1 << 48

// checkFrameSize accepts frame sizes that are multiples of 64 (a cache
// line, so that no two frames share one) from 256 to 65,536 bytes, over
// an area of less than 2^48 bytes. AF_XDP's aligned UMEM wants a power of
// two (2048 or 4096); the simulator (tor/fabric) cuts its memories into
// frames of the MTU and its headers rounded up to 64 bytes instead: for
// an MTU of 1,024 a 2,048-byte frame is nearly half unused, and the frames a run
// touches were most of its resident memory.
func checkFrameSize(buf []byte, frameSize int) error {
	if frameSize < 256 || frameSize > 1<<16 || frameSize%64 != 0 {
		return fmt.Errorf("%w: frame size %d is not a multiple of 64 from 256 to 65536", ErrMemSize, frameSize)
	}
	if uint64(len(buf)) >= maxArea {
		return fmt.Errorf("%w: an area of %d bytes, at most 2^48", ErrMemSize, len(buf))
	}
	return nil
}

// start aligns addr down to the start of its frame. A power of two is a
// mask; another size divides by multiplying with magic = ⌊(2^64−1)/size⌋+1
// (Granlund and Montgomery, "Division by invariant integers using
// multiplication", 1994): magic×size = 2^64+e with 0 < e ≤ size ≤ 2^16,
// so the high word of addr×magic is ⌊addr/size⌋ for every addr below
// 2^48 (maxArea) — a multiplication where a division would cost tens of
// cycles on the packet path.
func (m *Mem) start(addr uint64) uint64 {
	if m.mask != 0 {
		return addr &^ m.mask
	}
	q, _ := bits.Mul64(addr, m.magic)
	return q * uint64(m.frameSize)
}

// Offset returns addr's offset in its frame: the headroom before a
// packet whose frame starts at addr.
func (m *Mem) Offset(addr uint64) uint64 { return addr - m.start(addr) }

// SharedMems cuts buf into h.Workers() Mems of equal frame ranges over
// one area: worker w allocates only from its range, but every worker
// reads and writes every frame, so a frame received by one worker is
// handed to another (Handoff) without a copy. Under AF_XDP buf is one
// UMEM that every socket of the switch shares (XDP_SHARED_UMEM, each
// socket with its own fill and completion rings). A frame released by a
// worker that does not own it — transmitted, completed, dropped or
// freed by a stage there — goes back to its owner over h's ring of freed
// frames (Worker.Step drains it), so each fill ring is refilled by one
// worker from its own range and no Mem's count of frames drifts. Each
// Mem is owned by its worker, as a Mem from NewMem is.
func SharedMems(buf []byte, frameSize int, h *Handoff) ([]*Mem, error) {
	n := h.Workers()
	per := len(buf) / frameSize / n
	if per == 0 {
		return nil, fmt.Errorf("%w: %d bytes hold no %d-byte frame per worker for %d workers", ErrMemSize, len(buf), frameSize, n)
	}
	ms := make([]*Mem, n)
	for w := range ms {
		m, err := NewMem(buf, frameSize)
		if err != nil {
			return nil, err
		}
		m.lo, m.hi = uint64(w*per*frameSize), uint64((w+1)*per*frameSize)
		m.free, m.fresh = make([]uint64, 0, per), per
		m.share, m.id, m.owed = h, w, make([][]uint64, n)
		ms[w] = m
	}
	return ms, nil
}

// FrameSize returns the size of one frame.
func (m *Mem) FrameSize() int { return m.frameSize }

// Frames returns the number of frames.
func (m *Mem) Frames() int { return int(m.hi-m.lo) / m.frameSize }

// Free returns the number of free frames.
func (m *Mem) Free() int {
	if m.pool != nil {
		return m.Frames() - m.inUse
	}
	return len(m.free) + m.fresh
}

// InUse returns the number of frames handed out and not yet freed.
func (m *Mem) InUse() int { return m.inUse }

// Alloc takes a free frame. ok is false when none is left.
func (m *Mem) Alloc() (addr uint64, ok bool) {
	if m.pool != nil {
		return m.poolAlloc()
	}
	n := len(m.free)
	if n == 0 {
		if m.fresh == 0 {
			return 0, false
		}
		// Frames never handed out yet, from the start of buf: the
		// free stack holds only frames given back, so a large Mem
		// costs nothing until its frames are used (a simulator's
		// thousand workers each reserve what tord's UMEM would).
		m.fresh--
		m.inUse++
		return m.hi - uint64((1+m.fresh)*m.frameSize), true
	}
	addr = m.free[n-1]
	m.free = m.free[:n-1]
	m.inUse++
	return addr, true
}

// frameNo returns the number of the frame at addr, counted from buf's start.
func (m *Mem) frameNo(addr uint64) uint64 {
	if m.mask != 0 {
		return addr >> m.nshift
	}
	q, _ := bits.Mul64(addr, m.magic)
	return q
}

// EnableHolds makes room for Hold's counts, once, before the packet path
// runs: one byte per frame this Mem may see (buf's, or its pool's).
func (m *Mem) EnableHolds() {
	if m.holds != nil {
		return
	}
	if p := m.pool; p != nil {
		if p.holds == nil {
			p.holds = make([]uint8, (p.hi-p.lo)/uint64(m.frameSize))
		}
		m.holds, m.held0 = p.holds, p.lo/uint64(m.frameSize)
		return
	}
	m.holds = make([]uint8, len(m.buf)/m.frameSize)
}

// Unshare moves the n bytes at addr, a frame that has holders besides
// the caller (Hold), into a frame of their own at headroom bytes from
// its start, and gives the caller's hold on the old frame back: what a
// stage does before it changes more of a held frame than its holder
// restores. It returns the bytes' new address; ok is false, with
// nothing moved, when no frame is free.
func (m *Mem) Unshare(addr uint64, n, headroom int) (uint64, bool) {
	a, ok := m.Alloc()
	if !ok {
		return 0, false
	}
	copy(m.Room(a)[headroom:], m.Bytes(addr, n))
	m.Release(addr)
	return a + uint64(headroom), true
}

// Shared returns the holders frames have besides their owners, all
// frames together: the references beyond one a frame that InUse counts.
func (m *Mem) Shared() int { return m.nheld }

// Hold adds a holder to the frame at addr, which the caller owns: the
// frame stays allocated past the Release of whoever it is handed to
// (an egress queue, a port's transmission) until each holder has
// released it too. It reports false, adding nothing, without
// EnableHolds or when the frame has 255 holders already.
func (m *Mem) Hold(addr uint64) bool {
	i := m.frameNo(addr) - m.held0
	if i >= uint64(len(m.holds)) || m.holds[i] == 255 {
		return false
	}
	m.holds[i]++
	m.nheld++
	return true
}

// unhold takes a holder off the frame at addr and reports whether it
// had one.
func (m *Mem) unhold(addr uint64) bool {
	i := m.frameNo(addr) - m.held0
	if i >= uint64(len(m.holds)) || m.holds[i] == 0 {
		return false
	}
	m.holds[i]--
	m.nheld--
	return true
}

// Held reports whether the frame at addr has a holder besides its owner:
// whoever would take it over (a link trading frames, dataplane/sim) must
// copy it instead.
func (m *Mem) Held(addr uint64) bool {
	i := m.frameNo(addr) - m.held0
	return i < uint64(len(m.holds)) && m.holds[i] != 0
}

// Release gives a frame back, or, when the frame has holders (Hold),
// takes one off. addr may point anywhere inside the frame (AF_XDP
// descriptors carry headroom offsets); it is aligned down.
func (m *Mem) Release(addr uint64) {
	if m.nheld != 0 && m.unhold(addr) {
		return
	}
	a := m.start(addr)
	if m.share != nil && (a < m.lo || a >= m.hi) {
		m.giveBack(a)
		return
	}
	if m.pool != nil {
		m.pool.free = append(m.pool.free, a)
		m.inUse--
		return
	}
	m.free = append(m.free, a)
	m.inUse--
}

// releasePackets gives back the frames of pkts, as Release does each,
// in one pass for a Mem without a pool: the free stack is written in
// place, without a call and a capacity check per frame. With SharedMems
// a frame of another worker's range goes back to it (giveBack) and the
// others still in place: per frame, Release took 84 instructions a data
// packet in BenchmarkPipelineScaleWorkPaired's pair with two workers
// where the pair with one spent 50 here (callgrind, 2026-12-01).
func (m *Mem) releasePackets(pkts []Packet) {
	n := len(m.free)
	if m.pool != nil || cap(m.free)-n < len(pkts) {
		for i := range pkts {
			m.Release(pkts[i].Addr)
		}
		return
	}
	free := m.free[n : n+len(pkts)]
	if m.nheld != 0 || m.share != nil {
		// Frames held are not freed, another worker's go back to it;
		// the others in place.
		k := 0
		for i := range pkts {
			a := pkts[i].Addr
			if m.nheld != 0 && m.unhold(a) {
				continue
			}
			a = m.start(a)
			if m.share != nil && (a < m.lo || a >= m.hi) {
				m.giveBack(a)
				continue
			}
			free[k] = a
			k++
		}
		m.free = m.free[:n+k]
		m.inUse -= k
		return
	}
	if mask := m.mask; mask != 0 {
		for i := range free {
			free[i] = pkts[i].Addr &^ mask
		}
	} else {
		for i := range free {
			free[i] = m.start(pkts[i].Addr)
		}
	}
	m.free = m.free[:n+len(pkts)]
	m.inUse -= len(pkts)
}

// poolAlloc is Alloc for a Mem of NewPooledMems: a frame of the pool
// while the Mem holds fewer than its budget.
func (m *Mem) poolAlloc() (uint64, bool) {
	p := m.pool
	if uint64(m.inUse*m.frameSize) >= m.hi-m.lo {
		return 0, false
	}
	if n := len(p.free); n > 0 {
		m.inUse++
		a := p.free[n-1]
		p.free = p.free[:n-1]
		return a, true
	}
	if p.fresh == 0 {
		return 0, false // cannot happen: the budgets sum to the pool
	}
	p.fresh--
	m.inUse++
	return p.hi - uint64((1+p.fresh)*m.frameSize), true
}

// giveBack queues frame a, which another worker's Mem owns, on the ring
// back to it; the owner counts it free when it takes it (reclaim).
func (m *Mem) giveBack(a uint64) {
	to := int(a / (m.hi - m.lo))
	if len(m.owed[to]) > 0 || !m.share.back[m.id][to].push(&a) {
		m.owed[to] = append(m.owed[to], a) // grows only while the owner is behind: rare
	}
}

// flushBack publishes the frames given back since the last call, first
// retrying those the rings had no room for. The worker calls it once per
// loop.
func (m *Mem) flushBack() {
	for to, r := range m.share.back[m.id] {
		if r == nil {
			continue
		}
		o := m.owed[to]
		k := 0
		for k < len(o) && r.push(&o[k]) {
			k++
		}
		m.owed[to] = o[:copy(o, o[k:])]
		r.publish()
	}
}

// owes reports whether frames freed for other workers wait for room on
// the rings back to them.
func (m *Mem) owes() bool {
	for _, o := range m.owed {
		if len(o) > 0 {
			return true
		}
	}
	return false
}

// reclaim takes back the frames other workers freed. The free stack has
// room for every own frame, so it takes them in place.
func (m *Mem) reclaim() {
	for from := range m.share.back {
		r := m.share.back[from][m.id]
		if r == nil {
			continue
		}
		for {
			n := len(m.free)
			k := r.pop(m.free[n:cap(m.free)])
			if k == 0 {
				break
			}
			m.free = m.free[:n+k]
			m.inUse -= k
		}
	}
}

// Bytes returns the n bytes of the frame at addr. The slice aliases the
// frame memory and is valid until the frame is released.
func (m *Mem) Bytes(addr uint64, n int) []byte {
	return m.buf[addr : addr+uint64(n) : m.start(addr)+uint64(m.frameSize)]
}

// Frame returns the packet's bytes, aliasing frame memory, valid until the
// packet's frame is released.
func (m *Mem) Frame(p *Packet) []byte { return m.Bytes(p.Addr, int(p.Len)) }

// Room returns the whole frame at addr, from addr to the frame's end, for
// writing a new packet.
func (m *Mem) Room(addr uint64) []byte {
	end := m.start(addr) + uint64(m.frameSize)
	return m.buf[addr:end:end]
}

// Buf returns the whole area, for ports that register it with the kernel.
func (m *Mem) Buf() []byte { return m.buf }
