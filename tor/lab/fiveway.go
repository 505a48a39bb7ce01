package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// fiveWay is issue 29's comparison that no seed made: every loss
// recovery scheme rocetor has, on one fabric under one workload, side
// by side. Each seed measures its own scheme against one or two
// baselines, each on its own fabric and its own kind of loss; here
// they meet the same losses:
//
//   - corrupt: random corruption on every fabric (switch-to-switch)
//     link, the loss Protego (seed 003) and NetRT (seed 000 §I-II)
//     recover, at one rate from Protego's worst measured bucket
//     (Table 1: 12.67 % of corrupting links at 1e-3 and above);
//   - incast: congestion loss, an N-to-1 incast of other racks' hosts
//     over the background traffic, as DCP's mixed workload (seed 002
//     §6.2) and NetRT's Fig. 8 make it;
//   - both;
//
// each with and without DCQCN. The background is WebSearch with Poisson
// arrivals to random destinations (seed 000 §IV-C, 002 §6.2, 004 §4.1),
// the same flows in every cell of a seed; the incast is drawn after it
// and added only where the scenario has it.
//
// The schemes (fiveSchemes): GBN with PFC; GBN lossy; IRN (seed 004);
// FaSR (seed 001); DCP's RNICs behind trimming switches with adaptive
// routing (seed 002 §4); NetRT on every ToR with GBN hosts (seed 000);
// llr on every fabric link with GBN hosts (seed 003); and NetRT + llr,
// IRN + llr.
//
// The fabric is a leaf-spine, the shape every scheme is built for:
// NetRT's is one ("4 cores fully connected to 16 ToRs", seed 000
// §IV-C), DCP's too (16 spines, 16 leaves, §6.2), and NetRT lives on
// the ToRs, the leaves, with every path between two ToRs crossing only
// fabric links it covers; adaptive routing has a choice of spines at
// each leaf; llr covers each switch-to-switch link. 100 Gbit/s links of
// 1 µs everywhere (DCP's), no oversubscription. What no seed fixes for
// all and rocetor chooses (each a flag or a constant below, the same
// for every scheme):
//
//   - lossy egress queues of 512 KiB: an incast of 256 KB from every
//     host of the other racks (12 at paper scale, 6 at ci) arrives at
//     the receiver's leaf over all its spine links at once and
//     overflows the queue toward the receiver; PFC pauses each ingress
//     port's peer past 64 KiB and resumes it at 48 KiB (netrt-incast's
//     thresholds), its egress queues 2 MiB, more than the ports' pause
//     thresholds and headroom together, so that PFC alone bounds them;
//   - one RTO for every transport, IRN's rule (seed 004 §4.1): the
//     round trip plus three full queues at 100 Gbit/s, 300 µs; IRN's
//     RTO_low 100 µs; PFC keeps it too (corruption is loss that PFC
//     does not prevent, and go-back-N needs its timer for a lost
//     tail);
//   - windows: IRN's and FaSR's BDP-FC, and GBN's, at 32 packets above
//     the path's BDP (100 Gbit/s × ~10 µs ≈ 125 KB) rather than none —
//     a RoCE NIC has no cap (seed 004 §3.2), and irn-fabric shows what
//     none does to GBN; here the same cap for every transport keeps
//     the comparison on recovery; FaSR's shared SR pool is sized for
//     the same window (--fasr-pool-bdp: 0; seed 001 §III-D sizes it
//     for 500 packets), which under the incast runs out of bitmap
//     blocks and sends recoveries Go-Back-N (TestFiveWayFaSRPool);
//   - WebSearch sizes capped at 3 MB (IRN's workload's largest), at 24 %
//     load: what the generator offered for --load 0.5 until 2026-11-30,
//     when its gaps followed the uncapped sizes' mean (every record so
//     far ran it).
type fiveWay struct {
	fabricBase
	sc        scaleFlags
	schemes   string
	scenarios string
	ccs       string
	corrupt   float64
	load      float64
	duration  time.Duration
	incast    int
	incastSz  int
	queue     int
	netrtPool int
	netrtYAML string // more of NetRT's configuration, for one-change runs
	fasrPool  int    // FaSR's pool sized for this many packets (0: the window)

	schemeList   []fiveScheme
	scenarioList []string
	ccList       []string
}

