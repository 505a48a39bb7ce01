package dataplane

import (
	"testing"

	"rocetor/rocev2"
)

const (
	wdDetect  = 10_000_000 // 10 ms
	wdRestore = 20_000_000
)

// newWDRig is a rig whose port 0 forwards to port 1's data queue
// (priority 3) with a PFC watchdog (detection 10 ms, restoration 20 ms)
// on every port.
func newWDRig(t *testing.T, forward bool) *rig {
	r := newRig(t, DefaultEgress(1e9, 1<<20), cross{q: 2})
	r.w.cfg.PFCWatchdog = &PFCWatchdog{Detection: wdDetect, Restoration: wdRestore, Forward: forward}
	r.w.wd = newWDState(*r.w.cfg.PFCWatchdog, 2)
	return r
}

// storm has port 1's peer pause priority 3 (65535 quanta, 33.6 ms at
// 1 Gbit/s) every 5 ms from `from` to `to`, as a host whose receive
// path is stuck does, stepping the worker at each pause and at every
// time it asks for (Next) in between.
func (r *rig) storm(from, to int64) {
	for now := from; now < to; {
		r.peerPFC(1, 0xffff)
		r.w.Step(now)
		next := now + 5_000_000
		for {
			at, ok := r.w.Next(now)
			if !ok || at >= next || at >= to {
				break
			}
			now = max(at, now+1)
			r.w.Step(now)
		}
		now = next
	}
}

// TestPFCWatchdogDrop: a peer that pauses forever stalls port 1's data
// queue; the watchdog declares the storm at its detection time, drops
// what waits and what arrives for the queue, counted, ignores the
// pauses, and restores the queue once the pauses have stopped for the
// restoration time, after which frames flow again.
func TestPFCWatchdogDrop(t *testing.T) {
	r := newWDRig(t, false)
	r.peerPFC(1, 0xffff)
	r.w.Step(0)
	for i := 0; i < 5; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.w.Step(1000)
	if at, ok := r.w.Next(1000); !ok || at != wdDetect {
		t.Fatalf("Next = %d, %v: want the detection at %d", at, ok, wdDetect)
	}
	r.storm(2_000_000, wdDetect)
	pc := func() PortCounters { return r.w.st.Ports[1] }
	if pc().WDStorms != 0 || r.w.Egress(1).Backlog() == 0 {
		t.Fatalf("storm declared before the detection time: %+v", pc())
	}
	r.storm(wdDetect, 50_000_000)
	if c := pc(); c.WDStorms != 1 || c.WDDrops != 5 || r.w.st.Drops[ReasonPFCWatchdog] != 5 {
		t.Fatalf("after the detection time: %+v, %d pfc_watchdog drops: want one storm, 5 drops", c, r.w.st.Drops[ReasonPFCWatchdog])
	}
	if len(r.sent[1]) != 0 || r.w.Egress(1).Backlog() != 0 {
		t.Fatalf("stormed queue: %d frames sent, %d bytes queued: want both 0", len(r.sent[1]), r.w.Egress(1).Backlog())
	}
	// Frames that arrive during the storm die at once.
	r.ports[0].Inject(roceFrame(t, 5, 1024))
	r.storm(50_000_000, 60_000_000)
	if c := pc(); c.WDDrops != 6 || c.WDRestores != 0 {
		t.Fatalf("during the storm: %+v, want 6 drops and no restoration", c)
	}
	// The last pause was at 55 ms: restored at 75 ms, not before (the
	// check planned at the first pause's restoration, 70 ms, looks again).
	for now := int64(60_000_000); now < 75_000_000; {
		at, ok := r.w.Next(now)
		if !ok || at > 75_000_000 {
			t.Fatalf("Next = %d, %v: want a check by the restoration at 75 ms", at, ok)
		}
		now = max(at, now+1)
		if r.w.Step(now); now < 75_000_000 && pc().WDRestores != 0 {
			t.Fatalf("restored at %d ns, before the restoration time", now)
		}
	}
	r.w.Step(75_000_000)
	if pc().WDRestores != 1 {
		t.Fatalf("not restored at the restoration time: %+v", pc())
	}
	r.ports[0].Inject(roceFrame(t, 6, 1024))
	for now := int64(76_000_000); r.ports[0].Pending() > 0 || r.w.Egress(1).Backlog() > 0; now += 1_000_000 {
		r.w.Step(now)
	}
	if len(r.sent[1]) != 1 || pc().WDDrops != 6 {
		t.Fatalf("after restoration: %d frames sent, %+v: want the new frame sent", len(r.sent[1]), pc())
	}
	if _, ok := r.w.Next(200_000_000); ok {
		t.Fatal("the watchdog still asks for time with nothing paused")
	}
}

