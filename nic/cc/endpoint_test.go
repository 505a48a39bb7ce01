package cc_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/dcp"
	"rocetor/nic/fasr"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// checker wraps a CC and checks the framework's use of it: every data
// frame is charged (Sent) after a Ready that let it go at that time.
type checker struct {
	nic.CC
	ok         bool // the last Ready allowed a frame now
	sent       uint64
	unasked    uint64 // frames charged without a Ready that allowed them
	readyCalls uint64
}

func (c *checker) Ready(q *nic.QP, now int64) int64 {
	at := c.CC.Ready(q, now)
	c.readyCalls++
	c.ok = at <= now
	return at
}

func (c *checker) Sent(q *nic.QP, now int64, n int) {
	if !c.ok {
		c.unasked++
	}
	c.ok = false
	c.sent++
	c.CC.Sent(q, now, n)
}

// TestRetransmissionsCharged runs each transport with DCQCN (congestion
// control and loss recovery apart, IRN §3, DCP §4): a 256 KiB WRITE
// loses a few packets on the way (DCP's are trimmed, as its switch
// does), and every data frame A sends — retransmissions included — was
// allowed by Ready and charged with Sent.
func TestRetransmissionsCharged(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   func() nic.Transport
		act  nictest.Action
	}{
		{"gbn", gbnT, nictest.Drop},
		{"irn", func() nic.Transport { x, _ := irn.New(irn.Config{}); return x }, nictest.Drop},
		{"fasr", func() nic.Transport { x, _ := fasr.New(fasr.Config{}); return x }, nictest.Drop},
		{"dcp", func() nic.Transport { x, _ := dcp.New(dcp.Config{}); return x }, nictest.Trim},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cks []*checker
			p := nictest.New(t, nictest.Options{Transport: tc.tr, CC: func() nic.CC {
				d, err := cc.NewDCQCN(10e9, cc.DefaultDCQCNConfig())
				if err != nil {
					t.Fatal(err)
				}
				c := &checker{CC: d}
				cks = append(cks, c)
				return c
			}})
			lost := map[psn.PSN]bool{}
			p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
				if m.Opcode.IsRequest() && m.PSN%37 == 5 && !lost[m.PSN] {
					lost[m.PSN] = true
					return tc.act
				}
				return nictest.Pass
			}
			nictest.Fill(p.A.Buf[:256<<10], 3)
			if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 256<<10); err != nil {
				t.Fatal(err)
			}
			p.MustComplete(t, 1, 1e9)
			nictest.WantOK(t, p.A.CQ)
			if err := nictest.Check(p.B.Buf[:256<<10], 3); err != nil {
				t.Fatal(err)
			}
			st, a := p.A.E.LiveStats(), cks[0]
			if st.Retransmits == 0 {
				t.Fatalf("nothing retransmitted (%d lost)", len(lost))
			}
			if a.sent != st.Requests+st.Responses || a.unasked != 0 {
				t.Errorf("CC charged %d frames (%d without Ready's leave) for %d requests (%d resent) and %d read responses",
					a.sent, a.unasked, st.Requests, st.Retransmits, st.Responses)
			}
		})
	}
}

