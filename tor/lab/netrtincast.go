package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// netrtIncast is NetRT's congestion-loss simulation (seed 000 §IV-B 1,
// Fig. 8): "each server is connected to a core switch via its ToR
// switch", 50 Gbit/s links, a round trip of about 5 µs, DCQCN; N
// senders (15 to 50) each send 500 KB to one receiver, sender k
// starting at k × 10 µs (workload sequential-incast). Four schemes:
// GBN on a lossy fabric, GBN with PFC, IRN, GBN with NetRT on every
// ToR. Fig. 8 plots the average and the tail FCT against the number of
// senders; the table adds the end-to-end retransmissions and NetRT's
// congestion-avoidance counters (retransmissions at line rate below
// K_l, paced at R_r above it, §III-B 3).
//
// What the seed does not give, and rocetor chooses (each a flag):
//
//   - the switches' buffer: 1 MiB per egress queue (tord's default;
//     NetRT's §IV-C fabric has 32 MB shared, which would hold the
//     whole 50 × 500 KB incast and lose nothing — the seed says the
//     lossy fabric loses "a high loss rate");
//   - PFC: each ingress port's peer paused past 64 KiB, resumed at 48
//     KiB, the egress queue then 16 MiB so that PFC alone bounds it;
//   - each link 500 ns (eight traversals and serialisation: ~5 µs);
//   - RTOs by IRN's rule (seed 004 §4.1): the round trip plus a full
//     1 MiB queue at 50 Gbit/s, ~200 µs, for GBN and IRN's RTO_high;
//     IRN's RTO_low 100 µs; no timeouts under PFC (1 s);
//   - IRN's BDP-FC 32 packets (50 Gbit/s × 5 µs); GBN's window none
//     (the flow's 489 packets), as a RoCE NIC has no BDP cap.
type netrtIncast struct {
	fabricBase
	sc      scaleFlags
	schemes string
	senders string
	queue   int
	window  int
	// netrtYAML is more of NetRT's switch YAML for gbn+netrt, for
	// one-change runs (netrt-fabric's --netrt).
	netrtYAML string

	schemeList []string
	senderList []int
}

func newNetRTIncast() *netrtIncast {
	return &netrtIncast{sc: scaleFlags{scale: ScalePaper}, schemes: "gbn,gbn+pfc,irn,gbn+netrt", queue: 1 << 20}
}

func (e *netrtIncast) Name() string { return "netrt-incast" }

func (e *netrtIncast) Synopsis() string {
	return "NetRT's Fig. 8 (seed 000 §IV-B): 15-50 senders of 500 KB, 10 µs apart, into one host at 50 Gbit/s with DCQCN: GBN, GBN+PFC, IRN, GBN+NetRT"
}

func (e *netrtIncast) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.schemes, "schemes", e.schemes, "schemes: gbn (lossy), gbn+pfc, irn, gbn+netrt (NetRT on every ToR)")
	fs.StringVar(&e.senders, "senders", "", "numbers of senders (default: paper 15,20,30,40,50; ci 15,30)")
	fs.IntVar(&e.queue, "queue", e.queue, "bytes of each switch egress queue on the lossy fabric")
	fs.IntVar(&e.window, "gbn-window", 0, "GBN hosts' window in packets (0: none, the flow's 489)")
	fs.StringVar(&e.netrtYAML, "netrt", "", "more of NetRT's switch YAML for gbn+netrt, e.g. \"k_low: 64MiB, k_high: 128MiB\" (docs/operations.md, the netrt keys)")
}

func (e *netrtIncast) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	var err error
	if e.schemeList, err = wordList("schemes", e.schemes, netrtSchemes...); err != nil {
		return Options{}, err
	}
	s := e.senders
	if s == "" {
		s = "15,20,30,40,50"
		if e.sc.scale == ScaleCI {
			s = "15,30"
		}
	}
	e.senderList = nil
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 256 {
			return Options{}, Usagef("--senders %q: want 1 to 256", f)
		}
		e.senderList = append(e.senderList, n)
	}
	switch {
	case len(e.schemeList) == 0 || len(e.senderList) == 0:
		return Options{}, Usagef("--schemes and --senders need a value each")
	case e.queue < 16<<10 || e.window < 0:
		return Options{}, Usagef("--queue %d, --gbn-window %d: want at least 16 KiB and a window ≥ 0", e.queue, e.window)
	}
	return Options{}, nil
}

