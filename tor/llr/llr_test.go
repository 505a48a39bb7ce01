package llr

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// testCfg has timeouts in rig time (steps of 1 µs).
func testCfg(m Mode) Config {
	return Config{Mode: m, AckTimeout: 200e3, TxBuffer: 256 << 10, TxFrames: 512, RxBuffer: 256 << 10}
}

// loseSeq returns a lose function that drops the original of each listed
// sequence from a to b once.
func loseSeq(seqs ...int) func(int, []byte) bool {
	left := map[psn.Link]bool{}
	for _, s := range seqs {
		left[psn.Link(s)] = true
	}
	return func(dir int, f []byte) bool {
		s := shimOf(f)
		if dir != 0 || s == nil || s.Type() != rocev2.ShimOriginal || !left[s.Seq()] {
			return false
		}
		delete(left, s.Seq())
		return true
	}
}

func TestLossless(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, testCfg(m))
			r.send(0, 1000, 200)
			r.run(1e6)
			inOrder(t, r.toB, 0, 1000)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Protected != 1000 || a.ShimBytes != 8000 || b.Delivered != 1000 || b.LossesDetected != 0 || b.Duplicates != 0 {
				t.Errorf("sender %+v\nreceiver %+v", a, b)
			}
			if a.TxBytes != 0 || a.TxFrames != 0 {
				t.Errorf("Tx buffer not drained: %d bytes, %d frames", a.TxBytes, a.TxFrames)
			}
			if b.Expected != 1000 || a.Retransmitted != 0 {
				t.Errorf("expected %d, retransmitted %d", b.Expected, a.Retransmitted)
			}
		})
	}
}

func TestSingleAndConsecutiveLoss(t *testing.T) {
	for _, c := range []struct {
		name string
		lose []int
	}{{"single", []int{10}}, {"consecutive", []int{10, 11, 12, 13, 14}}, {"two-runs", []int{3, 4, 90, 400, 401}}} {
		for _, m := range []Mode{Blocking, NonBlocking} {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				r := newRig(t, testCfg(m))
				r.lose = loseSeq(c.lose...)
				r.send(0, 500, 200)
				r.run(1e6)
				if m == Blocking {
					inOrder(t, r.toB, 0, 500)
				} else {
					once(t, r.toB, 0, 500)
				}
				a, b := r.stats(&r.a), r.stats(&r.b)
				n := uint64(len(c.lose))
				if b.LossesDetected != n || a.Retransmitted != n || b.Skipped != 0 || a.LossesNotified != n {
					t.Errorf("lost %d: detected %d, notified %d, retransmitted %d, skipped %d",
						n, b.LossesDetected, a.LossesNotified, a.Retransmitted, b.Skipped)
				}
				if r.now > 100e3 {
					t.Errorf("took %d ns: recovery should not wait for a timeout", r.now)
				}
			})
		}
	}
}

// A lost tail is found by the dummy that follows it, not by a timeout
// (§3.2).
func TestTailLoss(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, testCfg(m))
			r.lose = loseSeq(4)
			r.send(0, 5, 100)
			r.run(1e6)
			inOrder(t, r.toB, 0, 5)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Dummies == 0 || b.DummiesReceived == 0 || b.LossesDetected != 1 || a.Retransmitted != 1 {
				t.Errorf("dummies %d/%d, detected %d, retransmitted %d", a.Dummies, b.DummiesReceived, b.LossesDetected, a.Retransmitted)
			}
			if r.now >= 50e3 {
				t.Errorf("tail recovered after %d ns; want well within ack_timeout", r.now)
			}
		})
	}
}

// With two copies, losing the original and one copy still recovers
// (§3.4).
func TestLostRetransmission(t *testing.T) {
	cfg := testCfg(Blocking)
	cfg.Copies = 2
	r := newRig(t, cfg)
	lostCopy := false
	orig := loseSeq(20)
	r.lose = func(dir int, f []byte) bool {
		if orig(dir, f) {
			return true
		}
		if s := shimOf(f); dir == 0 && s != nil && s.Type() == rocev2.ShimRetransmit && !lostCopy {
			lostCopy = true
			return true
		}
		return false
	}
	r.send(0, 100, 100)
	r.run(1e6)
	inOrder(t, r.toB, 0, 100)
	a, b := r.stats(&r.a), r.stats(&r.b)
	if !lostCopy || a.Copies != 2 || b.Skipped != 0 || b.NoticeRetries != 0 {
		t.Errorf("copies %d, skipped %d, notice retries %d", a.Copies, b.Skipped, b.NoticeRetries)
	}
}

