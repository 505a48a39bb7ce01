package netrt

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// rr is R_r as §III-C-3 writes it, computed apart from the stage.
func rr(n, kl, kh int, rmax, rmin uint64) uint64 {
	switch {
	case n < kl:
		return rmax
	case n >= kh:
		return rmin
	}
	d := uint64(n-kl) * (rmax - rmin) / uint64(kh-kl)
	if d >= rmax-rmin {
		return rmin
	}
	return rmax - d
}

func TestSrcRate(t *testing.T) {
	s, err := NewSrcToR(Config{Fabric: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := &cport{rmax: 5e9, rmin: 1e8}
	kl, kh := 20<<10, 100<<10
	for _, c := range []struct {
		n    int
		want uint64
	}{
		{kl, 5e9},
		{kl + (kh-kl)/4, 5e9 - 4.9e9/4},
		{(kl + kh) / 2, 2.55e9},
		{kh - 1, rr(kh-1, kl, kh, 5e9, 1e8)},
		{kh, 1e8},
		{10 * kh, 1e8},
		{1 << 40, 1e8},
	} {
		if got := s.rate(p, c.n); got != c.want || got != rr(c.n, kl, kh, 5e9, 1e8) {
			t.Errorf("R_r(N=%d) = %d, want %d", c.n, got, c.want)
		}
	}
}

// TestSrcRateDefaults: unset bounds are 50% and 1% of a shaped port's
// rate, 5 Gbit/s and 100 Mbit/s on an unshaped one; set ones stay.
func TestSrcRateDefaults(t *testing.T) {
	for _, c := range []struct {
		cfg                  Config
		max1, min1, max2, m2 uint64
	}{
		{Config{}, 12.5e9, 250e6, 5e9, 100e6},
		{Config{RateMax: 3e9}, 3e9, 250e6, 3e9, 100e6},
		{Config{RateMin: 6e9}, 12.5e9, 6e9, 6e9, 6e9}, // max raised to min where the default is lower
	} {
		c.cfg.Fabric = 6
		s, err := NewSrcToR(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		eg := []dataplane.EgressConfig{dataplane.DefaultEgress(0, 1<<20), dataplane.DefaultEgress(25e9, 1<<20),
			dataplane.DefaultEgress(0, 1<<20)}
		r := newSrcRig(t, eg, s)
		r.send(7, 0, 1)
		if p1, p2 := s.cp[1], s.cp[2]; p1.rmax != c.max1 || p1.rmin != c.min1 || p2.rmax != c.max2 || p2.rmin != c.m2 {
			t.Errorf("%+v: port 1 %d–%d, port 2 %d–%d bit/s", c.cfg, p1.rmin, p1.rmax, p2.rmin, p2.rmax)
		}
		// Window/16 is shorter than a quarter of a 0xffff-quanta pause
		// at 10 Gbit/s (3.4 ms).
		if s.tick != DefaultHold/16 {
			t.Errorf("tick %d ns", s.tick)
		}
		r.noLeak(s)
	}
}

// askFirst returns the request for PSNs 0..m-1 of flow srcIP→dstIP, qp 7.
func askFirst(t testing.TB, m int) []byte {
	return request(t, 7, 0, rocev2.Bitmap128{}.Set(m-1))
}

// TestSrcLineRate: below KLow every requested duplicate goes at once,
// and no host is paused.
func TestSrcLineRate(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{KLow: 21 * frame})
	r.send(7, 0, 30)
	r.take(1)
	r.inject(1, askFirst(t, 20))
	r.step(1000)
	at, ids, pfc := sortOut(t, r.take(1))
	if !equal(ids, seq(700, 720)) || at[0] != at[len(at)-1] {
		t.Fatalf("sent %v at %v, want 700–719 at once", ids, at)
	}
	if f := r.take(0); len(f) != 0 || len(pfc) != 0 {
		t.Fatalf("%d frames toward the host", len(f))
	}
	if st := s.Stats().Ports[1]; st.Retrans != 20 || st.Paced != 0 || s.active != 0 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

// TestSrcPacing: from KLow on, retransmissions leave one every len·8/R_r
// with R_r the formula's for the requested bytes N.
func TestSrcPacing(t *testing.T) {
	frame := len(data(t, 7, 0))
	kl, kh := 2*frame, 10*frame
	const rmax, rmin = 8e9, 8e7
	for _, m := range []int{3, 6, 9, 10, 14} {
		r, s := newSrcN(t, 2, Config{KLow: kl, KHigh: kh, RateMax: rmax, RateMin: rmin, Window: 1e9, Hold: 1e9})
		r.send(7, 0, uint32(m+2))
		r.take(1)
		r.inject(1, askFirst(t, m))
		r.step(1000)
		t0 := r.now
		// The first is below KLow, the second opens the pacing.
		if _, ids, _ := sortOut(t, r.take(1)); !equal(ids, []uint32{700, 701}) {
			t.Fatalf("m=%d: sent %v at once, want 700 701", m, ids)
		}
		rate := rr(m*frame, kl, kh, rmax, rmin)
		gap := int64(uint64(frame) * 8e9 / rate)
		for k := int64(1); k < int64(m-1); k++ {
			r.until(t0+k*gap-1, 1<<20)
			if _, ids, _ := sortOut(t, r.take(1)); len(ids) != 0 {
				t.Fatalf("m=%d: %v sent before %d ns", m, ids, k*gap)
			}
			r.step(1)
			if _, ids, _ := sortOut(t, r.take(1)); !equal(ids, []uint32{701 + uint32(k)}) {
				t.Fatalf("m=%d: sent %v at %d ns, want %d (R_r %d bit/s, gap %d ns)", m, ids, k*gap, 701+k, rate, gap)
			}
		}
		st := s.Stats().Ports[1]
		if st.Retrans != 1 || st.Paced != uint64(m-1) || st.RateBps != rate || st.PaceQueued != 0 {
			t.Fatalf("m=%d: stats %+v, R_r %d", m, st, rate)
		}
		r.noLeak(s)
	}

	// A worker whose loops are 10 µs apart sends late, but keeps the
	// rate: the k-th leaves by the first loop at or after t0 + k·gap.
	m := 40
	r, s := newSrcN(t, 2, Config{KLow: kl, KHigh: kh, RateMax: rmax, RateMin: rmin, Window: 1e9, Hold: 1e9})
	r.send(7, 0, uint32(m+2))
	r.take(1)
	r.inject(1, askFirst(t, m))
	r.step(1000)
	t0 := r.now
	gap := int64(frame * 100) // R_r = RateMin
	r.until(t0+int64(m)*gap, 10_000)
	at, ids, _ := sortOut(t, r.take(1))
	if !equal(ids, seq(700, 700+uint32(m))) {
		t.Fatalf("sent %v", ids)
	}
	for k := 1; k < m-1; k++ {
		if late := at[k+1] - (t0 + int64(k)*gap); late < 0 || late >= 10_000 {
			t.Fatalf("paced retransmission %d at %d ns, %d ns after its time", k, at[k+1]-t0, late)
		}
	}
	r.noLeak(s)
}

// TestSrcPFC: while N ≥ KLow the host whose flow was asked for is paused
// (802.1Qbb, priority 3), the pause is refreshed before it lapses, and
// a resume follows once N has fallen below KLow.
func TestSrcPFC(t *testing.T) {
	frame := len(data(t, 7, 0))
	const window, quanta = 200_000, 1000
	r, s := newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, Window: window, Hold: 1e6, PauseQuanta: quanta})
	r.send(7, 0, 10)
	r.take(1)
	r.inject(1, askFirst(t, 6)) // N = 6 frames
	r.step(1000)
	t0 := r.now
	r.until(window*3, 1000)
	if _, ids, pfc := sortOut(t, r.take(1)); !equal(ids, seq(700, 706)) || len(pfc) != 0 {
		t.Fatalf("fabric got %v and %d PFC frames", ids, len(pfc))
	}
	fs := r.take(0)
	if len(fs) < 3 {
		t.Fatalf("%d frames toward the host", len(fs))
	}
	const pause int64 = quanta * 512 * 1e9 / 10e9 // ns at the assumed 10 Gbit/s
	// N = 6F·(2W−t)/W in the second window: below 2F after 2W − W/3.
	below := int64(2*window - window/3)
	last := int64(-1)
	for i, f := range fs {
		c, ok := pfcFrame(f.b)
		if !ok || c.ClassEnable() != 1<<3 || rocev2.Ethernet(f.b).Src() != r.ports[0].MAC() {
			t.Fatalf("frame %d toward the host is not a PFC frame for priority 3", i)
		}
		for p := 0; p < 8; p++ {
			if p != 3 && c.Time(p) != 0 {
				t.Fatalf("frame %d pauses priority %d", i, p)
			}
		}
		if i == len(fs)-1 {
			if c.Time(3) != 0 || f.at < below || f.at > below+s.tick+1000 {
				t.Fatalf("last frame: %d quanta at %d ns, want a resume soon after %d", c.Time(3), f.at, below)
			}
			if f.at-last > pause {
				t.Fatalf("pause lapsed %d ns before the resume", f.at-last-pause)
			}
			break
		}
		switch {
		case c.Time(3) != quanta:
			t.Fatalf("frame %d at %d ns: %d quanta, want %d", i, f.at, c.Time(3), quanta)
		case i == 0 && f.at != t0:
			t.Fatalf("first pause at %d ns, want %d", f.at, t0)
		case i > 0 && (f.at-last < pause/2 || f.at-last >= pause):
			t.Fatalf("pause %d %d ns after the one before, want between %d and %d", i, f.at-last, pause/2, pause)
		}
		last = f.at
	}
	st := s.Stats()
	if p0 := st.Ports[0]; p0.Pauses != uint64(len(fs)-1) || p0.Resumes != 1 || p0.PausedNow || st.Ports[1].Pauses != 0 {
		t.Fatalf("host port %+v", p0)
	}
	r.until(r.now+4*window, 10_000)
	if n := len(r.take(0)); n != 0 || s.ticking || s.active != 0 {
		t.Fatalf("%d frames toward the host after the resume; tick armed %v", n, s.ticking)
	}
	r.noLeak(s)

	// PausePriority -1: paced, but no PFC.
	r, s = newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, PausePriority: -1})
	r.send(7, 0, 10)
	r.inject(1, askFirst(t, 6))
	r.until(r.now+window, 1000)
	if n := len(r.take(0)); n != 0 || s.Stats().Ports[1].Paced == 0 {
		t.Fatalf("%d frames toward the host, %d paced", n, s.Stats().Ports[1].Paced)
	}
	r.noLeak(s)
}

