package netrt

import "testing"

// TestEndToEnd runs a source ToR and a destination ToR joined by a link
// that loses the first transmission of some data packets: the
// destination host must see every PSN exactly once, in order, and no
// NetRT message may reach a host.
func TestEndToEnd(t *testing.T) {
	src, err := NewSrcToR(Config{Fabric: 2}) // A: p0 host, p1 fabric
	if err != nil {
		t.Fatal(err)
	}
	dst, err := NewDstToR(Config{Fabric: 1}) // B: p0 fabric, p1 host
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRig(t, src), newRig(t, dst)
	lose := map[uint32]bool{5: true, 17: true, 18: true, 40: true}
	var delivered []uint32
	a.ports[1].OnTransmit = func(f []byte) {
		m := meta(t, f)
		if isData(&m) && lose[uint32(m.PSN)] {
			delete(lose, uint32(m.PSN))
			return
		}
		b.inject(0, f)
	}
	b.ports[0].OnTransmit = func(f []byte) { a.inject(1, f) }
	b.ports[1].OnTransmit = func(f []byte) { delivered = append(delivered, psns(t, [][]byte{f})...) }
	a.ports[0].OnTransmit = func([]byte) { t.Error("a frame reached the source host") }
	step := func() { a.step(1000); b.step(1000) }
	for n := uint32(0); n < 50; n++ {
		a.inject(0, data(t, 7, n))
		if n%4 == 3 {
			step()
		}
	}
	for i := 0; i < 300; i++ {
		step()
	}
	if !equal(delivered, seq(0, 50)) {
		t.Fatalf("host got %v", delivered)
	}
	ss, ds := src.Stats(), dst.Stats()
	if ss.Sum().Retrans != 4 || ss.Sum().Unfulfill != 0 || ds.Ports[1].Gaps != 3 || ds.Ports[1].Waits() != 0 || ds.Bytes != 0 {
		t.Fatalf("src %+v\ndst %+v", ss, ds)
	}
	// The hold time has retired every duplicate: nothing is left over.
	if a.mem.InUse() != 0 || b.mem.InUse() != 0 || ss.Sum().Expired == 0 {
		t.Fatalf("frames in use: %d and %d; %d expired", a.mem.InUse(), b.mem.InUse(), ss.Sum().Expired)
	}
}

// TestEndToEndUnfulfilled: the source ToR's pool is too small to hold the
// lost packet, so the destination ToR is told, flushes its buffer and lets
// the sender's go-back-N (simulated by resending from the lost PSN)
// recover.
func TestEndToEndUnfulfilled(t *testing.T) {
	frame := len(data(t, 7, 0))
	src, err := NewSrcToR(Config{Fabric: 2, PoolBytes: 2 * frame})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := NewDstToR(Config{Fabric: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRig(t, src), newRig(t, dst)
	lost := false
	var delivered []uint32
	a.ports[1].OnTransmit = func(f []byte) {
		m := meta(t, f)
		if isData(&m) && m.PSN == 5 && !lost {
			lost = true
			return
		}
		b.inject(0, f)
	}
	b.ports[0].OnTransmit = func(f []byte) { a.inject(1, f) }
	b.ports[1].OnTransmit = func(f []byte) { delivered = append(delivered, psns(t, [][]byte{f})...) }
	a.ports[0].OnTransmit = func([]byte) { t.Error("a frame reached the source host") }
	step := func() { a.step(1000); b.step(1000) }
	for n := uint32(0); n < 20; n++ {
		a.inject(0, data(t, 7, n))
	}
	for i := 0; i < 50; i++ {
		step()
	}
	if ds := dst.Stats(); ds.Ports[1].WaitUnfulfilled != 1 || src.Stats().Sum().Unfulfill != 1 || ds.Bytes != 0 {
		t.Fatalf("src %+v\ndst %+v", src.Stats(), ds)
	}
	if !equal(delivered, append(seq(0, 5), seq(6, 20)...)) {
		t.Fatalf("host got %v before go-back-N, want all but 5, lowest held first", delivered)
	}
	delivered = nil
	for n := uint32(5); n < 20; n++ {
		a.inject(0, data(t, 7, n))
	}
	for i := 0; i < 300; i++ {
		step()
	}
	if !equal(delivered, seq(5, 20)) {
		t.Fatalf("host got %v after go-back-N", delivered)
	}
	if a.mem.InUse() != 0 || b.mem.InUse() != 0 {
		t.Fatalf("frames in use: %d and %d", a.mem.InUse(), b.mem.InUse())
	}
}
