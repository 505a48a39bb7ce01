package sim

import "rocetor/dataplane"

// Node is a switch or a host: a dataplane.Worker over Ports (wrapped or
// not by the stages' port wrappers), stepped by the engine only when it
// has work — a frame arrived, a port's wire freed with frames queued
// for it, a timer, a held frame or the shaper falls due
// (dataplane.Worker.Next) — never polled.
type Node struct {
	sim *Sim
	id  int
	// W is the worker; Ports its simulated ports, in the worker's port
	// order (what W sees may wrap them).
	W     *dataplane.Worker
	Ports []*Port
	// After, if set, runs after every step (a host drains its
	// completion queue there).
	After func(now Time)
	// Stall, if set, says until when the worker is off its CPU: a step
	// due before then waits for it. Frames meanwhile wait in the
	// receive rings and are then taken a batch per port in one step,
	// at one time, as a poll-mode worker descheduled on a shared CPU
	// takes them.
	Stall func(now Time) Time
	// Steps counts worker steps; Idle those that did nothing.
	Steps, Idle uint64
}

// AddNode registers a node whose worker w runs over ports and attaches
// the ports to it.
func AddNode(s *Sim, w *dataplane.Worker, ports []*Port) *Node {
	n := &Node{sim: s, W: w, Ports: ports}
	n.id = s.Add(n)
	for _, p := range ports {
		p.Attach(n.id)
	}
	return n
}

// ID returns the node's actor id.
func (n *Node) ID() int { return n.id }

// Wake makes the node step at at: for work it cannot know of, such as a
// request posted to a host's endpoint.
func (n *Node) Wake(at Time) { n.sim.Wake(n.id, at) }

// Fire implements Actor: one worker step at the current time, then the
// node wakes itself for its next work.
func (n *Node) Fire(now Time) {
	if n.Stall != nil {
		if until := n.Stall(now); until > now {
			n.sim.Wake(n.id, until)
			return
		}
	}
	ns := now / Nanosecond
	work := n.W.Step(ns)
	n.Steps++
	if n.After != nil {
		n.After(now)
	}
	next := Never
	if at, ok := n.W.Next(ns); ok {
		next = max(at*Nanosecond, now)
	}
	// A busy wire with frames queued for it: the worker leaves it out
	// of Next; the port knows when it frees.
	busy := Never
	for i, p := range n.Ports {
		if p.busy > now {
			busy = min(busy, p.busy)
			if n.W.Egress(i).Backlog() > 0 {
				next = min(next, p.busy)
			}
		}
	}
	if work == 0 {
		n.Idle++
		if next <= now {
			// Due now, yet the step did nothing: what is due waits
			// for a wire (a frame an impaired port holds "due at
			// once", or due long ago, while its wire serializes).
			// Wait for the first wire to free; with none busy, a
			// nanosecond (TestHeldFrames in tor/fabric).
			next = now + Nanosecond
			if busy != Never {
				next = busy
			}
		}
	}
	if next != Never {
		n.sim.Wake(n.id, next)
	}
}
