package pipeline

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/netrt"
)

// Both directions of a host pair, and every QP between them, map to one
// worker; the pairs spread over the workers.
func TestPairOwner(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		seen := map[int]int{}
		for i := range 256 {
			a := netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}).As16()
			b := netip.MustParseAddr("fd00::2:2").As16()
			k := rocev2.FlowKey{Src: a, Dst: b, QP: uint32(i)}
			o := PairOwner(&k, n)
			if want := int(pairHash(&k) % uint64(n)); o != want {
				t.Fatalf("%d workers: %v maps to %d, its hash mod %d to %d", n, k, o, n, want)
			}
			if r := k.Reverse(7); PairOwner(&r, n) != o {
				t.Fatalf("%d workers: %v and its reverse map to %d and %d", n, k, o, PairOwner(&r, n))
			}
			seen[o]++
		}
		for w := range n {
			if seen[w] < 256/n/2 {
				t.Errorf("%d workers: worker %d owns %d of 256 pairs", n, w, seen[w])
			}
		}
	}
}

// Owners.Owner, the worker's owner function, says what Owners.Flow
// says of RoCE, MAC control and other frames, for any number of
// workers.
func TestOwnerFunc(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		cfg := DefaultConfig()
		cfg.Ports = []string{"h0", "up0", "h1", "up1"}
		cfg.Workers = n
		cfg.LLR.Ports = []string{"up0", "up1"}
		o := NewOwners(&cfg)
		f := o.Owner()
		for i := range 64 {
			var p dataplane.Packet
			p.In = uint16(i % len(cfg.Ports))
			p.Meta.Kind = []rocev2.Kind{rocev2.KindRoCE, rocev2.KindMACControl, rocev2.KindIP}[i%3]
			p.Meta.Flow.Src = netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}).As16()
			p.Meta.Flow.Dst = netip.AddrFrom4([4]byte{10, 0, 1, byte(i * 7)}).As16()
			if got, want := f(&p, nil), o.Flow(&p, nil); got != want {
				t.Fatalf("%d workers, %v frame %d: Owner says %d, Flow %d", n, p.Meta.Kind, i, got, want)
			}
		}
	}
}

// Owners deals the links (llr.ports, netrt.fabric; not a host port
// llr protects) round the workers in their order, leaves any other
// port i to worker i mod N, sends MAC control to the port's owner and
// leaves what is not RoCE where it arrived.
func TestOwners(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ports = []string{"h0", "up0", "h1", "up1", "up2", "h2"}
	cfg.Workers = 2
	cfg.LLR.Ports = []string{"h0", "up0", "up1"}
	cfg.NetRT.Fabric = []string{"up0", "up1", "up2"}
	o := NewOwners(&cfg)
	// h1 and h2 are shared (no llr, no trimming, unshaped); h0 has
	// llr and worker 0.
	if got, want := o.Ports(), []int{0, 0, -1, 1, 0, -1}; !slices.Equal(got, want) {
		t.Fatalf("port owners %v, want %v", got, want)
	}
	if got, want := o.Owned(1), []bool{false, false, true, true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("worker 1 owns or shares %v, want %v", got, want)
	}
	cfg.Ports = []string{"a", "b", "c", "d"}
	cfg.Workers = 3
	cfg.LLR.Ports, cfg.NetRT.Fabric = []string{"b", "d"}, nil
	cfg.Egress.Rate = 10e9 // shaped: no port is shared
	o = NewOwners(&cfg)
	if got, want := o.Ports(), []int{0, 0, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("port owners %v, want %v", got, want)
	}
	p := &dataplane.Packet{In: 2}
	p.Meta.Kind = rocev2.KindMACControl
	if o.Flow(p, nil) != 2 {
		t.Error("a PFC frame goes to the owner of the port it pauses")
	}
	cfg.Egress.Rate = 0
	if o = NewOwners(&cfg); o.Flow(p, nil) != -1 {
		t.Error("a PFC frame on a shared port stays where it arrived")
	}
	p.Meta.Kind = rocev2.KindIP
	if o.Flow(p, nil) != -1 {
		t.Error("plain IP has no owner")
	}
}

