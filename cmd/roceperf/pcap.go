package main

import (
	"flag"
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

// pcapOpts are --pcap and --snaplen.
type pcapOpts struct {
	file    string
	snaplen int
}

// defaultSnaplen holds a whole frame at the largest path MTU, 2048:
// Ethernet, VLAN tag, IPv6, UDP, BTH, RETH, payload and ICRC are 2146
// bytes. With whole frames the ICRC can be checked in the capture.
const defaultSnaplen = 2176

func addPcapFlags(fs *flag.FlagSet, o *pcapOpts) {
	fs.StringVar(&o.file, "pcap", "", "write the frames the endpoint sends and receives to `FILE` (nanosecond pcap)")
	fs.IntVar(&o.snaplen, "snaplen", defaultSnaplen, "bytes of each frame --pcap keeps")
}

// frames is how many frames a capture holds: as many snaplen-byte slots
// as fit the worker's capture budget (dataplane.MaxCaptureBytes, 64 MiB,
// as torctl capture). The slots are allocated at once but the kernel
// backs only the pages frames are copied into.
func (o pcapOpts) frames() int {
	return min(dataplane.MaxCaptureBytes/o.snaplen, dataplane.MaxCaptureFrames)
}

func (o pcapOpts) check() error {
	if o.file == "" {
		return nil
	}
	if o.snaplen < 64 || o.snaplen > 65535 {
		return usagef("--snaplen %d: want 64 to 65535 bytes", o.snaplen)
	}
	// Fail before the run, not after it.
	f, err := os.OpenFile(o.file, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return usagef("--pcap: %v", err)
	}
	return f.Close()
}

// newCapture returns the capture a --pcap run arms on its sessions; nil
// without --pcap.
func (o pcapOpts) newCapture() (*dataplane.Capture, error) {
	if o.file == "" {
		return nil, nil
	}
	return dataplane.NewCapture(0, dataplane.CaptureRxTx, 0, o.frames(), o.snaplen)
}

// pcapStats are what a capture took, for the report.
type pcapStats struct {
	File   string `json:"file"`
	Frames int    `json:"frames"`
	Missed uint64 `json:"missed"` // frames after the capture was full
}

// writePcap writes what c holds to o.file; the sessions that had c
// armed have stopped.
func (o pcapOpts) writePcap(c *dataplane.Capture) (*pcapStats, error) {
	if c == nil {
		return nil, nil
	}
	f, err := os.Create(o.file)
	if err != nil {
		return nil, fmt.Errorf("--pcap: %w", err)
	}
	frames := c.Frames()
	err = pcap.Write(f, o.snaplen, frames)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--pcap %s: %w", o.file, err)
	}
	return &pcapStats{File: o.file, Frames: len(frames), Missed: c.Missed()}, nil
}

// pcapNote is the line a run prints on stderr about its capture.
func (s *pcapStats) note(o pcapOpts) string {
	n := fmt.Sprintf("roceperf: --pcap: %d frames in %s", s.Frames, s.File)
	if s.Missed > 0 {
		n += fmt.Sprintf("; %d more frames not captured: the capture holds %d frames of %d bytes (lower --snaplen for more)",
			s.Missed, o.frames(), o.snaplen)
	}
	return n
}
