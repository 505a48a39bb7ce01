package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"rocetor/nic/host"
)

// run is main without the process: it parses args, runs the command and
// returns the exit code. SIGINT and SIGTERM end it cleanly.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr, openHost)
}

// openHost attaches to --dev; tests substitute a fake device.
func openHost(dev string) (device, func(), error) {
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("roceperf attaches XDP and AF_XDP to %s: it needs root or CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF and CAP_SYS_ADMIN", dev)
	}
	h, err := host.Open(host.Config{Dev: dev})
	if err != nil {
		return nil, nil, err
	}
	return hostDevice{h}, func() { h.Close() }, nil
}

type opener func(dev string) (device, func(), error)

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, open opener) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		o, err := parseServer(rest, stderr)
		if err != nil {
			return usageError(stderr, err)
		}
		return serveMain(ctx, o, stdout, stderr, open)
	case "write", "send", "read", "write-bw", "send-bw", "read-bw", "write-lat", "send-lat", "read-lat":
		o, err := parseClient(cmd, rest, stderr)
		if err != nil {
			return usageError(stderr, err)
		}
		return clientMain(ctx, o, stdout, stderr, open)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "roceperf: unknown command %q\n%s", cmd, usageText)
	return exitUsage
}

// usageError reports a flag error; the flag package has already printed
// its own for -h and unknown flags.
func usageError(stderr io.Writer, err error) int {
	if errors.Is(err, errHelp) {
		return exitOK
	}
	fmt.Fprintf(stderr, "roceperf: %v\n", err)
	return exitUsage
}

func serveMain(ctx context.Context, o serverOpts, stdout, stderr io.Writer, open opener) int {
	dev, closeDev, err := open(o.dev)
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: %v\n", err)
		return exitFailure
	}
	defer closeDev()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: listen: %v\n", err)
		return exitFailure
	}
	defer ln.Close()
	sv := &server{o: o, dev: dev, out: stdout, log: stderr}
	if sv.capture, err = o.pcap.newCapture(); err != nil {
		fmt.Fprintf(stderr, "roceperf: --pcap: %v\n", err)
		return exitFailure
	}
	if o.metrics != "" {
		sv.metrics = newServeMetrics()
		addr, stop, err := serveMetricsHTTP(o.metrics, sv.metrics)
		if err != nil {
			fmt.Fprintf(stderr, "roceperf: %v\n", err)
			return exitFailure
		}
		defer stop()
		fmt.Fprintf(stderr, "roceperf: metrics on http://%v/metrics\n", addr)
	}
	return sv.serve(ctx, ln)
}

func clientMain(ctx context.Context, o clientOpts, stdout, stderr io.Writer, open opener) int {
	dev, closeDev, err := open(o.dev)
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: %v\n", err)
		return exitFailure
	}
	defer closeDev()
	capture, err := o.pcap.newCapture()
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: --pcap: %v\n", err)
		return exitFailure
	}
	// One run, or -a's sweep: a run per size, each its own connection
	// and session, in one table.
	sizes := []int{o.size}
	if o.all {
		sizes = sweepSizes()
	}
	var reps []*report
	for k, size := range sizes {
		ro := o
		ro.size = size
		if o.all && o.depthAuto {
			ro.depth = autoDepth(size, o.qps)
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
				if rep.Pcap, err = o.pcap.writePcap(capture); err == nil {
					fmt.Fprintln(stderr, rep.Pcap.note(o.pcap))
				}
				if rerr != nil {
					err = rerr
				}
			}
			reps = append(reps, rep)
			switch {
			case o.json:
				rep.writeJSON(stdout)
			case !o.all:
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
	if o.all && !o.json && len(reps) > 0 {
		fmt.Fprintln(stdout, perftestRule)
		writeSweepSummary(stdout, reps)
	}
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: %v\n", err)
		return exitFailure
	}
	return exitOK
}
