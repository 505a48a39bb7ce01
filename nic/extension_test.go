package nic_test

import (
	"reflect"
	"testing"

	"rocetor/nic"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

// tagger is Go-Back-N plus a Decorator that sends every request as a DCP
// data packet: the DCP extension header with the message's MSN, and so a
// RETH in every WRITE packet (seed 002 §4.4).
type tagger struct {
	*gbn.Transport
	mr          nic.MR
	calls, retx uint64
	bad         int
}

func (d *tagger) Decorate(q *nic.QP, r *nic.Request, s *rocev2.Spec) {
	d.calls++
	if r.Retransmit {
		d.retx++
	}
	if r.Op != nic.OpWrite || r.Count != 64 || r.MSN != 0 || s.VA != d.mr.VA+uint64(r.Index*q.MTU()) {
		d.bad++
	}
	s.DCP, s.DSCP, s.MSN = true, rocev2.WithTag(s.DSCP, rocev2.DCPData), r.MSN
}

// placer is Go-Back-N that also places every WRITE packet at the address
// its own RETH names as it arrives, in whatever order.
type placer struct {
	*gbn.Transport
	placed, failed uint64
}

func (p *placer) Request(c *nic.Ctx, q *nic.QP, k *nic.Pkt) {
	if k.Op.IsWrite() {
		if c.Place(k) == nic.StatusOK {
			p.placed++
		} else {
			p.failed++
		}
	}
	p.Transport.Request(c, q, k)
}

// TestExtensionPoints runs a DCP-style WRITE: A's Decorator adds the DCP
// header (so every packet carries a RETH), B's transport places packets
// on arrival with Place, including the ones Go-Back-N then drops as out
// of order after a reordering.
func TestExtensionPoints(t *testing.T) {
	var a *tagger
	var b *placer
	side := 0
	p := nictest.New(t, nictest.Options{DCP: true,
		Transport: func() nic.Transport {
			g, _ := gbn.New(gbn.Config{RTO: 100_000})
			side++
			if side == 1 {
				a = &tagger{Transport: g}
				return a
			}
			b = &placer{Transport: g}
			return b
		},
		// DSCP 26 ends in 10, the DCP data tag; plain frames in a DCP
		// fabric need a class whose low bits are 00.
		Endpoint: func(_ int, c *nic.Config) { c.DSCP = 24 }})
	a.mr = p.B.MR
	held := false
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() && m.PSN == 10 && !held {
			held = true
			return nictest.Hold
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 3)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	if !p.Run(func() bool { return p.A.Done() == 1 }, 1e9) || p.A.CQ[0].Status != nic.StatusOK {
		t.Fatalf("WRITE did not complete: %+v", p.A.CQ)
	}
	if err := nictest.Check(p.B.Buf[:64<<10], 3); err != nil {
		t.Fatal(err)
	}
	as, bs := p.A.E.LiveStats(), p.B.E.LiveStats()
	if a.calls != as.Requests || a.retx != as.Retransmits || a.retx == 0 || a.bad != 0 {
		t.Errorf("decorated %d of %d requests, %d of %d retransmissions, %d inconsistent", a.calls, as.Requests,
			a.retx, as.Retransmits, a.bad)
	}
	if b.failed != 0 || b.placed != bs.RxPackets || bs.OutOfOrder == 0 {
		t.Errorf("placed %d, failed %d, of %d received (%d out of order)", b.placed, b.failed, bs.RxPackets, bs.OutOfOrder)
	}
}

// recorder is a CC that paces nothing, counts the signals it hears, and
// answers every CE mark with a CNP.
type recorder struct{ cnps, marks int }

func (r *recorder) Name() string                     { return "recorder" }
func (r *recorder) Init(int)                         {}
func (r *recorder) StateBytes() int                  { return 0 }
func (r *recorder) Open(*nic.QP)                     {}
func (r *recorder) Ready(_ *nic.QP, now int64) int64 { return now }
func (r *recorder) Sent(*nic.QP, int64, int)         {}
func (r *recorder) CNP(*nic.QP, int64)               { r.cnps++ }
func (r *recorder) Marked(*nic.QP, int64) bool       { r.marks++; return true }

// TestCongestionSignals marks every data packet CE on the way to B: B's
// CC hears each mark and has a CNP sent, and A's CC hears each CNP.
func TestCongestionSignals(t *testing.T) {
	var ccs []*recorder
	p := nictest.New(t, nictest.Options{Transport: gbnT, CC: func() nic.CC {
		r := &recorder{}
		ccs = append(ccs, r)
		return r
	}})
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() {
			rocev2.IPv4(f[m.L3Off:]).SetECN(3) // the ICRC masks the TOS byte
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	if !p.Run(func() bool { return p.A.Done() == 1 }, 1e8) || p.A.CQ[0].Status != nic.StatusOK {
		t.Fatalf("WRITE did not complete: %+v", p.A.CQ)
	}
	p.Run(func() bool { return false }, 10_000)
	a, b := p.A.E.LiveStats(), p.B.E.LiveStats()
	if ccs[1].marks != 64 || b.ECNMarked != 64 || b.CNPsSent != 64 {
		t.Errorf("B's CC heard %d marks (stats %d) and B sent %d CNPs, want 64 each", ccs[1].marks, b.ECNMarked, b.CNPsSent)
	}
	if ccs[0].cnps != 64 || a.CNPsRecv != 64 {
		t.Errorf("A's CC heard %d CNPs (stats %d), want 64: B sent one per mark", ccs[0].cnps, a.CNPsRecv)
	}
}

// sacker is Go-Back-N in a SACK fabric: it asks for Classifier.SACK,
// writes its responder's expected PSN and a lost-cnt into every ACK's
// SACKETH (DecorateAck), and its requester records what arrives.
type sacker struct {
	*gbn.Transport
	acks, withSACK, wrong int
}

func (s *sacker) Classifier(c rocev2.Classifier) rocev2.Classifier {
	c.SACK = true
	return c
}

func (s *sacker) DecorateAck(q *nic.QP, sp *rocev2.Spec) {
	if !sp.SACK {
		s.wrong++ // the endpoint must have set it
	}
	sp.SACKPSN, sp.SACKFlags, sp.LostCnt = q.EPSN(), rocev2.SACKLostOverflow, 3
}

func (s *sacker) Response(c *nic.Ctx, q *nic.QP, p *nic.Pkt) {
	if p.Op == rocev2.RCAck {
		s.acks++
		if p.HasSACK {
			s.withSACK++
			// An ACK for PSN n, a NAK expecting n: either way the
			// responder's EPSN follows from the BTH PSN.
			want := p.PSN.Add(1)
			if p.Syndrome.IsNAK() {
				want = p.PSN
			}
			if p.SACK != want || p.SACKFlags != rocev2.SACKLostOverflow || p.LostCnt != 3 {
				s.wrong++
			}
		}
	}
	s.Transport.Response(c, q, p)
}

// TestSACKExtension runs a WRITE with one reordered packet between two
// transports that ask for SACK mode: every ACK and NAK arrives with the
// SACKETH its sender's DecorateAck filled, parsed into nic.Pkt.
func TestSACKExtension(t *testing.T) {
	var ts []*sacker
	p := nictest.New(t, nictest.Options{Transport: func() nic.Transport {
		g, _ := gbn.New(gbn.Config{RTO: 100_000})
		s := &sacker{Transport: g}
		ts = append(ts, s)
		return s
	}})
	if c := p.A.E.Classifier(rocev2.Classifier{}); !c.SACK {
		t.Fatal("Endpoint.Classifier does not pass on the transport's SACK mode")
	}
	held := false
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() && m.PSN == 10 && !held {
			held = true
			return nictest.Hold
		}
		return nictest.Pass
	}
	nictest.Fill(p.A.Buf[:64<<10], 4)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 64<<10); err != nil {
		t.Fatal(err)
	}
	if !p.Run(func() bool { return p.A.Done() == 1 }, 1e9) || p.A.CQ[0].Status != nic.StatusOK {
		t.Fatalf("WRITE did not complete: %+v", p.A.CQ)
	}
	if err := nictest.Check(p.B.Buf[:64<<10], 4); err != nil {
		t.Fatal(err)
	}
	a, b := ts[0], ts[1]
	bs := p.B.E.LiveStats()
	if a.acks == 0 || a.withSACK != a.acks || a.wrong != 0 || b.wrong != 0 || bs.SeqNAKsSent == 0 {
		t.Errorf("A got %d ACKs, %d with a SACKETH, %d wrong; B's decorator saw %d without SACK; B sent %d NAKs",
			a.acks, a.withSACK, a.wrong, b.wrong, bs.SeqNAKsSent)
	}
}

