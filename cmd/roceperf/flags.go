package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/perf"
	"rocetor/nic/stack"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// defaultPort is perftest's.
const defaultPort = 18515

// testOf splits a client command into its operation and whether it is a
// latency test: write, write-bw and write-lat are perftest's
// ib_write_bw and ib_write_lat, and so on.
func testOf(cmd string) (op string, lat, ok bool) {
	op, lat = cmd, strings.HasSuffix(cmd, "-lat")
	op = strings.TrimSuffix(strings.TrimSuffix(op, "-lat"), "-bw")
	_, ok = perf.Ops[op]
	return op, lat, ok
}

// Perftest's defaults: 64 KiB messages and 5000 iterations for the
// bandwidth tests, 2 B and 1000 for the latency tests.
const (
	defaultBWSize   = 64 << 10
	defaultBWCount  = 5000
	defaultLatSize  = 2
	defaultLatCount = 1000
)

const usageText = `usage:
  roceperf serve --dev IFACE [--listen ADDR:PORT] [--once] [--timeout 10s] [--max-mr 64MiB]
          [--clients 1] [--metrics ADDR:PORT] [--poll adaptive] [--pcap FILE [--snaplen N]]
  roceperf write|send|read[-bw] --dev IFACE --to HOST[:PORT] [--size 64KiB] [--count 5000 | -D SECONDS] [-a] [-b]
          [--qps 1] [--transport gbn|dcp|irn|fasr] [--mtu 1024] [--depth 0] [--rx-depth 0] [--rate 0] [--rto 0]
          [--poll adaptive] [--bdp 128] [--timeout 10s] [--json] [--report-gbits] [--cpu-util] [--pcap FILE [--snaplen N]]
          [--cc none|fixed|dcqcn|timely|hpcc] [--line-rate RATE] [--dcqcn-PARAMETER VALUE ...] [--timely-PARAMETER VALUE ...] [--hpcc-PARAMETER VALUE ...]
  roceperf write-lat|send-lat|read-lat --dev IFACE --to HOST[:PORT] [--size 2] [--count 1000 | -D SECONDS] [-a] ...
  perftest's spellings: -s SIZE, -n ITERS, -q QPS, -m MTU, -t TX-DEPTH, -r RX-DEPTH, -D SECONDS, -a, -b, -F,
  -p PORT, and the server as the last argument (roceperf write-bw --dev eth0 -s 4096 10.0.0.2)
`

// errUsage marks a flag error, reported with exit code 2; errHelp is
// -h, which the flag package has answered.
var (
	errUsage = errors.New("usage")
	errHelp  = flag.ErrHelp
)

func usagef(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}

// sizeFlag is a flag.Value for byte sizes with KiB/MiB/GiB suffixes.
type sizeFlag struct{ v *int }

func (s sizeFlag) String() string {
	if s.v == nil {
		return "0"
	}
	return strconv.Itoa(*s.v)
}

func (s sizeFlag) Set(v string) error {
	var b dataplane.Bytes
	if err := b.UnmarshalText([]byte(v)); err != nil {
		return err
	}
	*s.v = int(b)
	return nil
}

// rateFlag is a flag.Value for rates with K/M/G suffixes.
// pollFlag is --poll: the endpoint worker's poll mode. Adaptive by
// default; interrupt where the host shares a few CPUs with switches and
// other hosts (the testbed's SR experiments), whose spinning workers
// kept the switches from a CPU.
type pollFlag struct{ v *dataplane.PollMode }

func (p pollFlag) String() string {
	if p.v == nil {
		return dataplane.Adaptive.String()
	}
	return p.v.String()
}

func (p pollFlag) Set(v string) (err error) {
	*p.v, err = dataplane.ParsePollMode(v)
	return err
}

