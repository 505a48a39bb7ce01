package dcp_test

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/dcp"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

const rto = 200_000 // 200 µs: many link round trips of the harness

// newPair connects two endpoints running DCP with cfg (RTO rto unless
// set) and returns them with their transports.
func newPair(t testing.TB, o nictest.Options, cfg dcp.Config) (*nictest.Pair, *dcp.Transport, *dcp.Transport) {
	t.Helper()
	if cfg.RTO == 0 {
		cfg.RTO = rto
	}
	return nictest.NewWith(t, o, func() (*dcp.Transport, error) { return dcp.New(cfg) })
}

// run runs p until A has want completions, or fails.
func run(t testing.TB, p *nictest.Pair, want int) {
	t.Helper()
	p.MustComplete(t, want, 1e9)
}

var wantOK = nictest.WantOK

// data reports whether m is a DCP data packet.
func data(m *rocev2.Meta) bool {
	return m.Kind == rocev2.KindRoCE && m.Tag == rocev2.DCPData && m.Opcode.IsRequest()
}

// returned reports whether m is a header-only packet on its way back to
// its sender.
func returned(m *rocev2.Meta) bool {
	return m.Kind == rocev2.KindRoCE && m.Tag == rocev2.DCPHeaderOnly && m.Opcode == rocev2.RCAck
}

// dcpETH returns the DCP extension header of f.
func dcpETH(f []byte, m *rocev2.Meta) rocev2.DCPETH {
	return rocev2.DCPETH(f[m.ExtOff(rocev2.ExtDCP):])
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

// TestDelivery moves WRITEs and SENDs of 0 B to 1 MiB, posted at once
// (more than the message window), and checks every byte, the
// completions' order, and that nothing was recovered from.
func TestDelivery(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			p, a, b := newPair(t, nictest.Options{}, dcp.Config{})
			var tags [4]int
			p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				tags[m.Tag]++
				if m.Opcode.IsWrite() && m.ExtOff(rocev2.ExtRETH) == 0 {
					t.Errorf("WRITE packet PSN %d without a RETH", m.PSN)
				}
				return nictest.Pass
			}
			p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
				tags[m.Tag]++
				return nictest.Pass
			}
			offs := post(t, p, op, sizes)
			run(t, p, len(sizes))
			verify(t, p, op, sizes, offs)
			as, bs := a.Stats(), b.Stats()
			if as != (dcp.Stats{}) || bs != (dcp.Stats{}) {
				t.Errorf("lossless run: A %+v B %+v", as, bs)
			}
			if st := p.A.E.LiveStats(); st.Retransmits+st.Timeouts != 0 {
				t.Errorf("lossless run: %+v", st)
			}
			if tags[rocev2.DCPNone] != 0 || tags[rocev2.DCPHeaderOnly] != 0 || tags[rocev2.DCPAck] == 0 || tags[rocev2.DCPData] == 0 {
				t.Errorf("frames by tag (none, ack, data, header-only): %v", tags)
			}
		})
	}
}

// TestDCPHeaders checks what each data packet carries: the data tag on
// the endpoint's DSCP class (24 by default in a DCP fabric), the
// message's MSN, sRetryNo 0, the SSN of a SEND, and the ACKs' eMSN.
func TestDCPHeaders(t *testing.T) {
	p, _, _ := newPair(t, nictest.Options{}, dcp.Config{})
	var bad []string
	lastEMSN := uint32(0)
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		d := dcpETH(f, m)
		want := uint32(m.PSN) / 4 // 4 packets per message from PSN 0
		ssn := uint32(0)
		if m.Opcode.IsSend() {
			ssn = want / 2 // messages alternate WRITE, SEND
		}
		if m.DSCP != 26 || d.MSN() != want || d.RetryNo() != 0 || d.SSN() != ssn {
			bad = append(bad, m.Opcode.String())
		}
		return nictest.Pass
	}
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		d := dcpETH(f, m)
		if m.Tag != rocev2.DCPAck || m.DSCP != 25 || d.MSN() < lastEMSN {
			bad = append(bad, "ack")
		}
		lastEMSN = d.MSN()
		return nictest.Pass
	}
	for i := range 8 {
		op := nic.OpWrite
		if i%2 == 1 {
			op = nic.OpSend
			if err := p.B.Post(nic.OpRecv, 0, uint64(i), i*4096, 0, 4096); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.A.Post(op, 0, uint64(i), i*4096, i*4096, 4096); err != nil {
			t.Fatal(err)
		}
	}
	run(t, p, 8)
	wantOK(t, p.A.CQ)
	if len(bad) != 0 || lastEMSN != 8 {
		t.Errorf("bad headers: %v; last eMSN %d, want 8", bad, lastEMSN)
	}
}

// TestEndpointDSCP: a DCP endpoint refuses a DSCP whose low bits are a
// DCP tag, and defaults to 24.
func TestEndpointDSCP(t *testing.T) {
	tr, _ := dcp.New(dcp.Config{})
	c := nic.Config{Transport: tr, IP: netip.MustParseAddr("10.0.0.1"), DSCP: 26, Egress: dataplane.DefaultEgress(0, 64<<10)}
	if _, err := nic.NewEndpoint(c); err == nil {
		t.Fatal("DSCP 26 (tag 10) accepted")
	} else {
		t.Log(err)
	}
	c.DSCP = 0
	if _, err := nic.NewEndpoint(c); err != nil {
		t.Fatal(err)
	}
}
