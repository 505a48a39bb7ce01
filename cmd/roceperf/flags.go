package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
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

// Limits a client checks before it connects, so that a bad run is a
// usage error rather than a refusal halfway.
const (
	// maxQPs reaches FaSR's 5,000 concurrent QPs (seed 001 §V-C); the
	// endpoint's tables grow with it, not with the limit, and the
	// client's buffers stay under maxClientMem (autoDepth: one 4 KiB
	// message per QP at 5,000 is 20 MB).
	maxQPs       = 8192
	maxDepth     = 1024
	maxClientMem = 1 << 30 // qps × depth × size bytes of local buffers
)

// srBDP is the default --bdp and maxBDP its largest (nic/stack).
const (
	srBDP  = stack.DefaultBDP
	maxBDP = stack.MaxBDP
)

// newTransport builds one end's loss recovery, by --transport name (one
// of stack.Transports), with the first retransmission timeout the client
// asked for (0: the transport's default) and the BDP in packets IRN's
// and FaSR's SR state is sized for (0: srBDP; gbn and dcp do not depend
// on it, and gbn keeps its own window).
func newTransport(name string, rto time.Duration, bdp int) (nic.Transport, error) {
	return stack.Config{Transport: name, RTO: rto, BDP: bdp}.NewTransport()
}

// knownTransport reports whether roceperf has transport t.
func knownTransport(t string) bool { return slices.Contains(stack.Transports, t) }

// supports reports whether transport t implements op: DCP covers WRITE
// and SEND (seed 002 §4.4), not READ.
func supports(t string, op nic.Op) bool { return t != "dcp" || op != nic.OpRead }

// orderTolerant reports whether transport t places a QP's packets in any
// order, so that a late packet of a message could land after the next
// message written to the same place — unless that one starts after the
// first completed (client.setup limits the depth for it).
func orderTolerant(t string) bool { return t == "dcp" || t == "irn" || t == "fasr" }

// transportNames lists the transports in sorted order.
func transportNames() string {
	return strings.Join(slices.Sorted(slices.Values(stack.Transports)), ", ")
}

var ops = map[string]nic.Op{"write": nic.OpWrite, "send": nic.OpSend, "read": nic.OpRead}

