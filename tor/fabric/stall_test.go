package fabric

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

func TestParseStalls(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"", ""},
		{"tor2:1ms/50ms", "tor2:1ms/50ms:exp"},
		{"tor*:500us/20ms:fixed; h1:2ms/1s:exp", "tor*:500µs/20ms:fixed;h1:2ms/1s:exp"},
	} {
		s, err := ParseStalls(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := s.String(); got != c.want {
			t.Errorf("%q: String %q, want %q", c.in, got, c.want)
		}
		if again, err := ParseStalls(s.String()); err != nil || again.String() != c.want {
			t.Errorf("%q: String does not parse back: %v, %v", c.in, again, err)
		}
	}
	for _, bad := range []string{"tor2", "tor2:1ms", ":1ms/2ms", "tor2:2ms/1ms", "tor2:1ms/1ms", "tor2:0s/1ms", "tor2:1ms/50ms:gauss", "tor[:1ms/2ms", "tor2:1xs/2ms"} {
		if _, err := ParseStalls(bad); !errors.Is(err, ErrStall) {
			t.Errorf("%q: err %v, want ErrStall", bad, err)
		}
	}
}

// pauses runs a Staller over span and returns its pauses.
func pauses(st Stall, name string, seed uint64, span sim.Time) (out [][2]sim.Time) {
	s := newStaller(name, st, seed)
	s.Log = func(a, b sim.Time) { out = append(out, [2]sim.Time{a, b}) }
	for now := sim.Time(0); now < span; now += 100 * sim.Microsecond {
		if u := s.Until(now); u < now || u > now && (now < s.start || u != s.end) {
			panic("Until outside a pause")
		}
	}
	return out
}

// TestStaller: pauses take the share of the time they are asked for,
// do not overlap, fixed ones are as long and as far apart as asked,
// and each node draws its own pauses from the run's seed, the same ones
// every time.
func TestStaller(t *testing.T) {
	span := 100 * sim.Second
	exp := Stall{Pattern: "*", Off: sim.Millisecond, Every: 50 * sim.Millisecond}
	fixed := exp
	fixed.Fixed = true
	for _, st := range []Stall{exp, fixed} {
		ps := pauses(st, "tor2", 1, span)
		var off sim.Time
		for i, p := range ps {
			off += p[1] - p[0]
			if i > 0 && p[0] < ps[i-1][1] {
				t.Fatalf("fixed %v: pause %d starts at %d, before the last ended (%d)", st.Fixed, i, p[0], ps[i-1][1])
			}
			if st.Fixed && (p[1]-p[0] != st.Off || i > 0 && p[0]-ps[i-1][0] != st.Every) {
				t.Fatalf("fixed: pause %d is %v", i, p)
			}
		}
		if frac := float64(off) / float64(span); frac < 0.018 || frac > 0.022 {
			t.Errorf("fixed %v: off %.4f of the time over %d pauses, want 0.02", st.Fixed, frac, len(ps))
		}
		again := pauses(st, "tor2", 1, span)
		if len(again) != len(ps) || again[0] != ps[0] || again[len(ps)-1] != ps[len(ps)-1] {
			t.Errorf("fixed %v: the same seed drew other pauses", st.Fixed)
		}
		if other := pauses(st, "tor1", 1, span); other[0] == ps[0] {
			t.Errorf("fixed %v: tor1 and tor2 pause together", st.Fixed)
		}
		if other := pauses(st, "tor2", 2, span); other[0] == ps[0] {
			t.Errorf("fixed %v: seeds 1 and 2 draw the same pauses", st.Fixed)
		}
	}
}

