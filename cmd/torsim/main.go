package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

func main() {
	args := os.Args[1:]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(args) > 0 && args[0] == "merge":
		err = merge(args[1:])
	case len(args) > 0 && args[0] == "sweep-pack":
		err = sweepPack(args[1:])
	case len(args) > 0 && args[0] == "list":
		err = lab.WriteCatalogue(os.Stdout)
	case len(args) > 0 && args[0] == "run":
		err = cmdRun(ctx, args[1:], os.Stdout, os.Stderr)
	case len(args) > 0 && args[0] == "merge-run":
		err = cmdMergeRun(ctx, args[1:], os.Stdout, os.Stderr)
	default:
		err = run(ctx, args)
	}
	switch {
	case errors.Is(err, lab.ErrUsage):
		fmt.Fprintln(os.Stderr, "torsim:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "torsim:", err)
		os.Exit(1)
	}
}

type rateFlag struct{ v *uint64 }

func (r rateFlag) String() string {
	if r.v == nil {
		return "0"
	}
	return fmt.Sprint(*r.v)
}
func (r rateFlag) Set(s string) error {
	var x dataplane.Rate
	if err := x.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	*r.v = uint64(x)
	return nil
}

type bytesFlag struct{ v *int }

func (b bytesFlag) String() string {
	if b.v == nil {
		return "0"
	}
	return fmt.Sprint(*b.v)
}
func (b bytesFlag) Set(s string) error {
	var x dataplane.Bytes
	if err := x.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	*b.v = int(x)
	return nil
}

// binsFlag is --bins: sizes with units, written back in bytes (a sweep
// passes the flags given beside it to every cell by their String).
type binsFlag struct{ v *[]int }

func (b binsFlag) String() string {
	if b.v == nil || *b.v == nil {
		return ""
	}
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(*b.v)), ","), "[]")
}
func (b binsFlag) Set(s string) (err error) {
	*b.v, err = fabric.ParseBins(s)
	return err
}

// freeRun is a free-form simulation: a topology, switches from YAML,
// hosts, a workload, as torsim's flags give them.
type freeRun struct {
	topo                           string
	tiers                          topo.Tiers
	hostDelay, fabDelay, coreDelay time.Duration
	swFile                         string
	switchFor                      map[string]string
	opts                           fabric.Options // Switch, SwitchFor, MaxMessage, MaxQPs set from the above
	wl                             workload.Spec
	wlFile, linkLoss               string
	qps                            int
	op                             string
	until                          time.Duration
	out, dump                      string
	flows, drops                   string
	jitter                         time.Duration
	dropLog                        *dropLog // --drops, open from build to the run's end
	stats                          fabric.StatsOptions
	warmup, measure                time.Duration
	quiet                          bool
	cpuprof, memprof               string
	sweep                          string
	cell                           int
	stall                          fabric.Stalls
}

