package llr

import (
	"math"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"rocetor/rocev2"
)

// loseEvery drops every k-th frame of shim type typ going from a to b,
// from the (k/2)-th on: not the last of a round number of frames, which
// a watching receiver cannot see lost (no dummy follows).
func loseEvery(k int, typ uint8) func(int, []byte) bool {
	n := 0
	return func(dir int, f []byte) bool {
		if dir != 0 || !isType(f, typ) {
			return false
		}
		n++
		return n%k == k/2
	}
}

func watchCfg(m Mode) Config {
	c := testCfg(m)
	c.Dormant, c.Watch = true, true
	return c
}

// A dormant, watching sender numbers its frames without keeping copies;
// the receiver counts the gaps as losses and asks for nothing.
func TestWatch(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, watchCfg(m))
			r.lose = loseEvery(50, rocev2.ShimWatch)
			r.send(0, 1000, 200)
			r.run(1e6)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Watched != 1000 || a.Protected != 0 || a.TxBytes != 0 || a.TxBytesMax != 0 || a.Dummies != 0 {
				t.Errorf("sender: watched %d, protected %d, Tx bytes %d (peak %d), dummies %d; want 1000, 0, 0, 0, 0",
					a.Watched, a.Protected, a.TxBytes, a.TxBytesMax, a.Dummies)
			}
			if b.RxWatched != 980 || b.Expected != 1000 || b.LossesDetected != 20 || b.NoticesSent != 0 || b.Skipped != 0 || b.Acks != 0 {
				t.Errorf("receiver: watched %d, expected %d, lost %d, notices %d, skipped %d, explicit ACKs %d; want 980, 1000, 20, 0, 0, 0",
					b.RxWatched, b.Expected, b.LossesDetected, b.NoticesSent, b.Skipped, b.Acks)
			}
			if len(r.toB) != 980 {
				t.Errorf("delivered %d, want 980", len(r.toB))
			}
			if got := b.MeasuredLoss(); got != 0.02 {
				t.Errorf("measured loss %g, want 0.02", got)
			}
		})
	}
}

// The monitor at b sees the gaps of a's watched frames, asks a to
// protect the link, and a's sender switches on with Eq. 1's copies for
// the rate b measured; from then on nothing is lost. An operator's
// override holds until released.
func TestMonitorActivates(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, watchCfg(m))
			mon, err := NewMonitor(MonitorConfig{Window: 1 << 20}, r.b.st, []string{"h", "l"}, nil, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			now := time.Unix(0, 0)
			tick := func() {
				r.step(2e6) // the stage publishes its counters every ms
				now = now.Add(time.Second)
				mon.Step(now)
				r.run(1e6)
			}
			tick()
			if st := mon.Status(); len(st) != 1 || st[0].Port != "l" || st[0].Corrupting || st[0].Requests != 0 {
				t.Fatalf("before traffic: %+v", st)
			}

			// An operator pinned a's sender off: the request is ignored.
			r.a.st.SetActive(1, false)
			r.lose = loseEvery(100, rocev2.ShimWatch)
			r.send(0, 1000, 200)
			r.run(1e6)
			tick()
			st := mon.Status()[0]
			if !st.Corrupting || st.GapLoss != 0.01 || st.GapFrames != 1000 || st.Requests != 1 || st.Since != now {
				t.Fatalf("after 1%% loss: %+v", st)
			}
			a := r.stats(&r.a)
			if r.a.st.Active(1) || a.ProtectRequests != 1 || a.ProtectIgnored != 1 || r.stats(&r.b).ProtectAsked != 1 {
				t.Fatalf("pinned: active %v, requests %d, ignored %d", r.a.st.Active(1), a.ProtectRequests, a.ProtectIgnored)
			}
			if got := r.a.st.NeighbourLoss(1); math.Abs(got-0.01) > 1e-9 {
				t.Errorf("neighbour's loss %g, want 0.01", got)
			}

			// Released, the next request switches it on.
			r.a.st.Release(1)
			tick()
			a = r.stats(&r.a)
			if !r.a.st.Active(1) || a.Activations != 1 || r.a.st.Pinned(1) {
				t.Fatalf("released: active %v, activations %d, pinned %v", r.a.st.Active(1), a.Activations, r.a.st.Pinned(1))
			}
			// Eq. 1 with b's 1e-2 and the default target 1e-9: 4 copies.
			if k := r.a.st.copies(r.a.lp.l); k != Copies(DefaultTargetLoss, 0.01) || k != 4 {
				t.Errorf("copies %d, want %d", k, Copies(DefaultTargetLoss, 0.01))
			}

			r.toB = nil
			r.lose = loseEvery(100, rocev2.ShimOriginal)
			r.send(1000, 1000, 200)
			r.run(5e6)
			if m == Blocking {
				inOrder(t, r.toB, 1000, 1000)
			} else {
				once(t, r.toB, 1000, 1000)
			}
			b := r.stats(&r.b)
			a = r.stats(&r.a)
			if a.Protected != 1000 || a.Retransmitted != 10 || a.Copies != 40 || b.Skipped != 0 {
				t.Errorf("protected %d, retransmitted %d, copies %d, skipped %d; want 1000, 10, 40, 0",
					a.Protected, a.Retransmitted, a.Copies, b.Skipped)
			}
			// Protection stays on though the window's rate is now 20/2000.
			tick()
			if st := mon.Status()[0]; !st.Corrupting || st.GapFrames != 2000 || st.GapLoss != 0.01 {
				t.Errorf("after recovery: %+v", st)
			}
		})
	}
}