func TestStallApply(t *testing.T) {
	tp := topo.Chain(1, topo.DefaultTiers())
	n, err := Build(tp, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ParseStalls("tor*:1ms/50ms;core:1ms/50ms:fixed")
	got, err := s.Apply(n)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	slices.Sort(names)
	if strings.Join(names, " ") != "core tor1 tor2" {
		t.Errorf("stalled %v, want tor1, tor2 and core", names)
	}
	for _, sw := range n.Switches {
		if sw.Node.Stall == nil {
			t.Errorf("%s not stalled", sw.Name)
		}
	}
	for _, h := range n.Hosts {
		if h.Node.Stall != nil {
			t.Errorf("host %s stalled", h.Name)
		}
	}
	bad, _ := ParseStalls("tor3:1ms/50ms")
	if _, err := bad.Apply(n); !errors.Is(err, ErrStall) {
		t.Errorf("a pattern matching nothing: err %v", err)
	}
}

// netrtLossStalled is netrt-loss's 5 % cell as the lab runs it in the
// simulator (torsim run netrt-loss --losses 0.05): the chain at
// 1 Gbit/s, every frame crossing core–tor2 lost at 5 % in both
// directions, the testbed's netrt section (with silent_requests
// silent, 0 for its default), count WRITEs of 1 MB from h1 to h2 four
// in flight, tor1 off its CPU for off once every 50 ms. It returns the
// destination ToRs' give-ups (netrt_dst WaitGaveUp) and the result.
func netrtLossStalled(t *testing.T, off sim.Time, silent, count int) (int64, *Result) {
	t.Helper()
	ti := topo.Tiers{HostRate: 1e9, FabricRate: 1e9, HostDelay: sim.Microsecond, FabricDelay: sim.Microsecond}
	tp := topo.Chain(1, ti)
	nrt := strings.Replace(testbedNetRT, "max_requests: 8", "max_requests: 8, silent_requests: "+strconv.Itoa(silent), 1)
	core := "impair: {rules: [{port: tor2, direction: egress, loss: 0.05}, {port: tor2, direction: ingress, loss: 0.05}]}\n"
	flows := workload.Sequence(0, 1, 1000000, count, 4)
	n, err := Build(tp, Options{Seed: 1, Switch: nrt, SwitchFor: map[string]string{"core": core}, MaxQPs: QPsNeeded(flows, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if off > 0 {
		st := Stalls{{Pattern: "tor1", Off: off, Every: 50 * sim.Millisecond, Fixed: true}}
		if _, err := st.Apply(n); err != nil {
			t.Fatal(err)
		}
	}
	res, err := n.Run(flows, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	if res.Completed != len(flows) {
		t.Fatalf("%d of %d WRITEs completed", res.Completed, len(flows))
	}
	return res.Stages["netrt_dst"]["Ports.WaitGaveUp"], res
}

// TestNetRTStall: the testbed's NetRT give-up at 5 % loss
// (docs/experiments.md, NetRT, "Why tor2 gave up"). tor2 sends a
// request for a hole at once and every request_interval (1 ms) after;
// a hole that opens as tor1 goes off its CPU is asked for into the
// pause, and tor1 answers every queued request at once when it is back
// (one retransmission; the others find it queued). Requests sent while
// nothing comes from the fabric do not count against max_requests (8),
// up to silent_requests (default 8) of them: pauses of 9 and 12 ms no
// longer make tor2 give up — with silent_requests 1, which is about the
// old count, a 9 ms pause does (tor2 gave up 1.3 ms before tor1's
// answer), and the hosts go back. A pause past both budgets (20 ms:
// 8 + 8 requests, and past the hosts' 16 ms RTO) still ends in a
// give-up: the silence is bounded.
func TestNetRTStall(t *testing.T) {
	for _, c := range []struct {
		off    sim.Time
		silent int
		gaveUp bool
	}{
		{0, 0, false},
		{5 * sim.Millisecond, 0, false},
		{9 * sim.Millisecond, 0, false},
		{12 * sim.Millisecond, 0, false},
		{9 * sim.Millisecond, 1, true},
		{20 * sim.Millisecond, 0, true},
	} {
		g, res := netrtLossStalled(t, c.off, c.silent, 50)
		h := res.HostCounters
		nd := res.Stages["netrt_dst"]
		t.Logf("tor1 off %v ms of 50, silent_requests %d: %v give-ups; host retransmits %d, timeouts %d; requests %v, silent %v",
			float64(c.off)/float64(sim.Millisecond), c.silent, g, h["Retransmits"], h["Timeouts"], nd["Ports.Requests"], nd["Ports.Silent"])
		switch {
		case c.gaveUp && (g == 0 || h["Retransmits"] == 0):
			t.Errorf("tor1 off %v, silent_requests %d: %v give-ups, %d host retransmits; want tor2 to give up and the hosts to go back",
				c.off, c.silent, g, h["Retransmits"])
		case !c.gaveUp && (g != 0 || h["Retransmits"] != 0 || h["Timeouts"] != 0):
			t.Errorf("tor1 off %v, silent_requests %d: %v give-ups, %d host retransmits, %d timeouts; want none",
				c.off, c.silent, g, h["Retransmits"], h["Timeouts"])
		}
	}
}
