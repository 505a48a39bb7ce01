package sim

import (
	"bytes"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// TestTradeFrames: between memories that are ranges of one area a frame
// crosses the wire without a copy (the receiver gets the sender's very
// frame and the sender a free one back), each memory keeping its count;
// between separate memories it is copied.
func TestTradeFrames(t *testing.T) {
	for _, shared := range []bool{true, false} {
		var ma, mb *dataplane.Mem
		var err error
		if shared {
			area := make([]byte, 8*2048)
			if ma, err = dataplane.NewMemAt(area, 2048, 0, 4, make([]uint64, 0, 4)); err == nil {
				mb, err = dataplane.NewMemAt(area, 2048, 4, 4, make([]uint64, 0, 4))
			}
		} else if ma, err = dataplane.NewMem(make([]byte, 4*2048), 2048); err == nil {
			mb, err = dataplane.NewMem(make([]byte, 4*2048), 2048)
		}
		if err != nil {
			t.Fatal(err)
		}
		s := New()
		a := NewPort(s, "a", rocev2.MAC{2}, ma, 4)
		b := NewPort(s, "b", rocev2.MAC{3}, mb, 4)
		if err := Connect(s, a, b, LinkConfig{RateBps: 100e9, Delay: Microsecond}); err != nil {
			t.Fatal(err)
		}
		addr, _ := ma.Alloc()
		payload := bytes.Repeat([]byte{0xab}, 100)
		copy(ma.Room(addr), payload)
		if a.Transmit([]dataplane.Packet{{Addr: addr, Len: 100}}) != 1 {
			t.Fatal("not transmitted")
		}
		s.Run(Never)
		var bt dataplane.Batch
		if b.Receive(&bt) != 1 || !bytes.Equal(mb.Frame(&bt.Pkts[0]), payload) {
			t.Fatalf("shared %v: frame not delivered intact", shared)
		}
		if got := &mb.Frame(&bt.Pkts[0])[0] == &ma.Room(addr)[0]; got != shared {
			t.Errorf("shared %v: receiver got the sender's frame: %v", shared, got)
		}
		if ma.InUse() != 0 || ma.Free() != 4 || mb.InUse() != 1 || mb.Free() != 3 {
			t.Errorf("shared %v: sender %d in use %d free, receiver %d in use %d free; want 0/4, 1/3",
				shared, ma.InUse(), ma.Free(), mb.InUse(), mb.Free())
		}
	}
}

// TestExchangeRoom: a link between partitions makes its exchange's
// buffer, at the first frame, as large as a window's traffic (rate ×
// lookahead and a frame), so that it never grows by append and leaves
// its outgrown buffers to the collector.
func TestExchangeRoom(t *testing.T) {
	if n := exchangeRoom(100e9, Microsecond, 1152); n != 12500+1152 {
		t.Errorf("100 Gbit/s for 1 µs with 1,152-byte frames: %d bytes, want 13,652", n)
	}
	if n := exchangeRoom(^uint64(0), Second, 1152); n != 64<<10 {
		t.Errorf("an overflowing rate × lookahead: %d bytes, want the 64 KiB cap", n)
	}
	ma, err := dataplane.NewMem(make([]byte, 4*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := dataplane.NewMem(make([]byte, 4*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	p := s.Part()
	a := NewPort(s, "a", rocev2.MAC{2}, ma, 4)
	b := NewPort(p, "b", rocev2.MAC{3}, mb, 4)
	if err := Connect(s, a, b, LinkConfig{RateBps: 100e9, Delay: Microsecond}); err != nil {
		t.Fatal(err)
	}
	g := NewGroup([]*Sim{s, p}, s.Part())
	addr, _ := ma.Alloc()
	g.Begin()
	if a.Transmit([]dataplane.Packet{{Addr: addr, Len: 100}}) != 1 {
		t.Fatal("not transmitted")
	}
	x := &a.out.x[a.out.from.epoch&1]
	if len(x.data) != 100 || cap(x.data) != 12500+2048 {
		t.Errorf("exchange of %d bytes in %d, want 100 in %d", len(x.data), cap(x.data), 12500+2048)
	}
}