// TestDCQCNEndpoint marks every request CE on the way to B: B's
// notification point answers with at most one CNP per QP per
// min_time_between_cnps, in its own class (DSCP 48, BECN, A's QPN), and
// A's reaction point cuts its rate.
func TestDCQCNEndpoint(t *testing.T) {
	const line = 10e9
	var ds []*cc.DCQCN
	p := nictest.New(t, nictest.Options{Transport: gbnT, CC: func() nic.CC {
		d, err := cc.NewDCQCN(line, cc.DefaultDCQCNConfig())
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
		return d
	}})
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() {
			rocev2.IPv4(f[m.L3Off:]).SetECN(3) // the ICRC masks the TOS byte
		}
		return nictest.Pass
	}
	var cnps, bad int
	var first, last int64 = -1, 0
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode == rocev2.CNP {
			cnps++
			if first < 0 {
				first = p.Now
			}
			last = p.Now
			b := rocev2.BTH(f[m.BTHOff:])
			if m.DSCP != 48 || !b.BECN() || m.Flow.QP != p.A.QPs[0].QPN || m.PayloadLen() != rocev2.CNPLen {
				bad++
			}
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 1<<20); err != nil {
		t.Fatal(err)
	}
	p.MustComplete(t, 1, 1e9)
	nictest.WantOK(t, p.A.CQ)
	p.Run(func() bool { return false }, 10_000)
	as, bs := p.A.E.LiveStats(), p.B.E.LiveStats()
	a, b := ds[0].Stats(), ds[1].Stats()
	// One CNP per 4 µs at most over the span they were sent in.
	if limit := int((last-first)/4000) + 1; cnps == 0 || cnps > limit || bad != 0 {
		t.Errorf("%d CNPs over %d µs (at most %d), %d malformed", cnps, (last-first)/1000, limit, bad)
	}
	switch {
	case bs.ECNMarked != bs.RxPackets:
		t.Errorf("B counted %d CE marks of %d packets", bs.ECNMarked, bs.RxPackets)
	case bs.CNPsSent != uint64(cnps) || b.CNPsAsked != uint64(cnps) || b.Marks != bs.ECNMarked || b.CNPsHeld != b.Marks-b.CNPsAsked:
		t.Errorf("B sent %d CNPs (%d seen), DCQCN %+v", bs.CNPsSent, cnps, b)
	case as.CNPsRecv != uint64(cnps) || a.CNPs != as.CNPsRecv || a.Cuts == 0 || a.FirstCNPs != 1:
		t.Errorf("A received %d CNPs, DCQCN %+v", as.CNPsRecv, a)
	}
	s := ds[0].Summary()
	if s.QPs != 1 || s.Min >= line/2 || s.Mean >= line || s.Final >= line {
		t.Errorf("A's rates %+v", s)
	}
	t.Logf("%d CNPs, %d cuts; A's rate min %.2f mean %.2f final %.2f Gb/s", cnps, a.Cuts, s.Min/1e9, s.Mean/1e9, s.Final/1e9)
}

// TestCNPsPerFrame: B's worker takes A's frames in batches (one loop in
// 64 µs, as a worker asleep between AF_XDP polls), A's port sends one
// frame per ~8.6 µs (1 Gb/s, not slowed by the CNPs), and every frame
// is CE-marked. A NIC
// timestamps each frame, so its notification point, at most one CNP
// per QP per min_time_between_cnps (4 µs), answers every mark here;
// B's does too when it reads each frame's time from its place in the
// batch (dataplane.Ctx.RxTime), and answered about one mark per batch
// when it read the loop's clock.
func TestCNPsPerFrame(t *testing.T) {
	const line = 1e9
	sides := 0
	p := nictest.New(t, nictest.Options{Transport: gbnT, RateBps: line, Step: 1000, BEvery: 64, CC: func() nic.CC {
		if sides++; sides == 1 {
			return cc.NewFixed(line, 0) // A does not slow down
		}
		d, err := cc.NewDCQCN(line, cc.DefaultDCQCNConfig())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}})
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() {
			rocev2.IPv4(f[m.L3Off:]).SetECN(3)
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 512<<10); err != nil {
		t.Fatal(err)
	}
	p.MustComplete(t, 1, 1e9)
	nictest.WantOK(t, p.A.CQ)
	bs := p.B.E.LiveStats()
	// Frames arrive more than 4 µs apart: one frame per CNP interval.
	t.Logf("%d marked frames, %d CNPs", bs.ECNMarked, bs.CNPsSent)
	if bs.ECNMarked < 400 || float64(bs.CNPsSent) < 0.9*float64(bs.ECNMarked) {
		t.Errorf("B answered %d of %d CE-marked frames, want at least 90 %%", bs.CNPsSent, bs.ECNMarked)
	}
}