// addClassFlags adds --tclass and --cnp-dscp, the classes a switch
// sorts the endpoint's frames by (perf.ClassOptions).
func addClassFlags(fs *flag.FlagSet, c *perf.ClassOptions) {
	fs.Var(tclassFlag{c}, "tclass", "IP traffic class `TCLASS` of the endpoint's frames, perftest's --tclass: DSCP TCLASS/4, 0 to 255 (default 106, DSCP 26; 96, DSCP 24, with --transport dcp)")
	fs.IntVar(&c.CNPDSCP, "cnp-dscp", 0, "`DSCP` of the CNPs the endpoint sends, ConnectX's cnp_dscp (0: 48)")
}

// tclassFlag is --tclass: 0 to 3 is DSCP 0, which perf.ClassOptions
// keeps apart from its default (BestEffort).
type tclassFlag struct{ c *perf.ClassOptions }

func (f tclassFlag) String() string {
	if f.c == nil || f.c.TClass == 0 && !f.c.BestEffort {
		return ""
	}
	return strconv.Itoa(f.c.TClass)
}

func (f tclassFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 255 {
		return fmt.Errorf("want 0 to 255")
	}
	f.c.TClass, f.c.BestEffort = n, n < 4
	if n < 4 {
		f.c.TClass = 0
	}
	return nil
}

func addPollFlag(fs *flag.FlagSet, v *dataplane.PollMode) {
	*v = dataplane.Adaptive
	fs.Var(pollFlag{v}, "poll", "the endpoint's polling: `MODE` adaptive, busy or interrupt (sleeps as soon as idle)")
}

type rateFlag struct{ v *uint64 }

func (r rateFlag) String() string {
	if r.v == nil {
		return "0"
	}
	return strconv.FormatUint(*r.v, 10)
}