// A lost notice, or every copy lost, is named again after NoticeRetry,
// before ackNoTimeout gives up.
func TestLostNotice(t *testing.T) {
	r := newRig(t, testCfg(Blocking))
	notices := 0
	r.lose = andFirstNotice(loseSeq(30), &notices)
	r.send(0, 100, 100)
	r.run(1e6)
	inOrder(t, r.toB, 0, 100)
	b := r.stats(&r.b)
	if notices < 2 || b.NoticeRetries == 0 || b.Skipped != 0 {
		t.Errorf("notices on the wire %d, retries %d, skipped %d", notices, b.NoticeRetries, b.Skipped)
	}
}

// andFirstNotice loses what lose loses and the first loss notice from b
// to a; *notices counts the notices that crossed the wire or were lost.
func andFirstNotice(lose func(int, []byte) bool, notices *int) func(int, []byte) bool {
	return func(dir int, f []byte) bool {
		if lose(dir, f) {
			return true
		}
		if dir == 1 && isType(f, rocev2.ShimLoss) {
			*notices++
			return *notices == 1
		}
		return false
	}
}

// Lost ACKs only delay freeing the Tx buffer: the sender's dummies make
// the receiver ACK again.
func TestLostAcks(t *testing.T) {
	r := newRig(t, testCfg(Blocking))
	acks := 0
	r.lose = func(dir int, f []byte) bool {
		if dir == 1 && shimOf(f) != nil && acks < 20 {
			acks++
			return true
		}
		return false
	}
	r.send(0, 50, 100)
	r.run(2e6)
	inOrder(t, r.toB, 0, 50)
	a := r.stats(&r.a)
	if acks != 20 || a.TxBytes != 0 || a.TxFrames != 0 || a.Retransmitted != 0 {
		t.Errorf("lost %d ACK carriers; Tx buffer %d bytes %d frames; retransmitted %d", acks, a.TxBytes, a.TxFrames, a.Retransmitted)
	}
}

// A wire that delivers everything twice: each frame reaches the host
// once (Algorithm 1's de-duplication).
func TestDuplicates(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			r := newRig(t, testCfg(m))
			r.dup = func(int, []byte) bool { return true }
			r.lose = loseSeq(7, 8, 50)
			r.send(0, 300, 100)
			r.run(1e6)
			if m == Blocking {
				inOrder(t, r.toB, 0, 300)
			} else {
				once(t, r.toB, 0, 300)
			}
			if b := r.stats(&r.b); b.Duplicates < 300 {
				t.Errorf("duplicates dropped %d, want ≥ 300", b.Duplicates)
			}
		})
	}
}

// ackNoTimeout skips a sequence whose every retransmission is lost, so
// the link does not stall (§3.5).
func TestAckTimeoutSkip(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			cfg := testCfg(m)
			r := newRig(t, cfg)
			r.lose = func(dir int, f []byte) bool {
				s := shimOf(f)
				return dir == 0 && s != nil && s.Type() <= rocev2.ShimRetransmit && s.Seq() == 40
			}
			r.send(0, 100, 100)
			r.run(5e6)
			want := make([]uint32, 0, 99)
			for i := uint32(0); i < 100; i++ {
				if i != 40 {
					want = append(want, i)
				}
			}
			if m == Blocking {
				if len(r.toB) != 99 {
					t.Fatalf("delivered %d, want 99", len(r.toB))
				}
				for i := range want {
					if r.toB[i] != want[i] {
						t.Fatalf("frame %d is PSN %d, want %d", i, r.toB[i], want[i])
					}
				}
			} else if len(r.toB) != 99 {
				t.Fatalf("delivered %d, want 99", len(r.toB))
			}
			a, b := r.stats(&r.a), r.stats(&r.b)
			if b.Skipped != 1 || b.AckTimeouts != 1 || a.TxFrames != 0 {
				t.Errorf("skipped %d in %d timeouts; sender still holds %d", b.Skipped, b.AckTimeouts, a.TxFrames)
			}
			if got := b.EffectiveLoss(); got != 1.0/100 {
				t.Errorf("effective loss %g, want 0.01", got)
			}
		})
	}
}

