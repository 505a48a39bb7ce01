package fasr_test

import (
	"fmt"
	"testing"

	"rocetor/nic"
	"rocetor/nic/fasr"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

const rto = 200_000 // 200 µs: many link round trips of the harness

// newPair connects two endpoints running FaSR with cfg (RTO rto unless
// set) and returns them with their transports.
func newPair(t testing.TB, o nictest.Options, cfg fasr.Config) (*nictest.Pair, *fasr.Transport, *fasr.Transport) {
	t.Helper()
	if cfg.RTO == 0 {
		cfg.RTO = rto
	}
	return nictest.NewWith(t, o, func() (*fasr.Transport, error) { return fasr.New(cfg) })
}

// run runs p until A has want completions, or fails.
func run(t testing.TB, p *nictest.Pair, want int) {
	t.Helper()
	p.MustComplete(t, want, 1e9)
}

var wantOK = nictest.WantOK

// request reports whether m is a request packet.
func request(m *rocev2.Meta) bool { return m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() }

// ack reports whether m is an RC ACK or NAK.
func ack(m *rocev2.Meta) bool {
	return m.Kind == rocev2.KindRoCE && m.Opcode == rocev2.RCAck && m.Ext&rocev2.ExtAETH != 0
}

// sackOf returns the SACKETH of ACK f.
func sackOf(f []byte, m *rocev2.Meta) rocev2.SACKETH {
	return rocev2.SACKETH(f[m.ExtOff(rocev2.ExtSACK):])
}

// sent counts the request packets each PSN was sent as, from QP 0's
// first PSN (the harness starts A's QPs at PSN 0), and lets a filter
// decide their fate.
type sent map[psn.PSN]int

func (s sent) filter(next func(f []byte, m *rocev2.Meta) nictest.Action) func([]byte, *rocev2.Meta) nictest.Action {
	return func(f []byte, m *rocev2.Meta) nictest.Action {
		if request(m) {
			s[m.PSN]++
		}
		if next == nil {
			return nictest.Pass
		}
		return next(f, m)
	}
}

// resent returns the PSNs sent more than once, and how many extra
// copies went in all.
func (s sent) resent() (psns []psn.PSN, extra int) {
	for x, n := range s {
		if n > 1 {
			psns = append(psns, x)
			extra += n - 1
		}
	}
	return psns, extra
}

// dropFirst drops the first transmission of each request PSN listed.
func dropFirst(psns ...psn.PSN) func([]byte, *rocev2.Meta) nictest.Action {
	seen := map[psn.PSN]bool{}
	drop := map[psn.PSN]bool{}
	for _, x := range psns {
		drop[x] = true
	}
	return func(_ []byte, m *rocev2.Meta) nictest.Action {
		if !request(m) || !drop[m.PSN] || seen[m.PSN] {
			return nictest.Pass
		}
		seen[m.PSN] = true
		return nictest.Drop
	}
}

// post posts the messages: sizes[i] bytes of op at offset off[i] of both
// regions, pattern seed i, with a receive on B for a SEND.
func post(t testing.TB, p *nictest.Pair, op nic.Op, sizes []int) []int {
	t.Helper()
	offs := make([]int, len(sizes))
	off := 0
	for i, n := range sizes {
		offs[i] = off
		nictest.Fill(p.A.Buf[off:off+n], uint64(i))
		if op == nic.OpSend {
			if err := p.B.Post(nic.OpRecv, 0, uint64(100+i), off, 0, n); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.A.Post(op, 0, uint64(i), off, off, n); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	return offs
}

// verify checks every message's bytes at B and the completions on both
// sides: A's in post order, B's receives in post order for a SEND.
func verify(t testing.TB, p *nictest.Pair, op nic.Op, sizes, offs []int) {
	t.Helper()
	run(t, p, len(sizes))
	wantOK(t, p.A.CQ)
	for i, n := range sizes {
		if c := p.A.CQ[i]; c.ID != uint64(i) || c.Len != n || c.Op != op {
			t.Errorf("completion %d: %+v, want ID %d, %d bytes, in post order", i, c, i, n)
		}
		if err := nictest.Check(p.B.Buf[offs[i]:offs[i]+n], uint64(i)); err != nil {
			t.Errorf("%s %d of %d bytes: %v", op, i, n, err)
		}
	}
	if op != nic.OpSend {
		return
	}
	p.Run(func() bool { return p.B.Done() >= len(sizes) }, 1e7)
	wantOK(t, p.B.CQ)
	if len(p.B.CQ) != len(sizes) {
		t.Fatalf("B completed %d receives of %d", len(p.B.CQ), len(sizes))
	}
	for i, c := range p.B.CQ {
		if c.Op != nic.OpRecv || c.ID != uint64(100+i) || c.Len != sizes[i] {
			t.Errorf("receive completion %d: %+v, want ID %d of %d bytes", i, c, 100+i, sizes[i])
		}
	}
}

var sizes = []int{1, 3, 255, 1023, 1024, 1025, 4096, 65537, 1 << 20, 0, 2048}

// TestDelivery moves WRITEs and SENDs of 0 B to 1 MiB without loss:
// requests use the OOO layout (a RETH in every WRITE packet, a SETH in
// every SEND packet), every ACK carries a SACKETH, nothing is
// retransmitted and no SR state is taken.
func TestDelivery(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			p, a, b := newPair(t, nictest.Options{}, fasr.Config{})
			acks := 0
			p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				if m.Opcode.IsWrite() && m.ExtOff(rocev2.ExtRETH) == 0 || m.Opcode.IsSend() && m.ExtOff(rocev2.ExtSETH) == 0 {
					t.Errorf("%v packet PSN %d without its OOO header", m.Opcode, m.PSN)
				}
				return nictest.Pass
			}
			p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				if ack(m) {
					acks++
					if m.Ext&rocev2.ExtSACK == 0 {
						t.Errorf("ACK PSN %d without a SACKETH", m.PSN)
					} else if x := sackOf(f, m); x.PSN() != m.PSN || x.Flags() != 0 || x.LostCnt() != 0 {
						t.Errorf("ACK PSN %d: SACK %d flags %#x lost-cnt %d, want the cumulative ACK and zeros", m.PSN, x.PSN(), x.Flags(), x.LostCnt())
					}
				}
				return nictest.Pass
			}
			offs := post(t, p, op, sizes)
			verify(t, p, op, sizes, offs)
			if st := p.A.E.LiveStats(); st.Retransmits != 0 || st.Timeouts != 0 || acks == 0 {
				t.Errorf("retransmits %d, timeouts %d, ACKs %d", st.Retransmits, st.Timeouts, acks)
			}
			for _, tr := range []*fasr.Transport{a, b} {
				if st := tr.Stats(); st.PeakUnits != 0 || st.PeakBlocks != 0 || st.SACKs != 0 {
					t.Errorf("SR state used without loss: %+v", st)
				}
			}
		})
	}
}