// fiveScheme is one recovery scheme: the hosts' transport and what the
// switches add.
type fiveScheme struct {
	name      string
	transport string
	pfc       bool // lossless: PFC on buffer thresholds
	netrt     bool // NetRT on every ToR
	llr       bool // llr on every fabric link
	dcp       bool // trimming and adaptive routing
}

var fiveSchemes = []fiveScheme{
	{name: "gbn+pfc", transport: "gbn", pfc: true},
	{name: "gbn", transport: "gbn"},
	{name: "irn", transport: "irn"},
	{name: "fasr", transport: "fasr"},
	{name: "dcp", transport: "dcp", dcp: true},
	{name: "netrt", transport: "gbn", netrt: true},
	{name: "llr", transport: "gbn", llr: true},
	{name: "netrt+llr", transport: "gbn", netrt: true, llr: true},
	{name: "irn+llr", transport: "irn", llr: true},
	{name: "dcp+llr", transport: "dcp", dcp: true, llr: true},
}

// Scenarios of five-way.
var fiveScenarios = []string{"corrupt", "incast", "both"}

func newFiveWay() *fiveWay {
	var names []string
	for _, s := range fiveSchemes {
		names = append(names, s.name)
	}
	return &fiveWay{sc: scaleFlags{scale: ScalePaper}, schemes: strings.Join(names, ","), scenarios: "corrupt,incast,both",
		ccs: "none,dcqcn", corrupt: 1e-3, load: 0.24, queue: 512 << 10, incastSz: 256_000, netrtPool: 2 << 20}
}

func (e *fiveWay) Name() string { return "five-way" }

func (e *fiveWay) Synopsis() string {
	return "every recovery scheme on one leaf-spine (GBN+PFC, GBN, IRN, FaSR, DCP, NetRT, llr, NetRT+llr, IRN+llr) under corruption, incast, both; with and without DCQCN"
}

func (e *fiveWay) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.schemes, "schemes", e.schemes, "schemes: gbn+pfc, gbn, irn, fasr, dcp, netrt, llr, netrt+llr, irn+llr")
	fs.StringVar(&e.scenarios, "scenarios", e.scenarios, "corrupt (fabric links corrupt), incast (N-to-1 over the background), both")
	fs.StringVar(&e.ccs, "cc", e.ccs, "congestion controls, each a set of cells: none, dcqcn")
	fs.Float64Var(&e.corrupt, "corrupt", e.corrupt, "corruption rate of every fabric link in the corrupt and both scenarios")
	fs.Float64Var(&e.load, "load", e.load, "background WebSearch load per host, of its 100 Gbit/s")
	fs.DurationVar(&e.duration, "duration", 0, "how long flows arrive (0: paper 2ms, ci 500µs)")
	fs.IntVar(&e.incast, "incast", 0, "incast senders, hosts of other racks (0: paper 12, ci 6: every host of the other racks)")
	fs.IntVar(&e.incastSz, "incast-size", e.incastSz, "bytes each incast sender sends")
	fs.IntVar(&e.queue, "queue", e.queue, "bytes of each lossy egress queue")
	fs.IntVar(&e.netrtPool, "netrt-pool", e.netrtPool, "bytes of NetRT's duplicate pool per fabric port (tord's default: 256 KiB)")
	fs.IntVar(&e.fasrPool, "fasr-pool-bdp", 0, "packets FaSR's shared SR pool is sized for (0: the window, 160; the seed's is 500: 20 units, 70 blocks)")
	fs.StringVar(&e.netrtYAML, "netrt", "", "more of NetRT's switch YAML, e.g. \"pause_priority: -1, k_low: 100KiB\" (docs/operations.md, the netrt keys)")
}

