package llr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// pfcKind returns "pause" or "resume" for a PFC frame, else "".
func pfcKind(f []byte) string {
	if len(f) < 34 || binary.BigEndian.Uint16(f[12:14]) != 0x8808 {
		return ""
	}
	c := rocev2.MACControl(f[14:])
	for p := 0; p < 8; p++ {
		if c.ClassEnable()&(1<<p) != 0 && c.Time(p) != 0 {
			return "pause"
		}
	}
	return "resume"
}

// kindOf names the kind of one of llr's own frames, "" for others.
func kindOf(f []byte) string {
	if k := pfcKind(f); k != "" {
		return k
	}
	if s := shimOf(f); s != nil {
		switch s.Type() {
		case rocev2.ShimLoss:
			return "notice"
		case rocev2.ShimAck:
			return "ack"
		case rocev2.ShimDummy:
			return "dummy"
		case rocev2.ShimProtect:
			return "protect"
		case rocev2.ShimSync:
			return "sync"
		}
	}
	return ""
}

// The loss of any one of llr's own frames, of each kind, costs neither
// a frame nor an ackNoTimeout, and stalls nothing for long: a lost
// notice is named again, a lost dummy repeated, a lost ACK made good by
// the next, a lost pause by its refresh, a lost resume by the pause
// running out (PauseTime, not 0xffff quanta), a lost protection request
// by the next interval's, a lost sync by its retry.
func TestLoseEachControlFrame(t *testing.T) {
	for _, kind := range []string{"notice", "ack", "dummy", "pause", "resume", "protect", "sync"} {
		t.Run(kind, func(t *testing.T) {
			cfg := testCfg(Blocking)
			cfg.RxBuffer, cfg.Pause, cfg.Resume = 64<<10, 16<<10, 4<<10
			cfg.TxBuffer = 1 << 20 // the paused data queue's backlog too
			cfg.AckTimeout, cfg.NoticeRetry, cfg.PauseTime = 4e6, 100e3, 40e3
			cfg.Dormant = true // on at b's protection request
			r := newRig(t, cfg)
			lost := 0
			r.lose = func(dir int, f []byte) bool {
				s := shimOf(f)
				switch {
				case kindOf(f) == kind && lost == 0:
					lost++
					return true
				case dir != 0 || s == nil || s.Type() > rocev2.ShimRetransmit:
					return false
				case s.Seq() == 10 && r.now < r.start+300e3:
					return true // and its retransmissions: the reordering buffer fills and pauses
				case s.Seq() == 399 && s.Type() == rocev2.ShimOriginal:
					return true // the tail: found by a dummy
				}
				return false
			}
			r.restart(&r.b, cfg) // syncs again, on the lossy wire
			r.toB = r.toB[:0]
			r.start = r.now
			for !r.a.st.Active(1) && r.now < r.start+1e6 {
				r.b.st.RequestProtection(1, 1e-3) // the monitor, once an interval
				for range 50 {
					r.step(1000)
				}
			}
			// A lost sync costs a retry, during which frames cross
			// unprotected or without a session: the data after it.
			r.handshake()
			r.send(0, 400, 1000)
			r.run(20e6)
			inOrder(t, r.toB, 0, 400)
			a, b := r.stats(&r.a), r.stats(&r.b)
			if lost != 1 {
				t.Fatalf("no %s frame on the wire to lose", kind)
			}
			if b.Skipped != 0 || b.AckTimeouts != 0 || a.TxFrames != 0 || b.PauseSent == 0 || a.Protected != 400 {
				t.Errorf("skipped %d, ackNo timeouts %d, unacknowledged %d, pauses %d, protected %d; want 0, 0, 0, some, 400",
					b.Skipped, b.AckTimeouts, a.TxFrames, b.PauseSent, a.Protected)
			}
			// A lost frame costs one retry interval (DummyInterval
			// is the longest, 500 µs), far less than ackNoTimeout.
			if d := r.now - r.start; d >= cfg.AckTimeout/2 {
				t.Errorf("took %d µs, half an ackNoTimeout (%d µs) or more: something stalled", d/1000, cfg.AckTimeout/1000)
			}
		})
	}
}

