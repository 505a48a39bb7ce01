// Package cc holds the congestion controls of the software RNIC (the
// nic.CC interface). Fixed is the fixed-rate pacer: a token bucket per QP
// on top of the port's shaper, as a NIC's per-QP rate limiter. It ignores
// CNPs and ECN marks; DCQCN, which reacts to them, comes later behind the
// same interface.
//
// Example: every QP of an endpoint at 2 Gb/s with 16 KB bursts:
//
//	nic.Config{..., CC: cc.NewFixed(2e9, 16<<10)}
package cc

import (
	"reflect"

	"rocetor/nic"
)

// Fixed paces every QP of one endpoint to RateBps with a token bucket of
// BurstBytes. A QP may send while its bucket holds a token; a frame may
// take it below zero, and the QP then waits until the deficit is repaid,
// so the long-run rate is exact whatever the frame sizes. A zero rate
// does not pace. Create one per endpoint with NewFixed; it belongs to the
// endpoint's worker.
type Fixed struct {
	rate  uint64
	burst int64
	st    []bucket
}

type bucket struct {
	tokens int64 // bytes
	last   int64 // ns of the last refill; -1 before the first
}

// NewFixed returns a pacer at rateBps bits per second with buckets of
// burstBytes (0 means 16 KB, DCP's round quota, seed 002 §4.3).
func NewFixed(rateBps uint64, burstBytes int) *Fixed {
	if burstBytes <= 0 {
		burstBytes = 16 << 10
	}
	return &Fixed{rate: rateBps, burst: int64(burstBytes)}
}

// Name implements nic.CC.
func (f *Fixed) Name() string { return "fixed" }

// Init implements nic.CC.
func (f *Fixed) Init(n int) { f.st = make([]bucket, n) }

// StateBytes implements nic.CC.
func (f *Fixed) StateBytes() int { return int(reflect.TypeFor[bucket]().Size()) }

// Open implements nic.CC: a new QP starts with a full bucket.
func (f *Fixed) Open(q *nic.QP) { f.st[q.Index()] = bucket{tokens: f.burst, last: -1} }

func (f *Fixed) refill(b *bucket, now int64) {
	if b.last < 0 {
		b.tokens, b.last = f.burst, now
		return
	}
	if now <= b.last {
		return
	}
	// Past the time the bucket takes to fill from here, it is full; this
	// also keeps the product below from overflowing after long idles.
	if now-b.last >= int64(uint64(f.burst-b.tokens)*8e9/f.rate) {
		b.tokens, b.last = f.burst, now
		return
	}
	add := int64(uint64(now-b.last) * f.rate / 8e9)
	if add > 0 {
		b.tokens = min(b.tokens+add, f.burst)
		// keep the fraction: advance by the time the tokens stand for
		b.last += int64(uint64(add) * 8e9 / f.rate)
	}
}

// Ready implements nic.CC.
func (f *Fixed) Ready(q *nic.QP, now int64) int64 {
	if f.rate == 0 {
		return now
	}
	b := &f.st[q.Index()]
	f.refill(b, now)
	if b.tokens > 0 {
		return now
	}
	need := uint64(1 - b.tokens)
	return b.last + int64((need*8e9+f.rate-1)/f.rate)
}

// Sent implements nic.CC.
func (f *Fixed) Sent(q *nic.QP, now int64, n int) {
	if f.rate == 0 {
		return
	}
	b := &f.st[q.Index()]
	f.refill(b, now)
	b.tokens -= int64(n)
}

// CNP implements nic.CC; the fixed pacer ignores congestion signals.
func (f *Fixed) CNP(*nic.QP, int64) {}

// Marked implements nic.CC; the fixed pacer sends no CNPs.
func (f *Fixed) Marked(*nic.QP, int64) bool { return false }

var _ nic.CC = (*Fixed)(nil)