func (e *fiveWay) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	e.schemeList = nil
	for _, n := range splitList(e.schemes) {
		i := slices.IndexFunc(fiveSchemes, func(s fiveScheme) bool { return s.name == n })
		if i < 0 {
			return Options{}, Usagef("scheme %q: want one of %s", n, newFiveWay().schemes)
		}
		e.schemeList = append(e.schemeList, fiveSchemes[i])
	}
	e.scenarioList = splitList(e.scenarios)
	for _, s := range e.scenarioList {
		if !slices.Contains(fiveScenarios, s) {
			return Options{}, Usagef("scenario %q: want corrupt, incast or both", s)
		}
	}
	e.ccList = splitList(e.ccs)
	for _, c := range e.ccList {
		if c != "none" && c != "dcqcn" {
			return Options{}, Usagef("--cc %q: want none or dcqcn", c)
		}
	}
	switch {
	case len(e.schemeList) == 0 || len(e.scenarioList) == 0 || len(e.ccList) == 0:
		return Options{}, Usagef("--schemes, --scenarios and --cc need a value each")
	case !(e.corrupt > 0 && e.corrupt <= 0.1) || e.load <= 0 || e.load > 1:
		return Options{}, Usagef("--corrupt %v, --load %v: want (0, 0.1] and (0, 1]", e.corrupt, e.load)
	case e.duration < 0 || e.incast < 0 || e.incastSz < 1024 || e.queue < 64<<10:
		return Options{}, Usagef("--duration %v, --incast %d, --incast-size %d, --queue %d: want ≥ 0, ≥ 0, ≥ 1 KiB, ≥ 64 KiB",
			e.duration, e.incast, e.incastSz, e.queue)
	case e.fasrPool < 0:
		return Options{}, Usagef("--fasr-pool-bdp %d: want ≥ 0", e.fasrPool)
	}
	e.duration = cmp0d(e.duration, 2*time.Millisecond, 500*time.Microsecond, e.sc.scale)
	e.incast = cmp0(e.incast, map[bool]int{true: 6, false: 12}[e.sc.scale == ScaleCI])
	if tp := e.topology(); e.incast >= len(tp.Hosts()) {
		return Options{}, Usagef("--incast %d: want fewer than the fabric's %d hosts", e.incast, len(tp.Hosts()))
	}
	return Options{}, nil
}

func cmp0d(v, paper, ci time.Duration, scale string) time.Duration {
	switch {
	case v != 0:
		return v
	case scale == ScaleCI:
		return ci
	}
	return paper
}

// The fabric's and the transports' parameters (see fiveWay's doc).
const (
	fiveRate    = 100e9
	fiveDelay   = 1 * sim.Microsecond
	fiveRTO     = 300 * time.Microsecond
	fiveRTOLow  = 100 * time.Microsecond
	fiveWindow  = 160 // packets: the ~125 KB BDP and 32 more
	fiveMaxSize = 3_000_000
	fivePFC     = "egress: {queue_limit: 2MiB}\npfc: {xoff: 64KiB, xon: 48KiB}\n"
)

// topology is the leaf-spine: paper 4 spines, 4 leaves of 4 hosts (16
// hosts); ci 2 spines, 4 leaves of 2 hosts (8 hosts). Both 1:1.
func (e *fiveWay) topology() topo.Topology {
	ti := topo.Tiers{HostRate: fiveRate, FabricRate: fiveRate, HostDelay: fiveDelay, FabricDelay: fiveDelay}
	if e.sc.scale == ScaleCI {
		return topo.LeafSpine(4, 2, 2, ti)
	}
	return topo.LeafSpine(4, 4, 4, ti)
}

