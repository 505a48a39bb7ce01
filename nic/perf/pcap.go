package perf

import (
	"fmt"
	"os"

	"rocetor/dataplane"
	"rocetor/dataplane/pcap"
)

// The endpoint's frames never pass the kernel's packet taps: the XDP
// program hands them to AF_XDP before tcpdump could see them, and the
// endpoint transmits on the socket. --pcap captures them where they are,
// in the session's worker (dataplane.CaptureRxTx on the host's port):
// every frame the endpoint received and every frame it handed to the
// interface, in the worker's order, with nanosecond timestamps.

// PcapOptions are --pcap and --snaplen.
type PcapOptions struct {
	File    string
	Snaplen int
}

// DefaultSnaplen holds a whole frame at the largest path MTU, 2048:
// Ethernet, VLAN tag, IPv6, UDP, BTH, RETH, payload and ICRC are 2146
// bytes. With whole frames the ICRC can be checked in the capture.
const DefaultSnaplen = 2176

// frames is how many frames a capture holds: as many snaplen-byte slots
// as fit the worker's capture budget (dataplane.MaxCaptureBytes, 64 MiB,
// as torctl capture). The slots are allocated at once but the kernel
// backs only the pages frames are copied into.
func (o PcapOptions) frames() int {
	return min(dataplane.MaxCaptureBytes/o.Snaplen, dataplane.MaxCaptureFrames)
}

// newCapture returns the capture a --pcap run arms on its sessions; nil
// without --pcap.
func (o PcapOptions) newCapture() (*dataplane.Capture, error) {
	if o.File == "" {
		return nil, nil
	}
	return dataplane.NewCapture(0, dataplane.CaptureRxTx, 0, o.frames(), o.Snaplen)
}

// PcapStats are what a capture took, for the report.
type PcapStats struct {
	File   string `json:"file"`
	Frames int    `json:"frames"`
	Missed uint64 `json:"missed"` // frames after the capture was full
}

// writePcap writes what c holds to o.file; the sessions that had c
// armed have stopped.
func (o PcapOptions) writePcap(c *dataplane.Capture) (*PcapStats, error) {
	if c == nil {
		return nil, nil
	}
	f, err := os.Create(o.File)
	if err != nil {
		return nil, fmt.Errorf("--pcap: %w", err)
	}
	frames := c.Frames()
	err = pcap.Write(f, o.Snaplen, frames)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--pcap %s: %w", o.File, err)
	}
	return &PcapStats{File: o.File, Frames: len(frames), Missed: c.Missed()}, nil
}

// pcapNote is the line a run prints on stderr about its capture.
func (s *PcapStats) note(o PcapOptions) string {
	n := fmt.Sprintf("roceperf: --pcap: %d frames in %s", s.Frames, s.File)
	if s.Missed > 0 {
		n += fmt.Sprintf("; %d more frames not captured: the capture holds %d frames of %d bytes (lower --snaplen for more)",
			s.Missed, o.frames(), o.Snaplen)
	}
	return n
}
