package dataplane

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

func mustEgress(t testing.TB, c EgressConfig) *Egress {
	t.Helper()
	e, err := NewEgress(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEgressValidate(t *testing.T) {
	bad := []EgressConfig{
		{},
		{Queues: []QueueConfig{{Name: "q", Weight: 0, Limit: 1000}}},
		{Queues: []QueueConfig{{Name: "q", Weight: 1, Limit: 10}}},
		{Queues: []QueueConfig{{Name: "q", Weight: 1, Limit: 1000, PFC: 8}}},
	}
	for i, c := range bad {
		if _, err := NewEgress(c); !errors.Is(err, ErrEgressConfig) {
			t.Errorf("case %d: err = %v, want ErrEgressConfig", i, err)
		}
	}
}

// TestEgressByteLimit fills a queue far past its budget and checks the
// depth never exceeds it and every refused frame is counted.
func TestEgressByteLimit(t *testing.T) {
	e := mustEgress(t, EgressConfig{Queues: []QueueConfig{{Name: "data", Weight: 1, Limit: 10000, PFC: -1}}})
	accepted := 0
	for i := 0; i < 1000; i++ {
		n := 60 + i%1400
		if e.Enqueue(0, uint64(i)*4096, n) {
			accepted++
		}
		if d, _ := e.Depth(0); d > 10000 {
			t.Fatalf("depth %d exceeds the 10000-byte limit", d)
		}
	}
	st := e.Stats(0)
	if st.Enqueued != uint64(accepted) || st.Drops != uint64(1000-accepted) {
		t.Fatalf("enqueued %d drops %d, want %d and %d", st.Enqueued, st.Drops, accepted, 1000-accepted)
	}
}

func drain(e *Egress, now int64, max int) []Packet {
	out := make([]Packet, max)
	return out[:e.Dequeue(now, out)]
}

func TestEgressStrictPriority(t *testing.T) {
	e := mustEgress(t, DefaultEgress(0, 1<<20))
	data, ctrl := e.QueueIndex("data"), e.QueueIndex("control")
	for i := 0; i < 4; i++ {
		e.Enqueue(data, uint64(i), 1000)
	}
	e.Enqueue(ctrl, 100, 64)
	got := drain(e, 0, 8)
	if len(got) != 5 || got[0].Addr != 100 {
		t.Fatalf("first dequeued %+v, want the control frame first of 5", got)
	}
}

// TestEgressDRRShares checks that two backlogged queues of one level with
// weights 3:1 get bytes in that ratio, whatever their frame sizes.
func TestEgressDRRShares(t *testing.T) {
	e := mustEgress(t, EgressConfig{Queues: []QueueConfig{
		{Name: "a", Weight: 3, Limit: 1 << 24, PFC: -1},
		{Name: "b", Weight: 1, Limit: 1 << 24, PFC: -1},
	}})
	for i := 0; i < 80000; i++ {
		e.Enqueue(0, 0, 64) // small frames: 5.1 MB
	}
	for i := 0; i < 4000; i++ {
		e.Enqueue(1, 0, 1500) // large frames: 6 MB
	}
	var bytes [2]int
	out := make([]Packet, 64)
	for sent := 0; sent < 4<<20; {
		n := e.Dequeue(0, out)
		for _, p := range out[:n] {
			bytes[p.Queue] += int(p.Len)
			sent += int(p.Len)
		}
	}
	ratio := float64(bytes[0]) / float64(bytes[1])
	if ratio < 2.9 || ratio > 3.1 {
		t.Fatalf("byte ratio a:b = %.3f (%d:%d), want 3", ratio, bytes[0], bytes[1])
	}
}

// TestEgressShaper checks the token bucket releases bytes at the link
// rate: 1 Gb/s for 1 ms is 125000 bytes, plus the initial burst.
func TestEgressShaper(t *testing.T) {
	c := EgressConfig{RateBps: 1e9, BurstBytes: 3000, Queues: []QueueConfig{{Name: "d", Weight: 1, Limit: 1 << 24, PFC: -1}}}
	e := mustEgress(t, c)
	for i := 0; i < 10000; i++ {
		e.Enqueue(0, 0, 1000)
	}
	sent := 0
	out := make([]Packet, 64)
	for now := int64(0); now <= 1e6; now += 1000 { // every microsecond
		n := e.Dequeue(now, out)
		for _, p := range out[:n] {
			sent += int(p.Len)
		}
	}
	want := 125000 + 3000
	if sent < want-2000 || sent > want+2000 {
		t.Fatalf("sent %d bytes in 1 ms at 1 Gb/s, want about %d", sent, want)
	}
}

// TestEgressNext: Next names the first nanosecond at which Dequeue gives
// a frame, for the shaper (a frame one ns earlier stays) and for a PFC
// pause; nothing queued is not ok, a frame that may go is now.
func TestEgressNext(t *testing.T) {
	e := mustEgress(t, EgressConfig{RateBps: 1e9, BurstBytes: 3000,
		Queues: []QueueConfig{{Name: "d", Weight: 1, Limit: 1 << 20, PFC: 3}}})
	if _, ok := e.Next(0); ok {
		t.Fatal("Next with nothing queued: want not ok")
	}
	for i := 0; i < 8; i++ {
		e.Enqueue(0, uint64(i), 1000)
	}
	if at, ok := e.Next(5); !ok || at != 5 {
		t.Fatalf("Next(5) = %d, %v: a full bucket sends at once", at, ok)
	}
	out := make([]Packet, 8)
	now := int64(0)
	for round := 0; round < 5; round++ {
		for e.Dequeue(now, out[:1]) == 1 {
		}
		at, ok := e.Next(now)
		if !ok || at <= now {
			t.Fatalf("round %d: Next(%d) = %d, %v: want a later time", round, now, at, ok)
		}
		if e.Dequeue(at-1, out[:1]) != 0 {
			t.Fatalf("round %d: a frame went at %d, before Next's %d", round, at-1, at)
		}
		if e.Dequeue(at, out[:1]) != 1 {
			t.Fatalf("round %d: no frame at Next's %d", round, at)
		}
		now = at
	}
	e.Enqueue(0, 9, 1000)
	e.Pause(now, 1<<3, &[8]uint16{3: 100}) // 100 × 512 bit times at 1 Gb/s: 51.2 µs
	if at, ok := e.Next(now + 10_000); !ok || at != now+51_200 {
		t.Fatalf("paused: Next = %d, %v; want the pause's end %d", at, ok, now+51_200)
	}
}

func TestEgressPFC(t *testing.T) {
	e := mustEgress(t, DefaultEgress(10e9, 1<<20))
	data, ctrl := e.QueueIndex("data"), e.QueueIndex("control")
	e.Enqueue(data, 1, 1000)
	// Pause priority 3 for 0xffff quanta at 10 Gb/s: 3.355 ms.
	e.Pause(0, 1<<3, &[8]uint16{3: 0xffff})
	if !e.Paused(0, data) || e.Paused(0, ctrl) {
		t.Fatal("priority 3 pause must stop the data queue and not control")
	}
	if got := drain(e, 1000, 8); len(got) != 0 {
		t.Fatalf("paused queue sent %d frames", len(got))
	}
	e.EnqueueControl(7, 60)
	if got := drain(e, 2000, 8); len(got) != 1 || got[0].Addr != 7 {
		t.Fatalf("MAC control frame must pass a pause, got %+v", got)
	}
	if got := drain(e, 3_356_000, 8); len(got) != 1 {
		t.Fatalf("after the pause time the data frame must go, got %d", len(got))
	}
	e.Enqueue(data, 2, 1000)
	e.Pause(4e6, 1<<3, &[8]uint16{3: 0xffff})
	e.Pause(4e6+10, 1<<3, &[8]uint16{}) // zero time resumes
	if got := drain(e, 4e6+20, 8); len(got) != 1 {
		t.Fatal("a zero pause time must resume the queue")
	}
}

// TestEgressAloneLevel: a queue alone on its level is served without
// DRR, so a tiny quantum (tor/trim sets 1 byte per unit of weight) costs
// it nothing and its deficit never runs away.
func TestEgressAloneLevel(t *testing.T) {
	e := mustEgress(t, EgressConfig{Quantum: 1, Queues: []QueueConfig{
		{Name: "hi", Level: 1, Weight: 1, Limit: 1 << 20, PFC: -1},
		{Name: "lo", Level: 0, Weight: 1, Limit: 1 << 20, PFC: -1},
	}})
	for i := 0; i < 100; i++ {
		e.Enqueue(0, uint64(i), 1500)
		e.Enqueue(1, uint64(i), 1500)
	}
	if got := drain(e, 0, 64); len(got) != 64 || got[63].Queue != 0 {
		t.Fatalf("dequeued %d frames, want 64 from the upper level", len(got))
	}
	if got := drain(e, 0, 200); len(got) != 136 || got[35].Queue != 0 || got[36].Queue != 1 {
		t.Fatalf("dequeued %d frames, want the 36 upper ones then 100 lower", len(got))
	}
	if e.queues[0].deficit != 0 || e.queues[1].deficit != 0 {
		t.Fatalf("deficits %d, %d; want 0 for queues alone on their level", e.queues[0].deficit, e.queues[1].deficit)
	}
}

// pickScan is pick as it was before the busy set and the pause mask:
// every queue is looked at, with Paused, for the ones that may send,
// and pick's DRR chooses among those alone (no pause in force for it to
// mask).
func pickScan(e *Egress, now int64) int {
	var active uint16
	for qi := range e.queues {
		if e.queues[qi].packets() > 0 && !e.Paused(now, qi) {
			active |= 1 << qi
		}
	}
	busy, end := e.busy, e.pauseEnd
	e.busy, e.pauseEnd = active, 0
	q := e.pick(now)
	e.busy, e.pauseEnd = busy, end
	return q
}

// dequeueOneByOne is Dequeue as it was before its batch path: pick for
// every frame, and pick as it was before the busy set (pickScan).
// TestDequeueBatch checks Dequeue against it.
func dequeueOneByOne(e *Egress, now int64, out []Packet) int {
	n := 0
	for n < len(out) && e.ctrl.packets() > 0 {
		en := e.ctrl.pop()
		e.backlog -= int(en.len)
		out[n] = Packet{Addr: en.addr, Len: en.len, In: NoPort, Out: NoPort}
		n++
	}
	if e.rate > 0 {
		if dt := now - e.last; dt > 0 {
			add := int64(uint64(dt) * e.rate / 8e9)
			if add > 0 {
				e.tokens = int(min(int64(e.tokens)+add, int64(e.burst)))
				e.last += int64(uint64(add) * 8e9 / e.rate)
			}
		} else if dt < 0 {
			e.last = now
		}
	}
	for n < len(out) {
		if e.rate > 0 && e.tokens <= 0 {
			break
		}
		q := pickScan(e, now)
		if q < 0 {
			break
		}
		qu := &e.queues[q]
		en := qu.pop()
		e.backlog -= int(en.len)
		if e.markAt == MarkDequeue && en.ecn != ecnNotECT {
			e.mark(qu, en, qu.bytes)
		}
		if !qu.alone {
			qu.deficit -= int(en.len)
		}
		if e.rate > 0 {
			e.tokens -= int(en.len)
		}
		out[n] = Packet{Addr: en.addr, Len: en.len, In: en.in, Out: NoPort, Queue: uint8(q)}
		n++
	}
	return n
}

// TestDequeueBatch is a differential test of Dequeue, which serves a
// queue again without asking pick while pick would choose it anyway,
// against dequeueOneByOne, which asks pick for every frame: over random
// layouts (levels shared or alone, weights, small quanta), rates,
// pauses, control frames, frame sizes and batch sizes, both must send the
// same frames in the same order and leave the same state.
func TestDequeueBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		var c EgressConfig
		for q := 0; q < 1+rng.IntN(5); q++ {
			c.Queues = append(c.Queues, QueueConfig{Name: fmt.Sprint("q", q), Level: rng.IntN(3),
				Weight: 1 + rng.IntN(4), Limit: 1 << 20, PFC: rng.IntN(3) - 1})
		}
		c.Quantum = []int{0, 1, 64, 700}[rng.IntN(4)]
		c.RateBps = []uint64{0, 0, 1e9, 10e9}[rng.IntN(4)]
		batch, ref := mustEgress(t, c), mustEgress(t, c)
		now := int64(0)
		var got, want [BatchSize]Packet
		for round := 0; round < 40; round++ {
			for k := rng.IntN(80); k > 0; k-- {
				q, n := rng.IntN(len(c.Queues)), 64+rng.IntN(1400)
				addr := uint64(round)<<20 | uint64(k)
				if batch.Enqueue(q, addr, n) != ref.Enqueue(q, addr, n) {
					t.Fatalf("trial %d: enqueue results differ", trial)
				}
			}
			if rng.IntN(8) == 0 {
				batch.EnqueueControl(1, 64)
				ref.EnqueueControl(1, 64)
			}
			if rng.IntN(4) == 0 {
				var times [8]uint16
				times[rng.IntN(2)] = uint16(rng.IntN(300))
				batch.Pause(now, 3, &times)
				ref.Pause(now, 3, &times)
			}
			now += int64(rng.IntN(20000))
			room := rng.IntN(BatchSize) + 1
			n, m := batch.Dequeue(now, got[:room]), dequeueOneByOne(ref, now, want[:room])
			if n != m {
				t.Fatalf("trial %d round %d: Dequeue sent %d frames, one by one %d", trial, round, n, m)
			}
			if got != want {
				t.Fatalf("trial %d round %d: Dequeue sent\n%+v\none by one\n%+v", trial, round, got[:n], want[:n])
			}
			if batch.Backlog() != ref.Backlog() || batch.tokens != ref.tokens || !slices.EqualFunc(batch.levels, ref.levels, func(a, b level) bool {
				return a.rr == b.rr && a.credited == b.credited
			}) {
				t.Fatalf("trial %d round %d: scheduler state differs", trial, round)
			}
			for q := range batch.queues {
				if batch.queues[q].deficit != ref.queues[q].deficit {
					t.Fatalf("trial %d round %d: queue %d deficit %d, one by one %d", trial, round, q, batch.queues[q].deficit, ref.queues[q].deficit)
				}
			}
		}
	}
}