// options are one cell's hosts and switches.
func (e *fiveWay) options(s fiveScheme, scenario, cc string, seed uint64) fabric.Options {
	o := fabric.Options{Seed: seed, Transport: s.transport, CC: cc, BDP: fiveWindow, GBNWindow: fiveWindow, RTO: fiveRTO,
		FaSRPoolBDP: e.fasrPool, Switch: fmt.Sprintf("egress: {queue_limit: %d}\n", e.queue)}
	if s.transport == "irn" {
		o.RTOLow = fiveRTOLow
	}
	if s.pfc {
		o.Switch = fivePFC
	}
	if s.dcp {
		o.Switch += "trim: {}\nforwarding: {multipath: adaptive}\n"
	}
	if s.netrt {
		// On the leaves: a spine, without hosts, leaves it out.
		extra := ""
		if e.netrtYAML != "" {
			extra = ", " + e.netrtYAML
		}
		o.Switch += fmt.Sprintf("netrt: {fabric: [fabric], pool_bytes: %d, pool_frames: %d%s}\n", e.netrtPool, max(4096, 2*e.netrtPool/1024), extra)
	}
	if s.llr {
		o.Switch += "llr: {ports: [fabric]}\n"
	}
	if cc == "dcqcn" {
		o.Switch += "ecn: {}\n"
	}
	if scenario != "incast" {
		o.LinkLoss = &fabric.LinkLoss{Draws: []fabric.LinkDraw{{Kind: "fabric", Fraction: 1,
			Buckets: []fabric.LossBucket{{Weight: 1, Lo: e.corrupt, Hi: e.corrupt}}, Corrupt: true}}}
	}
	return o
}

// flows are a seed's background, and with the incast where the
// scenario has it. The background is the composition's first part, so
// it is the same flows with the incast or without.
func (e *fiveWay) flows(tp topo.Topology, scenario string, seed uint64) ([]workload.Flow, error) {
	wl := workload.Spec{Name: "poisson", CDF: "websearch", Load: e.load, Duration: e.duration, MaxSize: fiveMaxSize, Racks: fabric.Racks(tp)}
	if scenario != "corrupt" {
		// Two bursts, at the start and halfway, each into a receiver
		// drawn per burst from senders of other racks, so that every
		// incast packet crosses the fabric (and NetRT's ToRs).
		wl.Name, wl.Incast, wl.IncastSize, wl.IncastPeriod, wl.IncastFrom = "poisson+incast", e.incast, e.incastSz, e.duration/2, "racks"
	}
	return wl.Flows(len(tp.Hosts()), fiveRate, rand.New(rand.NewPCG(seed, sim.Seed(seed, 6))))
}

func (e *fiveWay) Simulate(ctx context.Context, fab Simulator, out io.Writer, res *Results) error {
	tp := e.topology()
	res.Topology = fmt.Sprintf("%s (%d hosts, %d switches), 100 Gbit/s, 1 µs links; WebSearch ≤ 3 MB, Poisson at %.0f %% load for %v; incast %d-to-1 of %d B; fabric links corrupt at %g",
		tp.Name, len(tp.Hosts()), len(tp.Nodes)-len(tp.Hosts()), 100*e.load, e.duration, e.incast, e.incastSz, e.corrupt)
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "schemes": e.schemes, "scenarios": e.scenarios,
		"cc": e.ccs, "corrupt": fmt.Sprint(e.corrupt), "load": fmt.Sprint(e.load), "duration": e.duration.String(),
		"incast": strconv.Itoa(e.incast), "incast_size": strconv.Itoa(e.incastSz), "queue": strconv.Itoa(e.queue)}
	if e.fasrPool != 0 {
		res.Params["fasr_pool_bdp"] = strconv.Itoa(e.fasrPool)
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		for _, scen := range e.scenarioList {
			flows, err := e.flows(tp, scen, uint64(seed))
			if err != nil {
				return err
			}
			for _, cc := range e.ccList {
				for _, s := range e.schemeList {
					if err := e.cell(ctx, fab, out, res, tp, flows, s, scen, cc, seed); err != nil {
						return err
					}
				}
			}
		}
	}
	groups := GroupRuns(res.Runs)
	res.Table = MakeTable(groups, fiveWayColumns())
	return nil
}