// In non-blocking mode frames after a loss are forwarded at once; the
// retransmission comes later, out of order (ProtegoNB).
func TestNBOrder(t *testing.T) {
	r := newRig(t, testCfg(NonBlocking))
	r.lose = loseSeq(5)
	r.send(0, 20, 100)
	r.run(1e6)
	once(t, r.toB, 0, 20)
	if r.toB[5] == 5 {
		t.Errorf("PSN 5 delivered in order in NB mode: %v", r.toB)
	}
	if b := r.stats(&r.b); b.Held != 0 || b.RxBytesMax != 0 {
		t.Errorf("NB held %d frames, %d bytes", b.Held, b.RxBytesMax)
	}
}

// The reordering buffer pauses the sender's data queue at Pause and
// resumes it at Resume, once each (Algorithm 2); retransmit, control and
// idle queues are never paused.
func TestPauseResume(t *testing.T) {
	cfg := testCfg(Blocking)
	cfg.RxBuffer, cfg.Pause, cfg.Resume = 64<<10, 16<<10, 4<<10
	cfg.AckTimeout, cfg.NoticeRetry = 10e6, 100e3
	r := newRig(t, cfg)
	// Lose 10 and its retransmissions until 500 µs.
	r.lose = func(dir int, f []byte) bool {
		s := shimOf(f)
		return dir == 0 && s != nil && s.Type() <= rocev2.ShimRetransmit && s.Seq() == 10 && r.now < 500e3
	}
	r.send(0, 200, 1000)
	sawPause := false
	for i := 0; i < 20000 && !r.quiet(); i++ {
		r.step(1000)
		e := r.a.w.Egress(1)
		if e.Paused(r.now, 2) {
			sawPause = true
			for _, q := range []int{0, 1, 3} {
				if e.Paused(r.now, q) {
					t.Fatalf("queue %s paused", e.QueueName(q))
				}
			}
		}
	}
	inOrder(t, r.toB, 0, 200)
	b := r.stats(&r.b)
	if !sawPause || b.PauseSent == 0 || b.ResumeSent != 1 {
		t.Errorf("paused %v: pause frames %d, resume frames %d", sawPause, b.PauseSent, b.ResumeSent)
	}
	if b.RxBytesMax > cfg.RxBuffer || b.RxBytesMax < cfg.Pause {
		t.Errorf("reorder high-water %d, want in [%d, %d]", b.RxBytesMax, cfg.Pause, cfg.RxBuffer)
	}
}