// TestEntrySize: a queued frame stays 16 bytes with what ECN marking and
// ingress PFC keep of it; the rings of a thousand-switch simulation are
// walked by the cache line.
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 16 {
		t.Fatalf("entry is %d bytes, want 16", n)
	}
}

// TestEgressRing checks EgressConfig.Ring: a queue has no ring until
// its first frame, which makes one of Ring entries (256 without it, or
// fewer for a small budget); it grows to hold its whole byte budget in
// minimum-size frames, and gives them back in order.
func TestEgressRing(t *testing.T) {
	ring := func(e *Egress) int {
		t.Helper()
		if len(e.queues[0].ring) != 0 {
			t.Fatalf("a ring of %d entries before the first frame", len(e.queues[0].ring))
		}
		if !e.Enqueue(0, 0, 64) {
			t.Fatal("first frame refused")
		}
		return len(e.queues[0].ring)
	}
	q := []QueueConfig{{Name: "data", Weight: 1, Limit: 64 * 100, PFC: -1}}
	if n := ring(mustEgress(t, EgressConfig{Queues: q})); n != 128 {
		t.Errorf("ring of a 100-frame budget without Ring: %d entries, want 128 (its budget, below 256)", n)
	}
	q[0].Limit = 64 << 10
	if n := ring(mustEgress(t, EgressConfig{Queues: q})); n != 256 {
		t.Errorf("ring without Ring: %d entries, want 256", n)
	}
	if n := ring(mustEgress(t, EgressConfig{Queues: q, Ring: 16})); n != 16 {
		t.Fatalf("ring with Ring 16: %d entries, want 16", n)
	}
	e := mustEgress(t, EgressConfig{Queues: q, Ring: 16})
	for i := range 1024 {
		if !e.Enqueue(0, uint64(i)*2048, 64) {
			t.Fatalf("frame %d of 1024 refused within the budget", i)
		}
	}
	for i, p := range drain(e, 0, 1024) {
		if p.Addr != uint64(i)*2048 {
			t.Fatalf("frame %d out of order: addr %d", i, p.Addr)
		}
	}
	if err := (&EgressConfig{Queues: q, Ring: 24}).Validate(); err == nil {
		t.Error("a ring of 24 entries accepted")
	}
}

