package impair

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"rocetor/rocev2"
)

// once checks that every one of n sequence numbers arrived exactly once.
func once(t *testing.T, got []uint32, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d frames arrived, want %d", len(got), n)
	}
	s := slices.Clone(got)
	slices.Sort(s)
	for i, v := range s {
		if v != uint32(i) {
			t.Fatalf("sequence %d missing or repeated", i)
		}
	}
}

func TestDuplicateMakesExactCopies(t *testing.T) {
	const n, p = 10_000, 0.3
	f := roce(t, rocev2.RCWriteMiddle, 0, 200)
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Duplicate: p}), rigOpt{})
	r.keep = true
	r.stream(f, n, 16, 1000)
	count := make([]int, n)
	for k, g := range r.frame[1] {
		s := seqOf(g)
		count[s]++
		binary.BigEndian.PutUint32(f[len(f)-4:], s)
		if !bytes.Equal(g, f) {
			t.Fatalf("frame %d (seq %d) differs from the one sent", k, s)
		}
	}
	dups := 0
	for s, c := range count {
		if c < 1 || c > 2 {
			t.Fatalf("seq %d arrived %d times", s, c)
		}
		dups += c - 1
	}
	rs := r.dir(1, Egress)
	if uint64(dups) != rs.Duplicated {
		t.Fatalf("%d copies arrived, %d counted", dups, rs.Duplicated)
	}
	within(t, "duplication rate", float64(dups)/n, p, 5*math.Sqrt(p*(1-p)/n))
	r.noLeak()
}

// TestReorder sends a frame every microsecond and holds 5% of them for
// 50 µs: each held frame is overtaken by the ~50 that follow, the others
// keep their order, and every frame arrives exactly once. The last 100
// frames are of an opcode the rule spares, so every held frame has
// followers to overtake it.
func TestReorder(t *testing.T) {
	const n, tail, p = 20_000, 100, 0.05
	r := newRig(t, single(Rule{Port: "p0", Direction: "ingress", Match: "roce", Opcodes: []string{"RC_RDMA_WRITE_MIDDLE"},
		Reorder: &Reorder{P: p, Delay: 50 * time.Microsecond}}), rigOpt{})
	f, last := roce(t, rocev2.RCWriteMiddle, 0, 64), roce(t, rocev2.RCWriteLast, 0, 64)
	for s := 0; s < n+tail; s++ {
		if s < n {
			r.inject(0, f, uint32(s))
		} else {
			r.inject(0, last, uint32(s))
		}
		r.step(1000)
	}
	r.drain()
	once(t, r.seq[1], n+tail)
	late, top := 0, uint32(0)
	for i, s := range r.seq[1] {
		if i > 0 && s < top {
			late++
		}
		top = max(top, s)
	}
	rs := r.dir(0, Ingress)
	if late == 0 || uint64(late) != rs.Reordered {
		t.Fatalf("%d frames overtaken, %d held back", late, rs.Reordered)
	}
	within(t, "reorder rate", float64(late)/n, p, 5*math.Sqrt(p*(1-p)/n))
	r.noLeak()
}

// TestDelay holds every frame for 10 ± 5 µs. Frames sent a microsecond
// apart leave in deadline order, so the jitter reorders them; each one's
// latency lies in the configured range, up to the 250 ns step of the
// test's clock.
func TestDelay(t *testing.T) {
	const n, step = 5000, 250
	for _, c := range []struct {
		jitter  time.Duration
		reorder bool
	}{{0, false}, {5 * time.Microsecond, true}} {
		d := &Delay{Mean: 10 * time.Microsecond, Jitter: c.jitter}
		r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Delay: d}), rigOpt{})
		sentAt := make([]int64, n)
		for s := 0; s < n; s++ {
			sentAt[s] = r.now
			r.inject(0, roce(t, rocev2.RCWriteMiddle, 0, 64), uint32(s))
			for k := 0; k < 4; k++ {
				r.step(step)
			}
		}
		for k := 0; k < 100; k++ { // past the last deadline, at the same pace
			r.step(step)
		}
		r.drain()
		once(t, r.seq[1], n)
		lo, hi := int64(d.Mean-d.Jitter), int64(d.Mean+d.Jitter)+step
		inverted := false
		for i, s := range r.seq[1] {
			// the frame entered the worker one step after sentAt
			if lat := r.at[1][i] - sentAt[s] - step; lat < lo || lat > hi {
				t.Fatalf("jitter %v: seq %d held %d ns, want %d–%d", c.jitter, s, lat, lo, hi)
			}
			inverted = inverted || i > 0 && s < r.seq[1][i-1]
		}
		if inverted != c.reorder {
			t.Fatalf("jitter %v: reordered %v", c.jitter, inverted)
		}
		if rs := r.dir(1, Egress); rs.Delayed != n {
			t.Fatalf("delayed %d of %d", rs.Delayed, n)
		}
		r.noLeak()
	}
}

