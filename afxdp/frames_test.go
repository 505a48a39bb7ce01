package afxdp

import (
	"errors"
	"testing"
)

func TestUMEMValidation(t *testing.T) {
	for _, tc := range []struct {
		opts UMEMOptions
		want error
	}{
		{UMEMOptions{FrameSize: 1024}, ErrFrameSize},
		{UMEMOptions{FrameSize: 3000}, ErrFrameSize},
		{UMEMOptions{NumFrames: 1000}, ErrFrameCount},
		{UMEMOptions{NumFrames: -4}, ErrFrameCount},
		{UMEMOptions{FrameSize: 2048, Headroom: 2048 - 256 - 63}, ErrHeadroom},
		{UMEMOptions{Headroom: -1}, ErrHeadroom},
	} {
		u, err := NewUMEM(tc.opts)
		if !errors.Is(err, tc.want) {
			t.Errorf("NewUMEM(%+v) = %v, want %v", tc.opts, err, tc.want)
		}
		if u != nil {
			u.Close()
		}
	}
	u, err := NewUMEM(UMEMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if u.FrameSize() != DefaultFrameSize || u.NumFrames() != DefaultNumFrames {
		t.Fatalf("defaults: %d x %d", u.NumFrames(), u.FrameSize())
	}
}

func TestUMEMFrames(t *testing.T) {
	u, err := NewUMEM(UMEMOptions{FrameSize: 2048, NumFrames: 8, Headroom: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if got := u.FrameAddr(3); got != 3*2048 {
		t.Fatalf("FrameAddr(3) = %d", got)
	}
	rx := u.FrameAddr(5) + uint64(u.RxOffset())
	if u.RxOffset() != 64+256 || u.FrameStart(rx) != 5*2048 {
		t.Fatalf("RxOffset %d, FrameStart(%d) = %d", u.RxOffset(), rx, u.FrameStart(rx))
	}
	b := u.Frame(rx, 100)
	b[0] = 0xab
	if u.Frame(rx, 1)[0] != 0xab {
		t.Fatal("Frame does not alias UMEM")
	}
	if len(b) != 100 || cap(b) != 100 {
		t.Fatalf("Frame len %d cap %d, want 100 100 (no reach into the next frame)", len(b), cap(b))
	}
	if n := testing.AllocsPerRun(100, func() { _ = u.Frame(rx, 60) }); n != 0 {
		t.Fatalf("Frame allocates %v", n)
	}
}

func TestFrameStack(t *testing.T) {
	u, err := NewUMEM(UMEMOptions{FrameSize: 2048, NumFrames: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	s := NewFrameStackFull(u)
	if s.Len() != 16 || s.Cap() != 16 {
		t.Fatalf("full stack len %d cap %d", s.Len(), s.Cap())
	}
	if a, _ := s.Pop(); a != 0 {
		t.Fatalf("first Pop = %d, want frame 0", a)
	}
	if s.Push(0) != true || s.Push(2048) != false {
		t.Fatal("Push on a full stack must report the double free")
	}
	buf := make([]uint64, 20)
	if n := s.PopN(buf); n != 16 {
		t.Fatalf("PopN = %d", n)
	}
	if _, ok := s.Pop(); ok {
		t.Fatal("Pop on empty stack")
	}
	if n := s.PushN(buf); n != 16 {
		t.Fatalf("PushN = %d, want 16 (capacity)", n)
	}
	// LIFO: the last frame pushed comes out first.
	if a, _ := s.Pop(); a != buf[15] {
		t.Fatalf("Pop = %d, want %d", a, buf[15])
	}
	var stack [32]uint64
	if n := testing.AllocsPerRun(1000, func() {
		a, _ := s.Pop()
		s.Push(a)
		k := s.PopN(stack[:8])
		s.PushN(stack[:k])
	}); n != 0 {
		t.Fatalf("FrameStack allocates %v per run", n)
	}
}
