package impair

// held is a frame a Port owns until its deadline, in 24 bytes. The heap
// moves entries on every push and pop: shrinking them from 56 bytes to 32,
// and popping Floyd's way (see pop), took BenchmarkImpair/delay (about 640
// frames held) from 330 to 190–200 ns per packet, best of runs on the
// shared 2-core EPYC, against about 80 with no rules.
type held struct {
	at   int64  // deadline, ns
	addr uint64 // frame
	seq  uint32 // hold order, so equal deadlines leave FIFO; wraps
	len  uint16
}

// holdQueue is a binary min-heap of held frames by (deadline, seq) with a
// capacity fixed when a rule set is adopted, so holding never allocates.
// Its zero value is an empty queue that holds nothing.
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

// due reports whether the earliest frame is due at now.
func (q *holdQueue) due(now int64) bool { return len(q.h) > 0 && q.h[0].at <= now }