// Budgets hold under heavy random loss in both directions, with small
// buffers.
func TestBudgets(t *testing.T) {
	cfg := testCfg(Blocking)
	cfg.TxBuffer, cfg.RxBuffer, cfg.Pause, cfg.Resume = 32<<10, 32<<10, 24<<10, 8<<10
	r := newRig(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	r.lose = func(int, []byte) bool { return rng.Float64() < 0.05 }
	r.send(0, 5000, 700)
	r.run(50e6)
	for _, s := range []*side{&r.a, &r.b} {
		p := r.stats(s)
		if p.TxBytesMax > cfg.TxBuffer || p.RxBytesMax > cfg.RxBuffer {
			t.Errorf("Tx %d of %d, Rx %d of %d", p.TxBytesMax, cfg.TxBuffer, p.RxBytesMax, cfg.RxBuffer)
		}
	}
	// Frames beyond the Tx budget go unprotected: they may be lost for
	// good, but each arrives at most once and the protected ones in order.
	seen := map[uint32]bool{}
	for _, g := range r.toB {
		if seen[g] {
			t.Fatalf("PSN %d twice", g)
		}
		seen[g] = true
	}
	a := r.stats(&r.a)
	t.Logf("protected %d, unprotected (tx full) %d, delivered %d of 5000", a.Protected, a.UnprotectedTxFull, len(r.toB))
}

// 200,000 packets wrap the 16-bit sequence three times (era bit); with
// random loss and duplication every frame still arrives once and in
// order.
func TestEraWrap(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			// The rig sends 64 frames a microsecond: a Tx buffer for that
			// rate times a lost notice's NoticeRetry.
			cfg := testCfg(m)
			cfg.TxBuffer, cfg.RxBuffer = 4<<20, 4<<20
			r := newRig(t, cfg)
			rng := rand.New(rand.NewPCG(3, 4))
			r.lose = func(int, []byte) bool { return rng.Float64() < 0.005 }
			r.dup = func(int, []byte) bool { return rng.Float64() < 0.001 }
			const n = 200000
			r.send(0, n, 60)
			r.run(100e6)
			t.Logf("now %d sender %+v\nreceiver %+v", r.now, r.stats(&r.a), r.stats(&r.b))
			if m == Blocking {
				inOrder(t, r.toB, 0, n)
			} else {
				once(t, r.toB, 0, n)
			}
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Protected != n || a.UnprotectedTxFull != 0 || b.Skipped != 0 || a.TxFrames != 0 {
				t.Errorf("protected %d, skipped %d, held %d", a.Protected, b.Skipped, a.TxFrames)
			}
			if l := r.a.lp.l; l.next != psn.Link(n%(1<<psn.LinkBits)) || l.next.Era() != ((n/65536)%2 == 1) {
				t.Errorf("sender at %d (era %v) after %d", l.next.Seq(), l.next.Era(), n)
			}
			t.Logf("measured loss %.4f, effective %.g, copies %d", b.MeasuredLoss(), b.EffectiveLoss(), a.Copies)
		})
	}
}

func TestCopies(t *testing.T) {
	for _, c := range []struct {
		target, actual float64
		want           int
	}{{1e-8, 1e-4, 1}, {1e-8, 1e-3, 2}, {1e-8, 1e-5, 1}, {1e-9, 0, 1}, {1e-9, 0.5, 8}, {1e-9, 1e-2, 4}} {
		if got := Copies(c.target, c.actual); got != c.want {
			t.Errorf("Copies(%g, %g) = %d, want %d", c.target, c.actual, got, c.want)
		}
	}
}

func TestAllocs(t *testing.T) {
	r := newRig(t, testCfg(Blocking))
	r.keep = false
	f := frame(t, 1, 200)
	r.send(0, 100, 200)
	r.run(1e6)
	n := testing.AllocsPerRun(100, func() {
		for k := 0; k < dataplane.BatchSize; k++ {
			r.a.host.Inject(f)
		}
		r.step(1000)
		r.step(1000)
	})
	if n != 0 {
		t.Errorf("%v allocations per batch", n)
	}
}

// A dormant sender sends frames as they are and the receiver passes them
// through; switched on, it numbers from where it stopped, so the first
// loss after that is recovered like any other.
func TestSetActive(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		t.Run(m.String(), func(t *testing.T) {
			cfg := testCfg(m)
			cfg.Dormant = true
			r := newRig(t, cfg)
			if r.a.st.Active(1) || r.a.st.SetActive(0, true) {
				t.Fatal("dormant port active, or an unprotected port switched")
			}
			r.send(0, 100, 200)
			r.run(1e6)
			inOrder(t, r.toB, 0, 100)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if a.Protected != 0 || a.UnprotectedOff != 100 || b.RxUnprotected != 100 {
				t.Fatalf("dormant: protected %d, sent off %d, received unprotected %d; want 0, 100, 100",
					a.Protected, a.UnprotectedOff, b.RxUnprotected)
			}
			r.a.st.SetActive(1, true)
			r.lose = loseSeq(10) // the 11th frame numbered
			r.send(100, 100, 200)
			r.run(1e6)
			if m == Blocking {
				inOrder(t, r.toB, 0, 200)
			} else {
				once(t, r.toB, 0, 200)
			}
			a, b = r.stats(&r.a), r.stats(&r.b)
			if a.Protected != 100 || b.LossesDetected != 1 || a.Retransmitted != 1 || b.Skipped != 0 {
				t.Errorf("active: protected %d, detected %d, retransmitted %d, skipped %d; want 100, 1, 1, 0",
					a.Protected, b.LossesDetected, a.Retransmitted, b.Skipped)
			}
			r.a.st.SetActive(1, false)
			r.send(200, 10, 200)
			r.run(1e6)
			if a = r.stats(&r.a); a.UnprotectedOff != 110 || len(r.toB) != 210 {
				t.Errorf("off again: %d sent unprotected, %d delivered; want 110, 210", a.UnprotectedOff, len(r.toB))
			}
		})
	}
}

