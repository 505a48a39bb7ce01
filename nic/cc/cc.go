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

// Ready implements nic.CC.
func (f *Fixed) Ready(q *nic.QP, now int64) int64 {
	if f.rate == 0 {
		return now
	}
	b := &f.st[q.Index()]
	b.refill(now, f.rate, f.burst)
	return b.ready(now, f.rate)
}

// Sent implements nic.CC.
func (f *Fixed) Sent(q *nic.QP, now int64, n int) {
	if f.rate == 0 {
		return
	}
	b := &f.st[q.Index()]
	b.refill(now, f.rate, f.burst)
	b.tokens -= int64(n)
}

// CNP implements nic.CC; the fixed pacer ignores congestion signals.
func (f *Fixed) CNP(*nic.QP, int64) {}

// Marked implements nic.CC; the fixed pacer sends no CNPs.
func (f *Fixed) Marked(*nic.QP, int64) bool { return false }

var _ nic.CC = (*Fixed)(nil)
