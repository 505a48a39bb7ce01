package workload

import (
	"slices"
	"testing"
)

// TestGroups: rail groups take one host of every rack, rack groups a
// rack's hosts; unequal racks cannot make rails.
func TestGroups(t *testing.T) {
	racks := []int{0, 0, 0, 1, 1, 1} // two racks of three
	rail, err := Groups(racks, LayoutRail)
	if err != nil || !slices.EqualFunc(rail, [][]int{{0, 3}, {1, 4}, {2, 5}}, slices.Equal) {
		t.Fatalf("rail: %v %v", rail, err)
	}
	rack, err := Groups(racks, LayoutRack)
	if err != nil || !slices.EqualFunc(rack, [][]int{{0, 1, 2}, {3, 4, 5}}, slices.Equal) {
		t.Fatalf("rack: %v %v", rack, err)
	}
	if _, err := Groups([]int{0, 0, 1}, LayoutRail); err == nil {
		t.Fatal("rails over racks of 2 and 1 hosts: want an error")
	}
	if _, err := Groups(racks, "ring"); err == nil {
		t.Fatal("unknown layout: want an error")
	}
}

// TestRingAllReduceOver: 2(N−1) steps of N flows of size/N around the
// members' ring, each step's flow waiting for the one its source
// received in the step before.
func TestRingAllReduceOver(t *testing.T) {
	m := []int{7, 2, 5}
	fl := RingAllReduceOver(m, 3000)
	if len(fl) != 2*2*3 {
		t.Fatalf("%d flows, want 12", len(fl))
	}
	for i, f := range fl {
		s, k := i/3, i%3
		if f.Src != m[k] || f.Dst != m[(k+1)%3] || f.Size != 1000 {
			t.Fatalf("flow %d: %+v", i, f)
		}
		switch {
		case s == 0 && f.After != -1:
			t.Fatalf("step 0 flow %d waits for %d", i, f.After)
		case s > 0 && (fl[f.After].Dst != f.Src || f.After/3 != s-1):
			t.Fatalf("flow %d (%d→%d, step %d) waits for %+v, not the one into its source a step before", i, f.Src, f.Dst, s, fl[f.After])
		}
	}
	if RingAllReduceOver([]int{1}, 10) != nil {
		t.Fatal("a ring of one sends nothing")
	}
}

// TestCollective: each group's operation, concatenated, After shifted
// into the whole list; alltoall slices a member's data in N.
func TestCollective(t *testing.T) {
	groups := [][]int{{0, 2}, {1, 3}}
	ar, err := Collective(groups, "allreduce", 4000)
	if err != nil || len(ar) != 2*4 {
		t.Fatalf("allreduce: %d flows, %v", len(ar), err)
	}
	g := FlowGroups(groups, ar)
	for i, f := range ar {
		if f.After >= 0 && g[f.After] != g[i] {
			t.Fatalf("flow %d of group %d waits for flow %d of group %d", i, g[i], f.After, g[f.After])
		}
		if f.Size != 2000 {
			t.Fatalf("flow %d: %d bytes, want 2000", i, f.Size)
		}
	}
	if ar[6].After != 5 || ar[6].Src != 1 {
		t.Fatalf("group 1's second step: %+v", ar[6])
	}
	a2a, err := Collective([][]int{{0, 1, 2}}, "alltoall", 3000)
	if err != nil || len(a2a) != 6 || a2a[0].Size != 1000 {
		t.Fatalf("alltoall: %+v %v", a2a, err)
	}
	if _, err := Collective(groups, "broadcast", 1); err == nil {
		t.Fatal("unknown op: want an error")
	}
}

// TestSpecGroups: a Spec's allreduce and alltoall in groups by racks,
// alltoall's Size still each flow's.
func TestSpecGroups(t *testing.T) {
	racks := []int{0, 0, 1, 1}
	fl, err := Spec{Name: "alltoall", Size: 500, Groups: LayoutRail, Racks: racks}.Flows(4, 1e9, nil)
	if err != nil || len(fl) != 4 || fl[0] != (Flow{Src: 0, Dst: 2, Size: 500, After: -1}) {
		t.Fatalf("alltoall in rails: %+v %v", fl, err)
	}
	fl, err = Spec{Name: "allreduce", Size: 800, Groups: LayoutRack, Racks: racks}.Flows(4, 1e9, nil)
	if err != nil || len(fl) != 8 || fl[4].Src != 2 || fl[4].Size != 400 || fl[6].After != 5 {
		t.Fatalf("allreduce in racks: %+v %v", fl, err)
	}
	if fl, _ := (Spec{Name: "allreduce", Size: 800}).Flows(4, 1e9, nil); len(fl) != 24 {
		t.Fatalf("allreduce over every host: %d flows, want 24", len(fl))
	}
}