// TestPFCWatchdogForward: with the forward action the stormed queue
// sends in spite of the pauses, and drops nothing.
func TestPFCWatchdogForward(t *testing.T) {
	r := newWDRig(t, true)
	r.peerPFC(1, 0xffff)
	r.w.Step(0)
	for i := 0; i < 5; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.storm(1000, 30_000_000)
	c := r.w.st.Ports[1]
	if c.WDStorms != 1 || c.WDDrops != 0 || len(r.sent[1]) != 5 {
		t.Fatalf("%+v, %d frames sent: want one storm, no drop, 5 frames sent", c, len(r.sent[1]))
	}
}

// TestPFCWatchdogOff: without the watchdog the same peer holds the
// queue for as long as it pauses: what the two tests above rely on.
func TestPFCWatchdogOff(t *testing.T) {
	r := newRig(t, DefaultEgress(1e9, 1<<20), cross{q: 2})
	r.peerPFC(1, 0xffff)
	r.w.Step(0)
	for i := 0; i < 5; i++ {
		r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
	}
	r.storm(1000, 100_000_000)
	if len(r.sent[1]) != 0 || r.w.Egress(1).Backlog() == 0 {
		t.Fatalf("without a watchdog: %d frames sent, %d bytes queued: want all held", len(r.sent[1]), r.w.Egress(1).Backlog())
	}
}

// TestPFCWatchdogRefreshNotStorm: a peer that pauses and resumes, so
// that the queue drains between pauses, is never a storm.
func TestPFCWatchdogRefreshNotStorm(t *testing.T) {
	r := newWDRig(t, false)
	for now := int64(0); now < 100_000_000; now += 4_000_000 {
		r.ports[0].Inject(roceFrame(t, uint32(now), 1024))
		r.peerPFC(1, 0xffff)
		r.w.Step(now)
		r.peerPFC(1, 0)
		r.w.Step(now + 2_000_000)
	}
	if c := r.w.st.Ports[1]; c.WDStorms != 0 || len(r.sent[1]) != 25 {
		t.Fatalf("%+v, %d sent: want no storm and every frame sent", c, len(r.sent[1]))
	}
}

// TestIngressPFCPriorities: with the enable vector naming priority 4
// only, frames on the data queue's priority 3 are never counted and
// never pause the peer, and a received pause for priority 3 is ignored.
func TestIngressPFCPriorities(t *testing.T) {
	for _, c := range []struct {
		prios  uint8
		paused bool
	}{{1 << 4, false}, {1 << 3, true}, {0, true}} {
		r := newRig(t, DefaultEgress(1e9, 1<<20), cross{q: 2})
		r.w.cfg.PFC = &IngressPFC{XOff: 2 << 10, XOn: 1 << 10, Quanta: 1000, Priorities: c.prios}
		r.w.pfc = newPFCState(*r.w.cfg.PFC, r.w.egress)
		r.w.pfcRx = 0xff
		if c.prios != 0 {
			r.w.pfcRx = c.prios
		}
		r.peerPFC(1, 0xffff)
		for i := 0; i < 6; i++ {
			r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
		}
		r.w.Step(0)
		r.w.Step(1000)
		times, _ := r.pfcTimes()
		if got := len(times) > 0; got != c.paused {
			t.Errorf("priorities %08b: port 0 paused its peer %v, want %v", c.prios, got, c.paused)
		}
		if got := r.w.pfc.bytes[0][3] > 0; got != c.paused {
			t.Errorf("priorities %08b: priority 3 counted %d bytes", c.prios, r.w.pfc.bytes[0][3])
		}
		if got := len(r.sent[1]) == 0; got != c.paused {
			t.Errorf("priorities %08b: port 1 sent %d frames under its peer's pause for priority 3", c.prios, len(r.sent[1]))
		}
		if r.w.st.Ports[1].PFCRxPrio[3] != 1 {
			t.Errorf("priorities %08b: the pause for priority 3 was not counted per priority", c.prios)
		}
	}
}