// TestDCQCNBottleneck puts a 5 Gb/s bottleneck on the way from A to B —
// a virtual queue the link fills with each request frame and drains at
// 5 Gb/s, marking CE while it holds more than 40 KB (a step at Kmin =
// Kmax, as DCTCP's switch) — and has two QPs on a 10 Gb/s line write
// 4 MiB each: DCQCN brings the two together to about the bottleneck's
// rate and keeps the queue bounded, where the fixed pacer at the line
// rate grows it by the 5 Gb/s excess.
func TestDCQCNBottleneck(t *testing.T) {
	const line, bneck, k = 10e9, 5e9, 40 << 10
	for _, name := range []string{"dcqcn", "fixed"} {
		t.Run(name, func(t *testing.T) {
			var d *cc.DCQCN
			p := nictest.New(t, nictest.Options{Transport: gbnT, QPs: 2, MRSize: 8 << 20, CC: func() nic.CC {
				if name == "fixed" {
					return cc.NewFixed(line, 0)
				}
				x, err := cc.NewDCQCN(line, cc.DefaultDCQCNConfig())
				if err != nil {
					t.Fatal(err)
				}
				if d == nil {
					d = x // A's
				}
				return x
			}})
			var q, maxQ float64
			var last int64
			var marked, frames int
			p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				if !m.Opcode.IsRequest() {
					return nictest.Pass
				}
				q = max(0, q-float64(p.Now-last)*bneck/8e9) + float64(len(f))
				last = p.Now
				maxQ = max(maxQ, q)
				frames++
				if q > k {
					marked++
					rocev2.IPv4(f[m.L3Off:]).SetECN(3)
				}
				return nictest.Pass
			}
			for i := range 2 {
				if err := p.A.Post(nic.OpWrite, i, uint64(i), i<<22, i<<22, 4<<20); err != nil {
					t.Fatal(err)
				}
			}
			start := p.Now
			p.MustComplete(t, 2, 1e9)
			nictest.WantOK(t, p.A.CQ)
			span := float64(p.Now - start)
			goodput := 2 * 8 * float64(4<<20) / span // bit/ns = Gb/s
			t.Logf("2 QPs through %.0f Gb/s: %.2f Gb/s goodput over %.2f ms; %d of %d frames marked, %d CNPs; queue max %.0f KB",
				bneck/1e9, goodput, span/1e6, marked, frames, p.A.E.LiveStats().CNPsRecv, maxQ/1024)
			if name == "fixed" {
				if maxQ < 1<<20 {
					t.Errorf("queue max %.0f KB without DCQCN: the test's bottleneck is no bottleneck", maxQ/1024)
				}
				return
			}
			s, st := d.Summary(), d.Stats()
			t.Logf("%d cuts; rates min %.2f mean %.2f final %.2f Gb/s per QP", st.Cuts, s.Min/1e9, s.Mean/1e9, s.Final/1e9)
			if goodput > bneck/1e9*1.1 || goodput < bneck/1e9*0.6 {
				t.Errorf("goodput %.2f Gb/s through a %.0f Gb/s bottleneck", goodput, bneck/1e9)
			}
			if maxQ > 256<<10 {
				t.Errorf("queue reached %.0f KB", maxQ/1024)
			}
		})
	}
}

// TestDCQCNEndpointAllocs: a WRITE stream whose every request is marked
// CE — marks, CNPs built and sent, CNPs received, cuts, pacing — through
// two endpoints with DCQCN allocates nothing.
func TestDCQCNEndpointAllocs(t *testing.T) {
	p := nictest.New(t, nictest.Options{Transport: gbnT, CC: func() nic.CC {
		d, err := cc.NewDCQCN(10e9, cc.DefaultDCQCNConfig())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}})
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() {
			rocev2.IPv4(f[m.L3Off:]).SetECN(3)
		}
		return nictest.Pass
	}
	s := nictest.NewStream(t, p)
	for range 20000 { // past the first publications and queue growth
		s.Tick(t)
	}
	before := p.A.E.LiveStats().CNPsRecv
	if allocs := testing.AllocsPerRun(2000, func() { s.Tick(t) }); allocs != 0 {
		t.Fatalf("%.2f allocations per loop", allocs)
	}
	if p.A.E.LiveStats().CNPsRecv == before {
		t.Fatal("no CNPs while measuring")
	}
}