// cell runs one scheme in one scenario; only a cancelled context is an
// error, a failed simulation is recorded in its Run.
func (e *fiveWay) cell(ctx context.Context, fab Simulator, out io.Writer, res *Results, tp topo.Topology, flows []workload.Flow,
	s fiveScheme, scen, cc string, seed int) error {
	o := e.options(s, scen, cc, uint64(seed))
	o.MaxQPs, o.MaxMessage = fabric.QPsNeeded(flows, 1), fiveMaxSize
	pt := map[string]string{"scenario": scen, "cc": cc, "scheme": s.name}
	start := time.Now()
	fmt.Fprintf(out, "five-way: seed %d, %s, cc %s, %s: %d flows... ", seed, scen, cc, s.name, len(flows))
	fr, err := simulateCell(ctx, fab, res, pt, seed, tp, o, flows, fabric.RunOptions{})
	if err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return ctx.Err()
	}
	fmt.Fprintf(out, "slowdown %.2f, p99 %.2f, e2e retransmits %d (%v)\n", fr.All.MeanSlowdown, fr.All.P99Slowdown,
		fr.HostCounters["Retransmits"], time.Since(start).Round(time.Second))
	return nil
}

// Metrics five-way's table reads.
func p99Slowdown(f *FabricRun) float64 { return f.All.P99Slowdown }

// netrtRetx are the packets NetRT's ToRs resent from their pools, at
// line rate and paced.
func netrtRetx(f *FabricRun) float64 {
	return float64(f.Stages["netrt_src"]["Ports.Retrans"] + f.Stages["netrt_src"]["Ports.Paced"])
}

// lossDrops are the switches' drops of frames lost to the flows:
// every reason but NetRT's own messages, which its ToRs consume
// (netrt_consumed, netrt_nak_answered).
func lossDrops(f *FabricRun) float64 {
	var n uint64
	for k, v := range f.Drops {
		if !strings.HasPrefix(k, "netrt_") {
			n += v
		}
	}
	return float64(n)
}

// corrupted are the frames the fabric links' corruption destroyed,
// every class.
func corrupted(f *FabricRun) float64 {
	var n int64
	for _, k := range []string{"data", "retransmission", "control", "other"} {
		n += f.Stages["impair"]["Destroyed."+k]
	}
	return float64(n)
}

func fiveWayColumns() []Column {
	pt, sp := pointCell, spreadCell
	return []Column{
		{"scenario", pt("scenario")}, {"cc", pt("cc")}, {"scheme", pt("scheme")},
		{"seeds", seedsCell},
		{"flows done", func(g *Group) string {
			return fabricSpread(g, func(f *FabricRun) float64 { return float64(f.Completed) }, 0) + " of " +
				fabricSpread(g, func(f *FabricRun) float64 { return float64(f.Flows) }, 0)
		}},
		{"mean slowdown", sp(meanSlowdown, 2)}, {"p99 slowdown", sp(p99Slowdown, 2)},
		{"e2e retx", sp(hostCount("Retransmits"), 0)}, {"timeouts", sp(hostCount("Timeouts"), 0)},
		{"NetRT retx", sp(netrtRetx, 0)}, {"NetRT gaps past its bitmap", sp(stageCount("netrt_dst", "Ports.WaitSpan"), 0)},
		{"llr retx", sp(stageCount("llr", "Ports.Retransmitted"), 0)},
		{"trimmed", sp(stageCount("trim", "Ports.Trimmed"), 0)},
		{"queue drops", sp(lossDrops, 0)},
		{"corrupted", sp(corrupted, 0)},
		{"PFC frames", sp(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
	}
}

// Plots: the p99 and the mean slowdown per scheme, a group of bars per
// scheme and a bar per scenario and congestion control, on a log axis
// (DCP under corruption is two orders of magnitude above the rest).
func (e *fiveWay) Plots() []PlotSpec {
	var names []string
	for _, s := range fiveSchemes {
		names = append(names, s.name)
	}
	x := func(g *Group) float64 { return float64(slices.Index(names, g.Point["scheme"])) }
	series := func(g *Group) string { return g.Point["scenario"] + ", cc " + g.Point["cc"] }
	spec := func(file, what string, f func(*FabricRun) float64) PlotSpec {
		return PlotSpec{File: file, Title: "five-way: " + what + " (median over seeds)", XLabel: "scheme", YLabel: what + " (log)",
			XNames: names, X: x, Series: series, Bars: true, LogY: true, Y: func(g *Group) float64 { return fabricMedian(g, f) }}
	}
	return []PlotSpec{spec("five-way-p99.png", "p99 slowdown", p99Slowdown), spec("five-way-mean.png", "mean slowdown", meanSlowdown)}
}
