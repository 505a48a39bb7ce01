package cc_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

// hop is a fake switch on the A→B link for HPCC's endpoint tests: it
// stamps one record into every request's INT tail, its clock advancing
// 1 µs a packet and its counter by the frame, so the link it reports
// runs at the frame's bits per µs, with queue bytes queued; and it
// counts on B→A the ACKs that echo INT.
type hop struct {
	ts, tx        uint32
	queue         uint32
	rate          uint32 // Mb/s
	stamped, echo int
}

func (h *hop) stamp(f []byte, m *rocev2.Meta) nictest.Action {
	if t, _ := rocev2.FindINT(f, int(m.End)); t != nil && !t.Echo() {
		h.ts += 1000
		h.tx += uint32(len(f))
		if t.Push(rocev2.INTHop{TS: h.ts, QLen: h.queue, TxBytes: h.tx, RateMbps: h.rate}) {
			h.stamped++
		}
	}
	return nictest.Pass
}

func (h *hop) echoes(f []byte, m *rocev2.Meta) nictest.Action {
	if t, _ := rocev2.FindINT(f, int(m.End)); t != nil && t.Echo() && t.Hops() == 1 {
		h.echo++
	}
	return nictest.Pass
}

// TestHPCCEndpoint runs HPCC between two endpoints on a 10 Gb/s line
// whose one hop the A→B filter stamps. Every request carries an INT tail
// the hop fills, B echoes the records in its ACKs, and A's HPCC reads
// them: a hop whose link is idle enough (about 9 Gb/s of frames in
// 10 Gb/s) and queue empty keeps the QPs at the line rate; a hop with
// 100 KB queued (8 base RTTs' worth) cuts them to the floor of the
// multiplicative steps.
func TestHPCCEndpoint(t *testing.T) {
	const line, size = 10e9, 4 << 20
	for _, tc := range []struct {
		name  string
		queue uint32
	}{{"idle", 0}, {"queued", 100_000}} {
		t.Run(tc.name, func(t *testing.T) {
			var xs []*cc.HPCC
			o := nictest.Options{Transport: gbnT, QPs: 2, MRSize: 8 << 20, CC: func() nic.CC {
				x, err := cc.NewHPCC(line, cc.DefaultHPCCConfig())
				if err != nil {
					t.Fatal(err)
				}
				xs = append(xs, x)
				return x
			}}
			p := nictest.New(t, o)
			h := &hop{queue: tc.queue, rate: 10000}
			p.AB.Filter, p.BA.Filter = h.stamp, h.echoes
			for i := range 2 {
				if err := p.A.Post(nic.OpWrite, i, uint64(i), i<<22, i<<22, size); err != nil {
					t.Fatal(err)
				}
			}
			p.MustComplete(t, 2, 1e10)
			nictest.WantOK(t, p.A.CQ)
			a, s := xs[0].Stats(), xs[0].Summary()
			t.Logf("stamped %d, echoes %d; HPCC %+v; rate min %.3g final %.3g", h.stamped, h.echo, a, s.Min, s.Final)
			// 2 × 4 MiB of 1 KiB packets, an ACK per 16 (gbn).
			if h.stamped < 8000 || h.echo < 400 || a.Echoes < uint64(h.echo) || a.Updates == 0 {
				t.Fatalf("stamped %d, echoed %d, HPCC saw %d and updated %d times", h.stamped, h.echo, a.Echoes, a.Updates)
			}
			if tc.queue == 0 {
				if s.Min != line {
					t.Errorf("idle hop: lowest rate %.3g", s.Min)
				}
			} else if s.Min > line/4 || a.Mult == 0 {
				t.Errorf("queued hop: lowest rate %.3g, %d multiplicative updates", s.Min, a.Mult)
			}
		})
	}
}

// TestHPCCEndpointAllocs: a WRITE stream through two endpoints with
// HPCC — INT tails built, stamped, kept, echoed and read, rates changed,
// pacing — allocates nothing once the echo slots exist.
func TestHPCCEndpointAllocs(t *testing.T) {
	var a *cc.HPCC
	p := nictest.New(t, nictest.Options{Transport: gbnT, RateBps: 2e9, CC: func() nic.CC {
		x, err := cc.NewHPCC(10e9, cc.DefaultHPCCConfig())
		if err != nil {
			t.Fatal(err)
		}
		if a == nil {
			a = x
		}
		return x
	}})
	h := &hop{queue: 20_000, rate: 10000}
	p.AB.Filter, p.BA.Filter = h.stamp, h.echoes
	s := nictest.NewStream(t, p)
	for range 20000 {
		s.Tick(t)
	}
	before := a.Stats().Echoes
	if allocs := testing.AllocsPerRun(2000, func() { s.Tick(t) }); allocs != 0 {
		t.Fatalf("%.2f allocations per loop", allocs)
	}
	if a.Stats().Echoes == before {
		t.Fatal("no INT echoes while measuring")
	}
}
