package afxdp_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
)

const root = "AF_XDP and XDP in a network namespace"

// TestReceiveTransmit sends frames from the host into the port and reads
// them from the AF_XDP socket, then transmits frames through the socket and
// reads them on the host.
func TestReceiveTransmit(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 512})
	s := p.open(t, u, afxdp.Options{RxSize: 256, TxSize: 256, FillSize: 256, CompletionSize: 256})
	t.Logf("XDP %v mode, AF_XDP bind %v, need_wakeup %v", p.xdpMode, s.BindMode(), s.NeedWakeup())
	free := afxdp.NewFrameStackFull(u)
	fill(t, s, free, 256)
	p.register(t, s)

	const n = 200
	for i := range n {
		if err := p.pkt.Send(shimFrame(p.macA, p.macB, "rx", i)); err != nil {
			t.Fatal(err)
		}
	}
	got := receive(t, s, free, "rx", n)
	for i, d := range got {
		want := shimFrame(p.macA, p.macB, "rx", i)
		if b := u.Frame(d.Addr, int(d.Len)); !bytes.Equal(b, want) {
			t.Fatalf("frame %d: got % x, want % x", i, b[:20], want[:20])
		}
		if off := d.Addr - u.FrameStart(d.Addr); off != uint64(u.RxOffset()) {
			t.Fatalf("frame %d at offset %d in its frame, want RxOffset %d", i, off, u.RxOffset())
		}
		free.Push(u.FrameStart(d.Addr))
	}

	// Transmit: build frames in free UMEM frames, queue them in batches,
	// wake the kernel, collect completions.
	freeBefore := free.Len()
	descs := make([]afxdp.Desc, 0, n)
	for i := range n {
		a, ok := free.Pop()
		if !ok {
			t.Fatal("out of frames")
		}
		f := shimFrame(p.macB, p.macA, "tx", i)
		copy(u.Frame(a, len(f)), f)
		descs = append(descs, afxdp.Desc{Addr: a, Len: uint32(len(f))})
	}
	sent, done := 0, 0
	doneAddrs := make([]uint64, 64)
	for deadline := time.Now().Add(2 * time.Second); done < n && time.Now().Before(deadline); {
		sent += s.Transmit(descs[sent:min(sent+32, n)])
		if err := s.Wakeup(); err != nil {
			t.Fatal(err)
		}
		k := s.Complete(doneAddrs)
		for _, a := range doneAddrs[:k] {
			free.Push(a)
		}
		done += k
	}
	if done != n {
		t.Fatalf("%d of %d transmitted frames completed", done, n)
	}
	for i, b := range hostRecv(t, p.pkt, "tx", n) {
		if want := shimFrame(p.macB, p.macA, "tx", i); !bytes.Equal(b, want) {
			t.Fatalf("host frame %d: got % x, want % x", i, b[:20], want[:20])
		}
	}
	// Every transmitted frame came back through the completion ring.
	if free.Len() != freeBefore {
		t.Fatalf("%d frames free after tx, %d before", free.Len(), freeBefore)
	}
	w := s.Wakeups()
	t.Logf("wakeup syscalls: %+v", w)
	if s.BindMode() == afxdp.BindCopy && w.Tx == 0 {
		t.Fatal("copy mode transmitted without a sendto")
	}

	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %+v", st)
	if drops(st) {
		t.Fatalf("clean run has drops: %+v", st)
	}

	// A descriptor outside the UMEM is the kernel's to refuse, and the
	// statistics say so.
	s.Transmit([]afxdp.Desc{{Addr: uint64(u.NumFrames()) * 2048, Len: 60}})
	if err := s.Wakeup(); err != nil {
		t.Fatal(err)
	}
	waitStats(t, s, "TxInvalidDescs", func(st afxdp.Stats) bool { return st.TxInvalidDescs == 1 })
}