func (f *freeRun) flags(fs *flag.FlagSet) {
	f.tiers = topo.DefaultTiers()
	f.tiers.FabricRate = 0
	f.switchFor = map[string]string{}
	f.wl = workload.Spec{Size: 1 << 20}
	fs.StringVar(&f.topo, "topo", "chain", "topology `SHAPE|file:PATH`: "+topo.Syntax+" (tor/topo)")
	fs.DurationVar(&f.hostDelay, "delay", time.Microsecond, "propagation delay of host links")
	fs.DurationVar(&f.fabDelay, "fabric-delay", time.Microsecond, "propagation delay of switch-to-switch links")
	fs.DurationVar(&f.coreDelay, "core-delay", 0, "propagation delay of a fat tree's core links (0: --fabric-delay)")
	fs.Var(rateFlag{&f.tiers.HostRate}, "rate", "host link rate, e.g. 100G")
	fs.Var(rateFlag{&f.tiers.FabricRate}, "fabric-rate", "switch-to-switch link rate (default: --rate)")
	fs.Var(rateFlag{&f.tiers.CoreRate}, "core-rate", "a fat tree's core link rate (default: --fabric-rate)")
	fs.StringVar(&f.swFile, "switch", "", "tord YAML `FILE` every switch is built from, without ports (\"fabric\", \"hosts\", \"all\" in port lists)")
	fs.Func("switch-for", "`NAME=FILE`: build switch NAME (or the switches a pattern such as tor* matches) from FILE instead of --switch (repeatable)", func(v string) error {
		name, file, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want NAME=FILE")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		f.switchFor[name] = string(b)
		return nil
	})
	o := &f.opts
	fs.StringVar(&o.Transport, "transport", "gbn", "hosts' loss recovery: gbn, irn, fasr or dcp")
	fs.StringVar(&o.CC, "cc", "none", "hosts' congestion control: none, fixed, dcqcn, timely or hpcc (timely: not with dcp; hpcc: switches need int:)")
	fs.DurationVar(&o.RTO, "rto", 0, "first retransmission timeout (0: the transport's default)")
	fs.IntVar(&o.BDP, "bdp", 0, "packets Go-Back-N's, IRN's and FaSR's windows span (0: 128)")
	fs.IntVar(&o.GBNWindow, "gbn-window", 0, "Go-Back-N's window in packets, replacing --bdp for gbn (a RoCE NIC has no BDP cap; 0: --bdp)")
	fs.DurationVar(&o.RTOLow, "rto-low", 0, "IRN's RTO_low, the timeout with at most 3 packets in flight (0: 8ms, or --rto if shorter)")
	fs.BoolVar(&o.IRNGoBackN, "irn-gbn", false, "IRN's first ablation (seed 004 §4.3): go-back-N recovery instead of SACKs, BDP-FC kept")
	fs.IntVar(&o.IRNNoBDPFC, "irn-no-bdpfc", 0, "IRN's second ablation (seed 004 §4.3): BDP-FC off, the bitmaps tracking this many packets (0: BDP-FC on)")
	fs.IntVar(&o.IRNAckEvery, "irn-ack-every", 0, "IRN's receiver acknowledges after this many in-order packets unasked (0: 16, at most half the window)")
	fs.IntVar(&o.FaSRPoolBDP, "fasr-pool-bdp", 0, "packets FaSR's shared SR pool is sized for: 20 units and 70 blocks per 500 (0: --bdp)")
	fs.IntVar(&o.MTU, "mtu", 1024, "QP MTU")
	fs.IntVar(&o.Overhead, "overhead", 24, "bytes the wire adds to a frame (preamble, FCS, gap); 0 as htsim")
	fs.IntVar(&o.RxRing, "rx-ring", 1024, "frames a port's receive ring holds")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of every random stream")
	fs.IntVar(&o.Threads, "threads", 1, "goroutines (cores) that run the simulation, on as many partitions of the topology; the results are the same for any")
	f.workloadFlags(fs)
	fs.IntVar(&f.qps, "qps", 1, "QPs per host pair")
	fs.StringVar(&f.op, "op", "write", "verb: write or send")
	fs.DurationVar(&f.until, "until", 0, "stop at this simulated time (0: when every flow completed, at most 10s)")
	fs.StringVar(&f.out, "out", "", "`DIR` for result.json and result.md (empty: Markdown on stdout)")
	fs.StringVar(&f.flows, "flows", "", "write one line per completed flow here, ns-3 fct.txt's columns first (relative to --out when given)")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each frame any port sends by up to this much more than its link's delay, uniformly, keeping order (0: none)")
	fs.StringVar(&f.drops, "drops", "", "write one line per frame a switch drops here: time, switch, ports, reason, flow, PSN (relative to --out when given; one thread)")
	fs.Var(binsFlag{&f.stats.Bins}, "bins", "upper bounds of the FCT size bins (default 10KB,100KB,1MB,10MB: NetRT's flow sizes and DCP's large flows)")
	fs.Var(bytesFlag{&f.stats.ShortBelow}, "short-below", "flows smaller are short, the others long (default 200KB: DCP's small flows, IRN's background from there)")
	fs.DurationVar(&f.warmup, "warmup", 0, "leave flows posted before this simulated time out of every statistic (they still run)")
	fs.DurationVar(&f.measure, "measure", 0, "measure the flows posted in this long after --warmup only: later ones run but count in no statistic (0: to the end)")
	fs.BoolVar(&f.quiet, "quiet", false, "no progress line")
	fs.StringVar(&f.cpuprof, "cpuprofile", "", "write a CPU profile here")
	fs.StringVar(&f.dump, "dump-traffic", "", "write the flows to this traffic file too (`OUT`)")
	fs.StringVar(&f.memprof, "memprofile", "", "write a heap profile here at the end")
	fs.StringVar(&f.sweep, "sweep", "", "run the cells of this sweep `FILE` (JSON: common flags and a list of cells' flags) into --out/cell-N")
	fs.Var(&f.stall, "stall", "take switches or hosts off their CPU: "+fabric.StallSyntax+" (tor/fabric Stall)")
	fs.IntVar(&f.cell, "cell", -1, "with --sweep: run only this cell (default: $JOB_COMPLETION_INDEX, else every cell)")
}