func (r rateFlag) Set(v string) error {
	var x dataplane.Rate
	if err := x.UnmarshalText([]byte(v)); err != nil {
		return err
	}
	*r.v = uint64(x)
	return nil
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("roceperf "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	return fs
}

// secondsFlag is perftest's -D: whole seconds, or a Go duration.
type secondsFlag struct{ v *time.Duration }

func (s secondsFlag) String() string {
	if s.v == nil {
		return "0"
	}
	return s.v.String()
}

func (s secondsFlag) Set(v string) error {
	if n, err := strconv.Atoi(v); err == nil {
		*s.v = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want seconds or a duration (10, 2.5s, 500ms)")
	}
	*s.v = d
	return nil
}

// parseClient parses a client command line (args after the subcommand:
// write, send or read, with -bw or -lat).
func parseClient(cmd string, args []string, stderr io.Writer) (perf.ClientOptions, error) {
	name, lat, _ := testOf(cmd)
	o := perf.ClientOptions{Op: perf.Ops[name], Lat: lat, QPs: 1, Transport: "gbn", MTU: 1024, BDP: stack.DefaultBDP, Timeout: 10 * time.Second}
	var port int
	fs := clientFlags(cmd, &o, &port, stderr)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	// perftest puts the server last, after its flags; Go's flag package
	// stops at the first argument, so parse again after it.
	if fs.NArg() > 0 && o.To == "" && !strings.HasPrefix(fs.Arg(0), "-") {
		o.To = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return o, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	if err := checkCC(fs, &o.CC, o.Rate); err != nil {
		return o, err
	}
	if err := checkPcap(o.Pcap); err != nil {
		return o, err
	}
	clientDefaults(fs, &o)
	if err := checkClient(fs, &o, port); err != nil {
		return o, err
	}
	return o, finishClient(&o, port)
}

// clientFlags registers a client command's flags, roceperf's and
// perftest's spellings, on a new flag set.
func clientFlags(cmd string, o *perf.ClientOptions, port *int, stderr io.Writer) *flag.FlagSet {
	var ignoreF bool
	fs := newFlagSet(cmd, stderr)
	fs.StringVar(&o.Dev, "dev", "", "interface to run the endpoint on")
	fs.StringVar(&o.To, "to", "", "server `HOST[:PORT]` (or the last argument, as perftest takes it)")
	fs.Var(sizeFlag{&o.Size}, "size", "message size in `BYTES` (KiB, MiB, GiB suffixes; default 64KiB, latency tests 2)")
	fs.Var(sizeFlag{&o.Size}, "s", "perftest's --size")
	fs.IntVar(&o.Count, "count", 0, "messages in all (default 5000, latency tests 1000)")
	fs.IntVar(&o.Count, "n", 0, "perftest's --count (iterations)")
	fs.Var(secondsFlag{&o.Duration}, "duration", "run for `SECONDS` instead of --count messages")
	fs.Var(secondsFlag{&o.Duration}, "D", "perftest's --duration")
	fs.BoolVar(&o.All, "all", false, "every power-of-two size from 2 B to 8 MiB, one run each")
	fs.BoolVar(&o.All, "a", false, "perftest's --all")
	fs.BoolVar(&o.Bidir, "bidirectional", false, "bandwidth tests: the server sends the same messages back at the same time")
	fs.BoolVar(&o.Bidir, "b", false, "perftest's --bidirectional")
	fs.BoolVar(&ignoreF, "F", false, "perftest's 'do not fail on CPU frequency': accepted, nothing to do")
	fs.IntVar(&o.QPs, "qps", o.QPs, "QPs; message i goes on QP i mod qps")
	fs.IntVar(&o.QPs, "q", o.QPs, "perftest's --qps")
	fs.IntVar(&o.Depth, "depth", 0, "messages in flight per QP, the send depth (0: automatic, see the docs)")
	fs.IntVar(&o.Depth, "t", 0, "perftest's --tx-depth: roceperf's --depth")
	fs.IntVar(&o.RxDepth, "rx-depth", 0, "receives the server posts per QP for SEND (0: its own choice, at least twice --depth)")
	fs.IntVar(&o.RxDepth, "r", 0, "perftest's --rx-depth")
	fs.StringVar(&o.Transport, "transport", o.Transport, "loss recovery: "+perf.TransportNames())
	fs.IntVar(&o.MTU, "mtu", o.MTU, "path MTU: 256, 512, 1024 or 2048")
	fs.IntVar(&o.MTU, "m", o.MTU, "perftest's --mtu")
	fs.IntVar(port, "p", 0, "perftest's --port: the server's TCP port (default 18515)")
	fs.Var(rateFlag{&o.Rate}, "rate", "pace the endpoint to `RATE` bit/s (K, M, G suffixes; 0: unpaced)")
	addPollFlag(fs, &o.Poll)
	addClassFlags(fs, &o.Class)
	fs.DurationVar(&o.RTO, "rto", 0, "first retransmission timeout of both ends (0: the transport's: 16ms for gbn and fasr, 64ms for dcp, irn's RTO_high 8ms)")
	fs.IntVar(&o.BDP, "bdp", o.BDP, "BDP in packets that both ends size IRN's window and bitmaps and FaSR's window and shared pool for")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "connect, protocol, resolution and completion timeout")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per run")
	fs.BoolVar(&o.Gbits, "report-gbits", false, "the table's bandwidth in Gb/s (default MB/s, 2^20 bytes, as perftest)")
	fs.BoolVar(&o.CPUUtil, "cpu-util", false, "report the CPU time the client used (user+system, % of one CPU)")
	addPcapFlags(fs, &o.Pcap)
	addCCFlags(fs, &o.CC)
	return fs
}

// clientDefaults gives --size and --count perftest's defaults for the
// test when they are not set; -D and -a override them.
func clientDefaults(fs *flag.FlagSet, o *perf.ClientOptions) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["size"] && !set["s"] {
		o.Size = defaultBWSize
		if o.Lat {
			o.Size = defaultLatSize
		}
	}
	if !set["count"] && !set["n"] {
		o.Count = defaultBWCount
		if o.Lat {
			o.Count = defaultLatCount
		}
	}
	if o.Duration > 0 {
		o.Count = 0
	}
	if o.All {
		o.Size = perf.MaxSweep
	}
}

