package nic_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// wrCounts is an Observer that counts by work request.
type wrCounts struct{ retx, timeouts map[uint64]int }

func (w *wrCounts) Retransmitted(_ uint32, id uint64) { w.retx[id]++ }
func (w *wrCounts) TimedOut(_ uint32, id uint64)      { w.timeouts[id]++ }

// TestObserver: two WRITEs on one QP, the second's last packet lost
// once. The timeout and the resent packet belong to the second; the
// observer's counts add up to the endpoint's Stats.
func TestObserver(t *testing.T) {
	obs := &wrCounts{retx: map[uint64]int{}, timeouts: map[uint64]int{}}
	p := newPair(t, nictest.Options{Endpoint: func(side int, c *nic.Config) {
		if side == 0 {
			c.Observer = obs
		}
	}})
	const n = 16 << 10 // 16 packets at the default MTU
	last := p.A.QPs[0].PSN.Add(2*n/1024 - 1)
	dropped := false
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() && m.PSN == last && !dropped {
			dropped = true
			return nictest.Drop
		}
		return nictest.Pass
	}
	for id := uint64(1); id <= 2; id++ {
		if err := p.A.Post(nic.OpWrite, 0, id, 0, 0, n); err != nil {
			t.Fatal(err)
		}
	}
	if !p.Run(func() bool { return p.A.Done() == 2 }, 1e9) {
		t.Fatal("the WRITEs did not complete")
	}
	st := p.A.E.LiveStats()
	if !dropped || st.Timeouts != 1 || st.Retransmits == 0 {
		t.Fatalf("dropped %v, %d timeouts, %d retransmits: want the tail lost and one timeout", dropped, st.Timeouts, st.Retransmits)
	}
	if obs.timeouts[2] != 1 || obs.timeouts[1] != 0 || obs.retx[1] != 0 || uint64(obs.retx[2]) != st.Retransmits {
		t.Errorf("attributed retransmits %v, timeouts %v; the endpoint counted %d and %d, all of WR 2's", obs.retx, obs.timeouts, st.Retransmits, st.Timeouts)
	}
}

// TestTimeoutRetransmits: of a QP's resends, those after a timer expiry
// are counted apart until a NAK comes. Two WRITEs of 16 packets, one
// after the other on one QP: the first's last packet, lost once, is
// found by the timer, and every resend is the timeout's; the second's
// third, lost once, is NAKed by the packet after it, and none of its
// resends is.
func TestTimeoutRetransmits(t *testing.T) {
	p := newPair(t, nictest.Options{})
	const n = 16 << 10 // 16 packets at the default MTU
	lost := map[psn.PSN]bool{p.A.QPs[0].PSN.Add(15): true, p.A.QPs[0].PSN.Add(16 + 2): true}
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() && lost[m.PSN] {
			delete(lost, m.PSN)
			return nictest.Drop
		}
		return nictest.Pass
	}
	var st [2]nic.Stats
	for i := range st {
		if err := p.A.Post(nic.OpWrite, 0, uint64(i), 0, 0, n); err != nil {
			t.Fatal(err)
		}
		if !p.Run(func() bool { return p.A.Done() == i+1 }, 1e9) {
			t.Fatalf("WRITE %d did not complete", i)
		}
		st[i] = p.A.E.LiveStats()
	}
	if a := st[0]; a.Timeouts != 1 || a.Retransmits == 0 || a.TimeoutRetransmits != a.Retransmits {
		t.Errorf("tail lost: %d timeouts, %d retransmits, %d after a timeout: want 1, some, all", a.Timeouts, a.Retransmits, a.TimeoutRetransmits)
	}
	if a, b := st[0], st[1]; len(lost) != 0 || b.Timeouts != 1 || b.SeqNAKsRecv == 0 || b.Retransmits <= a.Retransmits || b.TimeoutRetransmits != a.TimeoutRetransmits {
		t.Errorf("then a middle packet lost (%d still to lose): %d timeouts, %d NAKs, retransmits %d → %d, after a timeout %d → %d: want 1, some, more, the same",
			len(lost), b.Timeouts, b.SeqNAKsRecv, a.Retransmits, b.Retransmits, a.TimeoutRetransmits, b.TimeoutRetransmits)
	}
}
