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
	case "write", "send", "read":
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
	return sv.serve(ctx, ln)
}

func clientMain(ctx context.Context, o clientOpts, stdout, stderr io.Writer, open opener) int {
	dev, closeDev, err := open(o.dev)
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: %v\n", err)
		return exitFailure
	}
	defer closeDev()
	rep, err := runClient(ctx, o, dev)
	if rep != nil {
		if err != nil {
			rep.Error = err.Error()
		}
		if o.json {
			rep.writeJSON(stdout)
		} else {
			rep.writeTable(stdout)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "roceperf: %v\n", err)
		return exitFailure
	}
	return exitOK
}