// pooled is Go-Back-N with a pool shared by every QP, as FaSR's.
type pooled struct{ *gbn.Transport }

func (pooled) SRState() nic.SRState { return nic.SRState{PerQP: 4, Shared: 784, BDP: 500} }

// TestSRState: an endpoint reports its transport's SR state and the QPs
// it is sized for, and its SR memory is the per-QP state for each of
// them plus what is shared; Go-Back-N keeps none.
func TestSRState(t *testing.T) {
	newGBN := func() *gbn.Transport {
		g, err := gbn.New(gbn.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, c := range []struct {
		name string
		tr   func() nic.Transport
		want nic.SRState
	}{
		{"gbn", func() nic.Transport { return newGBN() }, nic.SRState{}},
		{"gbn with a pool", func() nic.Transport { return pooled{newGBN()} }, nic.SRState{PerQP: 4, Shared: 784, BDP: 500}},
	} {
		p := nictest.New(t, nictest.Options{Transport: c.tr, QPs: 3})
		s, qps := p.A.E.SRState()
		if s != c.want || qps != 3 || s.Bytes(qps) != 3*c.want.PerQP+c.want.Shared {
			t.Errorf("%s: %+v for %d QPs (%d B); want %+v for 3", c.name, s, qps, s.Bytes(qps), c.want)
		}
	}
}

// TestFieldBytes: the SR share of a state struct is its named fields'
// sizes, padding excluded, and a name the struct lacks panics.
func TestFieldBytes(t *testing.T) {
	type st struct {
		a uint8
		b uint64
		c uint16
	}
	if n := nic.FieldBytes(reflect.TypeFor[st](), "a", "c"); n != 3 {
		t.Errorf("a and c: %d bytes, want 3", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for a missing field")
		}
	}()
	nic.FieldBytes(reflect.TypeFor[st](), "d")
}
