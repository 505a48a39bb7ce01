package rocev2_test

import (
	"testing"

	"rocetor/rocev2"
)

// intFrame returns a WRITE Only frame with 1024 bytes of payload and an
// INT request tail of max records after it, over IPv4 or IPv6.
func intFrame(t testing.TB, v6 bool, max int) (frame []byte, end int) {
	t.Helper()
	b := fxBuild(t, fxSpec(rocev2.RCWriteOnly, v6, false, 1024))
	end = len(b)
	b = append(b, make([]byte, rocev2.INTLen(max))...)
	if n := rocev2.PutINT(b[end:], max); n != rocev2.INTLen(max) {
		t.Fatalf("PutINT wrote %d bytes, want %d", n, rocev2.INTLen(max))
	}
	return b, end
}

// TestINTTailOutsideDatagram: a frame with an INT tail, stamped to its
// budget, classifies exactly as the frame without it — same offsets,
// same End, the ICRC valid — so an ordinary RoCE receiver, which reads
// by the IP and UDP lengths, is unaffected; and FindINT finds the tail
// at End with the records in order.
func TestINTTailOutsideDatagram(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		b, end := intFrame(t, v6, rocev2.INTDefaultMax)
		var plain, with rocev2.Meta
		c := rocev2.Classifier{VerifyICRC: true}
		c.Classify(b[:end], &plain)
		tl, bad := rocev2.FindINT(b, end)
		if tl == nil || bad || tl.Echo() || tl.Hops() != 0 || tl.Max() != rocev2.INTDefaultMax {
			t.Fatalf("v6=%v: FindINT = %v, bad %v", v6, tl, bad)
		}
		for i := range rocev2.INTDefaultMax {
			if !tl.Push(rocev2.Stamp(int64(1000*i), 100*i, uint64(1e6*i), 10e9)) {
				t.Fatalf("v6=%v: push %d refused", v6, i)
			}
		}
		if tl.Push(rocev2.INTHop{}) || !tl.Full() {
			t.Fatalf("v6=%v: a full tail took another record", v6)
		}
		c.Classify(b, &with)
		if with.Reason != rocev2.ReasonNone || with != plain || int(with.End) != end {
			t.Fatalf("v6=%v: with the tail %+v, without %+v", v6, with, plain)
		}
		tl, _ = rocev2.FindINT(b, int(with.End))
		for i := range tl.Hops() {
			h := tl.Hop(i)
			if h.TS != uint32(1000*i) || h.QLen != uint32(100*i) || h.TxBytes != uint32(1e6*i) || h.RateMbps != 10000 {
				t.Errorf("v6=%v: hop %d = %+v", v6, i, h)
			}
		}
	}
}

// TestINTEcho: an echo copies the records and sets E; switches stamp no
// echo.
func TestINTEcho(t *testing.T) {
	b, end := intFrame(t, false, 2)
	req, _ := rocev2.FindINT(b, end)
	req.Push(rocev2.Stamp(7, 8, 9, 25e9))
	ack := fxBuild(t, fxSpec(rocev2.RCAck, false, false, 0))
	aend := len(ack)
	ack = append(ack, make([]byte, len(req))...)
	if n := rocev2.PutEcho(ack[aend:], req); n != len(req) {
		t.Fatalf("PutEcho wrote %d", n)
	}
	e, bad := rocev2.FindINT(ack, aend)
	if e == nil || bad || !e.Echo() || e.Hops() != 1 || e.Hop(0) != req.Hop(0) {
		t.Fatalf("echo %v bad %v", e, bad)
	}
	if e.Push(rocev2.INTHop{}) {
		t.Fatal("an echo was stamped")
	}
	if req.Echo() {
		t.Fatal("PutEcho changed the request")
	}
	var m rocev2.Meta
	rocev2.Classifier{VerifyICRC: true}.Classify(ack, &m)
	if m.Reason != rocev2.ReasonNone {
		t.Fatalf("ACK with an echo: %v", m.Reason)
	}
}

// TestFindINTRejects: trailing bytes that are not a tail are none; a
// tail with the magic but a bad header or a short frame is bad.
func TestFindINTRejects(t *testing.T) {
	b, end := intFrame(t, false, 3)
	cases := []struct {
		name string
		mod  func(b []byte) []byte
		bad  bool
	}{
		{"no tail", func(b []byte) []byte { return b[:end] }, false},
		{"padding", func(b []byte) []byte { clear(b[end:]); return b }, false},
		{"other version", func(b []byte) []byte { b[end+2] = 2 << 4; return b }, false},
		{"short", func(b []byte) []byte { return b[:len(b)-1] }, true},
		{"n over max", func(b []byte) []byte { b[end+3] = 3<<4 | 4; return b }, true},
		{"max 0", func(b []byte) []byte { b[end+3] = 0; return b }, true},
		{"max over the limit", func(b []byte) []byte { b[end+3] = (rocev2.INTMaxHops + 1) << 4; return b }, true},
	}
	for _, c := range cases {
		f := c.mod(append([]byte(nil), b...))
		tl, bad := rocev2.FindINT(f, end)
		if tl != nil || bad != c.bad {
			t.Errorf("%s: FindINT = %v, bad %v; want none, bad %v", c.name, tl, bad, c.bad)
		}
	}
	if rocev2.PutINT(make([]byte, rocev2.INTLen(2)-1), 2) != 0 || rocev2.PutINT(make([]byte, 200), 0) != 0 {
		t.Error("PutINT wrote a tail that does not fit, or of 0 records")
	}
}

// TestINTAllocs: finding and stamping a tail allocates nothing.
func TestINTAllocs(t *testing.T) {
	b, end := intFrame(t, false, rocev2.INTMaxHops)
	if n := testing.AllocsPerRun(100, func() {
		tl, _ := rocev2.FindINT(b, end)
		if !tl.Push(rocev2.Stamp(1, 2, 3, 4)) {
			b[end+3] &= 0xf0
		}
	}); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
