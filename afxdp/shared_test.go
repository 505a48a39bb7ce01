package afxdp_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"rocetor/afxdp"
	"rocetor/afxdp/xdptest"
)

// TestSharedUMEMForward is the switch's data path in miniature: frames
// received on port 1 go out of port 2 by moving descriptors between
// sockets that share one UMEM, without copying a byte in user space.
func TestSharedUMEMForward(t *testing.T) {
	xdptest.RequireRoot(t, root)
	sw, hosts := xdptest.NewNetns(t), xdptest.NewNetns(t)
	p1, p2 := newPort(t, sw, hosts), newPort(t, sw, hosts)
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 4096, NumFrames: 1024})
	opts := afxdp.Options{RxSize: 512, TxSize: 512, FillSize: 512, CompletionSize: 512}
	s1 := p1.open(t, u, opts)
	// The first socket fixed the UMEM's mode (copy, on veth); a shared
	// socket cannot ask for another.
	if _, err := p2.tryOpen(u, afxdp.Options{Bind: afxdp.BindZeroCopy}); !errors.Is(err, afxdp.ErrBindMode) {
		t.Fatalf("zero-copy socket on a copy-mode UMEM = %v, want ErrBindMode", err)
	}
	s2 := p2.open(t, u, opts)
	if s2.BindMode() != s1.BindMode() {
		t.Fatalf("shared socket bound %v, owner %v", s2.BindMode(), s1.BindMode())
	}
	t.Logf("port 1 %v, port 2 %v (shared UMEM)", s1.BindMode(), s2.BindMode())

	// One socket per (interface, queue) on a UMEM; the kernel refuses a
	// second UMEM on a bound queue too.
	if _, err := p1.tryOpen(u, opts); !errors.Is(err, afxdp.ErrQueueBusy) {
		t.Fatalf("second socket on port 1 queue 0 = %v, want ErrQueueBusy", err)
	}
	other := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 64})
	if _, err := p1.tryOpen(other, afxdp.Options{}); !errors.Is(err, afxdp.ErrQueueBusy) {
		t.Fatalf("other UMEM on a bound queue = %v, want ErrQueueBusy", err)
	}

	free := afxdp.NewFrameStackFull(u)
	fill(t, s1, free, 512)
	fill(t, s2, free, 256)
	p1.register(t, s1)
	p2.register(t, s2)

	const n = 300
	for i := range n {
		if err := p1.pkt.Send(shimFrame(p1.macA, p1.macB, "fwd", i)); err != nil {
			t.Fatal(err)
		}
	}
	// The worker loop: rx on port 1, rewrite the MACs in place, tx on
	// port 2, recycle completions into port 1's fill ring.
	rxAddrs := map[uint64]bool{}
	var rxd [64]afxdp.Desc
	var done [64]uint64
	forwarded, completed := 0, 0
	for deadline := time.Now().Add(3 * time.Second); completed < n && time.Now().Before(deadline); {
		if _, err := s1.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		r := s1.Receive(rxd[:])
		k := 0
		for _, d := range rxd[:r] {
			b := u.Frame(d.Addr, int(d.Len))
			if !hasTag(b, "fwd") {
				// Host chatter (IPv6 MLD and the like): recycle.
				s1.Fill([]uint64{d.Addr})
				continue
			}
			copy(b[0:6], p2.macB)
			copy(b[6:12], p2.macA)
			rxAddrs[d.Addr] = true
			rxd[k] = d
			k++
		}
		if m := s2.Transmit(rxd[:k]); m != k {
			t.Fatalf("tx ring took %d of %d", m, k)
		}
		forwarded += k
		if err := s2.Wakeup(); err != nil {
			t.Fatal(err)
		}
		c := s2.Complete(done[:])
		for _, a := range done[:c] {
			if !rxAddrs[a] {
				t.Fatalf("completion %#x was never received: a copy happened", a)
			}
			delete(rxAddrs, a)
		}
		if s1.Fill(done[:c]) != c {
			t.Fatal("port 1 fill ring full")
		}
		completed += c
	}
	if completed != n {
		t.Fatalf("forwarded %d, completed %d of %d", forwarded, completed, n)
	}
	for i, b := range hostRecv(t, p2.pkt, "fwd", n) {
		if want := shimFrame(p2.macB, p2.macA, "fwd", i); !bytes.Equal(b, want) {
			t.Fatalf("port 2 host frame %d: % x, want % x", i, b[:20], want[:20])
		}
	}
	for _, s := range []*afxdp.Socket{s1, s2} {
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		if drops(st) {
			t.Errorf("%s: drops while forwarding: %+v", s.Interface(), st)
		}
	}
	t.Logf("port 1 wakeups %+v, port 2 wakeups %+v", s1.Wakeups(), s2.Wakeups())

	// Closing the socket that registered the UMEM leaves the other one
	// working, and a new socket can still join through it.
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	if err := u.Close(); !errors.Is(err, afxdp.ErrUMEMBusy) {
		t.Fatalf("UMEM.Close with a socket open = %v, want ErrUMEMBusy", err)
	}
	s3, err := p1.tryOpen(u, opts)
	if err != nil {
		t.Fatalf("reopen port 1 after the UMEM owner closed: %v", err)
	}
	s3.Close()
}

// TestSteadyStateNoAlloc runs the batch calls of a worker loop on a real
// socket: none may allocate.
func TestSteadyStateNoAlloc(t *testing.T) {
	xdptest.RequireRoot(t, root)
	p := newPort(t, xdptest.NewNetns(t), xdptest.NewNetns(t))
	u := newUMEM(t, afxdp.UMEMOptions{FrameSize: 2048, NumFrames: 512})
	s := p.open(t, u, afxdp.Options{RxSize: 256, TxSize: 256, FillSize: 256, CompletionSize: 256})
	free := afxdp.NewFrameStackFull(u)
	p.register(t, s)
	var addrs [32]uint64
	var descs [32]afxdp.Desc
	frame := shimFrame(p.macB, p.macA, "alloc", 0)
	allocs := testing.AllocsPerRun(200, func() {
		// Refill, drain rx, send a batch, reap completions.
		k := free.PopN(addrs[:])
		f := s.Fill(addrs[:k])
		free.PushN(addrs[f:k])
		s.Poll(0)
		k = s.Receive(descs[:])
		for _, d := range descs[:k] {
			free.Push(u.FrameStart(d.Addr))
		}
		k = 0
		for k < 8 {
			a, _ := free.Pop()
			copy(u.Frame(a, len(frame)), frame)
			descs[k] = afxdp.Desc{Addr: a, Len: uint32(len(frame))}
			k++
		}
		m := s.Transmit(descs[:k])
		for _, d := range descs[m:k] {
			free.Push(d.Addr)
		}
		s.Wakeup()
		k = s.Complete(addrs[:])
		free.PushN(addrs[:k])
	})
	if allocs != 0 {
		t.Fatalf("worker loop allocates %v per run", allocs)
	}
	t.Logf("wakeups over the run: %+v", s.Wakeups())
}