// checkClient checks a client command's flags and the transport they
// build.
func checkClient(fs *flag.FlagSet, o *perf.ClientOptions, port int) error {
	if err := o.Class.Check(); err != nil {
		return usagef("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected argument %q", fs.Arg(0))
	case o.Bidir && o.Lat:
		return usagef("-b: a latency test has no bidirectional form (perftest's has none either)")
	case o.Dev == "":
		return usagef("--dev is required (perftest's -d names a verbs device; roceperf runs on an interface)")
	case o.To == "":
		return usagef("--to is required")
	case o.Size < 1 || o.Size > nic.MaxMessage:
		return usagef("--size %d: want 1 B to %d B (1 GiB)", o.Size, nic.MaxMessage)
	case o.Duration < 0 || o.Duration > 24*time.Hour:
		return usagef("--duration %v: want up to 24h", o.Duration)
	case o.Count < 1 && o.Duration == 0:
		return usagef("--count %d: want at least 1", o.Count)
	case o.QPs < 1 || o.QPs > perf.MaxQPs:
		return usagef("--qps %d: want 1 to %d", o.QPs, perf.MaxQPs)
	case o.Lat && (o.QPs != 1 || o.Depth > 1):
		return usagef("a latency test runs one QP with one message in flight: drop --qps and --depth")
	case o.Depth < 0 || o.Depth > perf.MaxDepth:
		return usagef("--depth %d: want 0 (automatic) to %d", o.Depth, perf.MaxDepth)
	case o.RxDepth < 0 || o.RxDepth > 4096:
		return usagef("--rx-depth %d: want 0 (the server's choice) to 4096", o.RxDepth)
	case !perf.KnownTransport(o.Transport):
		return usagef("unknown transport %q (roceperf has: %s)", o.Transport, perf.TransportNames())
	case !perf.Supports(o.Transport, o.Op):
		return usagef("--transport %s does not do %s (DCP covers write and send)", o.Transport, o.Op)
	case !perf.ValidMTU(o.MTU):
		return usagef("--mtu %d: want 256, 512, 1024 or 2048", o.MTU)
	case o.Timeout <= 0:
		return usagef("--timeout %v: want a positive duration", o.Timeout)
	case o.RTO < 0 || o.RTO > 10*time.Second:
		return usagef("--rto %v: want 0 (the transport's default) to 10s", o.RTO)
	case o.BDP < 1 || o.BDP > stack.MaxBDP:
		return usagef("--bdp %d: want 1 to %d packets", o.BDP, stack.MaxBDP)
	case port < 0 || port > 65535:
		return usagef("-p %d: want a TCP port", port)
	}
	if _, err := perf.NewTransport(o.Transport, o.RTO, o.BDP); err != nil {
		return usagef("--transport %s: %v", o.Transport, err)
	}
	if err := o.CC.Pairs(o.Transport); err != nil {
		return usagef("--transport %s --cc %s: %v", o.Transport, o.CC.Name, err)
	}
	return nil
}

// finishClient sizes the depth (automatic unless --depth), checks the
// client's buffers, and completes the server's address with -p or the
// default port.
func finishClient(o *perf.ClientOptions, port int) error {
	if o.Lat {
		o.Depth = 1
	}
	if o.Depth == 0 {
		o.DepthAuto = true
		o.Depth = perf.AutoDepth(o.Size, o.QPs)
	}
	if mem := int64(o.QPs) * int64(o.Depth) * int64(o.Size); mem > perf.MaxClientMem {
		return usagef("--qps %d × --depth %d × --size %d = %d bytes of buffers, above the %d-byte limit: lower one of them",
			o.QPs, o.Depth, o.Size, mem, perf.MaxClientMem)
	}
	if port > 0 {
		if _, _, err := net.SplitHostPort(o.To); err != nil {
			o.To = net.JoinHostPort(strings.Trim(o.To, "[]"), strconv.Itoa(port))
		}
	}
	to, err := hostPort(o.To)
	if err != nil {
		return usagef("--to %q: %v", o.To, err)
	}
	o.To = to
	return nil
}

