package fabric

import (
	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
)

// partition assigns each topology node to one of k partitions, the
// simulations that run on a goroutine each (sim.Group): the switches
// with hosts (ToRs) in k contiguous runs of as equal host counts as
// their order gives — a fat tree's pods, a leaf-spine's racks, whole —,
// each host with its ToR, then every other switch, in order of its
// distance from the ToRs, with the partition most of its assigned
// neighbours are in (a fat tree's aggregation switch with its pod), a
// tie to the partition with the fewest ports so far (a core, whose
// neighbours are spread over all, to balance them). The smallest delay
// of a link between two partitions is the run's lookahead.
func partition(t topo.Topology, k int) []int {
	part := make([]int, len(t.Nodes))
	if k <= 1 {
		return part
	}
	for i := range part {
		part[i] = -1
	}
	adj := make([][]int, len(t.Nodes))
	for _, l := range t.Links {
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	hosts := func(i int) int {
		h := 0
		for _, j := range adj[i] {
			if t.Nodes[j].Role == topo.Host {
				h++
			}
		}
		return h
	}
	total := len(t.Hosts())
	seen, ports := 0, make([]int, k)
	for i, nd := range t.Nodes {
		if nd.Role != topo.Switch || hosts(i) == 0 {
			continue
		}
		p := min(k-1, seen*k/max(total, 1))
		seen += hosts(i)
		part[i] = p
		ports[p] += len(adj[i])
		for _, j := range adj[i] {
			if t.Nodes[j].Role == topo.Host {
				part[j] = p
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range t.Nodes {
			if part[i] >= 0 {
				continue
			}
			if p := nearest(adj[i], part, ports, k); p >= 0 {
				part[i], changed = p, true
				ports[p] += len(adj[i])
			}
		}
	}
	for i := range part {
		if part[i] < 0 { // no ToR anywhere near: the first partition
			part[i] = 0
		}
	}
	return part
}

// nearest returns the partition most of a node's assigned neighbours
// are in, a tie to the one with the fewest ports, -1 if none is
// assigned.
func nearest(adj, part, ports []int, k int) int {
	votes := make([]int, k)
	best := -1
	for _, j := range adj {
		if p := part[j]; p >= 0 {
			votes[p]++
		}
	}
	for p := range votes {
		if votes[p] == 0 {
			continue
		}
		if best < 0 || votes[p] > votes[best] || votes[p] == votes[best] && ports[p] < ports[best] {
			best = p
		}
	}
	return best
}

// lookahead returns the smallest delay of a link between two
// partitions, sim.Never if none crosses.
func lookahead(t topo.Topology, part []int) sim.Time {
	la := sim.Never
	for _, l := range t.Links {
		if part[l.A] != part[l.B] {
			la = min(la, l.Delay)
		}
	}
	return la
}