// TestSrcPacedSkip: a duplicate waiting to be paced that an ACK, or its
// hold time, retires is skipped, and counted.
func TestSrcPacedSkip(t *testing.T) {
	frame := len(data(t, 7, 0))
	cfg := Config{KLow: 2 * frame, KHigh: 10 * frame, RateMax: 8e9, RateMin: 8e7, Window: 1e9, Hold: 1e9}
	gap := int64(frame * 100) // at 80 Mbit/s
	r, s := newSrcN(t, 2, cfg)
	r.send(7, 0, 14)
	r.take(1)
	r.inject(1, askFirst(t, 12)) // 700 at once, 701 opens the pacing, 702–711 wait
	r.step(1000)
	r.inject(1, ack(t, 7, 5)) // retires 700–705, of which 702–705 waited
	r.step(1000)
	if st := s.Stats().Ports[1]; st.PacedSkips != 4 || st.PaceQueued != 6 || st.Acked != 6 {
		t.Fatalf("stats %+v", st)
	}
	r.until(r.now+8*gap, 1000)
	_, ids, _ := sortOut(t, r.take(1))
	if !equal(ids, append([]uint32{700, 701}, seq(706, 712)...)) {
		t.Fatalf("sent %v", ids)
	}
	if st := s.Stats().Ports[1]; st.Paced != 7 || st.Retrans != 1 || st.PacedSkips != 4 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)

	// The hold restarts when a duplicate joins the FIFO, but pacing at
	// 80 Mbit/s needs longer than 50 µs for all of them.
	// The request comes 30 µs after the data: without the restart, 702
	// would expire before its turn.
	cfg.Hold = 50_000
	r, s = newSrcN(t, 2, cfg)
	r.send(7, 0, 14)
	r.take(1)
	r.step(30_000)
	r.inject(1, askFirst(t, 12))
	r.until(r.now+12*gap, 1000)
	_, ids, _ = sortOut(t, r.take(1))
	if want := int(cfg.Hold/gap) + 2; len(ids) != want {
		t.Fatalf("sent %v, want %d", ids, want)
	}
	if st := s.Stats().Ports[1]; st.Paced+st.Retrans+st.PacedSkips != 12 || st.PacedSkips == 0 || st.Expired != 14 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

