package llr

// arena is a byte ring that holds frame copies within a fixed budget:
// the Tx buffer (freed oldest first, as cumulative ACKs arrive) and the
// reordering buffer (freed in sequence order, which is close to arrival
// order but not always: a retransmission fills an older hole). A frame is
// stored contiguously; one that does not fit before the end of the ring
// starts at its beginning, the skipped tail counting as used until the
// frame before it is freed. Space is reclaimed from the oldest record
// forward, past records already freed, so the occupied span
// (end − start) never exceeds len(buf): the budget holds exactly.
//
// It is owned by one worker, allocates nothing after newArena, and its
// zero value is not usable.
type arena struct {
	buf        []byte
	start, end uint64 // absolute byte positions of the occupied span
	rec        []arenaRec
	rhead      uint32 // absolute record numbers; rec[n&mask]
	rtail      uint32
	live       int // bytes in records not yet freed
	// mask is len(buf)−1 when that is a power of two (the default
	// budgets are), else 0: a position in the ring is then a mask, not
	// a division, three of which every put and fits made.
	// BenchmarkPipelineForward/stages: median paired difference −6 ns
	// per packet, lower in 7 of 8 rounds (each the minimum CPU time of
	// five runs of 100,000 packets, GOMAXPROCS=1, 2026-11-29, load 2–3).
	mask uint64
	// base is the absolute position that lies at buf[0]. It moves to
	// end whenever the arena empties, so that a link whose ACKs keep
	// up copies into the same cache-warm kilobytes rather than walking
	// the whole budget (256 KiB by default), every copy a run of cache
	// misses. Only where the bytes lie moves: what fits, the skipped
	// tails and the span are reckoned on the absolute positions as
	// before, so the budget and every counter come out the same (an
	// earlier rewind of the positions themselves moved the peaks
	// recorded in docs/results/sim-llr-loss.json). A record may then
	// wrap round buf's end: read copies it in two parts.
	// BenchmarkPipelineForward/stages: median paired difference
	// −10 ns per packet, lower in 9 of 10 rounds (each the minimum CPU
	// time of five runs of 100,000 packets, GOMAXPROCS=1, 2026-11-29,
	// load 1); with this branch's other changes −37 ns against main,
	// lower in 8 of 8.
	base uint64
}

type arenaRec struct {
	off   uint64
	n     uint32
	freed bool
}

// newArena makes an arena of size bytes with room for records frames.
func newArena(size, records int) *arena {
	n := 1
	for n < records {
		n <<= 1
	}
	a := &arena{buf: make([]byte, size), rec: make([]arenaRec, n)}
	if size&(size-1) == 0 {
		a.mask = uint64(size - 1)
	}
	return a
}

// pos returns where absolute byte position off falls in buf.
func (a *arena) pos(off uint64) uint64 {
	if a.mask != 0 {
		return off & a.mask
	}
	return off % uint64(len(a.buf))
}

// span returns the bytes the arena occupies, skipped tails included;
// never more than len(buf).
func (a *arena) span() int { return int(a.end - a.start) }

// records returns the number of records not yet reclaimed.
func (a *arena) records() int { return int(a.rtail - a.rhead) }

// put copies f into the arena and returns its handle; ok is false, with
// nothing stored, when the budget or the record table is full.
func (a *arena) put(f []byte) (h uint32, ok bool) {
	h, ok = a.take(len(f))
	if ok {
		a.write(h, f)
	}
	return h, ok
}

// write stores f, of the length take reckoned, as record h.
func (a *arena) write(h uint32, f []byte) {
	if p := a.pos(a.rec[h&uint32(len(a.rec)-1)].off - a.base); p+uint64(len(f)) <= uint64(len(a.buf)) {
		copy(a.buf[p:], f)
	} else {
		k := copy(a.buf[p:], f)
		copy(a.buf, f[k:])
	}
}

// take reckons a record of n bytes as put does, storing nothing: for a
// frame kept elsewhere (llr's Tx buffer holding the frame itself), so
// that the budget and the span count it as they would a copy.
func (a *arena) take(n int) (h uint32, ok bool) {
	size := uint64(len(a.buf))
	if a.rtail-a.rhead == uint32(len(a.rec)) || uint64(n) > size {
		return 0, false
	}
	off := a.end
	if pos := a.pos(off); pos+uint64(n) > size {
		off += size - pos
	}
	if off+uint64(n)-a.start > size {
		return 0, false
	}
	h = a.rtail
	a.rec[h&uint32(len(a.rec)-1)] = arenaRec{off: off, n: uint32(n)}
	a.rtail++
	a.end = off + uint64(n)
	a.live += n
	return h, true
}

// get returns the bytes of record h, aliasing the arena until h is
// freed; ok is false, and b nil, when the record wraps round the end of
// buf (read copies it).
func (a *arena) get(h uint32) (b []byte, ok bool) {
	r := &a.rec[h&uint32(len(a.rec)-1)]
	p := a.pos(r.off - a.base)
	if p+uint64(r.n) > uint64(len(a.buf)) {
		return nil, false
	}
	return a.buf[p : p+uint64(r.n)], true
}

// read copies record h into dst and returns the bytes copied (dst is
// at least the record's length where callers pass a frame).
func (a *arena) read(h uint32, dst []byte) int {
	r := &a.rec[h&uint32(len(a.rec)-1)]
	p, n := a.pos(r.off-a.base), uint64(r.n)
	if p+n <= uint64(len(a.buf)) {
		return copy(dst, a.buf[p:p+n])
	}
	k := copy(dst, a.buf[p:])
	return k + copy(dst[k:], a.buf[:n-uint64(k)])
}

// length returns the bytes of record h.
func (a *arena) length(h uint32) int { return int(a.rec[h&uint32(len(a.rec)-1)].n) }

// freeOldest frees the oldest record not yet reclaimed, as free would:
// the Tx buffer's, freed in sequence order by cumulative ACKs, are always
// that one, and skip free's walk over the freed run (about 15
// instructions a packet, callgrind, BenchmarkPipelineForward/stages,
// 2026-12-01).
func (a *arena) freeOldest() {
	mask := uint32(len(a.rec) - 1)
	a.live -= int(a.rec[a.rhead&mask].n)
	a.rhead++
	if a.rhead == a.rtail {
		a.start = a.end
		a.base = a.end
		return
	}
	a.start = a.rec[a.rhead&mask].off
}

// free releases record h and reclaims the space of the oldest freed run.
func (a *arena) free(h uint32) {
	mask := uint32(len(a.rec) - 1)
	r := &a.rec[h&mask]
	if r.freed {
		return
	}
	r.freed = true
	a.live -= int(r.n)
	for a.rhead != a.rtail {
		o := &a.rec[a.rhead&mask]
		if !o.freed {
			a.start = o.off
			return
		}
		a.rhead++
	}
	a.start = a.end
	a.base = a.end
}