// ACKs reach the sender within a bounded delay whatever the reverse
// traffic: with the reverse data queue shaped and never empty and the
// reverse sender off (its frames carry no shim, so no piggybacked ACK),
// the idle queue never runs; explicit ACKs on the control queue keep the
// Tx buffer from filling, so nothing crosses unprotected for want of
// room.
func TestAcksUnderBusyReverse(t *testing.T) {
	cfg := testCfg(Blocking)
	cfg.TxBuffer = 64 << 10
	r := newRig(t, cfg)
	r.b = newShapedSide(t, cfg, 0xb, 16384, 1e9) // 125 bytes a rig step
	r.wire()
	r.handshake()
	r.b.st.SetActive(1, false)
	rev := frame(t, 0, 1000)
	load := func() {
		for d, _ := r.b.w.Egress(1).Depth(2); d < 256<<10; d, _ = r.b.w.Egress(1).Depth(2) {
			if !r.b.host.Inject(rev) {
				break
			}
			r.step(0)
		}
	}
	f := frame(t, 0, 200)
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(f, &m)
	for i := uint32(0); i < 2000; i++ {
		load()
		rocev2.BTH(f[m.BTHOff:]).SetPSN(psn.New(i))
		for !r.a.host.Inject(f) {
			r.step(1000)
		}
		r.step(1000)
		if d, _ := r.b.w.Egress(1).Depth(2); d == 0 {
			t.Fatal("the reverse data queue ran empty: the test lost its load")
		}
	}
	for range 2000 {
		r.step(1000) // the last ACKs
	}
	inOrder(t, r.toB, 0, 2000)
	a, b := r.stats(&r.a), r.stats(&r.b)
	if a.UnprotectedTxFull != 0 || a.Protected != 2000 || b.AcksControl == 0 {
		t.Errorf("unprotected for a full Tx buffer %d, protected %d, control-queue ACKs %d; want 0, 2000, some",
			a.UnprotectedTxFull, a.Protected, b.AcksControl)
	}
	if a.TxBytesMax > 32<<10 {
		t.Errorf("Tx buffer peaked at %d bytes: ACKs came late", a.TxBytesMax)
	}
}

// stingy is a port that takes room frames at most per Transmit.
type stingy struct {
	dataplane.Port
	room int
}

func (s *stingy) TxRoom() int { return s.room }
func (s *stingy) Transmit(p []dataplane.Packet) int {
	return s.Port.Transmit(p[:min(len(p), s.room)])
}

