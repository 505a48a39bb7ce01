package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/rocev2"
)

// liveSource reads an interface through pcapgo's AF_PACKET handle.
type liveSource struct {
	h    *pcapgo.EthernetHandle
	stop func() bool
}

// openLive opens iface, as tcpdump does in promiscuous mode, and arranges
// for the socket to close when ctx ends: closing it is what ends a read
// that is blocked waiting for the next frame.
func openLive(ctx context.Context, iface string, stderr io.Writer) (packetSource, error) {
	h, err := pcapgo.NewEthernetHandle(iface) // its errors name iface
	if err != nil {
		return nil, err
	}
	if err := h.SetPromiscuous(true); err != nil {
		fmt.Fprintf(stderr, "rocedump: %s: promiscuous mode: %v\n", iface, err)
	}
	stop := context.AfterFunc(ctx, func() { h.Close() })
	fmt.Fprintf(stderr, "listening on %s, link-type EN10MB (Ethernet)\n", iface)
	return &liveSource{h: h, stop: stop}, nil
}

func (s *liveSource) ReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := s.h.ReadPacketData()
	if err != nil {
		return nil, ci, err
	}
	// The kernel hands the frame over without its 802.1Q tag and reports
	// the VLAN beside it; put the tag back so that the classifier sees the
	// frame as it was on the wire. pcapgo keeps only the VLAN id, so the
	// priority reads as 0.
	if len(ci.AncillaryData) > 0 && len(data) >= 12 {
		if vid, ok := ci.AncillaryData[0].(int); ok {
			t := make([]byte, 0, len(data)+rocev2.VLANTagLen)
			t = append(t, data[:12]...)
			t = binary.BigEndian.AppendUint16(t, rocev2.EtherTypeVLAN)
			t = binary.BigEndian.AppendUint16(t, uint16(vid)&0x0fff)
			data = append(t, data[12:]...)
			ci.CaptureLength += rocev2.VLANTagLen
			ci.Length += rocev2.VLANTagLen
		}
	}
	return data, ci, nil
}

func (s *liveSource) Close() error {
	if s.stop() {
		return s.h.Close()
	}
	return nil // the context already closed it
}