// TestHoldQueueOrder checks the heap against a sort: frames leave by
// deadline, FIFO among equal deadlines.
func TestHoldQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q holdQueue
	q.reserve(1000)
	var ref []held
	for round := 0; round < 50; round++ {
		for k := rng.IntN(40); k > 0; k-- {
			e := held{at: rng.Int64N(100), addr: uint64(len(ref)), len: 1}
			q.push(e)
			e.seq = q.seq - 1
			ref = append(ref, e)
		}
		sort.SliceStable(ref, func(i, j int) bool { return ref[i].at < ref[j].at })
		for k := rng.IntN(40); k > 0 && len(ref) > 0; k-- {
			got := q.pop()
			if got.at != ref[0].at || got.seq != ref[0].seq {
				t.Fatalf("popped (%d, %d), want (%d, %d)", got.at, got.seq, ref[0].at, ref[0].seq)
			}
			ref = ref[1:]
		}
		if q.bytes != len(ref) || len(q.h) != len(ref) {
			t.Fatalf("queue holds %d frames, %d bytes; want %d", len(q.h), q.bytes, len(ref))
		}
	}
}

// TestHoldBudget offers far more than hold_bytes can delay: the budget
// is never exceeded, every frame beyond it is a counted impair_overflow
// drop, and everything else arrives.
func TestHoldBudget(t *testing.T) {
	const budget = 16 << 10
	f := roce(t, rocev2.RCWriteMiddle, 0, 1000)
	r := newRig(t, Config{Seed: 1, HoldBytes: budget, Rules: []Rule{{Port: "p1", Direction: "egress",
		Delay: &Delay{Mean: time.Millisecond}, Duplicate: 0.2}}}, rigOpt{})
	for s := 0; s < 20_000; s++ {
		r.inject(0, f, uint32(s))
		if s%64 == 63 {
			r.step(10_000)
		}
		if hb := r.ip[1].Counters().HeldBytes; hb > budget {
			t.Fatalf("holding %d bytes, budget %d", hb, budget)
		}
	}
	r.drain()
	st := r.ip[1].Counters()
	rs := st.Dir[Egress]
	over := rs.Caused(CauseOverflow)
	if over == 0 || rs.Of(ClassData) != over {
		t.Fatalf("overflow %d, %d of them data", over, rs.Of(ClassData))
	}
	if got := uint64(len(r.seq[1])) + over; got != uint64(r.sent)+rs.Duplicated {
		t.Fatalf("delivered %d + overflow %d ≠ sent %d + copies %d", len(r.seq[1]), over, r.sent, rs.Duplicated)
	}
	if st.MaxHeldBytes > budget || st.MaxHeldBytes < budget-len(f) {
		t.Fatalf("high-water mark %d, budget %d", st.MaxHeldBytes, budget)
	}
	r.noLeak()
}

// TestFlushFreesHeld stops a worker with frames held: Flush frees them.
func TestFlushFreesHeld(t *testing.T) {
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Delay: &Delay{Mean: time.Second}}), rigOpt{})
	for s := 0; s < 100; s++ {
		r.inject(0, roce(t, rocev2.RCWriteMiddle, 0, 64), uint32(s))
	}
	r.step(1000)
	r.step(1000)
	if st := r.ip[1].Counters(); st.Held != 100 || r.mem.InUse() != 100 {
		t.Fatalf("held %d, in use %d; want 100", st.Held, r.mem.InUse())
	}
	r.ip[1].Flush()
	if st := r.ip[1].Snapshot(); st.Held != 0 || st.HeldBytes != 0 || st.Flushed != 100 || st.Released != 0 {
		t.Fatalf("after Flush: %+v", st)
	}
	if n := r.mem.InUse(); n != 0 {
		t.Fatalf("%d frames still in use after Flush", n)
	}
}

// TestIngressAndEgressHold holds a frame under both its rules: the holds
// add up, and each rule counts it.
func TestIngressAndEgressHold(t *testing.T) {
	r := newRig(t, Config{Seed: 1, Rules: []Rule{
		{Port: "p0", Direction: "ingress", Delay: &Delay{Mean: 10 * time.Microsecond}},
		{Port: "p1", Direction: "egress", Delay: &Delay{Mean: 5 * time.Microsecond}},
	}}, rigOpt{})
	r.inject(0, roce(t, rocev2.RCWriteMiddle, 0, 64), 0)
	r.step(100) // the frame is processed at 100 ns
	for len(r.seq[1]) == 0 && r.now < 1e6 {
		r.step(100)
	}
	if lat := r.at[1][0] - 100; lat != 15_000 {
		t.Fatalf("held %d ns, want 15000", lat)
	}
	if r.dir(0, Ingress).Delayed != 1 || r.dir(1, Egress).Delayed != 1 || r.held() != 0 {
		t.Fatalf("%+v %+v", r.ip[0].Counters(), r.ip[1].Counters())
	}
	r.noLeak()
}
