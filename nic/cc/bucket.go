package cc

// bucket is a per-QP token bucket in bytes. A QP may send while it holds
// a token; a frame may take it below zero, and the QP then waits until
// the deficit is repaid, so the long-run rate is exact whatever the
// frame sizes. The rate is the caller's at each call, so a congestion
// control that changes a QP's rate refills at the old rate up to the
// time of the change first (DCQCN.advance).
type bucket struct {
	tokens int64 // bytes
	last   int64 // ns of the last refill; -1 before the first
}

// refill adds the tokens rate bits/s earns from b.last to now, up to
// burst bytes.
func (b *bucket) refill(now int64, rate uint64, burst int64) {
	if b.last < 0 {
		b.tokens, b.last = burst, now
		return
	}
	if now <= b.last {
		return
	}
	if rate == 0 {
		b.last = now
		return
	}
	// Past the time the bucket takes to fill from here, it is full; this
	// also keeps the product below from overflowing after long idles.
	if now-b.last >= int64(uint64(burst-b.tokens)*8e9/rate) {
		b.tokens, b.last = burst, now
		return
	}
	add := int64(uint64(now-b.last) * rate / 8e9)
	if add > 0 {
		b.tokens = min(b.tokens+add, burst)
		// keep the fraction: advance by the time the tokens stand for
		b.last += int64(uint64(add) * 8e9 / rate)
	}
}

// ready returns the earliest time a QP with this bucket may send at
// rate bits/s: now while it holds a token, else when the deficit is
// repaid. b must have been refilled to now.
func (b *bucket) ready(now int64, rate uint64) int64 {
	if b.tokens > 0 || rate == 0 {
		return now
	}
	need := uint64(1 - b.tokens)
	return b.last + int64((need*8e9+rate-1)/rate)
}