const (
	netrtIncastRate  = 50e9
	netrtIncastDelay = 500 * sim.Nanosecond
	netrtIncastRTO   = 200 * time.Microsecond
	netrtIncastBDP   = 32
)

// netrtSchemes are the schemes NetRT's simulations compare (§IV).
var netrtSchemes = []string{"gbn", "gbn+pfc", "irn", "gbn+netrt"}

// options are one cell's hosts and switches.
func (e *netrtIncast) options(scheme string, seed uint64) fabric.Options {
	o := netrtOptions(scheme, e.queue, cmp0(e.window, (workload.SeqIncastSize+1023)/1024), workload.SeqIncastSize, seed)
	o.Switch = withNetRTYAML(o.Switch, e.netrtYAML)
	return o
}

// withNetRTYAML adds more keys to the netrt section of switch YAML sw
// (gbn+netrt's, netrtOptions), for the experiments' --netrt; sw without
// one, or more "", is returned as it is.
func withNetRTYAML(sw, more string) string {
	if more == "" {
		return sw
	}
	return strings.Replace(sw, "netrt: {fabric: [fabric]}", "netrt: {fabric: [fabric], "+more+"}", 1)
}

// netrtOptions are the hosts and switches of a scheme of NetRT's
// simulations (netrt-incast, netrt-fabric): DCQCN, queue bytes per
// egress queue on the lossy fabric, GBN's window in packets, the
// largest message in bytes.
func netrtOptions(scheme string, queue, window, largest int, seed uint64) fabric.Options {
	o := fabric.Options{Seed: seed, Transport: "gbn", CC: "dcqcn", BDP: netrtIncastBDP, RTO: netrtIncastRTO,
		GBNWindow: window, MaxMessage: largest, Switch: fmt.Sprintf("egress: {queue_limit: %d}\necn: {}\n", queue)}
	switch scheme {
	case "gbn+pfc":
		o.Switch, o.RTO = "egress: {queue_limit: 16MiB}\necn: {}\npfc: {xoff: 64KiB, xon: 48KiB}\n", irnNoTimeout
	case "irn":
		o.Transport, o.RTOLow = "irn", irnRTOLow
	case "gbn+netrt":
		o.Switch += "netrt: {fabric: [fabric]}\n" // on the ToRs: the core, without hosts, drops it
	}
	return o
}

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (e *netrtIncast) Simulate(ctx context.Context, fab Simulator, out io.Writer, res *Results) error {
	res.Topology = "one core, a ToR per host (leafspine:spines=1,hosts=1), 50 Gbit/s, 500 ns links (~5 µs RTT); N senders of 500 KB, 10 µs apart, into host 0; DCQCN"
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "schemes": e.schemes,
		"senders": fmt.Sprint(e.senderList), "queue": strconv.Itoa(e.queue), "gbn_window": strconv.Itoa(e.window)}
	if e.netrtYAML != "" {
		res.Params["netrt"] = e.netrtYAML
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		for _, n := range e.senderList {
			tp := topo.LeafSpine(n+1, 1, 1, topo.Tiers{HostRate: netrtIncastRate, FabricRate: netrtIncastRate,
				HostDelay: netrtIncastDelay, FabricDelay: netrtIncastDelay})
			wl := workload.Spec{Name: "sequential-incast", Incast: n, Racks: fabric.Racks(tp)}
			flows, err := wl.Flows(len(tp.Hosts()), netrtIncastRate, rand.New(rand.NewPCG(uint64(seed), sim.Seed(uint64(seed), 6))))
			if err != nil {
				return err
			}
			for _, s := range e.schemeList {
				o := e.options(s, uint64(seed))
				o.MaxQPs = fabric.QPsNeeded(flows, 1)
				pt := map[string]string{"scheme": s, "senders": strconv.Itoa(n)}
				start := time.Now()
				fmt.Fprintf(out, "netrt-incast: seed %d, %d senders, %s... ", seed, n, s)
				fr, err := simulateCell(ctx, fab, res, pt, seed, tp, o, flows, fabric.RunOptions{})
				if err != nil {
					fmt.Fprintf(out, "%v\n", err)
					if ctx.Err() != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "mean FCT %.3f ms, retransmits %d (%v)\n", meanFCTms(fr), fr.HostCounters["Retransmits"], time.Since(start).Round(time.Second))
			}
		}
	}
	groups := GroupRuns(res.Runs)
	res.Table = MakeTable(groups, netrtIncastColumns())
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 000 §IV-B 1, Fig. 8; change against GBN on the lossy fabric, per seed, median and range; the paper's from its text):",
		netrtVersusPaper(groups, e.senderList)))
	return nil
}

