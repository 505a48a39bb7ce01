package dataplane

// timer is one armed timer: a deadline, the stage to call and the
// stage's argument.
type timer struct {
	at    int64
	stage uint16
	arg   uint64
}

// Timers is a worker's timer facility: a binary min-heap of deadlines in
// nanoseconds with a fixed capacity. The heap's room grows by doubling
// up to the capacity, as the egress rings do, so arming allocates only
// when the number armed reaches a new high (a worker's first moments)
// and a worker that arms few timers holds little: the simulator's
// thousand switches each held 1.5 MB for 65,536 timers. Resolution
// is the worker's loop period, microseconds when it polls busily. Timers
// cannot be cancelled; a stage that re-arms ignores stale expiries (for
// example by comparing a generation it keeps in arg). Not safe for
// concurrent use.
type Timers struct {
	h       []timer
	max     int    // capacity
	Refused uint64 // Arm calls refused at capacity
}

// NewTimers returns a timer heap holding up to capacity timers.
func NewTimers(capacity int) *Timers {
	return &Timers{h: make([]timer, 0, min(capacity, 64)), max: capacity}
}

// Len returns the number of armed timers.
func (t *Timers) Len() int { return len(t.h) }

// Next returns the earliest deadline and whether any timer is armed.
func (t *Timers) Next() (int64, bool) {
	if len(t.h) == 0 {
		return 0, false
	}
	return t.h[0].at, true
}

// Arm schedules (stage, arg) at time at. It returns false, and counts it,
// when the heap is full.
func (t *Timers) Arm(at int64, stage uint16, arg uint64) bool {
	if len(t.h) >= t.max {
		t.Refused++
		return false
	}
	t.h = append(t.h, timer{at: at, stage: stage, arg: arg})
	i := len(t.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if t.h[p].at <= t.h[i].at {
			break
		}
		t.h[p], t.h[i] = t.h[i], t.h[p]
		i = p
	}
	return true
}

// Pop removes and returns the earliest timer if it is due at now.
func (t *Timers) Pop(now int64) (stage uint16, arg uint64, ok bool) {
	if len(t.h) == 0 || t.h[0].at > now {
		return 0, 0, false
	}
	top := t.h[0]
	last := len(t.h) - 1
	t.h[0] = t.h[last]
	t.h = t.h[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && t.h[l].at < t.h[m].at {
			m = l
		}
		if r < last && t.h[r].at < t.h[m].at {
			m = r
		}
		if m == i {
			break
		}
		t.h[m], t.h[i] = t.h[i], t.h[m]
		i = m
	}
	return top.stage, top.arg, true
}