// workloadFlags are the flags of the workload (workload.Spec) and
// --link-loss.
func (f *freeRun) workloadFlags(fs *flag.FlagSet) {
	w := &f.wl
	fs.StringVar(&w.Name, "workload", "permutation", "`NAME`: permutation, incast, sequential-incast, alltoall, allreduce, sequence, poisson or file; several joined by + run together (poisson+incast)")
	fs.StringVar(&f.wlFile, "workload-file", "", "JSON `FILE` of generators with their start times, each with the workload flags as keys (replaces --workload; docs/simulator.md)")
	fs.StringVar(&w.Traffic, "traffic", "", "traffic `FILE` for --workload file (src dst size start_ns [after])")
	fs.StringVar(&w.CDF, "cdf", "websearch", "flow sizes for poisson (`NAME|FILE`): websearch, datamining, hadoop or a file")
	fs.Float64Var(&w.Load, "load", 0.5, "poisson: offered load per host, of its link rate")
	fs.DurationVar(&w.Duration, "duration", time.Millisecond, "poisson: how long flows arrive; incast: how long bursts repeat")
	fs.IntVar(&w.Incast, "incast", 8, "incast, sequential-incast: senders (incast alone: hosts 1…N to host 0)")
	fs.StringVar(&w.IncastFrom, "incast-from", "", "incast senders: same (the receiver's rack, then the hosts after it), racks (other racks) or any (default same; racks for sequential-incast; any beside poisson)")
	fs.Var(incastToFlag{w}, "incast-to", "incast receiver: a host index or random, drawn per burst (default 0; random beside poisson, as DCP)")
	fs.Var(bytesFlag{&w.IncastSize}, "incast-size", "incast flow size (default --size; sequential-incast 500KB, NetRT §IV-B)")
	fs.DurationVar(&w.IncastPeriod, "incast-period", 0, "incast: a burst every period until --duration (0: one); sequential-incast: gap between senders (default 10us)")
	fs.Float64Var(&w.IncastLoad, "incast-load", 0, "incast: Poisson bursts until --duration offering this load of all hosts' links (replaces --incast-period)")
	fs.IntVar(&w.Count, "count", 100, "sequence: messages from host 0 to the last host")
	fs.IntVar(&w.Depth, "depth", 1, "sequence: messages in flight")
	fs.Var(bytesFlag{&w.Size}, "size", "flow size of permutation, incast, alltoall, allreduce")
	fs.Var(bytesFlag{&w.MaxSize}, "max-size", "poisson: cap on flow sizes (0: none)")
	fs.StringVar(&f.linkLoss, "link-loss", "", "`FILE` of per-link loss or corruption rates: \"A B RATE [corrupt]\" or \"draw fabric|hosts|all FRACTION W:LO:HI… [corrupt]\" lines")
}

// incastToFlag is --incast-to: a host index or "random" (-1).
type incastToFlag struct{ s *workload.Spec }