func netrtIncastColumns() []Column {
	pt, sp := pointCell, spreadCell
	return []Column{
		{"senders", pt("senders")}, {"scheme", pt("scheme")}, {"seeds", seedsCell},
		{"avg FCT ms", sp(meanFCTms, 3)}, {"p99 FCT ms", sp(p99FCTms, 3)},
		{"e2e retransmits", sp(hostCount("Retransmits"), 0)}, {"timeouts", sp(hostCount("Timeouts"), 0)},
		{"drops", sp(func(f *FabricRun) float64 { return f.Drop() }, 0)},
		{"PFC frames", sp(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
		{"NetRT requests", sp(stageCount("netrt_src", "Ports.Requests"), 0)},
		{"NetRT retx at line rate (N < K_l)", sp(stageCount("netrt_src", "Ports.Retrans"), 0)},
		{"NetRT retx paced at R_r (N ≥ K_l)", sp(stageCount("netrt_src", "Ports.Paced"), 0)},
	}
}

// netrtVersusPaper sets each scheme's change of the average and the
// tail FCT against lossy GBN beside what the seed's text says of Fig. 8.
func netrtVersusPaper(groups []Group, senders []int) Table {
	t := Table{Columns: []string{"senders", "scheme", "paper: avg FCT vs GBN", "rocetor", "paper: tail FCT vs GBN", "rocetor (p99)"}}
	paper := map[string][2]string{
		"gbn+pfc":   {"−25 … −35 %", "not given"},
		"irn":       {"\"significantly improves\"", "not given"},
		"gbn+netrt": {"−34 … −47 %", "−14 … −34 %"},
	}
	find := func(s string, n int) *Group {
		for i := range groups {
			if groups[i].Point["scheme"] == s && groups[i].Point["senders"] == strconv.Itoa(n) {
				return &groups[i]
			}
		}
		return nil
	}
	for _, n := range senders {
		base := find("gbn", n)
		for _, s := range []string{"gbn+pfc", "irn", "gbn+netrt"} {
			g := find(s, n)
			if base == nil || g == nil {
				continue
			}
			t.Rows = append(t.Rows, []string{strconv.Itoa(n), s, paper[s][0], seedChange(g, base, meanFCTms), paper[s][1], seedChange(g, base, p99FCTms)})
		}
	}
	return t
}

// Plots are Fig. 8's two panels.
func (e *netrtIncast) Plots() []PlotSpec {
	x := func(g *Group) float64 { v, _ := strconv.Atoi(g.Point["senders"]); return float64(v) }
	series := func(g *Group) string { return g.Point["scheme"] }
	return []PlotSpec{
		{File: "netrt-incast-avg.png", Title: "netrt-incast: average FCT (Fig. 8a; median over seeds)", XLabel: "senders", YLabel: "average FCT (ms)",
			X: x, Series: series, Y: func(g *Group) float64 { return fabricMedian(g, meanFCTms) }},
		{File: "netrt-incast-p99.png", Title: "netrt-incast: 99th-percentile FCT (Fig. 8b; median over seeds)", XLabel: "senders", YLabel: "p99 FCT (ms)",
			X: x, Series: series, Y: func(g *Group) float64 { return fabricMedian(g, p99FCTms) }},
	}
}
