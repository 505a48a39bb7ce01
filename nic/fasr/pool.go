package fasr

import (
	"math/bits"
	"reflect"

	"rocetor/rocev2/psn"
)

// Pool geometry.
const (
	none      = 0xffff // a null unit or block pointer
	blockBits = 16     // bits per bitmap block: the testbed's 16-bit blocks (§V-A)
	lostMax   = 7      // lost-cnt is 3 bits (§III-D, §IV-D)
	compMax   = 1<<10 - 1
	maxPool   = none // at most 65535 units and blocks: pointers are 16 bits
)

// unit is one level-1 SR state unit (§III-C 1): what one QP side needs
// while it recovers from a loss — sack-high, the lost-cnt it counts (a
// responder) or last heard (a requester), the bitmap's head and tail
// pointers, its compression-cnt and where its first block starts. 24
// bytes.
//
// The bitmap is a linked list of blocks from the level-2 pool, present
// only on the slow path (uBitmap). A set bit is a PSN known to have
// arrived. The PSN before the compressed run (RCV-NXT, UNACK) is the
// oldest missing one; the compressed run [base-comp, base) is known to
// have arrived; bit j of the list is PSN base+j.
type unit struct {
	sackHigh psn.PSN // highest PSN known to have arrived
	base     psn.PSN // PSN of bit 0 of the head block
	reported psn.PSN // responder: the sack-high the last ACK carried
	head     uint16  // first block, or none
	tail     uint16  // last block, or none
	nblk     uint16  // blocks in the list
	comp     uint16  // compression-cnt (10 bits): arrived PSNs just before base
	lost     uint8   // lost-cnt (3 bits)
	flags    uint8
}

// unit flags.
const (
	uBitmap   = 1 << iota // slow path: the bitmap records arrivals
	uOverflow             // lost-cnt overflowed: frozen until the recovery ends
	uGBN                  // responder: fell back to Go-Back-N for the rest of this recovery
)

// slow reports whether u is on the slow path.
func (u *unit) slow() bool { return u.flags&uBitmap != 0 }

// lostOver returns the lost-cnt as the path rules read it: lostMax+1 once
// it overflowed.
func (u *unit) lostOver() int {
	if u.flags&uOverflow != 0 {
		return lostMax + 1
	}
	return int(u.lost)
}

// pool is an endpoint's two-level shared SR pool (§III-C): Units SR
// state units with their availability bitmap (level 1), and Blocks
// bitmap blocks of blockBits bits with the pointers that link each QP's
// blocks into a list and their availability bitmap (level 2). Everything
// is allocated once, by newPool; the packet path only flips bits. Not
// safe for concurrent use: it belongs to the endpoint's worker.
type pool struct {
	units  []unit
	uUsed  []uint64 // available SR state bitmap: a set bit is a unit in use
	blocks []uint16 // the bitmap blocks
	next   []uint16 // each block's successor in its list, or none
	bUsed  []uint64 // available block bitmap: a set bit is a block in use

	nUnits, nBlocks       int // in use
	peakUnits, peakBlocks int
	uHint, bHint          int // word to start the next search at

	compressions uint64 // bitmaps started with a compression-cnt
}

func newPool(units, blocks int) pool {
	return pool{
		units:  make([]unit, units),
		uUsed:  make([]uint64, (units+63)/64),
		blocks: make([]uint16, blocks),
		next:   make([]uint16, blocks),
		bUsed:  make([]uint64, (blocks+63)/64),
	}
}

// bytes returns the pool's memory: units, blocks, pointers and both
// availability bitmaps.
func (p *pool) bytes() int {
	return len(p.units)*int(reflect.TypeFor[unit]().Size()) + 8*len(p.uUsed) +
		2*len(p.blocks) + 2*len(p.next) + 8*len(p.bUsed)
}

// take finds a clear bit among the first n of m, sets it and returns its
// index, or -1; hint is the word the search starts at.
func take(m []uint64, n int, hint *int) int {
	for k := 0; k < len(m); k++ {
		w := (*hint + k) % len(m)
		if m[w] == ^uint64(0) {
			continue
		}
		b := bits.TrailingZeros64(^m[w])
		i := w*64 + b
		if i >= n {
			continue
		}
		m[w] |= 1 << b
		*hint = w
		return i
	}
	return -1
}

// allocUnit takes a unit, reset, or returns none.
func (p *pool) allocUnit() uint16 {
	i := take(p.uUsed, len(p.units), &p.uHint)
	if i < 0 {
		return none
	}
	p.units[i] = unit{head: none, tail: none}
	p.nUnits++
	p.peakUnits = max(p.peakUnits, p.nUnits)
	return uint16(i)
}

// freeUnit returns unit i and its blocks.
func (p *pool) freeUnit(i uint16) {
	p.freeBitmap(&p.units[i])
	p.uUsed[i/64] &^= 1 << (i % 64)
	p.nUnits--
}

// freeBlocks returns how many blocks are available.
func (p *pool) freeBlocks() int { return len(p.blocks) - p.nBlocks }

// allocBlock takes a zeroed block; the caller has checked freeBlocks.
func (p *pool) allocBlock() uint16 {
	i := take(p.bUsed, len(p.blocks), &p.bHint)
	p.blocks[i], p.next[i] = 0, none
	p.nBlocks++
	p.peakBlocks = max(p.peakBlocks, p.nBlocks)
	return uint16(i)
}

func (p *pool) freeBlock(b uint16) {
	p.bUsed[b/64] &^= 1 << (b % 64)
	p.nBlocks--
}