// TestSrcPacedDrain: when N falls below KLow what waits goes at once.
func TestSrcPacedDrain(t *testing.T) {
	frame := len(data(t, 7, 0))
	const window = 100_000
	r, s := newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, RateMax: 8e9, RateMin: 8e6,
		Window: window, Hold: 1e9})
	r.send(7, 0, 14)
	r.take(1)
	r.inject(1, askFirst(t, 12)) // R_r = 8 Mbit/s: one every ~300 µs
	r.until(window, 1000)
	if _, ids, _ := sortOut(t, r.take(1)); !equal(ids, []uint32{700, 701}) {
		t.Fatalf("sent %v in the first window", ids)
	}
	r.until(3*window, 1000)
	at, ids, _ := sortOut(t, r.take(1))
	// N = 12F·(2W−t)/W: below 2F after 2W − W/6.
	below := int64(2*window - window/6)
	if !equal(ids, seq(702, 712)) || at[0] != at[len(at)-1] || at[0] < below || at[0] > below+s.tick+1000 {
		t.Fatalf("sent %v at %v, want 702–711 at once soon after %d", ids, at, below)
	}
	if st := s.Stats().Ports[1]; st.Retrans != 11 || st.Paced != 1 || st.PaceQueued != 0 || s.active != 0 {
		t.Fatalf("stats %+v", st)
	}
	r.noLeak(s)
}

