package sim

import "math"

// Time is simulated time in picoseconds.
type Time = int64

// Units of Time.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond
	// Never is a time no event has.
	Never Time = math.MaxInt64
)

// Actor is an object of the simulation with a time of its own: the
// engine calls Fire at the time it was woken for, once, and the actor
// wakes itself again (Sim.Wake) if it has more to do.
type Actor interface {
	Fire(now Time)
}

// Sim is the event list: one entry per actor with something due,
// ordered by time and then by the actor's id (Add order), so that
// events at one time fire in the same order on every run. Its zero
// value is not ready; use New.
type Sim struct {
	now    Time
	ids    *ids    // the id space, shared by the partitions of one run (Part)
	actors []Actor // by id; nil for another partition's actors
	at     []Time  // when each actor is due, Never if not
	pos    []int32 // its index in h, -1 if not there
	h      []event // a binary min-heap of the actors due
	// Events counts actor firings.
	Events uint64
	// cross are the link directions into this partition from others
	// (Connect), in id order; epoch counts its windows (Group).
	cross []*wire
	epoch int
	// log holds the ids of the events fired at the current time, in
	// order (Group.Stop).
	log []int32
}

// ids is a run's id space: the next id to hand out.
type ids struct{ next int }

// event is an entry of the heap: the actor and when it is due, kept in
// the entry so that ordering two entries reads one cache line and not
// at[] at two ids far apart (a k = 16 fat tree has 9,000 actors).
type event struct {
	at Time
	id int32
}

// New returns an empty simulation at time 0.
func New() *Sim { return &Sim{ids: &ids{}} }

// Part returns a new, empty partition of s's run: a simulation with an
// event list and a clock of its own whose actors take their ids from the
// same space as s's, so that simultaneous events of different
// partitions are ordered as one simulation would order them (Group).
func (s *Sim) Part() *Sim { return &Sim{ids: s.ids} }

// Now returns the current time.
func (s *Sim) Now() Time { return s.now }

// Add registers a and returns its id. Ids order simultaneous events.
func (s *Sim) Add(a Actor) int {
	id := s.ids.next
	s.ids.next++
	for len(s.actors) <= id {
		s.actors = append(s.actors, nil)
		s.at = append(s.at, Never)
		s.pos = append(s.pos, -1)
	}
	s.actors[id] = a
	return id
}

// Wake makes actor id due at at (not before now), unless it is due
// earlier already: an actor has one entry, at its earliest time.
func (s *Sim) Wake(id int, at Time) {
	at = max(at, s.now)
	if at >= s.at[id] {
		return
	}
	s.at[id] = at
	if s.pos[id] < 0 {
		s.pos[id] = int32(len(s.h))
		s.h = append(s.h, event{at: at, id: int32(id)})
	} else {
		s.h[s.pos[id]].at = at
	}
	s.up(int(s.pos[id]))
}

// Due returns when actor id is next due, Never if not.
func (s *Sim) Due(id int) Time { return s.at[id] }

// Pending returns how many actors are due.
func (s *Sim) Pending() int { return len(s.h) }

// Next returns the time of the earliest event, Never if none.
func (s *Sim) Next() Time {
	if len(s.h) == 0 {
		return Never
	}
	return s.h[0].at
}

// Peek returns the earliest event's time and actor id, (Never, -1) if
// none.
func (s *Sim) Peek() (Time, int) {
	if len(s.h) == 0 {
		return Never, -1
	}
	return s.h[0].at, int(s.h[0].id)
}

// Step fires the earliest event and reports whether there was one.
func (s *Sim) Step() bool {
	if len(s.h) == 0 {
		return false
	}
	id := s.h[0].id
	if at := s.h[0].at; at != s.now {
		s.now, s.log = at, s.log[:0]
	}
	s.log = append(s.log, id)
	s.remove0()
	s.at[id] = Never
	s.Events++
	s.actors[id].Fire(s.now)
	return true
}

// Run fires events until none is due at or before until; it leaves the
// clock at until if the events ran out before, and reports whether
// events remain.
func (s *Sim) Run(until Time) bool {
	for len(s.h) > 0 && s.h[0].at <= until {
		s.Step()
	}
	if s.now < until && until != Never {
		s.now = until
	}
	return len(s.h) > 0
}

func (s *Sim) less(i, j int) bool {
	a, b := &s.h[i], &s.h[j]
	return a.at < b.at || (a.at == b.at && a.id < b.id)
}

func (s *Sim) swap(i, j int) {
	s.h[i], s.h[j] = s.h[j], s.h[i]
	s.pos[s.h[i].id], s.pos[s.h[j].id] = int32(i), int32(j)
}

func (s *Sim) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *Sim) down(i int) {
	n := len(s.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}

func (s *Sim) remove0() {
	id := s.h[0].id
	last := len(s.h) - 1
	s.swap(0, last)
	s.h = s.h[:last]
	s.pos[id] = -1
	if last > 0 {
		s.down(0)
	}
}

// Seed derives a seed for one component from a run's seed and the
// component's coordinates (splitmix64 over each), so that every port,
// switch and host draws from a stream of its own and adding one does
// not shift the others'.
func Seed(seed uint64, parts ...uint64) uint64 {
	x := seed
	for _, p := range parts {
		x = mix(x ^ mix(p+0x9e3779b97f4a7c15))
	}
	return mix(x)
}

func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
