package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"rocetor/rocev2"
)

// Exit codes.
const (
	exitOK    = 0
	exitIO    = 1
	exitUsage = 2
)

type options struct {
	file, iface string
	count       int
	json, dcp   bool
}

// run is main without the process: it parses args, reads frames until
// the input ends, -c is reached or SIGINT arrives, and returns the exit
// code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, code, ok := parseFlags(args, stderr)
	if !ok {
		return code
	}
	var (
		src  packetSource
		name string
		live bool
		err  error
	)
	if opts.file != "" {
		name = opts.file
		var f *os.File
		if f, err = os.Open(opts.file); err == nil { // the error names the file
			defer f.Close()
			if src, err = openFile(f); err != nil {
				err = fmt.Errorf("%s: %w", opts.file, err)
			}
		}
	} else {
		name, live = opts.iface, true
		src, err = openLive(ctx, opts.iface, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rocedump: %v\n", err)
		return exitIO
	}
	defer src.Close()

	w := bufio.NewWriter(stdout)
	d := &dumper{w: w, json: opts.json, c: rocev2.Classifier{VerifyICRC: true, DCP: opts.dcp}}
	for opts.count == 0 || d.n < opts.count {
		if ctx.Err() != nil {
			break
		}
		data, ci, err := src.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				break // the interrupt closed the socket under the read
			}
			w.Flush()
			fmt.Fprintf(stderr, "rocedump: read %s: %v\n", name, err)
			return exitIO
		}
		d.frame(data, ci)
		if live {
			// A live reader wants each line as it happens.
			err = w.Flush()
		}
		if err != nil {
			break
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "rocedump: write: %v\n", err)
		return exitIO
	}
	if live {
		fmt.Fprintf(stderr, "%d frames captured\n", d.n)
	}
	return exitOK
}

func parseFlags(args []string, stderr io.Writer) (opts options, code int, ok bool) {
	fs := flag.NewFlagSet("rocedump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.file, "r", "", "read frames from a pcap or pcapng `file`")
	fs.StringVar(&opts.iface, "i", "", "capture frames live on `interface` (AF_PACKET)")
	fs.IntVar(&opts.count, "c", 0, "stop after `n` frames (0: no limit)")
	fs.BoolVar(&opts.json, "json", false, "print one JSON object per frame")
	fs.BoolVar(&opts.dcp, "dcp", false, "read non-zero DSCP tags as DCP packets")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rocedump (-r FILE | -i IFACE) [-c N] [-json] [-dcp]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opts, exitOK, false
		}
		return opts, exitUsage, false // the flag package has said why
	}
	var why string
	switch {
	case fs.NArg() > 0:
		why = fmt.Sprintf("unexpected argument %q", fs.Arg(0))
	case (opts.file == "") == (opts.iface == ""):
		why = "give exactly one of -r FILE and -i IFACE"
	case opts.count < 0:
		why = "-c must not be negative"
	}
	if why != "" {
		fmt.Fprintf(stderr, "rocedump: %s\n", why)
		fs.Usage()
		return opts, exitUsage, false
	}
	return opts, 0, true
}

// reader is what pcapgo's file readers and live handle have in common.
type reader interface {
	ReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// packetSource is what rocedump reads frames from.
type packetSource interface {
	reader
	Close() error
}

// Magic numbers at the start of a capture file, as read big-endian.
const (
	magicPcapng     = 0x0a0d0d0a
	magicMicros     = 0xa1b2c3d4
	magicNanos      = 0xa1b23c4d
	magicMicrosSwap = 0xd4c3b2a1
	magicNanosSwap  = 0x4d3cb2a1
)

// openFile tells pcap from pcapng by the first four bytes, so that no
// flag is needed for either.
func openFile(f *os.File) (packetSource, error) {
	r := bufio.NewReader(f)
	m, err := r.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("not a capture file: %w", err)
	}
	var (
		rd reader
		lt layers.LinkType
	)
	switch uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3]) {
	case magicPcapng:
		ng, err := pcapgo.NewNgReader(r, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("read pcapng header: %w", err)
		}
		rd, lt = ng, ng.LinkType()
	case magicMicros, magicNanos, magicMicrosSwap, magicNanosSwap:
		p, err := pcapgo.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("read pcap header: %w", err)
		}
		rd, lt = p, p.LinkType()
	default:
		return nil, fmt.Errorf("not a pcap or pcapng file (magic %x)", m)
	}
	if lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("link type %v: only Ethernet captures are supported", lt)
	}
	return fileSource{rd}, nil
}

type fileSource struct{ reader }

// Close does nothing: the file is closed by its opener.
func (fileSource) Close() error { return nil }