// A switch that restarts mid-stream, either end, in either mode, opens
// a new session at once: every frame sent after the restart arrives
// exactly once, nothing counts as lost, nothing waits for ackNoTimeout,
// and protection resumes within a round trip.
func TestRestart(t *testing.T) {
	for _, m := range []Mode{Blocking, NonBlocking} {
		for _, who := range []string{"sender", "receiver"} {
			t.Run(m.String()+"/"+who, func(t *testing.T) {
				cfg := testCfg(m)
				r := newRig(t, cfg)
				r.send(0, 600, 200)
				r.step(1000) // frames in flight and unacknowledged
				s := &r.a
				if who == "receiver" {
					s = &r.b
				}
				r.restart(s, cfg)
				r.toB = r.toB[:0]
				start := r.now
				r.send(1000, 600, 200)
				r.run(5e6)
				var after []uint32
				for _, p := range r.toB {
					if p >= 1000 {
						after = append(after, p)
					}
				}
				if m == Blocking {
					inOrder(t, after, 1000, 600)
				} else {
					once(t, after, 1000, 600)
				}
				a, b := r.stats(&r.a), r.stats(&r.b)
				if b.LossesDetected != 0 || b.AckTimeouts != 0 || b.Skipped != 0 || b.NoticesSent != 0 {
					t.Errorf("receiver: lost %d, ackNo timeouts %d, skipped %d, notices %d; want none",
						b.LossesDetected, b.AckTimeouts, b.Skipped, b.NoticesSent)
				}
				// Unprotected while the session opens: the frames of a
				// round trip, two of the rig's batches at most.
				if a.Protected == 0 || a.UnprotectedSync > 2*dataplane.BatchSize || a.TxFrames != 0 {
					t.Errorf("sender: protected %d, unprotected for the session %d, unacknowledged %d",
						a.Protected, a.UnprotectedSync, a.TxFrames)
				}
				if r.stats(s).Sessions != 1 || b.Resyncs+a.Resyncs != 1 {
					t.Errorf("restarted side's sessions %d, resyncs %d + %d; want 1 and one resync",
						r.stats(s).Sessions, a.Resyncs, b.Resyncs)
				}
				if r.now-start >= cfg.AckTimeout {
					t.Errorf("took %d µs, an ackNoTimeout or more: the restart stalled the link", (r.now-start)/1000)
				}
			})
		}
	}
}

// A dormant link that watches (numbers without copies) survives a
// restart of either side the same way: every frame arrives once and the
// monitor's gap count sees no loss.
func TestRestartWatching(t *testing.T) {
	for _, who := range []string{"sender", "receiver"} {
		t.Run(who, func(t *testing.T) {
			cfg := watchCfg(Blocking)
			r := newRig(t, cfg)
			r.send(0, 600, 200)
			r.step(1000)
			s := &r.a
			if who == "receiver" {
				s = &r.b
			}
			r.restart(s, cfg)
			r.toB = r.toB[:0]
			r.send(1000, 600, 200)
			r.run(5e6)
			var after []uint32
			for _, p := range r.toB {
				if p >= 1000 {
					after = append(after, p)
				}
			}
			inOrder(t, after, 1000, 600)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if b.LossesDetected != 0 || a.Watched == 0 {
				t.Errorf("lost %d, watched %d; want 0 and some", b.LossesDetected, a.Watched)
			}
		})
	}
}

