package fabric

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// balanced fails the test when res's frame books do not balance.
func balanced(t *testing.T, res *Result) {
	t.Helper()
	if err := res.Books.Check(); err != nil {
		t.Fatal(err)
	}
}

// runOnce builds tp with o, runs flows to their end and checks the
// frames' books.
func runOnce(t *testing.T, tp topo.Topology, o Options, flows []workload.Flow) *Result {
	t.Helper()
	n, err := Build(tp, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Run(flows, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	return res
}

// runBooks builds tp and runs flows with o until until (0: to the end),
// and checks that two runs give the same JSON.
func runBooks(t *testing.T, tp topo.Topology, o Options, flows []workload.Flow, until sim.Time) *Result {
	t.Helper()
	o.MaxQPs = QPsNeeded(flows, 1)
	var out [2][]byte
	var res *Result
	for i := range out {
		n, err := Build(tp, o)
		if err != nil {
			t.Fatal(err)
		}
		if res, err = n.Run(flows, RunOptions{Until: until}); err != nil {
			t.Fatal(err)
		}
		if out[i], err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
	}
	if string(out[0]) != string(out[1]) {
		t.Error("two runs with one seed differ")
	}
	balanced(t, res)
	return res
}

func host(b *Books, name string) *NodeBooks {
	for i := range b.Hosts {
		if b.Hosts[i].Name == name {
			return &b.Hosts[i]
		}
	}
	return nil
}

// TestBooksTinyMemory fills a receiver's frame memory: hosts of 64
// frames at the end of 10 µs links at 100 Gbit/s, over which 113 frames
// are in flight toward the receiver. The frames its memory has no room
// for are dropped as rx_no_frame, counted where they would have
// landed, and every frame is accounted, mid-run and at the end.
func TestBooksTinyMemory(t *testing.T) {
	ti := topo.DefaultTiers()
	ti.HostDelay = 10 * sim.Microsecond
	tp, err := topo.Parse("chain", ti)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Seed: 1, HostFrames: 64, Transport: "irn"}
	flows := []workload.Flow{{Src: 0, Dst: 1, Size: 1 << 20, After: -1}}
	for _, until := range []sim.Time{30 * sim.Microsecond, 0} {
		res := runBooks(t, tp, o, flows, until)
		b := res.Books
		rx := host(b, res.Books.Hosts[1].Name)
		t.Logf("until %d µs: %d of %d flows; receiver: %+v; totals %+v", until/sim.Microsecond, res.Completed, res.Flows, *rx, b.Totals)
		if rx.MemFrames != 64 {
			t.Errorf("receiver has %d frames, want 64", rx.MemFrames)
		}
		if rx.Dropped[dropNoFrame] == 0 || b.Totals.HostDropped[dropNoFrame] != rx.Dropped[dropNoFrame] {
			t.Errorf("no frame lost for want of the receiver's memory (%v; totals %v)", rx.Dropped, b.Totals.HostDropped)
		}
		if until == 0 && res.Completed != 1 {
			t.Errorf("completed %d of 1", res.Completed)
		}
		if until != 0 && b.Totals.InFlight == 0 {
			t.Error("nothing in flight mid-run")
		}
	}
}

// TestBooksLongLink: a 1 ms link at 100 Gbit/s carries 11,302 frames in
// flight each way, all of them copies in the memory at its far end. Four
// WRITEs of 4 MiB each way over a core switch whose two links are that
// long: the core's memory is sized for both directions' frames (its
// queues alone asked for 16,384 frames, and the run lost 6,222 to it,
// counted, when it was sized so), nothing is dropped or retransmitted,
// and every frame is accounted.
func TestBooksLongLink(t *testing.T) {
	ti := topo.DefaultTiers()
	ti.FabricDelay = sim.Millisecond
	tp, err := topo.Parse("multipath:hosts=1,paths=1", ti)
	if err != nil {
		t.Fatal(err)
	}
	var flows []workload.Flow
	for range 4 {
		flows = append(flows, workload.Flow{Src: 0, Dst: 1, Size: 4 << 20, After: -1}, workload.Flow{Src: 1, Dst: 0, Size: 4 << 20, After: -1})
	}
	res := runBooks(t, tp, Options{Seed: 1, BDP: 16384}, flows, 0)
	if res.Completed != len(flows) {
		t.Fatalf("completed %d of %d", res.Completed, len(flows))
	}
	b := res.Books
	var core *NodeBooks
	for i := range b.Switches {
		if strings.HasPrefix(b.Switches[i].Name, "core") {
			core = &b.Switches[i]
		}
	}
	const perWay = 11302 // 1 ms × 100 Gbit/s / (1,106 × 8 bits)
	if core == nil || core.MemFrames < 2*perWay+16384/2 {
		t.Fatalf("core's memory: %+v", core)
	}
	if len(b.Totals.SwitchDropped)+len(b.Totals.HostDropped) > 0 || res.HostCounters["Retransmits"] != 0 {
		t.Errorf("dropped %v %v, %d retransmitted", b.Totals.SwitchDropped, b.Totals.HostDropped, res.HostCounters["Retransmits"])
	}
	if c := b.Totals.CreatedByHosts; c < 2*4*4096 {
		t.Errorf("hosts created %d frames", c)
	}
	t.Logf("core %+v; totals %+v", *core, b.Totals)
}

// TestBooksCheck: the books of a run, as result.json carries them, fail
// loudly when one counter is left out — a node's drop reason, its
// consumed frames, a link's frames in flight, a held frame — naming the
// node or link, the account and the difference.
func TestBooksCheck(t *testing.T) {
	ti := topo.DefaultTiers()
	ti.HostDelay = 10 * sim.Microsecond
	tp, err := topo.Parse("chain", ti)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Seed: 1, HostFrames: 64, Transport: "irn", Switch: lossy}
	res := runBooks(t, tp, o, []workload.Flow{{Src: 0, Dst: 1, Size: 256 << 10, After: -1}}, 30*sim.Microsecond)
	js, err := json.Marshal(res.Books)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() *Books {
		var b Books
		if err := json.Unmarshal(js, &b); err != nil {
			t.Fatal(err)
		}
		if err := b.Check(); err != nil {
			t.Fatalf("the books read back: %v", err)
		}
		return &b
	}
	b := fresh()
	// A node holding frames in its memory, a link with frames in flight.
	held, flying := -1, -1
	for i := range b.Hosts {
		if b.Hosts[i].Held[heldRing] > 0 {
			held = i
		}
	}
	for i := range b.Links {
		if b.Links[i].InFlight > 0 {
			flying = i
		}
	}
	if held < 0 || flying < 0 {
		t.Fatalf("no host holding frames in its ring (%d) or no link with frames in flight (%d)", held, flying)
	}
	rx := b.Hosts[1].Name
	cases := []struct {
		name, node, counter string
		leave               func(b *Books) uint64
	}{
		{"drop reason", rx, "frames", func(b *Books) uint64 {
			n := b.Hosts[1].Dropped[dropNoFrame]
			delete(b.Hosts[1].Dropped, dropNoFrame)
			return n
		}},
		{"consumed", rx, "frames", func(b *Books) uint64 {
			n := b.Hosts[1].Consumed
			b.Hosts[1].Consumed = 0
			return n
		}},
		{"held", b.Hosts[held].Name, "memory", func(b *Books) uint64 {
			h := &b.Hosts[held]
			n := h.Held[heldRing]
			delete(h.Held, heldRing)
			h.Consumed += n // the frames books still balance: only the memory tells
			return n
		}},
		{"in flight", b.Links[flying].From + "→" + b.Links[flying].To, "link", func(b *Books) uint64 {
			n := b.Links[flying].InFlight
			b.Links[flying].InFlight = 0
			return n
		}},
	}
	for _, c := range cases {
		b := fresh()
		n := c.leave(b)
		if n == 0 {
			t.Errorf("%s: the counter left out was 0", c.name)
			continue
		}
		err := b.Check()
		if !errors.Is(err, ErrUnbalanced) || b.Balanced {
			t.Errorf("%s: left out %d, Check says %v", c.name, n, err)
			continue
		}
		im := b.Imbalances[0]
		if im.Node != c.node || im.Counter != c.counter || (im.Difference != int64(n) && im.Difference != -int64(n)) {
			t.Errorf("%s: left out %d at %s (%s), imbalance %v", c.name, n, c.node, c.counter, im)
		}
		if !strings.Contains(err.Error(), c.node) {
			t.Errorf("%s: %v does not name %s", c.name, err, c.node)
		}
		t.Logf("%s: %v", c.name, err)
	}
}