// TestEgressPublish: Seen shows each queue's depth, and the MAC control
// queue's, as of the last Publish, not as it is now; a Publish after
// the queues emptied shows them empty.
func TestEgressPublish(t *testing.T) {
	e := mustEgress(t, DefaultEgress(0, 1<<20))
	if !e.Enqueue(2, 0, 1000) || !e.Enqueue(2, 4096, 500) || !e.EnqueueControl(8192, 64) {
		t.Fatal("refused")
	}
	if e.Seen(2) != 0 {
		t.Fatalf("seen %d before any Publish", e.Seen(2))
	}
	e.Publish()
	if e.Seen(2) != 1500 || e.Seen(e.NumQueues()) != 64 || e.Seen(0) != 0 {
		t.Fatalf("seen %d, control %d, queue 0 %d; want 1500, 64, 0", e.Seen(2), e.Seen(e.NumQueues()), e.Seen(0))
	}
	e.Publish() // nothing changed
	drain(e, 0, 8)
	if e.Seen(2) != 1500 {
		t.Fatalf("seen %d after a dequeue without Publish, want the published 1500", e.Seen(2))
	}
	e.Publish()
	if e.Seen(2) != 0 || e.Seen(e.NumQueues()) != 0 {
		t.Fatalf("seen %d, control %d after the queues emptied", e.Seen(2), e.Seen(e.NumQueues()))
	}
	// Empty twice running, Publish stores nothing; the next frame
	// shows again.
	e.Publish()
	if !e.Enqueue(3, 0, 700) {
		t.Fatal("refused")
	}
	e.Publish()
	if e.Seen(3) != 700 {
		t.Fatalf("seen %d after an empty spell, want 700", e.Seen(3))
	}
}