// TestTxBudget: in copy mode the kernel sends at most the tx budget per
// sendto; raising it lets one Wakeup send a whole burst.
func TestTxBudget(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 512})
	for _, tc := range []struct {
		budget, wakeups int
	}{{0, 7}, {256, 1}} { // 200 frames: ceil(200/32) = 7 sendto, or 1
		s, err := p.tryOpen(u, afxdp.Options{TxSize: 256, CompletionSize: 256, TxBudget: tc.budget})
		if errors.Is(err, afxdp.ErrKernel) {
			t.Skipf("kernel has no XDP_MAX_TX_SKB_BUDGET: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		descs := make([]afxdp.Desc, 200)
		for i := range descs {
			f := shimFrame(p.macB, p.macA, fmt.Sprintf("budget%d", tc.budget), i)
			copy(u.Frame(u.FrameAddr(i), len(f)), f)
			descs[i] = afxdp.Desc{Addr: u.FrameAddr(i), Len: uint32(len(f))}
		}
		if s.Transmit(descs) != len(descs) {
			t.Fatal("tx ring too small")
		}
		done, addrs := 0, make([]uint64, 256)
		for deadline := time.Now().Add(2 * time.Second); done < len(descs) && time.Now().Before(deadline); {
			if err := s.Wakeup(); err != nil {
				t.Fatal(err)
			}
			done += s.Complete(addrs)
		}
		w := s.Wakeups()
		t.Logf("tx budget %d: 200 frames in %d sendto", tc.budget, w.Tx)
		if done != len(descs) || w.Tx != uint64(tc.wakeups) {
			t.Errorf("budget %d: %d completed with %d sendto, want 200 with %d", tc.budget, done, w.Tx, tc.wakeups)
		}
		hostRecv(t, p.pkt, fmt.Sprintf("budget%d", tc.budget), len(descs))
		s.Close()
	}
}

// TestBusyPoll: a socket opened with BusyPoll has the kernel's busy
// polling options set (and Open took the budget), receives through BusyPoll and Receive, and counts
// its busy polls; a socket without it makes no syscall in BusyPoll.
func TestBusyPoll(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 256})
	s := p.open(t, u, afxdp.Options{BusyPoll: 50 * time.Microsecond, BusyPollBudget: 16})
	for _, o := range []struct {
		name      string
		opt, want int
	}{{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1}, {"SO_BUSY_POLL", unix.SO_BUSY_POLL, 50}} {
		// SO_BUSY_POLL_BUDGET cannot be read back (ENOPROTOOPT).
		if v, err := unix.GetsockoptInt(s.FD(), unix.SOL_SOCKET, o.opt); err != nil || v != o.want {
			t.Errorf("%s = %d (%v), want %d", o.name, v, err, o.want)
		}
	}
	free := afxdp.NewFrameStackFull(u)
	fill(t, s, free, 64)
	p.register(t, s)
	if err := s.BusyPoll(); err != nil || s.Wakeups().Busy != 1 {
		t.Fatalf("BusyPoll on an empty ring: %v, %d busy polls, want 1", err, s.Wakeups().Busy)
	}
	for i := range 20 {
		if err := p.pkt.Send(shimFrame(p.macA, p.macB, "busy", i)); err != nil {
			t.Fatal(err)
		}
	}
	got, buf := 0, make([]afxdp.Desc, 64)
	for deadline := time.Now().Add(2 * time.Second); got < 20 && time.Now().Before(deadline); {
		if err := s.BusyPoll(); err != nil {
			t.Fatal(err)
		}
		for _, d := range buf[:s.Receive(buf)] {
			if hasTag(u.Frame(d.Addr, int(d.Len)), "busy") {
				got++
			}
		}
	}
	if got != 20 {
		t.Errorf("received %d of 20", got)
	}
	// Frames waiting in the rx ring: BusyPoll leaves the kernel alone.
	if err := p.pkt.Send(shimFrame(p.macA, p.macB, "busy", 20)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); s.Rings().Rx.Available() == 0 && time.Now().Before(deadline); {
		if err := s.BusyPoll(); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Wakeups().Busy
	if err := s.BusyPoll(); err != nil || s.Rings().Rx.Available() == 0 || s.Wakeups().Busy != before {
		t.Errorf("BusyPoll with %d frames waiting: %v, %d busy polls, want none", s.Rings().Rx.Available(), err, s.Wakeups().Busy-before)
	}
	s.Close()
	plain := p.open(t, u, afxdp.Options{})
	if err := plain.BusyPoll(); err != nil || plain.Wakeups().Busy != 0 {
		t.Errorf("BusyPoll without the option: %v, %d busy polls", err, plain.Wakeups().Busy)
	}
}

