package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"rocetor/nic/perf"
)

// run is main without the process: it parses args, runs the command and
// returns the exit code. SIGINT and SIGTERM end it cleanly.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr, perf.OpenHost)
}

// runContext runs the command args name with the device open attaches
// to (tests pass a fake) and returns the exit code.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer, open perf.Opener) int {
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
		return exitCode(stderr, perf.Serve(ctx, o, open, stdout, stderr))
	case "write", "send", "read", "write-bw", "send-bw", "read-bw", "write-lat", "send-lat", "read-lat":
		o, err := parseClient(cmd, rest, stderr)
		if err != nil {
			return usageError(stderr, err)
		}
		return exitCode(stderr, perf.RunClient(ctx, o, open, stdout, stderr))
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

// exitCode reports a run's error and returns the exit code: 0 without
// one, 1 with one. A --once round that failed has logged its runs.
func exitCode(stderr io.Writer, err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, perf.ErrRoundFailed):
		return exitFailure
	}
	fmt.Fprintf(stderr, "roceperf: %v\n", err)
	return exitFailure
}
