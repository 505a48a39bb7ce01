package dataplane

import (
	"bytes"
	"testing"

	"rocetor/rocev2"
)

// TestMemPortHeadroom: Inject leaves Headroom bytes before a frame that
// fits after them, and puts one that does not at the buffer's start.
func TestMemPortHeadroom(t *testing.T) {
	mem, err := NewMem(make([]byte, 4*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	p := NewMemPort("p", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 8)
	p.Headroom = 256
	small, big := bytes.Repeat([]byte{1}, 1000), bytes.Repeat([]byte{2}, 1900)
	if !p.Inject(small) || !p.Inject(big) {
		t.Fatal("inject refused")
	}
	var b Batch
	if n := p.Receive(&b); n != 2 {
		t.Fatalf("received %d frames, want 2", n)
	}
	for i, want := range []struct {
		off   uint64
		frame []byte
	}{{256, small}, {0, big}} {
		q := &b.Pkts[i]
		if off := mem.Offset(q.Addr); off != want.off || !bytes.Equal(mem.Frame(q), want.frame) {
			t.Errorf("frame %d at offset %d (want %d), content equal %v", i, off, want.off, bytes.Equal(mem.Frame(q), want.frame))
		}
	}
}
