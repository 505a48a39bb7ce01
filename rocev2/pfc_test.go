package rocev2_test

import (
	"testing"

	"rocetor/rocev2"
)

func TestBuildPFC(t *testing.T) {
	buf := make([]byte, 100)
	for i := range buf {
		buf[i] = 0xcc
	}
	times := [8]uint16{0, 1, 0x00ff, 0x0100, 0x7fff, 0x8000, 0xfffe, 0xffff}
	n, err := rocev2.BuildPFC(buf, fxSrcMAC, 0xa5, times)
	if err != nil || n != rocev2.MinFrameLen {
		t.Fatalf("BuildPFC = %d, %v", n, err)
	}
	var m rocev2.Meta
	rocev2.Classifier{}.Classify(buf[:n], &m)
	if m.Kind != rocev2.KindMACControl || m.Reason != rocev2.ReasonNone || m.EtherType != rocev2.EtherTypeMACControl {
		t.Fatalf("PFC classified %v/%v", m.Kind, m.Reason)
	}
	e := rocev2.Ethernet(buf)
	if e.Dst() != rocev2.MACControlDst || e.Src() != fxSrcMAC || e.Type() != rocev2.EtherTypeMACControl {
		t.Errorf("PFC Ethernet header %v → %v type %#x", e.Src(), e.Dst(), e.Type())
	}
	c := rocev2.MACControl(buf[rocev2.EthernetLen:n])
	if c.Opcode() != rocev2.MACControlPFC || c.ClassEnable() != 0xa5 || buf[16] != 0 {
		t.Errorf("PFC opcode %#x enable %#x (high byte %#x)", c.Opcode(), c.ClassEnable(), buf[16])
	}
	for p, want := range times {
		if c.Time(p) != want {
			t.Errorf("PFC time of priority %d = %#x, want %#x", p, c.Time(p), want)
		}
	}
	for i := rocev2.EthernetLen + rocev2.PFCLen; i < n; i++ {
		if buf[i] != 0 {
			t.Fatalf("PFC padding byte %d = %#x", i, buf[i])
		}
	}
	if buf[n] != 0xcc {
		t.Error("BuildPFC wrote past the frame")
	}
	if _, err := rocev2.BuildPFC(make([]byte, 59), fxSrcMAC, 1, times); err != rocev2.ErrShortBuffer {
		t.Errorf("BuildPFC into 59 bytes: %v", err)
	}
}

func TestBuildPause(t *testing.T) {
	buf := make([]byte, 64)
	for _, q := range []uint16{0, 1, 0xffff} {
		n, err := rocev2.BuildPause(buf, fxDstMAC, q)
		if err != nil || n != rocev2.MinFrameLen {
			t.Fatalf("BuildPause = %d, %v", n, err)
		}
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(buf[:n], &m)
		c := rocev2.MACControl(buf[14:n])
		if m.Kind != rocev2.KindMACControl || m.Reason != rocev2.ReasonNone || c.Opcode() != rocev2.MACControlPause ||
			c.PauseTime() != q || rocev2.Ethernet(buf).Src() != fxDstMAC || rocev2.Ethernet(buf).Dst() != rocev2.MACControlDst {
			t.Errorf("PAUSE %d: %v/%v opcode %#x time %d", q, m.Kind, m.Reason, c.Opcode(), c.PauseTime())
		}
	}
	if _, err := rocev2.BuildPause(make([]byte, 10), fxSrcMAC, 1); err != rocev2.ErrShortBuffer {
		t.Errorf("BuildPause into 10 bytes: %v", err)
	}
}

// TestMACControlTruncated: a PAUSE needs 4 bytes after the Ethernet
// header, a PFC all 20, or MACControl.Time would read past the frame.
func TestMACControlTruncated(t *testing.T) {
	buf := make([]byte, 64)
	rocev2.BuildPFC(buf, fxSrcMAC, 0xff, [8]uint16{1, 2, 3, 4, 5, 6, 7, 8})
	for n := 0; n <= 34; n++ {
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(buf[:n], &m)
		want := rocev2.ReasonTruncated
		if n == 34 {
			want = rocev2.ReasonNone
		}
		if m.Reason != want {
			t.Errorf("PFC cut to %d bytes: %v, want %v", n, m.Reason, want)
		}
	}
	rocev2.BuildPause(buf, fxSrcMAC, 9)
	for n := 14; n <= 18; n++ {
		var m rocev2.Meta
		rocev2.Classifier{}.Classify(buf[:n], &m)
		want := rocev2.ReasonTruncated
		if n == 18 {
			want = rocev2.ReasonNone
		}
		if m.Reason != want || m.Kind != rocev2.KindMACControl {
			t.Errorf("PAUSE cut to %d bytes: %v/%v, want %v", n, m.Kind, m.Reason, want)
		}
	}
}

func TestPauseQuanta(t *testing.T) {
	cases := []struct {
		q    uint16
		bps  uint64
		want uint64
	}{
		{1, 1e9, 512},               // 512 bit times at 1 Gb/s
		{1, 100e9, 5},               // 5.12 ns, truncated
		{0xffff, 100e9, 335539},     // the longest pause at 100 Gb/s: 335.5 µs
		{0xffff, 10e9, 3355392},     // and at 10 Gb/s
		{0xffff, 400e9, 83884},      // and at 400 Gb/s
		{0xffff, 1, 33553920 * 1e9}, // no overflow even at 1 b/s
		{100, 0, 0},                 // an unknown rate pauses for nothing
		{0, 25e9, 0},
	}
	for _, c := range cases {
		if got := rocev2.PauseQuanta(c.q, c.bps); got != c.want {
			t.Errorf("PauseQuanta(%d, %d) = %d, want %d", c.q, c.bps, got, c.want)
		}
	}
}
