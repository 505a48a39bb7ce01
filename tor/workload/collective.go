package workload

import (
	"fmt"
	"slices"
)

// Group layouts (Spec.Groups, Groups): how a fabric's hosts are cut
// into the groups that each run one collective operation.
const (
	// LayoutRail makes group g of the g-th host of every rack, in rack
	// order: as many groups as a rack has hosts, each with one member
	// per rack, so that every ring step and every all-to-all slice
	// crosses the fabric's core. On DCP's fabric (seed 002 §6.2: 16
	// racks of 16) this is the seed's 16 groups of 16.
	LayoutRail = "rail"
	// LayoutRack makes a group of each rack's hosts: the collectives
	// stay under their ToR and the core carries nothing.
	LayoutRack = "rack"
)

// Groups cuts hosts into collective groups by their racks (racks[h] is
// host h's rack, fabric.Racks) and layout. Members come in host order
// within a rack and in rack order within a rail; a ring runs in that
// order. Every rack must have as many hosts for LayoutRail.
func Groups(racks []int, layout string) ([][]int, error) {
	byRack := map[int][]int{}
	var ids []int
	for h, k := range racks {
		if _, ok := byRack[k]; !ok {
			ids = append(ids, k)
		}
		byRack[k] = append(byRack[k], h)
	}
	slices.Sort(ids)
	var out [][]int
	switch layout {
	case LayoutRack:
		for _, k := range ids {
			out = append(out, byRack[k])
		}
	case LayoutRail:
		if len(ids) == 0 {
			return nil, nil
		}
		per := len(byRack[ids[0]])
		for _, k := range ids {
			if len(byRack[k]) != per {
				return nil, fmt.Errorf("workload: rail groups need racks of equal size: rack %d has %d hosts, rack %d %d",
					ids[0], per, k, len(byRack[k]))
			}
		}
		for g := 0; g < per; g++ {
			var m []int
			for _, k := range ids {
				m = append(m, byRack[k][g])
			}
			out = append(out, m)
		}
	default:
		return nil, fmt.Errorf("workload: group layout %q: want %s or %s", layout, LayoutRail, LayoutRack)
	}
	return out, nil
}

// RingAllReduceOver is a ring all-reduce of size bytes (each member's
// data) over members, in their order (member i sends to member i+1,
// the last to the first): the data is cut into N = len(members) chunks
// of size/N, and in each of the 2(N−1) steps (N−1 of reduce-scatter,
// then N−1 of all-gather) every member sends one chunk to the next, one
// flow each, N flows a step, 2N(N−1) in all. A member's flow of step s
// (s ≥ 1) starts when the flow it received in step s−1 completed: the
// chunk it reduces and forwards is the one it just received, so that
// is the data dependency. It does not wait for its own flow of step
// s−1 explicitly; a pair's one QP keeps the two in order on the wire.
// tor/fabric posts a flow with After when flow After's WRITE completes
// at its sender (on its ACK), a one-way delay after its last byte
// reached the member that forwards it, which a real ring would learn of
// at the receiving side; and a run on several threads refuses After
// (its partitions cannot post on one host when another completes).
// Flows are listed step by step, members in order within a step.
func RingAllReduceOver(members []int, size int) []Flow {
	n := len(members)
	if n < 2 {
		return nil
	}
	chunk := max(1, size/n)
	steps := 2 * (n - 1)
	out := make([]Flow, 0, steps*n)
	for s := 0; s < steps; s++ {
		for i := 0; i < n; i++ {
			f := Flow{Src: members[i], Dst: members[(i+1)%n], Size: chunk, After: -1}
			if s > 0 {
				f.After = (s-1)*n + (i+n-1)%n
			}
			out = append(out, f)
		}
	}
	return out
}

// AllToAllOver sends slice bytes from every member to every other, all
// at once: N(N−1) flows, by source then destination in members' order.
// An all-to-all of each member's size bytes cut into N slices (one per
// member, its own staying local) is AllToAllOver(members, size/N).
func AllToAllOver(members []int, slice int) []Flow {
	var out []Flow
	for _, s := range members {
		for _, d := range members {
			if s != d {
				out = append(out, Flow{Src: s, Dst: d, Size: slice, After: -1})
			}
		}
	}
	return out
}

// Collective runs one operation in each group at once: op "allreduce"
// (RingAllReduceOver of size) or "alltoall" (AllToAllOver of slice
// size/N, N the group's members). The groups' flows come one group after
// another, each group's After shifted to its place in the list.
func Collective(groups [][]int, op string, size int) ([]Flow, error) {
	var out []Flow
	for _, g := range groups {
		var fl []Flow
		switch op {
		case "allreduce":
			fl = RingAllReduceOver(g, size)
		case "alltoall":
			fl = AllToAllOver(g, max(1, size/max(1, len(g))))
		default:
			return nil, fmt.Errorf("workload: collective %q: want allreduce or alltoall", op)
		}
		out = appendFlows(out, fl)
	}
	return out, nil
}

// FlowGroups returns the group of each flow by its source (-1 when the
// source is in none): a collective's JCT is its group's last
// completion.
func FlowGroups(groups [][]int, flows []Flow) []int {
	of := map[int]int{}
	for g, m := range groups {
		for _, h := range m {
			of[h] = g
		}
	}
	out := make([]int, len(flows))
	for i, f := range flows {
		g, ok := of[f.Src]
		if !ok {
			g = -1
		}
		out[i] = g
	}
	return out
}