func (i incastToFlag) String() string {
	switch {
	case i.s == nil:
		return "0"
	case i.s.IncastTo < 0:
		return "random"
	}
	return fmt.Sprint(i.s.IncastTo)
}
func (i incastToFlag) Set(v string) error { return i.s.SetIncastTo(v) }

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("torsim", flag.ContinueOnError)
	var f freeRun
	f.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.sweep != "" {
		if f.out == "" {
			return fmt.Errorf("--sweep needs --out")
		}
		// Flags given beside --sweep apply to every cell.
		var extra []string
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name != "sweep" && fl.Name != "cell" && fl.Name != "out" && fl.Name != "switch-for" {
				extra = append(extra, "--"+fl.Name+"="+fl.Value.String())
			}
		})
		return runSweep(ctx, f.sweep, f.cell, f.out, extra)
	}
	n, flows, ro, err := f.build()
	if err != nil {
		return err
	}
	ro.Stop = ctx.Done()
	return f.simulate(n, flows, ro, "torsim "+strings.Join(args, " "))
}

// build lays out the network and the flows.
func (f *freeRun) build() (*fabric.Network, []workload.Flow, fabric.RunOptions, error) {
	var ro fabric.RunOptions
	ti := f.tiers
	if ti.FabricRate == 0 {
		ti.FabricRate = ti.HostRate
	}
	ti.HostDelay, ti.FabricDelay, ti.CoreDelay = sim.Time(f.hostDelay)*sim.Nanosecond, sim.Time(f.fabDelay)*sim.Nanosecond, sim.Time(f.coreDelay)*sim.Nanosecond
	tp, err := topo.Parse(f.topo, ti)
	if err != nil {
		return nil, nil, ro, err
	}
	o := f.opts
	if f.swFile != "" {
		sw, err := os.ReadFile(f.swFile)
		if err != nil {
			return nil, nil, ro, err
		}
		o.Switch = string(sw)
	}
	o.SwitchFor = f.switchFor
	if o.LinkLoss, err = readLinkLoss(f.linkLoss); err != nil {
		return nil, nil, ro, err
	}
	wl := f.wl
	wl.Racks = fabric.Racks(tp)
	if f.wlFile != "" {
		if wl, err = workload.ReadSpecs(f.wlFile, wl); err != nil {
			return nil, nil, ro, err
		}
	}
	flows, err := wl.Flows(len(tp.Hosts()), ti.HostRate, rand.New(rand.NewPCG(o.Seed, sim.Seed(o.Seed, 6))))
	if err != nil {
		return nil, nil, ro, err
	}
	if f.dump != "" {
		if err := writeTraffic(f.dump, flows); err != nil {
			return nil, nil, ro, err
		}
	}
	o.Jitter = f.jitter.Nanoseconds()
	if f.drops != "" {
		if f.dropLog, err = openDropLog(f.outPath(f.drops)); err != nil {
			return nil, nil, ro, err
		}
		o.Drops = f.dropLog.w
	}
	o.MaxMessage = 1
	for _, fl := range flows {
		o.MaxMessage = max(o.MaxMessage, fl.Size)
	}
	o.MaxQPs = fabric.QPsNeeded(flows, f.qps)
	if o.Overhead == 0 {
		o.Overhead = -1
	}
	ro = fabric.RunOptions{QPs: f.qps, Op: nic.OpWrite, Until: sim.Time(f.until) * sim.Nanosecond, Stats: f.stats}
	ro.Stats.WarmupNs, ro.Stats.MeasureNs = f.warmup.Nanoseconds(), f.measure.Nanoseconds()
	if f.warmup < 0 || f.measure < 0 {
		return nil, nil, ro, fmt.Errorf("--warmup %v, --measure %v: want ≥ 0", f.warmup, f.measure)
	}
	switch f.op {
	case "write":
	case "send":
		ro.Op = nic.OpSend
	default:
		return nil, nil, ro, fmt.Errorf("--op %q: want write or send", f.op)
	}
	n, err := fabric.Build(tp, o)
	if err == nil {
		_, err = f.stall.Apply(n)
	}
	return n, flows, ro, err
}

