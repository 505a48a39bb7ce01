package pcap

import (
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/dataplane"
)

// Write writes a pcap file header with snaplen and then frames, in the
// order given, to w.
func Write(w io.Writer, snaplen int, frames []dataplane.CaptureRecord) error {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet); err != nil {
		return fmt.Errorf("pcap header: %w", err)
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: f.OrigLen}
		if err := pw.WritePacket(ci, f.Data); err != nil {
			return fmt.Errorf("pcap frame %d: %w", i, err)
		}
	}
	return nil
}