// The longest head-of-line wait records why the head waited: a
// retransmission that came at once waits less than NoticeRetry with no
// retry; a lost notice waits NoticeRetry at least, with the retry that
// recovered it counted, and not skipped.
func TestHeadWaitCause(t *testing.T) {
	cfg := testCfg(Blocking).WithDefaults()
	for _, loseNotice := range []bool{false, true} {
		r := newRig(t, cfg)
		r.lose = loseSeq(30)
		if loseNotice {
			notices := 0
			r.lose = andFirstNotice(r.lose, &notices)
		}
		r.send(0, 100, 100)
		r.run(1e6)
		inOrder(t, r.toB, 0, 100)
		b := r.stats(&r.b)
		switch {
		case b.HeadWaitMax <= 0 || b.HeadWaitRxBytesMax <= 0 || b.HeadWaitSkipped != 0:
			t.Errorf("lost notice %v: longest wait %d ns, buffer %d B, skipped %d: want a wait, frames held, no skip",
				loseNotice, b.HeadWaitMax, b.HeadWaitRxBytesMax, b.HeadWaitSkipped)
		case !loseNotice && (b.HeadWaitMax >= cfg.NoticeRetry || b.HeadWaitRetries != 0):
			t.Errorf("retransmitted at once: longest wait %d ns with %d retries, want under notice_retry (%d) and none",
				b.HeadWaitMax, b.HeadWaitRetries, cfg.NoticeRetry)
		case loseNotice && (b.HeadWaitMax < cfg.NoticeRetry || b.HeadWaitRetries == 0):
			t.Errorf("notice lost: longest wait %d ns with %d retries, want notice_retry (%d) at least and a retry",
				b.HeadWaitMax, b.HeadWaitRetries, cfg.NoticeRetry)
		}
	}
}

// The Tx buffer keeps up to TxFrames frames themselves, held in the
// worker's memory, and copies past them: losses among both are
// recovered with the bytes that were sent, and once everything is acknowledged every frame
// is back in the memory and nothing is held.
func TestTxFramesHeld(t *testing.T) {
	for _, frames := range []int{0, 8, 512} {
		t.Run(fmt.Sprint(frames), func(t *testing.T) {
			cfg := testCfg(Blocking)
			cfg.TxFrames = frames
			r := newRig(t, cfg)
			lost := []int{1, 2, 40, 41, 200, 499}
			r.lose = loseSeq(lost...)
			bad, want := 0, frame(t, 0, 600)
			var wm rocev2.Meta
			rocev2.Classifier{}.Classify(want, &wm)
			r.b.host.OnTransmit = func(f []byte) {
				var m rocev2.Meta
				rocev2.Classifier{}.Classify(f, &m)
				rocev2.BTH(want[wm.BTHOff:]).SetPSN(m.PSN)
				if !bytes.Equal(f, want) {
					bad++
				}
				r.toB = append(r.toB, uint32(m.PSN))
			}
			r.send(0, 500, 600)
			r.run(1e6)
			inOrder(t, r.toB, 0, 500)
			a := r.stats(&r.a)
			if bad != 0 || a.Retransmitted != uint64(len(lost)) {
				t.Errorf("%d frames reached the host damaged; retransmitted %d of %d lost", bad, a.Retransmitted, len(lost))
			}
			switch {
			case frames == 0 && a.TxCopied != a.Protected:
				t.Errorf("copies only, yet %d of %d protected counted as copied", a.TxCopied, a.Protected)
			case frames == 8 && a.TxCopied == 0:
				t.Errorf("8 frames for %d protected, none copied", a.Protected)
			case frames == 512 && a.TxCopied != 0:
				t.Errorf("%d copied with room to hold 512", a.TxCopied)
			}
			for _, s := range []*side{&r.a, &r.b} {
				if n, sh := s.mem.InUse(), s.mem.Shared(); n != 0 || sh != 0 || s.lp.l.held != 0 {
					t.Errorf("after every ACK: %d frames in use, %d shared, %d held", n, sh, s.lp.l.held)
				}
			}
		})
	}
}
