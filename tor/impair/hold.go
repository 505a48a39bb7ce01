package impair

import (
	"math"
	"time"

	"rocetor/dataplane"
)

// held is a frame the stage owns until its deadline: only what Emit needs,
// plus the rule to charge it to, in 32 bytes. The heap moves entries on
// every push and pop: shrinking them from 56 bytes, and popping Floyd's
// way (see pop), took BenchmarkImpair/delay (about 640 frames held) from
// 330 to 190–200 ns per packet, best of runs on the shared 2-core EPYC,
// against about 80 for the stage with no rules.
type held struct {
	at    int64  // deadline, ns
	addr  uint64 // frame
	seq   uint32 // hold order, so equal deadlines leave FIFO; wraps
	gen   uint32 // plan the frame was held under (low bits of its generation)
	len   uint16
	out   uint16
	rule  uint16 // rule index in that plan
	queue uint8
}

// holdQueue is a binary min-heap of held frames by (deadline, seq) with a
// capacity fixed when a rule set is adopted, so holding never allocates.
type holdQueue struct {
	h     []held
	seq   uint32
	bytes int
}

// reserve makes room for n frames, keeping those held.
func (q *holdQueue) reserve(n int) {
	if cap(q.h) < n {
		h := make([]held, len(q.h), n)
		copy(h, q.h)
		q.h = h
	}
}

func (q *holdQueue) full() bool { return len(q.h) == cap(q.h) }

func (q *holdQueue) less(i, j int) bool {
	a, b := &q.h[i], &q.h[j]
	// The wrap-around difference orders sequence numbers less than
	// 2^31 holds apart, which any two frames with one deadline are.
	return a.at < b.at || a.at == b.at && int32(a.seq-b.seq) < 0
}

func (q *holdQueue) push(e held) {
	e.seq = q.seq
	q.seq++
	q.bytes += int(e.len)
	q.h = append(q.h, e)
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[p], q.h[i] = q.h[i], q.h[p]
		i = p
	}
}

// pop removes the earliest frame. It sinks the hole at the root to a
// leaf along the smaller children, then sifts the last entry up from
// there (Floyd's variant): the last entry usually belongs near the
// bottom, so this saves most of the comparisons of a plain sift-down.
func (q *holdQueue) pop() held {
	top := q.h[0]
	last := len(q.h) - 1
	i := 0
	for {
		c := 2*i + 1
		if c >= last {
			break
		}
		if c+1 < last && q.less(c+1, c) {
			c++
		}
		q.h[i] = q.h[c]
		i = c
	}
	q.h[i] = q.h[last]
	q.h = q.h[:last]
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.h[p], q.h[i] = q.h[i], q.h[p]
		i = p
	}
	q.bytes -= int(top.len)
	return top
}

// take holds a frame until at, charged to rule ri. It returns false,
// leaving the frame with the caller, when the hold budget or the queue
// is full.
func (s *Stage) take(c *dataplane.Ctx, addr uint64, n, out uint16, queue uint8, at int64, ri int) bool {
	if s.q.bytes+int(n) > s.plan.holdBytes || s.q.full() {
		return false
	}
	s.q.push(held{at: at, addr: addr, len: n, out: out, queue: queue, rule: uint16(ri), gen: uint32(s.plan.gen)})
	s.st.Held++
	s.st.HeldBytes = s.q.bytes
	s.st.MaxHeldBytes = max(s.st.MaxHeldBytes, s.q.bytes)
	rs := &s.st.Rules[ri]
	rs.Held++
	rs.HeldBytes += int(n)
	s.arm(c, at)
	return true
}

// arm makes sure a timer fires by at. Timers cannot be cancelled, so the
// stage keeps one armed for the earliest deadline it knows of and arms
// another only for an earlier one: a timer per frame would fill the
// worker's timer heap under a long delay.
func (s *Stage) arm(c *dataplane.Ctx, at int64) {
	if at >= s.armed {
		return
	}
	if !c.After(at-c.Now, uint64(at)) {
		// Due frames still leave with the next batch or timer, and the
		// next hold or release tries again.
		s.st.TimerFull++
		return
	}
	s.armed = at
}

// Timer implements dataplane.Timed: it releases the held frames that are
// due. arg is the deadline the timer was armed for.
func (s *Stage) Timer(c *dataplane.Ctx, arg uint64) {
	if int64(arg) == s.armed {
		s.armed = math.MaxInt64
	}
	s.release(c)
	if c.Now-s.lastPub >= int64(time.Millisecond) {
		s.publish(c.Now)
	}
}

// release emits every held frame whose deadline has passed, in deadline
// order, and arms a timer for the next one.
func (s *Stage) release(c *dataplane.Ctx) {
	for len(s.q.h) > 0 && s.q.h[0].at <= c.Now {
		e := s.q.pop()
		s.unhold(&e)
		s.st.Released++
		s.tmp = dataplane.Packet{Addr: e.addr, Len: e.len, Out: e.out, Queue: e.queue}
		c.Emit(&s.tmp) // a full queue drops it, counted by the worker
	}
	if len(s.q.h) > 0 {
		s.arm(c, s.q.h[0].at)
	}
}

func (s *Stage) unhold(e *held) {
	s.st.Held--
	s.st.HeldBytes = s.q.bytes
	if s.plan != nil && e.gen == uint32(s.plan.gen) {
		rs := &s.st.Rules[e.rule]
		rs.Held--
		rs.HeldBytes -= int(e.len)
	}
}

// Close frees the frames still held, counting them in Stats.Flushed. Call
// it once the worker has stopped (it is not a dataplane.Stage method, so
// the owner of the pipeline calls it): the worker's drop counters are
// closed by then, so these frames are counted here rather than as a
// drop reason. The stage stays usable.
func (s *Stage) Close() error {
	for len(s.q.h) > 0 {
		e := s.q.pop()
		s.unhold(&e)
		s.st.Flushed++
		s.mem.Release(e.addr)
	}
	s.armed = math.MaxInt64
	s.publish(s.lastPub)
	return nil
}
