package irn_test

import (
	"fmt"
	"testing"

	"rocetor/nic"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Timeouts of the tests: many link round trips of the harness (1 µs
// each way by default), and far apart, so that which one fired shows.
const (
	rtoLow  = 100_000   // 100 µs
	rtoHigh = 1_000_000 // 1 ms
)

// newPair connects two endpoints running IRN with cfg (the test RTOs
// unless set) and returns them with their transports.
func newPair(t testing.TB, o nictest.Options, cfg irn.Config) (*nictest.Pair, *irn.Transport, *irn.Transport) {
	t.Helper()
	if cfg.RTOLow == 0 {
		cfg.RTOLow, cfg.RTOHigh = rtoLow, rtoHigh
	}
	return nictest.NewWith(t, o, func() (*irn.Transport, error) { return irn.New(cfg) })
}

// run runs p until A has want completions, or fails.
func run(t testing.TB, p *nictest.Pair, want int) {
	t.Helper()
	p.MustComplete(t, want, 2e9)
}

var wantOK = nictest.WantOK

// data reports whether m is a request packet.
func data(m *rocev2.Meta) bool { return m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() }

// ack reports whether m is an RC ACK or NAK.
func ack(m *rocev2.Meta) bool { return m.Kind == rocev2.KindRoCE && m.Opcode == rocev2.RCAck }

// nak reports whether frame f, classified as m, is a NAK.
func nak(f []byte, m *rocev2.Meta) bool {
	return ack(m) && rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).Syndrome().IsNAK()
}

// post posts the messages: sizes[i] bytes of op at offset off[i] of both
// regions, pattern seed i, with a receive on B for a SEND.
func post(t testing.TB, p *nictest.Pair, op nic.Op, sizes []int) []int {
	t.Helper()
	offs := make([]int, len(sizes))
	off := 0
	for i, n := range sizes {
		offs[i] = off
		if op == nic.OpRead {
			nictest.Fill(p.B.Buf[off:off+n], uint64(i))
		} else {
			nictest.Fill(p.A.Buf[off:off+n], uint64(i))
		}
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

// verify checks every message's bytes where they went and the
// completions on both sides: A's in post order, exactly once, and B's
// receives in post order for a SEND.
func verify(t testing.TB, p *nictest.Pair, op nic.Op, sizes, offs []int) {
	t.Helper()
	wantOK(t, p.A.CQ)
	if len(p.A.CQ) != len(sizes) {
		t.Fatalf("A has %d completions for %d work requests", len(p.A.CQ), len(sizes))
	}
	for i, n := range sizes {
		if c := p.A.CQ[i]; c.ID != uint64(i) || c.Len != n || c.Op != op {
			t.Errorf("completion %d: %+v, want ID %d, %d bytes, in post order", i, c, i, n)
		}
		buf := p.B.Buf
		if op == nic.OpRead {
			buf = p.A.Buf
		}
		if err := nictest.Check(buf[offs[i]:offs[i]+n], uint64(i)); err != nil {
			t.Errorf("%s %d of %d bytes: %v", op, i, n, err)
		}
	}
	if op != nic.OpSend {
		return
	}
	p.Run(func() bool { return p.B.Done() >= len(sizes) }, 1e7)
	p.Run(func() bool { return false }, 100_000) // nothing more may come
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

// write posts a WRITE of each size from A to B, runs the pair until
// they complete and checks what B's memory holds.
func write(t testing.TB, p *nictest.Pair, sz ...int) {
	t.Helper()
	offs := post(t, p, nic.OpWrite, sz)
	run(t, p, len(sz))
	verify(t, p, nic.OpWrite, sz, offs)
}

var sizes = []int{1, 3, 255, 1023, 1024, 1025, 4096, 65537, 1 << 20, 0, 2048}

// drop drops the first transmission of each data packet whose PSN is in
// psns (or every transmission up to times[psn]).
type drop struct {
	n    map[psn.PSN]int // transmissions to drop per PSN
	sent map[psn.PSN]int // data packets the link carried per PSN
	log  []psn.PSN       // every data packet, in order
}

func newDrop(psns ...psn.PSN) *drop {
	d := &drop{n: map[psn.PSN]int{}, sent: map[psn.PSN]int{}}
	for _, x := range psns {
		d.n[x]++
	}
	return d
}

func (d *drop) filter(_ []byte, m *rocev2.Meta) nictest.Action {
	if !data(m) {
		return nictest.Pass
	}
	d.sent[m.PSN]++
	d.log = append(d.log, m.PSN)
	if d.n[m.PSN] > 0 {
		d.n[m.PSN]--
		return nictest.Drop
	}
	return nictest.Pass
}

// resent returns the PSNs sent more than once, in the order of their
// second transmission, and how many extra transmissions there were.
func (d *drop) resent() (order []psn.PSN, extra int) {
	seen := map[psn.PSN]int{}
	for _, x := range d.log {
		seen[x]++
		if seen[x] == 2 {
			order = append(order, x)
		}
		if seen[x] > 1 {
			extra++
		}
	}
	return order, extra
}

// TestDelivery moves WRITEs, SENDs and READs of 0 B to 1 MiB, posted at
// once, over a clean link: every byte arrives, completions come in post
// order, and nothing was recovered from.
func TestDelivery(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend, nic.OpRead} {
		t.Run(op.String(), func(t *testing.T) {
			p, a, b := newPair(t, nictest.Options{}, irn.Config{})
			offs := post(t, p, op, sizes)
			run(t, p, len(sizes))
			verify(t, p, op, sizes, offs)
			st := p.A.E.LiveStats()
			as, bs := a.Stats(), b.Stats()
			if st.Retransmits+st.Timeouts != 0 || as.Recoveries+bs.OutOfOrder+bs.NACKsSent != 0 {
				t.Errorf("clean link: %d retransmits, %d timeouts; A %+v B %+v", st.Retransmits, st.Timeouts, as, bs)
			}
			if w := uint64(a.Window(1024)); as.MaxInFlight > w || as.MaxInFlight == 0 {
				t.Errorf("at most %d packets in flight, window %d", as.MaxInFlight, w)
			}
		})
	}
}

// TestSingleLoss drops one packet in the middle of a WRITE: every later
// packet is placed and NACKed, the sender enters loss recovery on the
// first NACK, resends exactly the lost packet once, leaves recovery on
// the cumulative ACK that passes the recovery sequence, and no timer
// fires.
func TestSingleLoss(t *testing.T) {
	const first = 5000
	p, a, b := newPair(t, nictest.Options{PSN: [2]psn.PSN{first, 9000}}, irn.Config{})
	d := newDrop(first + 40)
	p.AB.Filter = d.filter
	sz := []int{256 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	st := p.A.E.LiveStats()
	as, bs := a.Stats(), b.Stats()
	t.Logf("A %+v\nB %+v", as, bs)
	if len(order) != 1 || order[0] != first+40 || extra != 1 || st.Retransmits != 1 || st.Timeouts != 0 {
		t.Errorf("resent %v (%d extra), %d retransmits, %d timeouts; want PSN %d once", order, extra, st.Retransmits, st.Timeouts, first+40)
	}
	if as.Recoveries != 1 || as.RecoveryExits != 1 || as.Retransmits != 1 || bs.OutOfOrder == 0 ||
		bs.NACKsSent != bs.OutOfOrder || as.NACKsRecv != bs.NACKsSent || bs.GapsFilled != 1 {
		t.Errorf("A %+v\nB %+v", as, bs)
	}
}

// TestRecoveryOrder drops three packets of one window: in loss recovery
// the sender resends the cumulative ACK's packet first, then the other
// holes in PSN order, each once, and only those: a hole counts as lost
// only once a later PSN was SACKed (§3.1).
func TestRecoveryOrder(t *testing.T) {
	const first = 100
	lost := []psn.PSN{first + 10, first + 12, first + 15}
	p, a, _ := newPair(t, nictest.Options{PSN: [2]psn.PSN{first, 0}}, irn.Config{Window: 32})
	d := newDrop(lost...)
	p.AB.Filter = d.filter
	sz := []int{64 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	if len(order) != 3 || order[0] != lost[0] || order[1] != lost[1] || order[2] != lost[2] || extra != 3 {
		t.Errorf("resent %v (%d extra), want %v once each", order, extra, lost)
	}
	as := a.Stats()
	if as.Recoveries != 1 || as.RecoveryExits != 1 || as.TimeoutsLow+as.TimeoutsHigh != 0 {
		t.Errorf("A %+v", as)
	}
}

// TestOnlyBelowSACK drops a packet in the middle and the last packet of
// a message: the first is resent at once, on the NACKs of the packets
// after it; the last is above every SACKed PSN, so recovery does not
// count it lost — the timer recovers it, RTO_low since it is alone in
// flight by then.
func TestOnlyBelowSACK(t *testing.T) {
	const first = 0
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{Window: 32})
	d := newDrop(first+5, first+15)
	p.AB.Filter = d.filter
	sz := []int{16 << 10}
	offs := post(t, p, nic.OpWrite, sz)
	start := p.Now
	run(t, p, 1)
	fct := p.Now - start
	verify(t, p, nic.OpWrite, sz, offs)
	order, extra := d.resent()
	as := a.Stats()
	if len(order) != 2 || order[0] != first+5 || order[1] != first+15 || extra != 2 {
		t.Errorf("resent %v (%d extra), want %d then %d", order, extra, first+5, first+15)
	}
	if as.TimeoutsLow != 1 || as.TimeoutsHigh != 0 || fct < rtoLow || fct > rtoLow+50_000 {
		t.Errorf("completed in %d ns with timeouts low %d high %d; want one RTO_low (%d ns)", fct, as.TimeoutsLow, as.TimeoutsHigh, rtoLow)
	}
}

// TestBDPFC sends a long WRITE through a slow link with a window of 8:
// never more than 8 packets are in flight (the sender's own count, and
// the link's: a data packet's PSN minus the cumulative ACK the receiver
// last sent), and BDP-FC held packets back.
func TestBDPFC(t *testing.T) {
	for _, cfg := range []irn.Config{{Window: 8}, {BDP: 8 << 10}} {
		p, a, _ := newPair(t, nictest.Options{Delay: 20_000}, cfg)
		w := a.Window(1024)
		if w != 8 {
			t.Fatalf("%+v: window %d, want 8", cfg, w)
		}
		var cum psn.PSN
		var worst int
		p.BA.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if ack(m) && m.PSN.Add(1).Diff(cum) > 0 {
				cum = m.PSN.Add(1)
			}
			return nictest.Pass
		}
		p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
			if data(m) {
				worst = max(worst, m.PSN.Diff(cum)+1)
			}
			return nictest.Pass
		}
		sz := []int{200 << 10}
		offs := post(t, p, nic.OpWrite, sz)
		run(t, p, 1)
		verify(t, p, nic.OpWrite, sz, offs)
		as := a.Stats()
		// The link's count lags: an ACK counts from when the receiver
		// sent it, the sender's from when it arrived.
		if as.MaxInFlight != uint64(w) || as.WindowFull == 0 || worst > w {
			t.Errorf("%+v: at most %d in flight (link: %d), window held %d times; want %d", cfg, as.MaxInFlight, worst, as.WindowFull, w)
		}
	}
}

// TestTimeouts loses a message's tail: with one packet in flight the
// timer is RTO_low; with more than N in flight, RTO_high; one expiry
// recovers the whole tail.
func TestTimeouts(t *testing.T) {
	for _, c := range []struct {
		name     string
		size     int
		lose     []psn.PSN
		low      uint64
		high     uint64
		min, max int64
	}{
		{"one-packet", 1000, []psn.PSN{0}, 1, 0, rtoLow, rtoLow + 20_000},
		// All five lost: the expiry has 5 in flight (RTO_high), and
		// resends all five, none of them SACKed.
		{"five-packets", 5 << 10, []psn.PSN{0, 1, 2, 3, 4}, 0, 1, rtoHigh, rtoHigh + 50_000},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, a, _ := newPair(t, nictest.Options{}, irn.Config{})
			d := newDrop(c.lose...)
			p.AB.Filter = d.filter
			sz := []int{c.size}
			offs := post(t, p, nic.OpWrite, sz)
			start := p.Now
			run(t, p, 1)
			fct := p.Now - start
			verify(t, p, nic.OpWrite, sz, offs)
			as := a.Stats()
			if as.TimeoutsLow != c.low || as.TimeoutsHigh != c.high || fct < c.min || fct > c.max {
				t.Errorf("FCT %d ns, timeouts low %d high %d; want %d–%d ns, %d and %d", fct, as.TimeoutsLow, as.TimeoutsHigh,
					c.min, c.max, c.low, c.high)
			}
			if _, extra := d.resent(); extra != len(c.lose) {
				t.Errorf("%d retransmissions for %d losses", extra, len(c.lose))
			}
		})
	}
}