// The ACK a frame carries reaches the neighbour only if the frame left:
// one the inner port refused leaves the ACK pending.
func TestAckPendingWhenRefused(t *testing.T) {
	mem, err := dataplane.NewMem(make([]byte, 16*rigFrameSize), rigFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStage(Config{Ports: 1})
	if err != nil {
		t.Fatal(err)
	}
	inner := dataplane.NewMemPort("l", rocev2.MAC{2}, mem, 16)
	lp, err := st.Wrap(0, &stingy{inner, 1}, mem)
	if err != nil {
		t.Fatal(err)
	}
	l := lp.l
	l.peerEpoch, l.pending = 7, true
	pkt := func(shim bool) dataplane.Packet {
		addr, ok := mem.Alloc()
		if !ok {
			t.Fatal("no frame")
		}
		f := mem.Room(addr)[:60]
		clear(f)
		binary.BigEndian.PutUint16(f[12:14], 0x0800)
		if shim {
			binary.BigEndian.PutUint16(f[12:14], rocev2.EtherTypeShim)
			rocev2.Shim(f[14:22]).Set(0, rocev2.ShimAck, 0, 0)
		}
		return dataplane.Packet{Addr: addr, Len: 60}
	}
	pkts := []dataplane.Packet{pkt(false), pkt(true)}
	if k := lp.Transmit(pkts); k != 1 || !l.pending {
		t.Fatalf("took %d, pending %v: the ACK's frame was refused, want it pending", k, l.pending)
	}
	if k := lp.Transmit(pkts[1:]); k != 1 || l.pending || l.st.AcksCarried != 1 {
		t.Fatalf("took %d, pending %v, carried %d: want the ACK gone", k, l.pending, l.st.AcksCarried)
	}
}

// Frame memory running out between two copies of a retransmission sends
// the remaining copies at the next poll, not all of them again.
func TestCopiesAfterNoFrame(t *testing.T) {
	cfg := testCfg(Blocking)
	cfg.Copies = 3
	r := newRig(t, cfg)
	copies := 0
	r.lose = func(dir int, f []byte) bool {
		if s := shimOf(f); dir == 0 && s != nil && s.Type() == rocev2.ShimRetransmit && s.Seq() == 10 {
			copies++
		}
		return dir == 1 // no ACK: the copies stay
	}
	r.send(0, 20, 100)
	r.step(1000)
	var hog []uint64
	for {
		addr, ok := r.a.mem.Alloc()
		if !ok {
			break
		}
		hog = append(hog, addr)
	}
	r.a.mem.Release(hog[len(hog)-1]) // room for one copy
	hog = hog[:len(hog)-1]
	r.a.lp.l.request(10, 1)
	r.step(1000)
	if a := r.stats(&r.a); copies != 1 || a.NoFrame == 0 {
		t.Fatalf("with one free frame: %d copies on the wire, no-frame %d", copies, a.NoFrame)
	}
	for _, h := range hog {
		r.a.mem.Release(h)
	}
	r.step(1000)
	r.step(1000)
	if a := r.stats(&r.a); copies != 3 || a.Copies != 3 || a.Retransmitted != 1 {
		t.Fatalf("%d copies on the wire, %d counted, %d retransmitted; want 3, 3, 1", copies, a.Copies, a.Retransmitted)
	}
}

// A missing run merged into the newest hole for want of table room is
// named in a notice: left unnamed, ackNoTimeout would skip sequences
// nobody asked for.
func TestHoleMergeNoticed(t *testing.T) {
	r := newRig(t, testCfg(NonBlocking))
	named := map[int]bool{}
	r.lose = func(dir int, f []byte) bool {
		if s := shimOf(f); dir == 1 && s != nil && s.Type() == rocev2.ShimLoss {
			for i := 0; i < int(s.Count()); i++ {
				named[int(s.Seq().Add(i))] = true
			}
		}
		return false
	}
	l := r.b.lp.l
	for i := 0; i < holeCap; i++ {
		l.saw(psn.Link(2*i+1), psn.Link(2*i+2)) // hole [2i, 2i+1)
	}
	for range 4 {
		r.step(1000) // each named once
	}
	last := 2*holeCap + 2
	l.saw(psn.Link(last+1), psn.Link(last+2)) // [2·holeCap, last+1): merged
	for range 4 {
		r.step(1000)
	}
	if b := r.stats(&r.b); b.HolesMerged != 1 || !named[last] || !named[2*holeCap] {
		t.Fatalf("merged %d; sequences %d and %d named: %v, %v", b.HolesMerged, 2*holeCap, last, named[2*holeCap], named[last])
	}
}

// TestRandomLossBothWays loses every kind of frame at random in both
// directions — originals, copies, dummies, notices, ACKs, syncs, PFC —
// at rates up to 5 %, with the testbed's timeouts, and asks llr for what
// it promises: every frame delivered once and in order (Blocking) and
// nothing skipped by ackNoTimeout while the link still carries frames.
func TestRandomLossBothWays(t *testing.T) {
	for _, c := range []struct {
		mode Mode
		loss float64
		seed uint64
		rate uint64 // the link's, bits per second; 0: unshaped
	}{
		{Blocking, 0.01, 1, 10e9}, {Blocking, 0.01, 2, 10e9}, {Blocking, 0.05, 3, 10e9},
		{NonBlocking, 0.01, 4, 10e9}, {NonBlocking, 0.05, 5, 10e9},
		// Unshaped, a run arrives faster than it drains: the reordering
		// buffer overflows, and runs lost there reach the head of line
		// long after they were found missing. ackNoTimeout must count
		// from when ackNo stopped, or it skips them before their notice
		// is named again (it did: 34 sequences, one of them a frame).
		{Blocking, 0.01, 1, 0},
	} {
		t.Run(fmt.Sprintf("%v loss %g seed %d rate %g", c.mode, c.loss, c.seed, float64(c.rate)), func(t *testing.T) {
			// The testbed's buffers and timeouts, on a 10 Gbit/s link (an
			// unshaped rig carries a whole run in a few steps).
			cfg := Config{Mode: c.mode, AckTimeout: 8e6, TxBuffer: 2 << 20, RxBuffer: 256 << 10, ActualLoss: c.loss}
			r := &rig{t: t, keep: true}
			r.a = newShapedSide(t, cfg, 0xa, 16384, c.rate)
			r.b = newShapedSide(t, cfg, 0xb, 16384, c.rate)
			r.wire()
			r.handshake()
			rng := rand.New(rand.NewPCG(c.seed, 0))
			lost := 0
			r.lose = func(int, []byte) bool {
				if rng.Float64() < c.loss {
					lost++
					return true
				}
				return false
			}
			n := uint32(10000)
			if c.rate == 0 {
				n = 20000
			}
			r.send(0, int(n), 1000)
			r.run(100e6)
			a, b := r.stats(&r.a), r.stats(&r.b)
			t.Logf("%d frames lost on the wire; %d detected, %d retransmitted in %d copies, %d notice retries, %d skipped, %d unprotected (Tx buffer full)",
				lost, b.LossesDetected, a.Retransmitted, a.Copies, b.NoticeRetries, b.Skipped, a.UnprotectedTxFull)
			if b.Skipped != 0 || b.AckTimeouts != 0 {
				t.Errorf("%d sequences skipped by %d ackNoTimeouts", b.Skipped, b.AckTimeouts)
			}
			if c.mode == Blocking {
				inOrder(t, r.toB, 0, int(n))
				return
			}
			// NB has no backpressure: a lost notice holds the Tx buffer
			// for NoticeRetry, and what goes out past it is unprotected
			// (counted), the end hosts' to recover if the wire loses it.
			got := map[uint32]int{}
			for _, p := range r.toB {
				got[p]++
			}
			missing := 0
			for p := uint32(0); p < n; p++ {
				switch got[p] {
				case 0:
					missing++
				case 1:
				default:
					t.Errorf("PSN %d delivered %d times", p, got[p])
				}
			}
			if missing > int(a.UnprotectedTxFull) {
				t.Errorf("%d frames missing, but only %d crossed unprotected", missing, a.UnprotectedTxFull)
			}
		})
	}
}

// TestTimersBounded: a port keeps one timer for each of its deadlines
// (the next dummy, the stale ACK, the head of line's notice retry and
// ackNoTimeout), whatever else wakes it, so under loss both ways the
// armed timers stay a handful. They piled up to 170 a side here when a
// firing timer cleared both the dummy's and the ACK's armed flags and
// every batch of fresh holes armed two timers of its own.
func TestTimersBounded(t *testing.T) {
	cfg := Config{Mode: Blocking, AckTimeout: 8e6, TxBuffer: 2 << 20, RxBuffer: 256 << 10, ActualLoss: 0.01}
	r := &rig{t: t, keep: true}
	r.a = newShapedSide(t, cfg, 0xa, 16384, 10e9)
	r.b = newShapedSide(t, cfg, 0xb, 16384, 10e9)
	r.wire()
	r.handshake()
	rng := rand.New(rand.NewPCG(1, 0))
	r.lose = func(int, []byte) bool { return rng.Float64() < 0.01 }
	peak := 0
	r.stepped = func() {
		for _, s := range []*side{&r.a, &r.b} {
			s.w.Publish(r.now)
			peak = max(peak, s.w.Snapshot().Timers)
		}
	}
	r.send(0, 10000, 1000)
	r.run(100e6)
	inOrder(t, r.toB, 0, 10000)
	t.Logf("at most %d timers armed on a side", peak)
	if peak > 2*timerKinds {
		t.Errorf("%d timers armed on a side at once", peak)
	}
}

// TestMoveAddrs checks the shim's address move against copy, both ways
// and with and without a VLAN tag: the ranges overlap by all but the
// shim's 8 bytes.
func TestMoveAddrs(t *testing.T) {
	for _, n := range []int{12, 16} {
		for _, back := range []bool{true, false} {
			f, want := make([]byte, 32), make([]byte, 32)
			for i := range f {
				f[i] = byte(i + 1)
			}
			copy(want, f)
			if back { // protect: the addresses move back into the headroom
				moveAddrs(f, f[rocev2.ShimLen:], n)
				copy(want[:n], want[rocev2.ShimLen:rocev2.ShimLen+n])
			} else { // strip: they move on over the shim
				moveAddrs(f[rocev2.ShimLen:], f, n)
				copy(want[rocev2.ShimLen:rocev2.ShimLen+n], want[:n])
			}
			if !bytes.Equal(f, want) {
				t.Errorf("n %d, back %v: % x, want % x", n, back, f, want)
			}
		}
	}
}
