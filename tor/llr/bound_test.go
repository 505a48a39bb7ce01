package llr

import (
	"encoding/binary"
	"testing"

	"rocetor/rocev2"
)

// boundRig is a rig whose b→a direction loses everything, so that a
// keeps what it sent in its Tx buffer, unacknowledged; it counts the
// retransmitted frames and bytes a sends.
type boundRig struct {
	*rig
	frames, bytes int
}

func newBoundRig(t *testing.T, cfg Config) *boundRig {
	r := &boundRig{rig: newRig(t, cfg)}
	r.keep = false
	r.lose = func(dir int, f []byte) bool {
		if dir == 0 && isType(f, rocev2.ShimRetransmit) {
			r.frames++
			r.bytes += len(f)
		}
		return dir == 1
	}
	r.send(0, 300, 500)
	r.run(1e6)
	r.frames, r.bytes = 0, 0
	return r
}

// notice is a loss notice, as b would send it, for count sequences from
// a's oldest unacknowledged one.
func (r *boundRig) notice(count uint8) []byte {
	f := make([]byte, 64)
	dst, src := r.a.link.MAC(), r.b.link.MAC()
	copy(f[0:6], dst[:])
	copy(f[6:12], src[:])
	binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
	rocev2.Shim(f[14:]).Set(r.a.lp.l.una, rocev2.ShimLoss, count, 0)
	return f
}

// TestNoticeBound holds the sender to the per-message bound: one loss
// notice makes it send at most MaxNoticeFrames frames, Count sequences
// of what the Tx buffer holds, Copies copies each.
func TestNoticeBound(t *testing.T) {
	r := newBoundRig(t, Config{Copies: MaxCopies, RetxRate: 1e15, RetxBurst: 1 << 30})
	if n := r.a.lp.l.inflight(); n < 255 {
		t.Fatalf("a keeps %d frames, want at least 255 for the test", n)
	}
	r.a.link.Inject(r.notice(255))
	r.run(1e6)
	if r.frames != 255*MaxCopies || r.frames > MaxNoticeFrames {
		t.Fatalf("one notice drew %d frames, want 255 × %d = %d (the bound)", r.frames, MaxCopies, MaxNoticeFrames)
	}
}

// TestNoticeRate floods the sender with loss notices for everything it
// holds, as a faulty or forged neighbour would, and checks the rate
// bound: the retransmitted bytes stay within RetxBurst + RetxRate·T
// (defaults: the Tx buffer, and 5 Gbit/s on an unshaped port), where
// without it the same stream draws the whole buffer again per notice.
func TestNoticeRate(t *testing.T) {
	const (
		period = 5_000     // ns between notices
		span   = 1_000_000 // ns of flood
	)
	flood := func(c Config) int {
		r := newBoundRig(t, c)
		start := r.now
		for r.now-start < span {
			r.a.link.Inject(r.notice(255))
			r.step(period)
		}
		return r.bytes
	}
	got := flood(Config{Copies: 2})
	bound := DefaultTxBuffer + int(DefaultRetxRate/8*span/1e9) + MaxFrameBytes
	unbounded := flood(Config{Copies: 2, RetxRate: 1e15, RetxBurst: 1 << 30})
	t.Logf("%d notices drew %d bytes of retransmission in %d µs (bound %d); without the bound %d",
		span/period, got, span/1000, bound, unbounded)
	if got > bound {
		t.Fatalf("retransmitted %d bytes, bound %d", got, bound)
	}
	if unbounded < 3*bound {
		t.Fatalf("without the bound the flood drew %d bytes, not much beyond the bound's %d: the test floods too little", unbounded, bound)
	}
}