// ExampleNew shows IRN on an endpoint; the worker's classifier comes from
// the endpoint, so that it parses the SACKETH and the OOO layout.
func ExampleNew() {
	t, err := irn.New(irn.Config{BDP: 64 << 10})
	if err != nil {
		panic(err)
	}
	c := rocev2.Classifier{VerifyICRC: true}
	fmt.Println(t.Name(), t.Window(1024), t.Window(4096), t.Classifier(c).SACK, t.Classifier(c).OOO)
	// Output: irn 64 16 true true
}

// TestTailLosses loses the last k packets of a 16-packet WRITE, k = 1 to
// 8: nothing after them can be SACKed, so the timer recovers them, all
// in one expiry — every PSN not SACKed from the cumulative ACK to the
// last sent is resent at once (RTO_low with at most N in flight,
// RTO_high above). With IRN's recovery to the letter each expiry resent
// one packet and k losses cost k timeouts. The receiver acknowledges
// every packet (AckEvery 1), so that the sender knows what arrived
// before the tail and resends exactly the k lost.
func TestTailLosses(t *testing.T) {
	for k := 1; k <= 8; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			p, a, _ := newPair(t, nictest.Options{}, irn.Config{AckEvery: 1})
			var lose []psn.PSN
			for x := 16 - k; x < 16; x++ {
				lose = append(lose, psn.PSN(x))
			}
			d := newDrop(lose...)
			p.AB.Filter = d.filter
			sz := []int{16 << 10}
			offs := post(t, p, nic.OpWrite, sz)
			start := p.Now
			run(t, p, 1)
			fct := p.Now - start
			verify(t, p, nic.OpWrite, sz, offs)
			as := a.Stats()
			rto, low := int64(rtoHigh), uint64(0)
			if k <= 3 {
				rto, low = rtoLow, 1
			}
			order, extra := d.resent()
			if as.TimeoutsLow+as.TimeoutsHigh != 1 || as.TimeoutsLow != low || fct < rto || fct > rto+100_000 {
				t.Errorf("FCT %d ns, timeouts low %d high %d; want one expiry of %d ns", fct, as.TimeoutsLow, as.TimeoutsHigh, rto)
			}
			if extra != k || len(order) != k || order[0] != lose[0] {
				t.Errorf("resent %v (%d extra), want %v", order, extra, lose)
			}
		})
	}
}

// TestTailLossCoalesced is TestTailLosses' k = 5 with the default ACK
// coalescing: the receiver acknowledged nothing of the message before
// the tail (its ACKs go every 16 packets and on the lost last one), so
// the one expiry has all 16 in flight (RTO_high) and resends all 16, the
// 11 that had arrived dropped as duplicates — the price of resending
// every un-SACKed PSN, against four more timeouts.
func TestTailLossCoalesced(t *testing.T) {
	p, a, b := newPair(t, nictest.Options{}, irn.Config{})
	d := newDrop(11, 12, 13, 14, 15)
	p.AB.Filter = d.filter
	sz := []int{16 << 10}
	write(t, p, sz...)
	as, bs := a.Stats(), b.Stats()
	if _, extra := d.resent(); as.TimeoutsHigh != 1 || as.TimeoutsLow != 0 || extra != 16 || bs.Duplicates != 11 {
		t.Errorf("%d resent; A %+v B %+v", extra, as, bs)
	}
}
