package fabric

import (
	"strings"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// hostLoss is a 1 % loss on h1's link, both ways (at tor1's end:
// egress toward h1, ingress from it), every kind of frame.
func hostLoss(t *testing.T) *LinkLoss {
	t.Helper()
	ll, err := ParseLinkLoss(strings.NewReader("h1 tor1 0.01\n"))
	if err != nil {
		t.Fatal(err)
	}
	return ll
}

// lateBoth is both(size) posted at 20 µs: llr's sessions (a sync each
// way, a round trip) are up by then, so no frame crosses before the
// link is protected (tor/llr, Sessions).
func lateBoth(size int) []workload.Flow {
	f := both(size)
	for i := range f {
		f[i].Start = 20_000
	}
	return f
}

// TestMechLLRHost: llr on a lossy host link. tor1 protects its port
// toward h1, and h1's NIC runs llr at its end of the link (the same
// tor/llr stage and port): every frame lost either way is recovered
// on the link, each by one retransmission, so the hosts retransmit
// nothing and never time out; the NIC's ACKs are protected with its
// data (nothing it sends crosses unprotected); its counters are in
// result.json beside the switches'; the books balance (run). Without
// llr the same losses make the hosts retransmit end to end.
func TestMechLLRHost(t *testing.T) {
	o := Options{Seed: 1, LinkLoss: hostLoss(t), SwitchFor: map[string]string{"tor1": "llr: {ports: [h1]}\n"}}
	res := mech(t, "link", o, lateBoth(1<<20))
	sw, nicc := res.Stages["llr"], res.HostStages["llr"]
	if nicc == nil || sw == nil {
		t.Fatalf("llr counters: switches %v, hosts' NICs %v", sw, nicc)
	}
	// Both directions lost frames: tor1 → h1 on the wire, h1 → tor1
	// at tor1's ingress.
	var down, up uint64
	for _, l := range res.Books.Links {
		if l.From == "tor1" && l.To == "h1" {
			down = sum(l.Lost)
		}
	}
	for _, s := range res.Books.Switches {
		if s.Name == "tor1" {
			up = s.Dropped[dropImpairIn+"loss"]
		}
	}
	if down == 0 || up == 0 {
		t.Fatalf("lost %d frames toward h1 and %d from it: want losses both ways", down, up)
	}
	if h := res.HostCounters; h["Retransmits"] != 0 || h["Timeouts"] != 0 {
		t.Errorf("behind llr the hosts retransmitted %d packets and timed out %d times, want none", h["Retransmits"], h["Timeouts"])
	}
	for who, l := range map[string]map[string]int64{"tor1": sw, "h1": nicc} {
		for k, v := range l {
			if strings.HasPrefix(k, "Ports.Unprotected") || k == "Ports.AckTimeouts" || k == "Ports.Skipped" {
				t.Errorf("%s's llr: %s %d, want 0", who, k, v)
			}
		}
	}
	// Each end retransmits what the other found missing, once; and
	// together at least every data frame the link lost (the rest of
	// its losses are llr's own frames, which it makes good otherwise).
	retx := sw["Ports.Retransmitted"] + nicc["Ports.Retransmitted"]
	if sw["Ports.Retransmitted"] != nicc["Ports.LossesDetected"] || nicc["Ports.Retransmitted"] != sw["Ports.LossesDetected"] ||
		retx < res.Stages["impair"]["Destroyed.data"] || nicc["Ports.Retransmitted"] == 0 || sw["Ports.Retransmitted"] == 0 {
		t.Errorf("tor1 retransmitted %d for %d losses h1 found, h1 %d for %d tor1 found; %d data frames lost",
			sw["Ports.Retransmitted"], nicc["Ports.LossesDetected"], nicc["Ports.Retransmitted"], sw["Ports.LossesDetected"],
			res.Stages["impair"]["Destroyed.data"])
	}
	off := run(t, "link", Options{Seed: 1, LinkLoss: hostLoss(t)}, func(int) []workload.Flow { return lateBoth(1 << 20) })
	if off.HostCounters["Retransmits"] == 0 || off.HostStages != nil {
		t.Errorf("without llr the hosts retransmitted %d packets (hosts' NICs' stages %v)", off.HostCounters["Retransmits"], off.HostStages)
	}
	t.Logf("llr tor1 %v; h1 %v; lost %d down, %d up; impair %v; without llr %d retransmitted",
		sw, nicc, down, up, res.Stages["impair"], off.HostCounters["Retransmits"])
}

// TestHostLLRBuild: the host end of a protected link picks llr up from
// its ToR's section, and only there; the NIC's responses share its
// protected data queue, with room beyond the requests' budget.
func TestHostLLRBuild(t *testing.T) {
	tp := topo.Link(topo.DefaultTiers())
	n, err := Build(tp, Options{Seed: 1, Switch: "llr: {ports: [hosts], mode: nb, copies: 2}\n", SwitchFor: map[string]string{"tor2": ""}})
	if err != nil {
		t.Fatal(err)
	}
	h1, h2 := n.Hosts[0], n.Hosts[1]
	if h1.LLR == nil || h2.LLR != nil {
		t.Fatalf("h1's llr %v, h2's %v: want h1's alone (tor2 protects nothing)", h1.LLR, h2.LLR)
	}
	c := h1.LLR.Config()
	if c.Ports != 1 || c.Mode.String() != "nb" || c.Copies != 2 {
		t.Errorf("h1's llr %+v: want port 0, the ToR's mode and copies", c)
	}
	e := h1.Node.W.Egress(0)
	if d := e.QueueIndex("data"); e.Limit(d) != n.Opts.HostQueue+n.hostResponseRoom() {
		t.Errorf("h1's data queue holds %d bytes, want %d + %d", e.Limit(d), n.Opts.HostQueue, n.hostResponseRoom())
	}
	if _, err := Build(tp, Options{Switch: "llr: {ports: [hosts], mode: bad}\n"}); err == nil {
		t.Error("a bad llr section: no error")
	}
}

// TestHostLLRAllocs: the packet path of an llr NIC and its ToR, losses
// and recoveries included, allocates nothing: a stretch of the
// simulation's steps in steady state makes no allocation.
func TestHostLLRAllocs(t *testing.T) {
	n, err := Build(topo.Link(topo.DefaultTiers()), Options{Seed: 1, LinkLoss: hostLoss(t), MaxQPs: 2,
		SwitchFor: map[string]string{"tor1": "llr: {ports: [h1]}\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Pair(0, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := n.Pair(1, 0, 1); err != nil {
		t.Fatal(err)
	}
	for a, b := range []int{1, 0} {
		ha, hb := n.Hosts[a], n.Hosts[b]
		for range 16 {
			wr := nic.WR{Op: nic.OpWrite, QP: ha.peers[b][0].local, LKey: ha.MR.Key, LocalVA: ha.MR.VA, Len: n.Opts.MaxMessage,
				RKey: hb.MR.Key, RemoteVA: hb.MR.VA}
			if err := ha.EP.Post(wr); err != nil {
				t.Fatal(err)
			}
		}
		ha.Node.Wake(0)
	}
	for n.Sim.Now() < 200*sim.Microsecond && n.Sim.Step() {
	}
	before := n.Hosts[0].LLR.Stats().Ports[0]
	allocs := testing.AllocsPerRun(20, func() {
		for range 2000 {
			n.Sim.Step()
		}
	})
	after := n.Hosts[0].LLR.Stats().Ports[0]
	if after.Protected == before.Protected || after.Retransmitted+after.LossesDetected == before.Retransmitted+before.LossesDetected {
		t.Fatalf("h1's llr did not protect and recover while measured: %+v → %+v", before, after)
	}
	if allocs != 0 {
		t.Errorf("%.1f allocations per 2,000 steps", allocs)
	}
}
