package topo

import "strconv"

// testbed lays out the testbed's shapes: senders h1…hs behind tor1,
// receivers hs+1… behind tor2, the ToRs joined directly (no cores) or
// through each core. Nodes: senders, tor1, cores, tor2, receivers.
// Links: the senders' (tor1 at the A end), tor1–tor2 or tor1–core k
// and core k–tor2 for each core in turn, the receivers' (tor2 at A).
// This is the order tor/lab gives its namespaces and veths.
func testbed(name string, senders, receivers int, cores []string, ti Tiers) Topology {
	b := &builder{t: Topology{Name: name}}
	var s, r, cs []int
	for i := 1; i <= senders; i++ {
		s = append(s, b.node("h"+strconv.Itoa(i), Host, 0, Sender))
	}
	t1 := b.node("tor1", Switch, 1, ToR)
	for _, c := range cores {
		cs = append(cs, b.node(c, Switch, 2, Core))
	}
	t2 := b.node("tor2", Switch, 1, ToR)
	for i := senders + 1; i <= senders+receivers; i++ {
		r = append(r, b.node("h"+strconv.Itoa(i), Host, 0, Receiver))
	}
	for _, h := range s {
		b.link(t1, h)
	}
	if len(cs) == 0 {
		b.link(t1, t2)
	}
	for _, c := range cs {
		b.link(t1, c)
		b.link(c, t2)
	}
	for _, h := range r {
		b.link(t2, h)
	}
	return b.t.WithTiers(ti)
}

// Chain is the testbed's chain, NetRT's testbed: n senders — tor1 —
// core — tor2 — n receivers. The lab's chain is Chain(1).
func Chain(n int, ti Tiers) Topology {
	return testbed("chain", n, n, []string{"core"}, ti)
}

// Dumbbell is senders — tor1 — tor2 — receivers: one bottleneck,
// tor1's port toward tor2.
func Dumbbell(senders, receivers int, ti Tiers) Topology {
	return testbed("dumbbell", senders, receivers, nil, ti)
}

// Multipath is the testbed's multipath topology: senders — tor1 —
// core1…core{paths} — tor2 — receivers.
func Multipath(senders, receivers, paths int, ti Tiers) Topology {
	cores := make([]string, paths)
	for k := range cores {
		cores[k] = "core" + strconv.Itoa(k+1)
	}
	return testbed("multipath", senders, receivers, cores, ti)
}

// Link is the testbed's single link between two switches (Protego's
// corrupting link): h1 — tor1 — tor2 — h2.
func Link(ti Tiers) Topology {
	return testbed("link", 1, 1, nil, ti)
}
