package cc_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
)

func gbnT() nic.Transport {
	t, _ := gbn.New(gbn.Config{RTO: 10e6}) // no timeouts while paced
	return t
}

// wire is the bytes a 1 MiB WRITE puts on the wire at MTU 1024: 1024
// frames of Ethernet, IPv4, UDP, BTH, 1024 payload bytes and ICRC, and
// the RETH of the first.
const wire = 1024*(14+20+8+12+1024+4) + 16

// TestFixedRate checks the fixed-rate pacer per QP: two QPs paced at
// 1 Gb/s on an unshaped port each finish a 1 MiB WRITE in the time
// 1 Gb/s takes (less the first burst), at the same time; the port's own
// shaper at 1 Gb/s, without a pacer, halves each QP's rate instead.
func TestFixedRate(t *testing.T) {
	const burst, frame = 16 << 10, 1082
	// At 1 Gb/s a byte takes 8 ns. The pacer lets a QP send while it has
	// a token, so the burst and one frame go free; the egress shaper's
	// bucket holds half a millisecond at its rate (dataplane.EgressConfig
	// BurstBytes), and its round robin between the QPs (16 packets per
	// turn, a turn the full queue cut short finished first) ends one QP
	// up to a turn and the frame queued before it ahead of the other.
	paced := int64(8 * (wire - burst - frame))
	shaped := int64(8 * (2*wire - 1e9/8/2000))
	for _, tc := range []struct {
		name   string
		o      nictest.Options
		lo, hi int64
	}{
		{"per-qp", nictest.Options{CC: func() nic.CC { return cc.NewFixed(1e9, burst) }}, paced, paced + 20_000},
		{"port", nictest.Options{RateBps: 1e9}, shaped - 17*8*frame, shaped + 20_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Transport, tc.o.QPs, tc.o.Step = gbnT, 2, 1000
			p := nictest.New(t, tc.o)
			for k := 0; k < 2; k++ {
				if err := p.A.Post(nic.OpWrite, k, uint64(k), 0, k<<20, 1<<20); err != nil {
					t.Fatal(err)
				}
			}
			if !p.Run(func() bool { return p.A.Done() == 2 }, 1e9) {
				t.Fatal("no completion")
			}
			for _, c := range p.A.CQ {
				if c.Status != nic.StatusOK || c.Latency < tc.lo || c.Latency > tc.hi {
					t.Errorf("QP %d: %v after %.3f ms, want %.3f–%.3f ms", c.QP, c.Status,
						float64(c.Latency)/1e6, float64(tc.lo)/1e6, float64(tc.hi)/1e6)
				}
			}
			if tc.name == "per-qp" && p.A.E.LiveStats().Paced == 0 {
				t.Error("no QP ever waited for the pacer")
			}
		})
	}
}

// TestFixedBucket checks the token arithmetic: a drained bucket names
// the time its deficit is repaid, and a long idle refills only to the
// burst.
func TestFixedBucket(t *testing.T) {
	f := cc.NewFixed(8e9, 1000) // one byte per ns
	f.Init(1)
	q := new(nic.QP) // index 0
	f.Open(q)
	if at := f.Ready(q, 0); at != 0 {
		t.Fatalf("a full bucket waits until %d", at)
	}
	f.Sent(q, 0, 1500) // 500 bytes of debt
	if at := f.Ready(q, 0); at != 501 {
		t.Fatalf("ready at %d, want 501 (500 bytes of debt plus one token)", at)
	}
	if at := f.Ready(q, 600); at != 600 {
		t.Fatalf("ready at %d after the debt was repaid", at)
	}
	f.Sent(q, 600, 100)
	if at := f.Ready(q, 1e12); at != 1e12 {
		t.Fatal("idle bucket not ready")
	}
	f.Sent(q, 1e12, 2000) // a full bucket (1000) less 2000
	if at := f.Ready(q, 1e12); at != 1e12+1001 {
		t.Fatalf("ready at +%d, want +1001: the idle refill must stop at the burst", at-1e12)
	}
	if r := cc.NewFixed(0, 0); r.Ready(q, 5) != 5 {
		t.Fatal("a zero rate must not pace")
	}
}