// freeBitmap returns u's blocks and puts u on the fast path.
func (p *pool) freeBitmap(u *unit) {
	for b := u.head; b != none; {
		n := p.next[b]
		p.freeBlock(b)
		b = n
	}
	u.head, u.tail, u.nblk, u.comp = none, none, 0, 0
	u.flags &^= uBitmap
}

// startBitmap puts u on the slow path with an empty bitmap after anchor,
// the oldest missing PSN (RCV-NXT or UNACK). With run, every PSN in
// (anchor, sack-high] is known to have arrived — the fast path's
// knowledge — and is recorded: as the compression-cnt when it is at
// least a block long (bitmap acceleration, §III-D: the bitmap then starts
// recording after it), bit by bit otherwise. It reports false, with u
// back on the fast path, when the blocks ran out.
func (p *pool) startBitmap(u *unit, anchor psn.PSN, run bool) bool {
	u.flags |= uBitmap
	u.head, u.tail, u.nblk, u.comp = none, none, 0, 0
	u.base = anchor.Add(1)
	k := u.sackHigh.Diff(anchor)
	if !run || k <= 0 {
		return true
	}
	if k >= blockBits {
		c := min(k, compMax)
		u.comp, u.base = uint16(c), u.base.Add(c)
		p.compressions++
		if k == c {
			return true
		}
	}
	if !p.setRange(u, u.base, u.sackHigh) {
		p.freeBitmap(u)
		return false
	}
	return true
}

// cover appends blocks to u's list until it covers PSN x (at or after
// base), or reports false, allocating nothing, when the pool has too few.
func (p *pool) cover(u *unit, x psn.PSN) bool {
	need := x.Diff(u.base)/blockBits + 1 - int(u.nblk)
	if need <= 0 {
		return true
	}
	if need > p.freeBlocks() || int(u.nblk)+need > maxPool {
		return false
	}
	for ; need > 0; need-- {
		b := p.allocBlock()
		if u.tail == none {
			u.head = b
		} else {
			p.next[u.tail] = b
		}
		u.tail = b
		u.nblk++
	}
	return true
}

// block returns the block holding bit j (< nblk·blockBits) of u's list.
// The tail is reached directly (where arrivals are recorded), the others
// by following the list from the head (where retransmissions are
// consumed).
func (p *pool) block(u *unit, j int) uint16 {
	k := j / blockBits
	if k == int(u.nblk)-1 {
		return u.tail
	}
	b := u.head
	for ; k > 0; k-- {
		b = p.next[b]
	}
	return b
}

// set records that PSN x arrived. PSNs before base are in the compressed
// run or before the anchor and need no bit. It reports false when the
// blocks ran out (nothing recorded).
func (p *pool) set(u *unit, x psn.PSN) bool {
	j := x.Diff(u.base)
	if j < 0 {
		return true
	}
	if !p.cover(u, x) {
		return false
	}
	p.blocks[p.block(u, j)] |= 1 << (j % blockBits)
	return true
}

// setRange records that every PSN in [from, to] arrived (from ≥ base).
func (p *pool) setRange(u *unit, from, to psn.PSN) bool {
	if to.Less(from) {
		return true
	}
	if j := from.Diff(u.base); j < 0 {
		from = u.base
		if to.Less(from) {
			return true
		}
	}
	if !p.cover(u, to) {
		return false
	}
	j, end := from.Diff(u.base), to.Diff(u.base)
	b := p.block(u, j)
	for j <= end {
		lo := j % blockBits
		hi := min(blockBits, lo+end-j+1)
		p.blocks[b] |= uint16((1<<hi - 1) &^ (1<<lo - 1))
		j += hi - lo
		b = p.next[b]
	}
	return true
}

// has reports whether PSN x is known to have arrived: in the compressed
// run or with its bit set. It walks the list from the head.
func (p *pool) has(u *unit, x psn.PSN) bool {
	j := x.Diff(u.base)
	if j < 0 {
		return -j <= int(u.comp)
	}
	if j >= int(u.nblk)*blockBits {
		return false
	}
	return p.blocks[p.block(u, j)]>>(j%blockBits)&1 != 0
}

// nextMissing returns the first PSN from x on not known to have arrived:
// over the compressed run, then block by block from the head.
func (p *pool) nextMissing(u *unit, x psn.PSN) psn.PSN {
	j := x.Diff(u.base)
	if j < 0 {
		if -j > int(u.comp) {
			return x
		}
		j = 0
	}
	if j >= int(u.nblk)*blockBits {
		return u.base.Add(j)
	}
	b := p.block(u, j)
	for b != none {
		w := ^p.blocks[b] >> (j % blockBits) // zeros of the block from bit j on, as ones
		if w != 0 {
			return u.base.Add(j + bits.TrailingZeros16(w))
		}
		j += blockBits - j%blockBits
		b = p.next[b]
	}
	return u.base.Add(j)
}

// release frees the head blocks whose PSNs all lie before x and shortens
// the compressed run to what lies at or after x: the head of the list
// follows RCV-NXT (UNACK) forward.
func (p *pool) release(u *unit, x psn.PSN) {
	if d := u.base.Diff(x); d <= 0 {
		u.comp = 0
	} else if d < int(u.comp) {
		u.comp = uint16(d)
	}
	for u.head != none && x.Diff(u.base) >= blockBits {
		b := u.head
		u.head = p.next[b]
		p.freeBlock(b)
		u.nblk--
		u.base = u.base.Add(blockBits)
	}
	if u.head == none {
		u.tail = none
		if x.Diff(u.base) > 0 {
			u.base = x // an empty list starts where recording would
		}
	}
}
