package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"rocetor/nic/host"
)

// Opener attaches to an interface: it returns the device runs open
// their sessions on and a function that detaches it. OpenHost is the
// real one; FakeNet.Open an in-memory one for tests.
type Opener func(dev string) (Device, func(), error)

// OpenHost attaches to dev through nic/host: XDP in endpoint mode and
// one AF_XDP socket on rx queue 0. It needs root (or CAP_NET_ADMIN,
// CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN).
func OpenHost(dev string) (Device, func(), error) {
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("roceperf attaches XDP and AF_XDP to %s: it needs root or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN", dev)
	}
	h, err := host.Open(host.Config{Dev: dev})
	if err != nil {
		return nil, nil, err
	}
	return hostDevice{h}, func() { h.Close() }, nil
}

// ErrRoundFailed is Serve's error when a --once round did not verify or
// was interrupted before it ended; the log has said why, run by run.
var ErrRoundFailed = errors.New("the round failed")

// Serve serves o on the device open attaches to, on a TCP listener at
// o.Listen, until ctx ends (then it returns nil), or one round with
// o.Once (nil if every run of it verified, else ErrRoundFailed). It
// prints one JSON object per run (ServerReport) on stdout and logs to
// stderr. With o.Metrics it serves Prometheus metrics there.
func Serve(ctx context.Context, o ServerOptions, open Opener, stdout, stderr io.Writer) error {
	dev, closeDev, err := open(o.Dev)
	if err != nil {
		return err
	}
	defer closeDev()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	sv := NewServer(o, dev, stdout, stderr)
	if sv.capture, err = o.Pcap.newCapture(); err != nil {
		return fmt.Errorf("--pcap: %w", err)
	}
	if o.Metrics != "" {
		addr, stop, err := sv.ServeMetrics(o.Metrics)
		if err != nil {
			return err
		}
		defer stop()
		fmt.Fprintf(stderr, "roceperf: metrics on http://%v/metrics\n", addr)
	}
	return sv.Serve(ctx, ln)
}

// RunClient runs o against its server on the device open attaches to:
// one run, or with o.All a run per size of the sweep, each its own
// connection and session. It prints each run's report on stdout —
// perftest's table, or with o.JSON one JSON object (Report) per run —
// and notes (the capture's) on stderr. It returns the error that ended
// the runs: the server unreachable or refusing, a run incomplete or
// corrupt, ctx ended.
func RunClient(ctx context.Context, o ClientOptions, open Opener, stdout, stderr io.Writer) error {
	dev, closeDev, err := open(o.Dev)
	if err != nil {
		return err
	}
	defer closeDev()
	capture, err := o.Pcap.newCapture()
	if err != nil {
		return fmt.Errorf("--pcap: %w", err)
	}
	// One run, or -a's sweep: a run per size, each its own connection
	// and session, in one table.
	sizes := []int{o.Size}
	if o.All {
		sizes = sweepSizes()
	}
	var reps []*Report
	for k, size := range sizes {
		ro := o
		ro.Size = size
		if o.All && o.DepthAuto {
			ro.Depth = AutoDepth(size, o.QPs)
		}
		rep, rerr := runClient(ctx, ro, dev, capture)
		if rerr != nil {
			err = rerr
		}
		last := k == len(sizes)-1 || err != nil
		if rep != nil {
			if rerr != nil {
				rep.Error = rerr.Error()
			}
			if last && capture != nil {
				if rep.Pcap, err = o.Pcap.writePcap(capture); err == nil {
					fmt.Fprintln(stderr, rep.Pcap.note(o.Pcap))
				}
				if rerr != nil {
					err = rerr
				}
			}
			reps = append(reps, rep)
			switch {
			case o.JSON:
				rep.writeJSON(stdout)
			case !o.All:
				rep.writeTable(stdout)
			default:
				if k == 0 {
					writeHeader(stdout, rep)
				}
				writeRow(stdout, rep)
			}
		}
		if err != nil {
			break
		}
	}
	if o.All && !o.JSON && len(reps) > 0 {
		fmt.Fprintln(stdout, perftestRule)
		writeSweepSummary(stdout, reps)
	}
	return err
}