// TestStatsDrops lets the rx ring overflow and checks XDP_STATISTICS sees
// it.
func TestStatsDrops(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 256})
	s := p.open(t, u, afxdp.Options{RxSize: 64, FillSize: 256})
	free := afxdp.NewFrameStackFull(u)
	fill(t, s, free, 96)
	p.register(t, s)
	// 96 frames in the fill ring, 64 rx slots, nobody receiving: 64
	// land, then the rx ring is full.
	for i := range 100 {
		if err := p.pkt.Send(shimFrame(p.macA, p.macB, "drop", i)); err != nil {
			t.Fatal(err)
		}
	}
	st := waitStats(t, s, "RxRingFull", func(st afxdp.Stats) bool { return st.RxRingFull >= 36 })
	t.Logf("stats after overflowing the rx ring: %+v", st)
	got := receive(t, s, free, "drop", 64)
	if len(got) != 64 {
		t.Fatalf("received %d, want the 64 that fit", len(got))
	}
	// Now 32 frames in the fill ring: the 33rd frame finds it empty.
	for i := range 40 {
		p.pkt.Send(shimFrame(p.macA, p.macB, "empty", i))
	}
	st = waitStats(t, s, "RxFillRingEmptyDescs", func(st afxdp.Stats) bool { return st.RxFillRingEmptyDescs > 0 })
	t.Logf("stats after emptying the fill ring: %+v", st)
}

// drops reports whether st counts a lost or refused frame. TxRingEmptyDescs
// is not one: it counts wakeups (sendto, and poll in copy mode) that found
// nothing to send.
func drops(st afxdp.Stats) bool {
	st.TxRingEmptyDescs = 0
	return st != (afxdp.Stats{})
}

func waitStats(t *testing.T, s *afxdp.Socket, what string, ok func(afxdp.Stats) bool) afxdp.Stats {
	t.Helper()
	var st afxdp.Stats
	var err error
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err = s.Stats(); err != nil {
			t.Fatal(err)
		}
		if ok(st) {
			return st
		}
	}
	t.Fatalf("%s never moved: %+v", what, st)
	return st
}

// TestBindModes: veth has no zero-copy AF_XDP, so auto falls back to copy
// and says so, and forced zero-copy fails with ErrZeroCopy.
func TestBindModes(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 64})

	_, err := p.tryOpen(u, afxdp.Options{Bind: afxdp.BindZeroCopy})
	if !errors.Is(err, afxdp.ErrZeroCopy) {
		t.Fatalf("BindZeroCopy on veth = %v, want ErrZeroCopy", err)
	}
	t.Logf("forced zero-copy: %v", err)
	for _, m := range []afxdp.BindMode{afxdp.BindAuto, afxdp.BindCopy} {
		s, err := p.tryOpen(u, afxdp.Options{Bind: m})
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if s.BindMode() != afxdp.BindCopy || !s.NeedWakeup() {
			t.Errorf("%v on veth bound %v, need_wakeup %v; want copy, true", m, s.BindMode(), s.NeedWakeup())
		}
		s.Close()
	}
	// Without need_wakeup, every Wakeup with frames queued is a syscall;
	// with nothing queued none is.
	s, err := p.tryOpen(u, afxdp.Options{NoNeedWakeup: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := shimFrame(p.macB, p.macA, "nowake", 0)
	copy(u.Frame(0, len(f)), f)
	s.Transmit([]afxdp.Desc{{Addr: 0, Len: uint32(len(f))}})
	s.Wakeup()
	s.Wakeup()
	if w := s.Wakeups(); w.Tx != 1 || s.NeedWakeup() {
		t.Fatalf("NoNeedWakeup: %d sendto for 1 frame, NeedWakeup %v", w.Tx, s.NeedWakeup())
	}
}

func TestRingSizeError(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{})
	_, err := p.tryOpen(u, afxdp.Options{RxSize: 1000})
	if !errors.Is(err, afxdp.ErrRingSize) {
		t.Fatalf("rx ring of 1000 = %v, want ErrRingSize", err)
	}
	t.Logf("%v", err)
}