// TestSharedPorts: with a handoff, a port no stage keeps egress state
// for is shared, and only such a port's budgets are cut into the
// workers' parts; without a handoff every port is cut, as before.
func TestSharedPorts(t *testing.T) {
	y := "ports: [up0, up1, h0, h1, h2]\nxdp: {ring_size: 512}\nnetrt: {fabric: [up0, up1]}\nllr: {ports: [up0, up1, h2]}\n" +
		"egress: {port_rates: {h1: 10G}}\necn: {}\n"
	var base int // the data queue's marking threshold, whole
	for _, tc := range []struct {
		workers int
		want    []bool // shared
		shares  []int
	}{
		{1, nil, []int{1, 1, 1, 1, 1}},
		// h0 alone: h1 is shaped, h2 has llr, up0 and up1 are links.
		{2, []bool{false, false, true, false, false}, []int{1, 1, 2, 1, 1}},
	} {
		c := testConfig(t, fmt.Sprintf("workers: %d\n%s", tc.workers, y))
		if got := c.SharedPorts(); !slices.Equal(got, tc.want) {
			t.Errorf("workers %d: shared %v, want %v", tc.workers, got, tc.want)
		}
		if got := c.shares(); !slices.Equal(got, tc.shares) {
			t.Errorf("workers %d: shares %v, want %v", tc.workers, got, tc.shares)
		}
		egs, err := c.EgressConfigs()
		if err != nil {
			t.Fatal(err)
		}
		q := egs[0].QueueIndexByName("data")
		if tc.workers == 1 {
			base = egs[0].Queues[q].ECN.MinBytes
		}
		for i := range egs {
			if got, want := egs[i].Queues[q].ECN.MinBytes, base/tc.shares[i]; got != want || base == 0 {
				t.Errorf("workers %d, port %s: marks from %d bytes, want %d", tc.workers, c.Ports[i], got, want)
			}
		}
	}
	c := testConfig(t, "workers: 2\nports: [up0, h0, h1]\nxdp: {ring_size: 512}\nnetrt: {fabric: [up0]}\negress: {owned_ports: [h1]}\n")
	if got, want := c.SharedPorts(), []bool{false, true, false}; !slices.Equal(got, want) {
		t.Errorf("owned_ports: shared %v, want %v", got, want)
	}
	c = testConfig(t, "workers: 2\nports: [up0, h0]\nnetrt: {fabric: [up0]}\ntrim: {}\n")
	if got, want := c.SharedPorts(), []bool{false, false}; !slices.Equal(got, want) {
		t.Errorf("trimming: shared %v, want %v (every port trims)", got, want)
	}
	c = testConfig(t, "workers: 2\nports: [up0, h0]\nnetrt: {fabric: [up0]}\nint: {}\n")
	if got := c.SharedPorts(); got != nil {
		t.Errorf("int: shared %v, want none", got)
	}
	if got, want := c.shares(), []int{1, 1}; !slices.Equal(got, want) {
		t.Errorf("int: shares %v, want %v", got, want)
	}
}

// TestNetRTBudgetsShared: the NetRT stages of every worker of a switch
// count its ports' budgets in one netrt.Budgets; one worker counts its
// own.
func TestNetRTBudgetsShared(t *testing.T) {
	for _, workers := range []int{1, 2} {
		c, err := ParseConfig([]byte("ports: [up, h1]\nnetrt: {fabric: [up]}\n"), "test")
		if err != nil {
			t.Fatal(err)
		}
		c.AdminAddr, c.MetricsAddr, c.Workers = "", "", workers
		c.XDP.Frames = 1 << 16
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		pn, err := NewPlan(&c, &fwd.FIB{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var h *dataplane.Handoff
		if c.Handoff() {
			if h, err = dataplane.NewHandoff(workers, 0); err != nil {
				t.Fatal(err)
			}
			defer h.Close()
		}
		var mems []*dataplane.Mem
		if h != nil {
			if mems, err = dataplane.SharedMems(make([]byte, workers*4096*2048), 2048, h); err != nil {
				t.Fatal(err)
			}
		}
		var shared []*netrt.Budgets
		for w := range workers {
			mem, ports := twoPorts(t)
			if h != nil {
				mem = mems[w]
				ports = []dataplane.Port{dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 64),
					dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, 0, 2}, mem, 64)}
			}
			pl, err := pn.BuildHanded(w, mem, ports, func() int64 { return 0 }, h)
			if err != nil {
				t.Fatal(err)
			}
			shared = append(shared, pl.Src.Config().Budgets, pl.Dst.Config().Budgets)
		}
		for _, b := range shared {
			if (workers == 1) != (b == nil) || b != shared[0] {
				t.Fatalf("%d workers: the stages' budgets %v, want one shared (nil with one worker)", workers, shared)
			}
		}
	}
}

// TestNetRTAdvice: tord warns when NetRT requests every gap at once on
// a switch whose multipath choice reorders, and only then.
func TestNetRTAdvice(t *testing.T) {
	for _, c := range []struct {
		yaml string
		warn bool
	}{
		{"netrt: {fabric: [up]}\n", false},
		{"netrt: {fabric: [up]}\nforwarding: {multipath: ecmp}\n", false},
		{"netrt: {fabric: [up]}\nforwarding: {multipath: spray}\n", true},
		{"netrt: {fabric: [up]}\nforwarding: {multipath: adaptive}\n", true},
		{"netrt: {fabric: [up], request_delay: 5us}\nforwarding: {multipath: spray}\n", false},
		{"forwarding: {multipath: spray}\n", false}, // no NetRT
	} {
		cfg, err := ParseConfig([]byte("ports: [up, h1]\n"+c.yaml), "test")
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.NetRTAdvice() != ""; got != c.warn {
			t.Errorf("%q: warns %v, want %v", c.yaml, got, c.warn)
		}
	}
}
