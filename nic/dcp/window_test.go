package dcp_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/dcp"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestWindow sends a 64-packet WRITE through a window of 8, trimming
// the first transmission of every third packet: at every data packet A
// sends, the data packets it sent (retransmissions included, seed 002
// §4.3) less the frames that reached B — data, or the header of one the
// link trimmed — never exceed the window, and reach it; the message,
// eight windows long, completes without a coarse timeout although DCP
// acknowledges only whole messages.
func TestWindow(t *testing.T) {
	const window, size = 8, 64 << 10
	p, a, b := newPair(t, nictest.Options{}, dcp.Config{Window: window})
	var every3 []psn.PSN
	for x := psn.PSN(0); x < size>>10; x += 3 {
		every3 = append(every3, x)
	}
	trim := once(nictest.Trim, every3...)
	sent, most := 0, 0
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			sent++
			fly := sent - int(p.B.E.LiveStats().RxPackets)
			most = max(most, fly)
			if fly > window {
				t.Errorf("PSN %d: %d packets in flight, window %d", m.PSN, fly, window)
			}
		}
		return trim(f, m)
	}
	nictest.Fill(p.A.Buf[:size], 3)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, size); err != nil {
		t.Fatal(err)
	}
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if err := nictest.Check(p.B.Buf[:size], 3); err != nil {
		t.Fatal(err)
	}
	as, bs := a.Stats(), b.Stats()
	if as.HORetransmits != uint64(len(every3)) || sent != size>>10+len(every3) || as.FallbackTimeouts != 0 || bs.Duplicates != 0 {
		t.Errorf("sent %d, A %+v, B %+v: want %d resent from header-only packets, no timeout", sent, as, bs, len(every3))
	}
	if most != window || as.WindowFull == 0 {
		t.Errorf("at most %d in flight, window full %d times: want the window reached", most, as.WindowFull)
	}
	t.Logf("%d packets sent, %d resent; the window was full %d times", sent, as.HORetransmits, as.WindowFull)
}

// TestWindowOff: with no window (the default) nothing waits for credit
// and the AETH's MSN is eMSN, as before the window existed.
func TestWindowOff(t *testing.T) {
	p, a, _ := newPair(t, nictest.Options{}, dcp.Config{})
	sent, most := 0, 0
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if data(m) {
			sent++
			most = max(most, sent-int(p.B.E.LiveStats().RxPackets))
		}
		return nictest.Pass
	}
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Tag == rocev2.DCPAck {
			if got, want := rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).MSN(), dcpETH(f, m).MSN(); got != want {
				t.Errorf("AETH MSN %d, eMSN %d", got, want)
			}
		}
		return nictest.Pass
	}
	post(t, p, nic.OpWrite, []int{64 << 10})
	run(t, p, 1)
	wantOK(t, p.A.CQ)
	if as := a.Stats(); as.WindowFull != 0 || most <= 8 {
		t.Errorf("window full %d times, at most %d in flight: want no cap", as.WindowFull, most)
	}
}