// The interface counters are the other source: a physical port counts
// the frames its MAC dropped as corrupt.
func TestMonitorCounters(t *testing.T) {
	st, err := NewStage(Config{Ports: 1 << 2, Dormant: true})
	if err != nil {
		t.Fatal(err)
	}
	var rx, errs uint64
	ok := false
	counters := func(port string) (uint64, uint64, bool) {
		if port != "p2" {
			t.Errorf("counters of %q", port)
		}
		return rx, errs, ok
	}
	mon, err := NewMonitor(MonitorConfig{Window: 1e6, Threshold: 1e-6}, st, []string{"p0", "p1", "p2"}, counters, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	step := func(drx, derrs uint64) MonitorStatus {
		rx, errs = rx+drx, errs+derrs
		now = now.Add(time.Second)
		mon.Step(now)
		return mon.Status()[0]
	}
	if s := step(1000, 5); s.CounterFrames != 0 {
		t.Fatalf("without counters: %+v", s)
	}
	ok = true
	step(0, 0) // the first reading only primes
	if s := step(999_999, 1); s.CounterLoss != 1e-6 || s.CounterFrames != 1e6 || !s.Corrupting || s.Requests != 1 {
		t.Fatalf("1 error in 1e6 frames: %+v", s)
	}
	// A clean million pushes the error out of the window.
	if s := step(1e6, 0); s.CounterLoss != 0 || s.Corrupting || s.Requests != 1 {
		t.Fatalf("clean window: %+v", s)
	}
	// Counters that went back restart the difference.
	rx, errs = 0, 0
	if s := step(10, 10); s.CounterFrames != 1e6 {
		t.Fatalf("after a counter reset: %+v", s)
	}
	if st.links[2].ask.Load() != 0 {
		// The request made at 1e-6 is still waiting: no worker runs.
		if got := rocev2.LossOfCode(uint8(st.links[2].ask.Load())); math.Abs(got-1e-6) > 1e-12 {
			t.Errorf("request carries %g, want 1e-6", got)
		}
	}
}

func TestMonitorConfig(t *testing.T) {
	st, _ := NewStage(Config{Ports: 1})
	for _, c := range []MonitorConfig{{Interval: -1}, {Threshold: 1}, {Threshold: -1e-9}} {
		if _, err := NewMonitor(c, st, []string{"p"}, nil, nil); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	m, err := NewMonitor(MonitorConfig{}, st, []string{"p"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Config(); c.Interval != time.Second || c.Window != 1e8 || c.Threshold != 1e-8 {
		t.Errorf("defaults %+v", c)
	}
}

func TestWindow(t *testing.T) {
	var w window
	if r, f := w.rate(10); r != 0 || f != 0 {
		t.Fatalf("empty: %g over %d", r, f)
	}
	for i := 0; i < monitorSamples+10; i++ {
		w.add(10, uint64(i%2))
	}
	// Newest first: losses 1 (i odd last? i = 265 is odd), 0, 1, …
	if r, f := w.rate(20); f != 20 || r != 0.05 {
		t.Errorf("two readings: %g over %d", r, f)
	}
	if r, f := w.rate(1 << 40); f != 10*monitorSamples || r != 0.05 {
		t.Errorf("whole ring: %g over %d", r, f)
	}
}

// Switching between watching and protecting loses no count: the sender
// watches again only once what it protected is acknowledged, and the
// receiver finds no gap that the link did not make.
func TestWatchTransitions(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, watchCfg(m))
			r.send(0, 100, 200)
			r.run(1e6)
			r.a.st.SetActive(1, true)
			r.lose = loseSeq(100, 120) // the first protected frame, and one more
			r.send(100, 100, 200)
			r.step(1000)
			r.a.st.SetActive(1, false) // with frames in flight
			r.send(200, 100, 200)
			r.run(2e6)
			r.send(300, 100, 200) // acknowledged: watched again
			r.run(2e6)
			if m == Blocking {
				inOrder(t, r.toB, 0, 400)
			} else {
				once(t, r.toB, 0, 400)
			}
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Watched+a.Protected+a.UnprotectedOff != 400 || a.Protected != 100 || a.UnprotectedOff == 0 || a.Watched < 200 {
				t.Errorf("watched %d, protected %d, sent off %d", a.Watched, a.Protected, a.UnprotectedOff)
			}
			if b.LossesDetected != 2 || a.Retransmitted != 2 || b.Skipped != 0 || b.Expected != a.Watched+a.Protected {
				t.Errorf("lost %d, retransmitted %d, skipped %d, expected %d; want 2, 2, 0, %d",
					b.LossesDetected, a.Retransmitted, b.Skipped, b.Expected, a.Watched+a.Protected)
			}
		})
	}
}

// One stray error (an overrun the driver counted, a single corrupted
// frame) in a window of far fewer than 1/Threshold frames does not make
// the link corrupting; enough losses to be no accident do.
func TestMonitorStrayError(t *testing.T) {
	st, err := NewStage(Config{Ports: 1, Dormant: true})
	if err != nil {
		t.Fatal(err)
	}
	var rx, errs uint64
	counters := func(string) (uint64, uint64, bool) { return rx, errs, true }
	mon, err := NewMonitor(MonitorConfig{Window: 1e6, Threshold: 1e-6}, st, []string{"p0"}, counters, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	step := func(drx, derrs uint64) MonitorStatus {
		rx, errs = rx+drx, errs+derrs
		now = now.Add(time.Second)
		mon.Step(now)
		return mon.Status()[0]
	}
	step(0, 0)
	if s := step(1000, 1); s.Corrupting || s.Requests != 0 {
		t.Fatalf("1 error in 1000 frames at threshold 1e-6: %+v", s)
	}
	if s := step(1000, minLosses); !s.Corrupting || s.Requests != 1 {
		t.Fatalf("%d more errors: %+v", minLosses, s)
	}
}