// TestSrcPacedAllocs: requests, pacing, PFC and the timers behind them do
// not allocate.
func TestSrcPacedAllocs(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, RateMax: 8e9, RateMin: 1e9,
		Window: 20_000, Hold: 50_000, PauseQuanta: 200})
	r.ports[0].OnTransmit, r.ports[1].OnTransmit = nil, nil
	d, q := data(t, 7, 0), askFirst(t, 8)
	dm, qm := meta(t, d), meta(t, q)
	n := uint32(0)
	allocs := testing.AllocsPerRun(50, func() {
		base := n
		for i := 0; i < 8; i++ {
			rocev2.BTH(d[dm.BTHOff:]).SetPSN(rocev2PSN(n))
			dm.SetICRC(d)
			n++
			r.ports[0].Inject(d)
		}
		r.step(1000)
		rocev2.NetRT(q[qm.ExtOff(rocev2.ExtNetRT):]).SetRequest(rocev2PSN(base), rocev2.Bitmap128{}.Set(7))
		qm.SetICRC(q)
		r.ports[1].Inject(q)
		for i := 0; i < 20; i++ {
			r.step(1000)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per request", allocs)
	}
	st := s.Stats()
	if st.Ports[1].Paced == 0 || st.Ports[0].Pauses == 0 || st.Ports[0].Resumes == 0 || st.TimerFull != 0 {
		t.Fatalf("paced %d, pauses %d, resumes %d", st.Ports[1].Paced, st.Ports[0].Pauses, st.Ports[0].Resumes)
	}
	r.noLeak(s)
}

// TestSrcRequestWhileQueued: a request repeated while its answer is
// being paced adds nothing to N (its holes were counted when first asked
// for) and does not queue anything twice; its ePSN, on which the
// destination ToR is blocked, goes to the front of the FIFO.
func TestSrcRequestWhileQueued(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, RateMax: 8e9, RateMin: 8e7, Window: 1e9, Hold: 1e9})
	r.send(7, 0, 14)
	r.take(1)
	r.inject(1, askFirst(t, 12)) // 700 at once, 701 paced, 702–711 wait
	r.step(1000)
	r.inject(1, askFirst(t, 12)) // 700 again, in front; 701 at the back
	r.step(1000)
	if st := s.Stats().Ports[1]; st.PaceQueued != 12 || s.cp[1].cur != 12*frame {
		t.Fatalf("%d waiting, N %d bytes, want 12 and %d", st.PaceQueued, s.cp[1].cur, 12*frame)
	}
	r.until(r.now+13*int64(frame*100), 1000)
	_, ids, _ := sortOut(t, r.take(1))
	if want := append(append([]uint32{700, 701, 700}, seq(702, 712)...), 701); !equal(ids, want) {
		t.Fatalf("sent %v, want %v", ids, want)
	}
	r.noLeak(s)
}