// TestFastPath loses one packet of a 64 KiB WRITE: the responder records
// what follows with sack-high alone (lost-cnt 1, no bitmap), the first
// SACK makes the requester resend exactly the lost PSN, and its arrival
// moves RCV-NXT straight past sack-high.
func TestFastPath(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, fasr.Config{})
	s := sent{}
	p.AB.Filter = s.filter(dropFirst(20))
	var lost []uint8
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if ack(m) && sackOf(f, m).PSN() != m.PSN {
			lost = append(lost, sackOf(f, m).LostCnt())
		}
		return nictest.Pass
	}
	offs := post(t, p, nic.OpWrite, []int{64 << 10})
	verify(t, p, nic.OpWrite, []int{64 << 10}, offs)
	psns, extra := s.resent()
	if len(psns) != 1 || psns[0] != 20 || extra != 1 {
		t.Errorf("resent %v (%d extra), want PSN 20 once", psns, extra)
	}
	for _, l := range lost {
		if l != 1 {
			t.Fatalf("SACK lost-cnts %v, want all 1", lost)
		}
	}
	as, bs := a.Stats(), b.Stats()
	t.Logf("requester %+v\nresponder %+v", as, bs)
	if bs.Recoveries != 1 || bs.FastEntries != 1 || bs.SlowEntries != 0 || bs.FastOps == 0 || bs.SlowOps != 0 || bs.PeakBlocks != 0 {
		t.Errorf("responder: %d recoveries, %d fast and %d slow entries, %d fast and %d slow ops, %d blocks",
			bs.Recoveries, bs.FastEntries, bs.SlowEntries, bs.FastOps, bs.SlowOps, bs.PeakBlocks)
	}
	if as.SACKRetransmits != 1 || as.SlowOps != 0 || as.PeakBlocks != 0 || as.Timeouts0+as.Timeouts1+as.TimeoutsN != 0 {
		t.Errorf("requester: %d SACK retransmits, %d slow ops, %d blocks, timeouts %d/%d/%d", as.SACKRetransmits,
			as.SlowOps, as.PeakBlocks, as.Timeouts0, as.Timeouts1, as.TimeoutsN)
	}
	if r := bs.FastPathRatio(); r != 1 {
		t.Errorf("fast-path ratio %v, want 1", r)
	}
	if u, bl := b.InUse(); u != 0 || bl != 0 {
		t.Errorf("responder still holds %d units, %d blocks", u, bl)
	}
	if u, bl := a.InUse(); u != 0 || bl != 0 {
		t.Errorf("requester still holds %d units, %d blocks", u, bl)
	}
}

func ExampleNew() {
	t, err := fasr.New(fasr.Config{Units: 32, Blocks: 128})
	fmt.Println(t.Name(), t.SharedBytes(), err)
	// Output: fasr 1304 <nil>
}