// TestIngressPFCGroups: a priority group's own xoff replaces the
// section's for its priority: six 1 KiB frames pass the section's 2 KiB
// but not priority 3's 8 KiB, ten pass both; an xon at or above the
// group's xoff is refused.
func TestIngressPFCGroups(t *testing.T) {
	for _, c := range []struct {
		groups [8]Thresholds
		frames int
		paused bool
	}{
		{[8]Thresholds{}, 6, true},
		{[8]Thresholds{3: {XOff: 8 << 10, XOn: 4 << 10}}, 6, false},
		{[8]Thresholds{3: {XOff: 8 << 10, XOn: 4 << 10}}, 10, true},
		{[8]Thresholds{4: {XOff: 8 << 10, XOn: 4 << 10}}, 6, true}, // another priority's group
	} {
		r := newRig(t, DefaultEgress(1e9, 1<<20), cross{q: 2})
		r.w.cfg.PFC = &IngressPFC{XOff: 2 << 10, XOn: 1 << 10, Quanta: 1000, Groups: c.groups}
		if err := r.w.cfg.PFC.validate(2); err != nil {
			t.Fatal(err)
		}
		r.w.pfc = newPFCState(*r.w.cfg.PFC, r.w.egress)
		r.peerPFC(1, 0xffff) // port 1 sends nothing: every frame stays queued
		for i := 0; i < c.frames; i++ {
			r.ports[0].Inject(roceFrame(t, uint32(i), 1024))
		}
		r.w.Step(0)
		r.w.Step(1000)
		times, _ := r.pfcTimes()
		if got := len(times) > 0; got != c.paused {
			t.Errorf("groups %v, %d frames (%d bytes): port 0 paused its peer %v, want %v", c.groups, c.frames, r.w.pfc.bytes[0][3], got, c.paused)
		}
	}
	bad := IngressPFC{XOff: 2 << 10, XOn: 1 << 10, Groups: [8]Thresholds{3: {XOff: 4 << 10, XOn: 4 << 10}}}
	if err := bad.validate(2); err == nil {
		t.Error("a group with xon = xoff accepted")
	}
}

// TestPFCWatchdogAllocs: the watchdog's checks, storms and drops
// allocate nothing.
func TestPFCWatchdogAllocs(t *testing.T) {
	r := newWDRig(t, false)
	pause := make([]byte, 64)
	n, _ := rocev2.BuildPFC(pause, rocev2.MAC{2, 0, 0, 0, 0, 9}, 1<<3, [8]uint16{3: 0xffff})
	data := roceFrame(t, 1, 64)
	now := int64(0)
	if a := testing.AllocsPerRun(100, func() {
		r.ports[1].Inject(pause[:n])
		r.ports[0].Inject(data)
		r.w.Step(now)
		now += 3_000_000
	}); a != 0 {
		t.Fatalf("%v allocations per step", a)
	}
	if r.w.st.Ports[1].WDStorms == 0 || r.w.st.Ports[1].WDDrops == 0 {
		t.Fatalf("the loop never stormed: %+v", r.w.st.Ports[1])
	}
}

