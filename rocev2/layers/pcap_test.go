package layers

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// TestPcapRoundTrip writes every frame to a pcap file, reads it back and
// decodes it from the file, as a user looking at a capture would.
func TestPcapRoundTrip(t *testing.T) {
	frames := append(roceFrames(t), otherFrames(t)...)
	path := filepath.Join(t.TempDir(), "frames.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1700000000, 0)
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr.b), Length: len(fr.b)}
		if err := w.WritePacket(ci, fr.b); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; ; n++ {
		data, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if n >= len(frames) {
			t.Fatalf("more frames read than written")
		}
		fr := frames[n]
		if want := t0.Add(time.Duration(n) * time.Millisecond); !ci.Timestamp.Equal(want) {
			t.Errorf("%s: timestamp %v, want %v", fr.name, ci.Timestamp, want)
		}
		withDCP(fr.dcp, func() {
			p := gopacket.NewPacket(data, r.LinkType(), gopacket.DecodeOptions{SkipDecodeRecovery: true})
			if e := p.ErrorLayer(); e != nil {
				t.Errorf("%s: %v", fr.name, e.Error())
				return
			}
			if fr.spec != nil {
				b, ok := p.Layer(LayerTypeBTH).(*BTH)
				if !ok {
					t.Errorf("%s: no BTH read back", fr.name)
					return
				}
				checkBTH(t, fr.spec, b)
			}
			if fr.shim != nil {
				checkShim(t, fr.shim, p.Layer(LayerTypeShim).(*Shim))
			}
		})
	}
	if n != len(frames) {
		t.Errorf("read %d frames back, wrote %d", n, len(frames))
	}
}