// readLinkLoss reads --link-loss's file, if one is named.
func readLinkLoss(path string) (*fabric.LinkLoss, error) {
	if path == "" {
		return nil, nil
	}
	fl, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fl.Close()
	ll, err := fabric.ParseLinkLoss(fl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ll, nil
}

func writeTraffic(path string, flows []workload.Flow) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := workload.Write(f, flows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// simulate runs the flows, profiled if asked, and writes the results.
func (f *freeRun) simulate(n *fabric.Network, flows []workload.Flow, ro fabric.RunOptions, command string) error {
	if f.cpuprof != "" {
		pf, err := os.Create(f.cpuprof)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if !f.quiet {
		ro.Progress = func(p fabric.Progress) {
			fmt.Fprintf(os.Stderr, "\rtorsim: %.3f ms simulated, %d/%d flows, %.2fM events/s, %s wall, ETA %s   ",
				float64(p.Now)/float64(sim.Millisecond), p.Done, p.Flows, p.EventsPerSec/1e6, p.Wall.Round(time.Second), p.ETA.Round(time.Second))
		}
	}
	start := time.Now()
	res, err := n.Run(flows, ro)
	if f.dropLog != nil {
		err = cmp.Or(err, f.dropLog.close())
	}
	if err != nil {
		return err
	}
	el := time.Since(start)
	if f.memprof != "" {
		if err := writeHeapProfile(f.memprof); err != nil {
			return err
		}
	}
	if !f.quiet {
		fmt.Fprintln(os.Stderr)
	}
	res.Command = command
	res.Machine = machine()
	speed := fmt.Sprintf("wall %.2f s; %.2fM events/s; %.0f ns per packet-hop",
		el.Seconds(), float64(res.Events)/el.Seconds()/1e6, float64(el.Nanoseconds())/float64(max(res.PacketHops, 1)))
	fmt.Fprintln(os.Stderr, "torsim:", speed)
	if k := n.Partitions(); k > 1 {
		// Not in the result: it is the same for any number of threads.
		fmt.Fprintf(os.Stderr, "torsim: %d partitions, parallelism %.2f (events over those on the critical path)\n", k, n.Parallelism())
	}
	// The network is done with: collected before the results are
	// written, its heap holds the plots' allocations. Left to the
	// collector, whose goal was twice the network's heap, it was not
	// collected while the plots were drawn, and they grew htsim's
	// 1,024-host permutation's resident memory by 15 MB at its end.
	n = nil
	runtime.GC()
	if f.flows != "" {
		if err := writeFlows(f.outPath(f.flows), res); err != nil {
			return err
		}
	}
	if err := writeResult(f.out, res, speed); err != nil {
		return err
	}
	// Written first, so that the imbalance can be read in full there.
	return res.Books.Check()
}

// outPath is where --flows or --drops goes: a relative path under
// --out, so that each cell of a sweep writes its own.
func (f *freeRun) outPath(name string) string {
	if f.out != "" && !filepath.IsAbs(name) {
		return filepath.Join(f.out, name)
	}
	return name
}

// dropLog is --drops' file, buffered: a 40-sender incast drops over
// a hundred thousand frames.
type dropLog struct {
	f *os.File
	w *bufio.Writer
}

func openDropLog(path string) (*dropLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	fl, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &dropLog{f: fl, w: bufio.NewWriter(fl)}, nil
}

func (d *dropLog) close() error {
	return cmp.Or(d.w.Flush(), d.f.Close())
}

func writeFlows(path string, res *fabric.Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	fl, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.WriteFlows(fl); err != nil {
		fl.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return fl.Close()
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	// The profile is as of the last collection: collect now, or what
	// was allocated since (a short run's whole build) is missing.
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeResult writes result.json, result.md and the plots into out, or
// the Markdown to standard output when out is empty.
func writeResult(out string, res *fabric.Result, speed string) error {
	var md strings.Builder
	res.Markdown(&md)
	fmt.Fprintf(&md, "\nSpeed on %s: %s (not in result.json, which depends only on the inputs and seed).\n", res.Machine, speed)
	if out == "" {
		fmt.Print(md.String())
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "result.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "result.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return writePlots(out, res)
}

// machine describes where the run happened: the CPU model and count
// and Go's version.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s %s/%s", model, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
