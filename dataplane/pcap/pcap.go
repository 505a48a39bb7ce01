// Package pcap writes the frames of dataplane captures as a nanosecond
// pcap file (Ethernet link type), the format tshark, Wireshark and
// tcpdump -r read. tord's capture API and roceperf --pcap both write
// through it, so that a capture of a switch port and of a host read the
// same way; the Lua dissector in docs/ decodes what rocetor adds.
//
// It is control-plane code: it runs after the worker has stopped copying
// frames, never on the packet path.
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