// TestIngressPFCHeadroom: frames the shared pool's threshold refuses on
// a lossless priority go into their ingress port's headroom, pausing
// the peer at once, up to the headroom; without headroom the threshold
// drops them and nothing pauses. Leaving frames release headroom first
// and the pool's books close.
func TestIngressPFCHeadroom(t *testing.T) {
	for _, hr := range []int{0, 6 << 10} {
		eg := DefaultEgress(1e9, 1<<20)
		eg.Shared = NewSharedBuffer(8 << 10)
		for i := range eg.Queues {
			eg.Queues[i].Alpha = 0.25
		}
		r := newRig(t, eg, cross{q: 2})
		pfc := IngressPFC{XOff: 64 << 10, XOn: 32 << 10, Quanta: 1000, Headroom: hr}
		r.w.cfg.PFC = &pfc
		r.w.pfc = newPFCState(pfc, r.w.egress)
		r.peerPFC(1, 0xffff) // port 1 may not send: port 0's frames stay queued
		r.w.Step(0)
		f := roceFrame(t, 1, 1024)
		for k := 0; k < 12; k++ {
			r.ports[0].Inject(f)
			r.w.Step(int64(1000 * (k + 1)))
		}
		drops := r.w.st.Drops[ReasonBufferThreshold]
		times, _ := r.pfcTimes()
		inHR := r.w.pfc.hdrm[0][3]
		// α 0.25 of an 8 KiB pool: one frame fits the threshold.
		switch {
		case hr == 0 && (drops != 11 || len(times) != 0):
			t.Fatalf("no headroom: %d threshold drops, PFC frames %v: want 11 drops and no pause", drops, times)
		case hr > 0 && (drops != uint64(12-1-hr/len(f)) || len(times) != 1 || inHR != hr/len(f)*len(f)):
			t.Fatalf("headroom %d: %d threshold drops, PFC frames %v, %d bytes in headroom: want %d drops, one pause, %d bytes",
				hr, drops, times, inHR, 12-1-hr/len(f), hr/len(f)*len(f))
		}
		if used := eg.Shared.Used(); used > eg.Shared.Size()+int64(hr) {
			t.Fatalf("pool used %d bytes of %d + %d of headroom", used, eg.Shared.Size(), hr)
		}
		r.peerPFC(1, 0)
		for now := int64(100_000); r.w.Egress(1).Backlog() > 0 || r.ports[1].Pending() > 0; now += 10_000 {
			r.w.Step(now)
		}
		if r.w.pfc.hdrm[0][3] != 0 || r.w.pfc.bytes[0][3] != 0 || eg.Shared.Used() != 0 {
			t.Fatalf("after the drain: %d bytes in headroom, %d counted, pool used %d: want 0",
				r.w.pfc.hdrm[0][3], r.w.pfc.bytes[0][3], eg.Shared.Used())
		}
	}
}

// TestInputLimit: the frames one port brought in hold at most
// WorkerConfig.InputLimit bytes of the egress queues; past it a frame
// is dropped as input_full, another port's frames have their own
// budget, and what leaves gives it back.
func TestInputLimit(t *testing.T) {
	r := newRig(t, DefaultEgress(0, 1<<20))
	f := roceFrame(t, 1, 1000)
	r.w.cfg.InputLimit = 3 * len(f)
	r.w.input = make([]int, 2)
	r.ports[0].SetTxRoom(0)
	r.ports[1].SetTxRoom(0) // nothing leaves: every frame stays queued
	for range 5 {
		r.ports[0].Inject(f)
	}
	for range 2 {
		r.ports[1].Inject(f)
	}
	r.w.Step(0)
	on1, on0 := r.w.Egress(1).Backlog(), r.w.Egress(0).Backlog()
	if d := r.w.st.Drops[ReasonInputFull]; d != 2 || on1 != 3*len(f) || on0 != 2*len(f) || r.w.input[0] != on1 || r.w.input[1] != on0 {
		t.Fatalf("%d input_full drops, %d and %d bytes queued, inputs hold %v bytes: want 2, 3 frames from p0, 2 from p1, as many",
			d, on1, on0, r.w.input)
	}
	r.ports[0].SetTxRoom(BatchSize)
	r.ports[1].SetTxRoom(BatchSize)
	r.w.Step(1000)
	if r.w.input[0] != 0 || r.w.input[1] != 0 || len(r.sent[1]) != 3 || len(r.sent[0]) != 2 {
		t.Fatalf("after the drain: inputs hold %v bytes, %d and %d frames sent: want none, 3, 2", r.w.input, len(r.sent[1]), len(r.sent[0]))
	}
	for range 3 {
		r.ports[0].Inject(f)
	}
	r.w.Step(2000)
	if d := r.w.st.Drops[ReasonInputFull]; d != 2 || len(r.sent[1]) != 6 {
		t.Fatalf("%d input_full drops, %d frames sent from p0's: want still 2, and 6", d, len(r.sent[1]))
	}
}