// TestSrcRepeatCountsOnce: a repeated request asks for no new bytes.
// Each repeat sends the holes again (the last copies may have been
// lost), but N counts a duplicate's bytes once while it is pooled, so
// repeats alone never reach KLow: no pacing, no pause.
func TestSrcRepeatCountsOnce(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{KLow: 8 * frame, Window: 1_000_000})
	r.send(7, 0, 30)
	r.take(1)
	for i := 1; i <= 5; i++ {
		r.inject(1, askFirst(t, 5)) // PSNs 0–4 missing, 5 held
		r.step(1000)
		_, ids, pfc := sortOut(t, r.take(1))
		if !equal(ids, seq(700, 705)) || len(pfc) != 0 {
			t.Fatalf("request %d: sent %v and %d PFC frames, want 700–704 at once", i, ids, len(pfc))
		}
	}
	if n := s.cp[1].n(r.now, s.cfg.Window); n != 5*frame {
		t.Fatalf("N = %d bytes, want 5 frames (%d)", n, 5*frame)
	}
	if st := s.Stats(); st.Ports[1].Retrans != 25 || st.Ports[1].Paced != 0 || st.Ports[0].Pauses != 0 || s.active != 0 {
		t.Fatalf("retransmitted %d, paced %d, %d pauses", st.Ports[1].Retrans, st.Ports[1].Paced, st.Ports[0].Pauses)
	}
	r.noLeak(s)
}

// TestSrcBlockingFirst: the destination ToR received the first holes and
// asks again from 705, which still waits in the middle of the pacing
// FIFO: it goes next, the rest keep their order.
func TestSrcBlockingFirst(t *testing.T) {
	frame := len(data(t, 7, 0))
	r, s := newSrcN(t, 2, Config{KLow: 2 * frame, KHigh: 10 * frame, RateMax: 8e9, RateMin: 8e7, Window: 1e9, Hold: 1e9})
	r.send(7, 0, 14)
	r.take(1)
	r.inject(1, askFirst(t, 12)) // 700 at once, 701 paced, 702–711 wait
	r.step(1000)
	r.inject(1, request(t, 7, 5, rocev2.Bitmap128{}.Set(6))) // 705–711 missing, 712 held
	r.step(1000)
	r.until(r.now+13*int64(frame*100), 1000)
	_, ids, _ := sortOut(t, r.take(1))
	if want := append([]uint32{700, 701, 705, 702, 703, 704}, seq(706, 712)...); !equal(ids, want) {
		t.Fatalf("sent %v, want %v", ids, want)
	}
	if st := s.Stats().Ports[1]; st.PaceQueued != 0 || st.Paced != 11 {
		t.Fatalf("%d waiting, %d paced; want 0, 11", st.PaceQueued, st.Paced)
	}
	r.noLeak(s)
}
