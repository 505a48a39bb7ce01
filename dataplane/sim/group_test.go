package sim

import (
	"fmt"
	"slices"
	"testing"
)

// chain is an actor that, when it fires, records itself and wakes the
// next actor of its chain at the same time.
type chain struct {
	s    *Sim
	id   int
	next int // -1: none
	log  *[]string
}

func (c *chain) Fire(now Time) {
	*c.log = append(*c.log, fmt.Sprintf("%d@%d", c.id, now))
	if c.next >= 0 {
		c.s.Wake(c.next, now)
	}
}

// stopWorld builds the actors of TestGroupStop over the simulations
// sims[part of each actor] and wakes the chains' heads.
func stopWorld(sims []*Sim, log *[]string) {
	// id: partition (0 = Q, which completes, 1 = P), next in chain.
	spec := []struct{ part, next int }{
		0: {1, -1}, 1: {1, 0}, 2: {1, -1}, 3: {1, -1}, 4: {1, -1}, 5: {1, -1}, 6: {1, -1}, 7: {1, -1}, 8: {1, -1},
		9:  {0, -1}, // Q's completion
		10: {1, -1}, 11: {1, -1},
		12: {1, 14}, 13: {1, -1}, 14: {1, 16},
		15: {0, 9},
		16: {1, -1},
	}
	for id, sp := range spec {
		c := &chain{s: sims[sp.part], id: id, next: sp.next, log: log}
		if got := sims[sp.part].Add(c); got != id {
			panic("ids")
		}
	}
	sims[1].Wake(1, 5) // before: fires, and wakes 0 at 5
	sims[0].Wake(15, 10)
	sims[1].Wake(12, 10)
}

// TestGroupStop: the partitions stop where one simulation stops after
// a given event, even when simultaneous events of two partitions
// interleave out of id order (an actor woken at the current time fires
// after the ones due already): Q fires 15, which wakes 9, the last; P
// fires 12, which wakes 14, which wakes 16. One simulation fires 12,
// 14 (below 15), 15, 9 and stops: P fires 12 and 14 but not 16, though
// 12 and 14 come after 9 by id.
func TestGroupStop(t *testing.T) {
	var want []string
	one := New()
	stopWorld([]*Sim{one, one}, &want)
	for one.Step() {
		if want[len(want)-1] == "9@10" {
			break
		}
	}
	var got []string
	q := New()
	p := q.Part()
	stopWorld([]*Sim{q, p}, &got)
	g := NewGroup([]*Sim{q, p}, q.Part())
	g.Begin()
	paused := g.Run([]int{0}, 11, func(int) bool { return got[len(got)-1] == "9@10" })
	if !paused[0] {
		t.Fatal("Q did not pause at its completion")
	}
	g.Stop(paused)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || !slices.Contains(got, "14@10") || slices.Contains(got, "16@10") {
		t.Errorf("fired %v, one simulation %v", got, want)
	}
	if g.Now() != one.Now() || g.Events() != one.Events {
		t.Errorf("at %d after %d events, one simulation at %d after %d", g.Now(), g.Events(), one.Now(), one.Events)
	}
}

// TestGroupStopAfterGlobal: when the last event comes after Global's
// at the same time (a host a flow was just posted to), the events of
// that time fired before Global's do not take turns in Stop's merge:
// Q fires 20, Global 30 wakes Q's 15 and P's 12; 15 wakes 9, the
// last, 12 wakes 17. One simulation fires 20, 30, 12, 15, 9: not 17,
// which 20 would let through were it merged.
func TestGroupStopAfterGlobal(t *testing.T) {
	build := func(q, p, gl *Sim, log *[]string) {
		for id := 0; id <= 30; id++ {
			s, next := p, -1
			switch id {
			case 9, 20:
				s = q
			case 15:
				s, next = q, 9
			case 12:
				next = 17
			case 30:
				s = gl
			}
			var a Actor = &chain{s: s, id: id, next: next, log: log}
			if id == 30 {
				a = ActorFunc(func(now Time) {
					*log = append(*log, fmt.Sprintf("30@%d", now))
					q.Wake(15, now)
					p.Wake(12, now)
				})
			}
			s.Add(a)
		}
		q.Wake(20, 10)
		gl.Wake(30, 10)
	}
	var want []string
	one := New()
	build(one, one, one, &want)
	for one.Step() && want[len(want)-1] != "9@10" {
	}
	var got []string
	q := New()
	p, gl := q.Part(), q.Part()
	build(q, p, gl, &got)
	g := NewGroup([]*Sim{q, p}, gl)
	g.Begin()
	g.Run([]int{0, 1}, gl.Next()+1, nil)
	g.Advance(gl.Next())
	gl.Step()
	g.Begin()
	paused := g.Run([]int{0}, 11, func(int) bool { return got[len(got)-1] == "9@10" })
	g.Stop(paused)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || slices.Contains(got, "17@10") {
		t.Errorf("fired %v, one simulation %v", got, want)
	}
}