// hostPort adds the default port to s unless it has one; a bare IPv6
// address is taken whole.
func hostPort(s string) (string, error) {
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return net.JoinHostPort(a.String(), strconv.Itoa(defaultPort)), nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return net.JoinHostPort(s, strconv.Itoa(defaultPort)), nil
		}
		return "", err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("port %q: want 1 to 65535", port)
	}
	if host == "" {
		return "", errors.New("no host")
	}
	return s, nil
}

// parseServer parses serve's command line.
func parseServer(args []string, stderr io.Writer) (perf.ServerOptions, error) {
	o := perf.ServerOptions{Listen: ":" + strconv.Itoa(defaultPort), Timeout: 10 * time.Second, MaxMR: 64 << 20, Clients: 1}
	fs := newFlagSet("serve", stderr)
	fs.StringVar(&o.Dev, "dev", "", "interface to run the endpoint on")
	fs.StringVar(&o.Listen, "listen", o.Listen, "TCP `ADDR:PORT` to listen on")
	fs.BoolVar(&o.Once, "once", false, "serve one run (with --clients, one round) and exit (0 if it verified)")
	fs.IntVar(&o.Clients, "clients", o.Clients, "serve up to `N` clients at once, on one endpoint (see the docs)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "wait for a client's first line at most this long")
	fs.Var(sizeFlag{&o.MaxMR}, "max-mr", "memory for a run's region (KiB, MiB, GiB suffixes)")
	fs.Var(rateFlag{&o.Rate}, "rate", "pace the server's endpoint to `RATE` bit/s (read responses)")
	addPollFlag(fs, &o.Poll)
	addClassFlags(fs, &o.Class)
	fs.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics on http://`ADDR:PORT`/metrics")
	addPcapFlags(fs, &o.Pcap)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := checkPcap(o.Pcap); err != nil {
		return o, err
	}
	if err := o.Class.Check(); err != nil {
		return o, usagef("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q", fs.Arg(0))
	case o.Dev == "":
		return o, usagef("--dev is required")
	case o.Timeout <= 0:
		return o, usagef("--timeout %v: want a positive duration", o.Timeout)
	case o.MaxMR < 1:
		return o, usagef("--max-mr %d: want at least one byte", o.MaxMR)
	case o.Clients < 1 || o.Clients > perf.MaxClients:
		return o, usagef("--clients %d: want 1 to %d", o.Clients, perf.MaxClients)
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return o, usagef("--listen %q: %v", o.Listen, err)
	}
	if o.Metrics != "" {
		if _, _, err := net.SplitHostPort(o.Metrics); err != nil {
			return o, usagef("--metrics %q: %v", o.Metrics, err)
		}
	}
	return o, nil
}

func addPcapFlags(fs *flag.FlagSet, o *perf.PcapOptions) {
	fs.StringVar(&o.File, "pcap", "", "write the frames the endpoint sends and receives to `FILE` (nanosecond pcap)")
	fs.IntVar(&o.Snaplen, "snaplen", perf.DefaultSnaplen, "bytes of each frame --pcap keeps")
}

// checkPcap checks --pcap and --snaplen: the file must be writable
// before the run, not after it.
func checkPcap(o perf.PcapOptions) error {
	if o.File == "" {
		return nil
	}
	if o.Snaplen < 64 || o.Snaplen > 65535 {
		return usagef("--snaplen %d: want 64 to 65535 bytes", o.Snaplen)
	}
	// Fail before the run, not after it.
	f, err := os.OpenFile(o.File, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return usagef("--pcap: %v", err)
	}
	return f.Close()
}