// testOf splits a client command into its operation and whether it is a
// latency test: write, write-bw and write-lat are perftest's
// ib_write_bw and ib_write_lat, and so on.
func testOf(cmd string) (op string, lat, ok bool) {
	op, lat = cmd, strings.HasSuffix(cmd, "-lat")
	op = strings.TrimSuffix(strings.TrimSuffix(op, "-lat"), "-bw")
	_, ok = ops[op]
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

// maxSweep is the largest size of -a: perftest's 8 MiB.
const maxSweep = 8 << 20

// clientOpts are a client run's flags.
type clientOpts struct {
	op        nic.Op
	dev       string
	to        string // host:port
	size      int
	count     int
	qps       int
	depth     int // 0 before autoDepth
	transport string
	mtu       int
	rate      uint64
	poll      dataplane.PollMode
	rto       time.Duration
	bdp       int // packets; 0 before parsing
	timeout   time.Duration
	json      bool
	cc        ccOpts
	// perftest's modes
	lat      bool          // a latency test: one QP, one message in flight
	duration time.Duration // -D: run this long instead of count messages (count is then 0)
	all      bool          // -a: every power-of-two size from 2 B to 8 MiB
	rxDepth  int           // -r: receives the server posts per QP for SEND (0: its own)
	gbits    bool          // --report-gbits: the table in Gb/s instead of MB/s
	cpuUtil  bool          // --cpu-util: report the CPU the client used
	bidir    bool          // -b: the server sends the same messages back at once
	pcap     pcapOpts
	// depthAuto: --depth was 0, so -a sizes each run's depth for its size.
	depthAuto bool
}

// serverOpts are serve's flags.
type serverOpts struct {
	dev     string
	listen  string
	once    bool
	timeout time.Duration
	maxMR   int
	rate    uint64
	poll    dataplane.PollMode
	pcap    pcapOpts
	metrics string // --metrics ADDR: Prometheus /metrics
	clients int    // clients served at once (round.go)
}

const usageText = `usage:
  roceperf serve --dev IFACE [--listen ADDR:PORT] [--once] [--timeout 10s] [--max-mr 64MiB]
          [--clients 1] [--metrics ADDR:PORT] [--poll adaptive] [--pcap FILE [--snaplen N]]
  roceperf write|send|read[-bw] --dev IFACE --to HOST[:PORT] [--size 64KiB] [--count 5000 | -D SECONDS] [-a] [-b]
          [--qps 1] [--transport gbn|dcp|irn|fasr] [--mtu 1024] [--depth 0] [--rx-depth 0] [--rate 0] [--rto 0]
          [--poll adaptive] [--bdp 128] [--timeout 10s] [--json] [--report-gbits] [--cpu-util] [--pcap FILE [--snaplen N]]
          [--cc none|fixed|dcqcn] [--line-rate RATE] [--dcqcn-PARAMETER VALUE ...]
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
func parseClient(cmd string, args []string, stderr io.Writer) (clientOpts, error) {
	name, lat, _ := testOf(cmd)
	o := clientOpts{op: ops[name], lat: lat, qps: 1, transport: "gbn", mtu: 1024, bdp: srBDP, timeout: 10 * time.Second}
	var port int
	var ignoreF bool
	fs := newFlagSet(cmd, stderr)
	fs.StringVar(&o.dev, "dev", "", "interface to run the endpoint on")
	fs.StringVar(&o.to, "to", "", "server `HOST[:PORT]` (or the last argument, as perftest takes it)")
	fs.Var(sizeFlag{&o.size}, "size", "message size in `BYTES` (KiB, MiB, GiB suffixes; default 64KiB, latency tests 2)")
	fs.Var(sizeFlag{&o.size}, "s", "perftest's --size")
	fs.IntVar(&o.count, "count", 0, "messages in all (default 5000, latency tests 1000)")
	fs.IntVar(&o.count, "n", 0, "perftest's --count (iterations)")
	fs.Var(secondsFlag{&o.duration}, "duration", "run for `SECONDS` instead of --count messages")
	fs.Var(secondsFlag{&o.duration}, "D", "perftest's --duration")
	fs.BoolVar(&o.all, "all", false, "every power-of-two size from 2 B to 8 MiB, one run each")
	fs.BoolVar(&o.all, "a", false, "perftest's --all")
	fs.BoolVar(&o.bidir, "bidirectional", false, "bandwidth tests: the server sends the same messages back at the same time")
	fs.BoolVar(&o.bidir, "b", false, "perftest's --bidirectional")
	fs.BoolVar(&ignoreF, "F", false, "perftest's 'do not fail on CPU frequency': accepted, nothing to do")
	fs.IntVar(&o.qps, "qps", o.qps, "QPs; message i goes on QP i mod qps")
	fs.IntVar(&o.qps, "q", o.qps, "perftest's --qps")
	fs.IntVar(&o.depth, "depth", 0, "messages in flight per QP, the send depth (0: automatic, see the docs)")
	fs.IntVar(&o.depth, "t", 0, "perftest's --tx-depth: roceperf's --depth")
	fs.IntVar(&o.rxDepth, "rx-depth", 0, "receives the server posts per QP for SEND (0: its own choice, at least twice --depth)")
	fs.IntVar(&o.rxDepth, "r", 0, "perftest's --rx-depth")
	fs.StringVar(&o.transport, "transport", o.transport, "loss recovery: "+transportNames())
	fs.IntVar(&o.mtu, "mtu", o.mtu, "path MTU: 256, 512, 1024 or 2048")
	fs.IntVar(&o.mtu, "m", o.mtu, "perftest's --mtu")
	fs.IntVar(&port, "p", 0, "perftest's --port: the server's TCP port (default 18515)")
	fs.Var(rateFlag{&o.rate}, "rate", "pace the endpoint to `RATE` bit/s (K, M, G suffixes; 0: unpaced)")
	addPollFlag(fs, &o.poll)
	fs.DurationVar(&o.rto, "rto", 0, "first retransmission timeout of both ends (0: the transport's: 16ms for gbn and fasr, 64ms for dcp, irn's RTO_high 8ms)")
	fs.IntVar(&o.bdp, "bdp", o.bdp, "BDP in packets that both ends size IRN's window and bitmaps and FaSR's window and shared pool for")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "connect, protocol, resolution and completion timeout")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per run")
	fs.BoolVar(&o.gbits, "report-gbits", false, "the table's bandwidth in Gb/s (default MB/s, 2^20 bytes, as perftest)")
	fs.BoolVar(&o.cpuUtil, "cpu-util", false, "report the CPU time the client used (user+system, % of one CPU)")
	addPcapFlags(fs, &o.pcap)
	addCCFlags(fs, &o.cc)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	// perftest puts the server last, after its flags; Go's flag package
	// stops at the first argument, so parse again after it.
	if fs.NArg() > 0 && o.to == "" && !strings.HasPrefix(fs.Arg(0), "-") {
		o.to = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return o, fmt.Errorf("%w: %w", errUsage, err)
		}
	}
	if err := checkCC(fs, &o.cc, o.rate); err != nil {
		return o, err
	}
	if err := o.pcap.check(); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["size"] && !set["s"] {
		o.size = defaultBWSize
		if o.lat {
			o.size = defaultLatSize
		}
	}
	if !set["count"] && !set["n"] {
		o.count = defaultBWCount
		if o.lat {
			o.count = defaultLatCount
		}
	}
	if o.duration > 0 {
		o.count = 0
	}
	if o.all {
		o.size = maxSweep
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q", fs.Arg(0))
	case o.bidir && o.lat:
		return o, usagef("-b: a latency test has no bidirectional form (perftest's has none either)")
	case o.dev == "":
		return o, usagef("--dev is required (perftest's -d names a verbs device; roceperf runs on an interface)")
	case o.to == "":
		return o, usagef("--to is required")
	case o.size < 1 || o.size > nic.MaxMessage:
		return o, usagef("--size %d: want 1 B to %d B (1 GiB)", o.size, nic.MaxMessage)
	case o.duration < 0 || o.duration > 24*time.Hour:
		return o, usagef("--duration %v: want up to 24h", o.duration)
	case o.count < 1 && o.duration == 0:
		return o, usagef("--count %d: want at least 1", o.count)
	case o.qps < 1 || o.qps > maxQPs:
		return o, usagef("--qps %d: want 1 to %d", o.qps, maxQPs)
	case o.lat && (o.qps != 1 || o.depth > 1):
		return o, usagef("a latency test runs one QP with one message in flight: drop --qps and --depth")
	case o.depth < 0 || o.depth > maxDepth:
		return o, usagef("--depth %d: want 0 (automatic) to %d", o.depth, maxDepth)
	case o.rxDepth < 0 || o.rxDepth > 4096:
		return o, usagef("--rx-depth %d: want 0 (the server's choice) to 4096", o.rxDepth)
	case !knownTransport(o.transport):
		return o, usagef("unknown transport %q (roceperf has: %s)", o.transport, transportNames())
	case !supports(o.transport, o.op):
		return o, usagef("--transport %s does not do %s (DCP covers write and send)", o.transport, o.op)
	case !validMTU(o.mtu):
		return o, usagef("--mtu %d: want 256, 512, 1024 or 2048", o.mtu)
	case o.timeout <= 0:
		return o, usagef("--timeout %v: want a positive duration", o.timeout)
	case o.rto < 0 || o.rto > 10*time.Second:
		return o, usagef("--rto %v: want 0 (the transport's default) to 10s", o.rto)
	case o.bdp < 1 || o.bdp > maxBDP:
		return o, usagef("--bdp %d: want 1 to %d packets", o.bdp, maxBDP)
	case port < 0 || port > 65535:
		return o, usagef("-p %d: want a TCP port", port)
	}
	if _, err := newTransport(o.transport, o.rto, o.bdp); err != nil {
		return o, usagef("--transport %s: %v", o.transport, err)
	}
	if o.lat {
		o.depth = 1
	}
	if o.depth == 0 {
		o.depthAuto = true
		o.depth = autoDepth(o.size, o.qps)
	}
	if mem := int64(o.qps) * int64(o.depth) * int64(o.size); mem > maxClientMem {
		return o, usagef("--qps %d × --depth %d × --size %d = %d bytes of buffers, above the %d-byte limit: lower one of them",
			o.qps, o.depth, o.size, mem, maxClientMem)
	}
	if port > 0 {
		if _, _, err := net.SplitHostPort(o.to); err != nil {
			o.to = net.JoinHostPort(strings.Trim(o.to, "[]"), strconv.Itoa(port))
		}
	}
	to, err := hostPort(o.to)
	if err != nil {
		return o, usagef("--to %q: %v", o.to, err)
	}
	o.to = to
	return o, nil
}

func validMTU(m int) bool { return m == 256 || m == 512 || m == 1024 || m == 2048 }

// autoDepth keeps about two Go-Back-N windows (128 packets of 1 KiB,
// 256 KiB) of messages in flight per QP — fewer leave the QP idle
// between messages, more only wait in the send queue — and at least two,
// so that the next message is queued when one completes; but no more
// than 16 MiB over all QPs, which would only lengthen every message's
// completion time (and take memory: the client has a buffer per message
// in flight).
func autoDepth(size, qps int) int {
	const perQP, total = 256 << 10, 16 << 20
	target := min(perQP, total/qps)
	d := min(max((target+size-1)/size, 2), 64)
	if qps*d*size > total {
		d = max(1, total/(qps*size))
	}
	return d
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
func parseServer(args []string, stderr io.Writer) (serverOpts, error) {
	o := serverOpts{listen: ":" + strconv.Itoa(defaultPort), timeout: 10 * time.Second, maxMR: 64 << 20, clients: 1}
	fs := newFlagSet("serve", stderr)
	fs.StringVar(&o.dev, "dev", "", "interface to run the endpoint on")
	fs.StringVar(&o.listen, "listen", o.listen, "TCP `ADDR:PORT` to listen on")
	fs.BoolVar(&o.once, "once", false, "serve one run (with --clients, one round) and exit (0 if it verified)")
	fs.IntVar(&o.clients, "clients", o.clients, "serve up to `N` clients at once, on one endpoint (see the docs)")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "wait for a client's first line at most this long")
	fs.Var(sizeFlag{&o.maxMR}, "max-mr", "memory for a run's region (KiB, MiB, GiB suffixes)")
	fs.Var(rateFlag{&o.rate}, "rate", "pace the server's endpoint to `RATE` bit/s (read responses)")
	addPollFlag(fs, &o.poll)
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics on http://`ADDR:PORT`/metrics")
	addPcapFlags(fs, &o.pcap)
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.pcap.check(); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, usagef("unexpected argument %q", fs.Arg(0))
	case o.dev == "":
		return o, usagef("--dev is required")
	case o.timeout <= 0:
		return o, usagef("--timeout %v: want a positive duration", o.timeout)
	case o.maxMR < 1:
		return o, usagef("--max-mr %d: want at least one byte", o.maxMR)
	case o.clients < 1 || o.clients > maxClients:
		return o, usagef("--clients %d: want 1 to %d", o.clients, maxClients)
	}
	if _, _, err := net.SplitHostPort(o.listen); err != nil {
		return o, usagef("--listen %q: %v", o.listen, err)
	}
	if o.metrics != "" {
		if _, _, err := net.SplitHostPort(o.metrics); err != nil {
			return o, usagef("--metrics %q: %v", o.metrics, err)
		}
	}
	return o, nil
}
