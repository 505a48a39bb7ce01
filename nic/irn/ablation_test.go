package irn_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/irn"
	"rocetor/nic/nictest"
	"rocetor/rocev2/psn"
)

// TestGoBackN is the first ablation (seed 004 §4.3): one packet lost in
// a WRITE. The receiver discards everything after it with a single
// NACK, the sender goes back to the lost PSN and resends every packet
// it had sent since — without a timeout, and BDP-FC still holds it to
// the window. Default IRN resends the one packet (TestSingleLoss).
func TestGoBackN(t *testing.T) {
	const lost = 10
	p, a, b := newPair(t, nictest.Options{}, irn.Config{Window: 32, GoBackN: true})
	d := newDrop(lost)
	p.AB.Filter = d.filter
	sz := []int{64 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	as, bs := a.Stats(), b.Stats()
	t.Logf("resent %v (%d extra); A %+v B %+v", order, extra, as, bs)
	if len(order) < 2 || order[0] != lost || extra != len(order) {
		t.Fatalf("resent %v (%d extra): want every PSN from %d on once", order, extra, lost)
	}
	for i, x := range order {
		if x != psn.PSN(lost+i) {
			t.Fatalf("resent %v: want %d, %d, … in order", order, lost, lost+1)
		}
	}
	if bs.NACKsSent != 1 || bs.OutOfOrder != 1 || bs.SACKs+as.SACKs != 0 || as.Recoveries != 1 || as.Retransmits != uint64(extra) ||
		as.TimeoutsLow+as.TimeoutsHigh != 0 || as.MaxInFlight > 32 {
		t.Errorf("want one NACK, no SACK, one go-back, no timeout, at most 32 in flight; A %+v B %+v", as, bs)
	}
}

// TestGoBackNTail loses a message's last packet: nothing follows it to
// be NACKed, so the timer recovers it, and goes back to the oldest
// unacknowledged packet — here the first: the receiver acknowledges the
// 16-packet message at its end — resending all 16 once (default IRN's
// timeout sweep resends the same, no SACK having arrived).
func TestGoBackNTail(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{GoBackN: true})
	d := newDrop(15)
	p.AB.Filter = d.filter
	sz := []int{16 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	as := a.Stats()
	if len(order) != 16 || order[0] != 0 || order[15] != 15 || extra != 16 || as.TimeoutsLow+as.TimeoutsHigh != 1 || as.Retransmits != 16 {
		t.Errorf("resent %v (%d extra); A %+v", order, extra, as)
	}
}

// TestGoBackNRandomLoss runs WRITEs and SENDs through random loss both
// ways with go-back-N recovery: every byte and completion as with SACKs
// (randomLoss checks them), at several retransmissions per loss where
// SACKs need about one.
func TestGoBackNRandomLoss(t *testing.T) {
	for _, op := range []nic.Op{nic.OpWrite, nic.OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			r := randomLoss(t, irn.Config{GoBackN: true}, op, 0.01, 200)
			if r < 3 {
				t.Errorf("%.1f retransmissions per loss: go-back-N resends what followed each loss", r)
			}
		})
	}
}

// TestNoBDPFC is the second ablation (seed 004 §4.3): with BDP-FC off a
// QP's packets in flight pass the BDP cap (8 here), up to what its
// bitmaps track (64), and a loss is still recovered selectively: the
// one lost packet is resent once. With BDP-FC on, TestBDPFC holds the
// same WRITE to 8.
func TestNoBDPFC(t *testing.T) {
	const lost = 100
	p, a, _ := newPair(t, nictest.Options{Delay: 20_000}, irn.Config{Window: 8, NoBDPFC: 64})
	if w := a.Window(1024); w != 64 {
		t.Fatalf("window %d, want 64 with BDP-FC off", w)
	}
	d := newDrop(lost)
	p.AB.Filter = d.filter
	sz := []int{200 << 10}
	write(t, p, sz...)
	order, extra := d.resent()
	as := a.Stats()
	if as.MaxInFlight != 64 || len(order) != 1 || order[0] != lost || extra != 1 {
		t.Errorf("at most %d in flight (BDP 8, tracked 64), resent %v (%d extra); A %+v", as.MaxInFlight, order, extra, as)
	}
}

// TestAblationConfig checks the ablations' bounds.
func TestAblationConfig(t *testing.T) {
	for _, c := range []irn.Config{{NoBDPFC: -1}, {NoBDPFC: 1<<16 + 1}} {
		if _, err := irn.New(c); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
	tr, err := irn.New(irn.Config{NoBDPFC: 3000})
	if err != nil || tr.Window(1024) != 3000 || tr.BitmapBytes() != 4*4096/8 {
		t.Errorf("BDP-FC off over 3000 packets: %v, window %d, bitmaps %d bytes", err, tr.Window(1024), tr.BitmapBytes())
	}
}

// TestNoTimeoutRecovery is the spurious-expiry diagnostic
// (Config.NoTimeoutRecovery): the tail of a WRITE is lost, the timer
// expires as it would, but nothing is resent, so the expiries run out
// the retry limit and the WRITE fails. Default IRN resends the tail's
// 16 packets on the first expiry (TestTailLossCoalesced).
func TestNoTimeoutRecovery(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, irn.Config{NoTimeoutRecovery: true, RetryLimit: 3})
	d := newDrop(11, 12, 13, 14, 15)
	p.AB.Filter = d.filter
	post(t, p, nic.OpWrite, []int{16 << 10})
	run(t, p, 1)
	as := a.Stats()
	if _, extra := d.resent(); extra != 0 || as.Retransmits != 0 || as.Recoveries != 0 || as.TimeoutsHigh+as.TimeoutsLow != 3 {
		t.Errorf("%d resent; A %+v: want 3 expiries, nothing resent", extra, as)
	}
	if c := p.A.CQ[0]; c.Status != nic.StatusRetryExceeded {
		t.Errorf("completion %+v: want the retry limit exceeded", c)
	}
}
