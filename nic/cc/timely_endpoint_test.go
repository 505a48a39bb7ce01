package cc_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

// TestTimelyEndpoint runs TIMELY between two endpoints under gbn and IRN
// (IRN's pairing, seed 004 §4.2.4) on a 10 Gb/s line. Through an idle
// path every RTT sample is below T_low and each QP stays at the line
// rate. With the port shaped to 2 Gb/s its egress queue is the
// congested queue: the RTTs the endpoint takes from its requests and
// their ACKs grow past T_low, and TIMELY's rate falls towards the
// bottleneck. Either way the requester asks for an ACK at each 16 KiB
// segment's end, beyond the message ends.
func TestTimelyEndpoint(t *testing.T) {
	const line, size = 10e9, 4 << 20
	for _, tc := range []struct {
		name      string
		tr        func() nic.Transport
		congested bool
	}{
		{"gbn/idle", gbnT, false},
		{"gbn/congested", gbnT, true},
		{"irn/idle", func() nic.Transport { x, _ := irn.New(irn.Config{}); return x }, false},
		{"irn/congested", func() nic.Transport { x, _ := irn.New(irn.Config{}); return x }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var xs []*cc.Timely
			o := nictest.Options{Transport: tc.tr, QPs: 2, MRSize: 8 << 20, CC: func() nic.CC {
				x, err := cc.NewTimely(line, cc.DefaultTimelyConfig())
				if err != nil {
					t.Fatal(err)
				}
				xs = append(xs, x)
				return x
			}}
			if tc.congested {
				o.RateBps = 2e9
			}
			p := nictest.New(t, o)
			var asked int
			p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
				if m.Opcode.IsRequest() && m.AckReq {
					asked++
				}
				return nictest.Pass
			}
			for i := range 2 {
				if err := p.A.Post(nic.OpWrite, i, uint64(i), i<<22, i<<22, size); err != nil {
					t.Fatal(err)
				}
			}
			p.MustComplete(t, 2, 1e10)
			nictest.WantOK(t, p.A.CQ)
			a, s := xs[0].Stats(), xs[0].Summary()
			t.Logf("%d samples (%d low, %d high cuts, %d inc, %d HAI, %d cuts), RTT %.1f–%.1f µs; rate min %.2f mean %.2f final %.2f Gb/s",
				a.Samples, a.LowInc, a.HighCuts, a.GradInc, a.HAIInc, a.GradCuts, float64(a.RTTMin)/1e3, float64(a.RTTMax)/1e3,
				s.Min/1e9, s.Mean/1e9, s.Final/1e9)
			// 2 × 4 MiB in 16 KiB segments: 512 segment ends, less
			// those the transport marked already or that found every
			// probe slot waiting.
			if asked < 256 || a.Probes < 256 || a.Samples < 128 {
				t.Errorf("%d requests asked for an ACK, %d timed, %d samples", asked, a.Probes, a.Samples)
			}
			cuts := a.HighCuts + a.GradCuts
			if !tc.congested {
				if cuts != 0 || s.Min != line || a.RTTMax >= 50_000 {
					t.Errorf("idle path: %d cuts, lowest rate %.3g, highest RTT %d ns", cuts, s.Min, a.RTTMax)
				}
				return
			}
			if cuts == 0 || s.Min > line/2 || s.Mean > line*0.6 || a.RTTMax < 50_000 {
				t.Errorf("congested path: %d cuts, rates %+v, highest RTT %d ns", cuts, s, a.RTTMax)
			}
		})
	}
}

// TestTimelyEndpointAllocs: a WRITE stream through two endpoints with
// TIMELY — probes asked, timed, sampled, rates changed, pacing — through
// a shaped port allocates nothing.
func TestTimelyEndpointAllocs(t *testing.T) {
	var a *cc.Timely
	p := nictest.New(t, nictest.Options{Transport: gbnT, RateBps: 2e9, CC: func() nic.CC {
		x, err := cc.NewTimely(10e9, cc.DefaultTimelyConfig())
		if err != nil {
			t.Fatal(err)
		}
		if a == nil {
			a = x
		}
		return x
	}})
	s := nictest.NewStream(t, p)
	for range 20000 {
		s.Tick(t)
	}
	before := a.Stats().Samples
	if allocs := testing.AllocsPerRun(2000, func() { s.Tick(t) }); allocs != 0 {
		t.Fatalf("%.2f allocations per loop", allocs)
	}
	if a.Stats().Samples == before {
		t.Fatal("no RTT samples while measuring")
	}
}
