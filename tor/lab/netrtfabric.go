package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
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

// netrtFabric is NetRT's large-scale simulation (seed 000 §IV-C, Fig.
// 10): "4 core switches with 16 ToR switches fully connected. Each ToR
// switch connects to 32 servers, totaling 512 servers", ToR–core links
// of 100 Gbit/s, ToR–server links of 50 Gbit/s, DCQCN at the ends, ECMP,
// WebSearch flow sizes with Poisson arrivals, each sender picking its
// destination at random. Four schemes, as netrt-incast's: GBN on a
// lossy fabric, GBN with PFC, IRN, GBN with NetRT on every ToR. Fig. 10
// plots the average and the 90th-percentile FCT per flow size; the
// tables add the end-to-end retransmissions, NetRT's requests and the
// occupancy of its duplicate pools and reordering buffers, and the
// switches' buffer peak.
//
// With multipath set it is netrt-multipath-fabric, Fig. 9 at that scale
// (§IV-B 2): the same fabric and flows, GBN with NetRT off and on, the
// ToRs choosing among the cores by ECMP (the seed's baseline), by
// spraying packets round robin, or per packet by the shortest egress
// queue (adaptive: DRILL's per-packet choice by local queue depth,
// [11], without its two random samples and memory).
//
// What the seed does not give, and rocetor chooses (each a flag, the
// same as netrt-incast's where they meet):
//
//   - the load: 0.2 of each server's 50 Gbit/s (--load), which with 15
//     of 16 destinations behind another ToR and 4:1 oversubscription
//     (32 × 50 over 4 × 100 Gbit/s) loads the ToR–core links to 75 %:
//     above 0.27 they are overloaded and the fabric never drains;
//   - links of 500 ns, the round trip of 8 traversals and serialisation
//     about the 5 µs of §III-C 1 and §IV-B 1;
//   - 1 MiB per egress queue on the lossy fabric (tord's default); PFC
//     at 64 KiB / 48 KiB per ingress port, the egress queue then 16 MiB;
//   - RTO 200 µs (GBN, IRN's RTO_high), IRN's RTO_low 100 µs, no
//     timeouts under PFC; IRN's BDP-FC 32 packets (50 Gbit/s × 5 µs);
//     GBN's window none (the largest flow's packets, --gbn-window);
//   - WebSearch's own sizes, up to 30 MB (--max-size 0);
//   - NetRT at tord's defaults, the seed's where it gives a number: a
//     gap's first request at once (request_delay 0, Algorithm 2). Sprayed,
//     most gaps are reordering and 20 µs of request_delay turns NetRT
//     from 31 % slower than ECMP GBN to 38 % faster; under adaptive
//     choice 5 µs helps (12-19 % faster than ECMP GBN) and 20 µs or more
//     does not: the flow outruns NetRT's bitmap before its gap is asked
//     for (docs/experiments.md, netrt-multipath-fabric); --netrt adds
//     such YAML to NetRT's section.
//
// --incast N replaces WebSearch by Fig. 9's own shape (§IV-B 2): "15
// senders connected to multiple core switches via a ToR switch,
// transmitting 1 MB of data to a single receiver" — the first N hosts
// of the first ToR, all at once, into the first host of the second;
// --fabric sets the paths (the cores). The seed does not say whether
// its senders start together: rocetor starts them at once.
type netrtFabric struct {
	fabricBase
	multipath bool
	sc        scaleFlags
	schemes   string
	modes     string
	duration  time.Duration
	load      float64
	queue     int
	window    int
	maxSize   int
	shape     string
	incast    int
	netrtYAML string // more of NetRT's switch YAML, for one-change runs (five-way's --netrt)

	schemeList []string
	modeList   []string
	leaves     int
	spines     int
	hosts      int
}

func newNetRTFabric() *netrtFabric {
	return &netrtFabric{sc: scaleFlags{scale: ScalePaper}, schemes: "gbn,gbn+pfc,irn,gbn+netrt", modes: "ecmp",
		load: 0.2, queue: 1 << 20}
}

func newNetRTMultipathFabric() *netrtFabric {
	e := newNetRTFabric()
	e.multipath, e.schemes, e.modes = true, "gbn,gbn+netrt", "ecmp,spray,adaptive"
	return e
}

func (e *netrtFabric) Name() string {
	if e.multipath {
		return "netrt-multipath-fabric"
	}
	return "netrt-fabric"
}

func (e *netrtFabric) Synopsis() string {
	if e.multipath {
		return "NetRT's Fig. 9 at Fig. 10's scale (seed 000 §IV-B 2): 512 servers, WebSearch, ECMP against per-packet spraying and adaptive choice, GBN with and without NetRT"
	}
	return "NetRT's Fig. 10 (seed 000 §IV-C): 4 cores, 16 ToRs, 512 servers, WebSearch with DCQCN: GBN, GBN+PFC, IRN, GBN+NetRT, FCT per flow size"
}

func (e *netrtFabric) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.schemes, "schemes", e.schemes, "schemes: gbn (lossy), gbn+pfc, irn, gbn+netrt (NetRT on every ToR)")
	fs.StringVar(&e.modes, "multipath", e.modes, "the switches' multipath choices, each a set of cells: ecmp, spray, adaptive")
	fs.DurationVar(&e.duration, "duration", 0, "how long flows arrive (0: paper 10ms, ci 500us)")
	fs.Float64Var(&e.load, "load", e.load, "offered load per server, of its 50 Gbit/s (above 0.27 the ToR–core links are overloaded)")
	fs.IntVar(&e.queue, "queue", e.queue, "bytes of each switch egress queue on the lossy fabric")
	fs.IntVar(&e.window, "gbn-window", 0, "GBN hosts' window in packets (0: none, the largest flow's packets)")
	fs.IntVar(&e.maxSize, "max-size", 0, "cap on flow sizes in bytes (0: WebSearch's own, up to 30 MB)")
	fs.StringVar(&e.shape, "fabric", "", "leaves,spines,servers per leaf (default: 16,4,32, the seed's, at both scales)")
	fs.StringVar(&e.netrtYAML, "netrt", "", "more of NetRT's switch YAML for gbn+netrt, e.g. \"pause_priority: -1, k_low: 100KiB\" (docs/operations.md, the netrt keys)")
	fs.IntVar(&e.incast, "incast", 0, "Fig. 9's shape instead of WebSearch: this many hosts of the first ToR send 1 MB each at once to a host of the second (0: WebSearch)")
}

func (e *netrtFabric) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	var err error
	if e.schemeList, err = wordList("schemes", e.schemes, netrtSchemes...); err != nil {
		return Options{}, err
	}
	if e.modeList, err = wordList("multipath", e.modes, "ecmp", "spray", "adaptive"); err != nil {
		return Options{}, err
	}
	shape, err := intList("fabric", cmpStr(e.shape, "16,4,32"), 1, 1024, "a count")
	if err != nil {
		return Options{}, err
	}
	switch {
	case len(e.schemeList) == 0 || len(e.modeList) == 0:
		return Options{}, Usagef("--schemes and --multipath need a value each")
	case len(shape) != 3:
		return Options{}, Usagef("--fabric %q: want leaves,spines,servers per leaf", e.shape)
	case e.load <= 0 || e.load > 1:
		return Options{}, Usagef("--load %v: want (0, 1]", e.load)
	case e.incast < 0 || e.incast > shape[2] || e.incast > 0 && shape[0] < 2:
		return Options{}, Usagef("--incast %d: want 0 (WebSearch) or 1 to the servers of a ToR (%d), on at least 2 ToRs", e.incast, shape[2])
	case e.queue < 16<<10 || e.window < 0 || e.maxSize < 0 || e.duration < 0:
		return Options{}, Usagef("--queue %d, --gbn-window %d, --max-size %d, --duration %v: want at least 16 KiB and the others ≥ 0",
			e.queue, e.window, e.maxSize, e.duration)
	}
	e.leaves, e.spines, e.hosts = shape[0], shape[1], shape[2]
	if e.duration == 0 {
		e.duration = 10 * time.Millisecond
		if e.sc.scale == ScaleCI {
			e.duration = netrtFabricCIDuration
		}
	}
	return Options{}, nil
}

// The seed's rates (§IV-C) and rocetor's choices for what it leaves out.
const (
	netrtFabricHostRate   = 50e9
	netrtFabricCoreRate   = 100e9
	netrtFabricDelay      = 500 * sim.Nanosecond
	netrtFabricCIDuration = 500 * time.Microsecond
	// netrtMultipathIncastSize is each of Fig. 9's senders' data (§IV-B 2).
	netrtMultipathIncastSize = 1_000_000
)

func (e *netrtFabric) topology() topo.Topology {
	return topo.LeafSpine(e.leaves, e.spines, e.hosts, topo.Tiers{HostRate: netrtFabricHostRate, FabricRate: netrtFabricCoreRate,
		HostDelay: netrtFabricDelay, FabricDelay: netrtFabricDelay})
}

func (e *netrtFabric) flows(tp topo.Topology, seed uint64) ([]workload.Flow, error) {
	if e.incast > 0 {
		racks := fabric.Racks(tp)
		var senders []int
		dst := -1
		for h, r := range racks {
			switch {
			case r == racks[0] && len(senders) < e.incast:
				senders = append(senders, h)
			case r != racks[0] && dst < 0:
				dst = h
			}
		}
		return workload.Incast(senders, dst, netrtMultipathIncastSize), nil
	}
	wl := workload.Spec{Name: "poisson", CDF: "websearch", Load: e.load, Duration: e.duration, MaxSize: e.maxSize, Racks: fabric.Racks(tp)}
	return wl.Flows(len(tp.Hosts()), netrtFabricHostRate, rand.New(rand.NewPCG(seed, sim.Seed(seed, 6))))
}

// cells are the experiment's points: each scheme under each multipath
// choice.
func (e *netrtFabric) cells() []map[string]string {
	var out []map[string]string
	for _, m := range e.modeList {
		for _, s := range e.schemeList {
			out = append(out, map[string]string{"multipath": m, "scheme": s})
		}
	}
	return out
}

func (e *netrtFabric) Simulate(ctx context.Context, fab Simulator, out io.Writer, res *Results) error {
	tp := e.topology()
	traffic := fmt.Sprintf("WebSearch ≤ %s, Poisson at %.0f %% load to random destinations for %v", sizeName(e.maxSize), 100*e.load, e.duration)
	if e.incast > 0 {
		traffic = fmt.Sprintf("%d servers of the first ToR send 1 MB each at once to a server of the second (Fig. 9)", e.incast)
	}
	res.Topology = fmt.Sprintf("%s: %d ToRs fully connected to %d cores, %d servers each (%d), ToR–core 100 Gbit/s, ToR–server 50 Gbit/s, 500 ns links; %s; DCQCN",
		tp.Name, e.leaves, e.spines, e.hosts, len(tp.Hosts()), traffic)
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "schemes": e.schemes, "multipath": e.modes,
		"duration": e.duration.String(), "load": fmt.Sprint(e.load), "queue": strconv.Itoa(e.queue), "gbn_window": strconv.Itoa(e.window),
		"max_size": strconv.Itoa(e.maxSize), "fabric": fmt.Sprintf("%d,%d,%d", e.leaves, e.spines, e.hosts)}
	if e.netrtYAML != "" {
		res.Params["netrt"] = e.netrtYAML
	}
	if e.incast > 0 {
		res.Params["incast"] = strconv.Itoa(e.incast)
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		flows, err := e.flows(tp, uint64(seed))
		if err != nil {
			return err
		}
		biggest := largestFlow(flows)
		for _, pt := range e.cells() {
			o := e.options(pt, biggest, uint64(seed))
			o.MaxQPs = fabric.QPsNeeded(flows, 1)
			start := time.Now()
			fmt.Fprintf(out, "%s: seed %d, %s, %s: %d flows... ", e.Name(), seed, pt["multipath"], pt["scheme"], len(flows))
			fr, err := simulateCellKeep(ctx, fab, res, pt, seed, tp, o, flows, fabric.RunOptions{}, hostPortDrops(tp))
			if err != nil {
				fmt.Fprintf(out, "%v\n", err)
				if ctx.Err() != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(out, "avg FCT %.3f ms, p90 %.3f ms, e2e retransmits %d (%v)\n", meanFCTms(fr), p90FCTms(fr),
				fr.HostCounters["Retransmits"], time.Since(start).Round(time.Second))
		}
	}
	e.tables(res)
	return nil
}

// options are a cell's fabric options: netrt-incast's for its scheme,
// the cell's multipath choice, and --netrt added to NetRT's section.
func (e *netrtFabric) options(pt map[string]string, biggest int, seed uint64) fabric.Options {
	o := netrtOptions(pt["scheme"], e.queue, cmp0(e.window, (biggest+1023)/1024), biggest, seed)
	o.Switch = withNetRTYAML(o.Switch, e.netrtYAML)
	if m := pt["multipath"]; m != "ecmp" {
		o.Switch += "forwarding: {multipath: " + m + "}\n"
	}
	return o
}

// hostPortDrops keeps the drops of the ToRs' ports toward hosts
// (Extra["host_port_drops"]): a packet lost there has passed the
// destination ToR's NetRT stage, which took it for delivered.
func hostPortDrops(tp topo.Topology) func(*fabric.Result, *FabricRun) {
	hosts := map[string]bool{}
	for _, h := range hostNames(tp) {
		hosts[h] = true
	}
	return func(r *fabric.Result, f *FabricRun) {
		var n uint64
		for _, s := range r.SwitchResults {
			for _, p := range s.Ports {
				if hosts[p.Port] {
					for _, q := range p.Queues {
						n += q.Drops
					}
				}
			}
		}
		if f.Extra == nil {
			f.Extra = map[string]float64{}
		}
		f.Extra["host_port_drops"] = float64(n)
	}
}

func sizeName(n int) string {
	if n == 0 {
		return "30 MB"
	}
	return strconv.Itoa(n) + " B"
}

// largestFlow is the bytes of the largest of flows (at least 1).
func largestFlow(flows []workload.Flow) int {
	b := 1
	for _, f := range flows {
		b = max(b, f.Size)
	}
	return b
}

// lostDrops are the switches' drops of data lost: every reason but
// NetRT's own, which end NetRT's messages (a request consumed, a
// duplicate of a held packet, a NAK NetRT answered) and lose nothing.
func lostDrops(f *FabricRun) float64 {
	var t uint64
	for k, v := range f.Drops {
		if !strings.HasPrefix(k, "netrt_") {
			t += v
		}
	}
	return float64(t)
}

func p90FCTms(f *FabricRun) float64 { return float64(f.All.P90FCTNs) / 1e6 }

// retxPer100KB is the hosts' retransmissions per 100 KB of the flows'
// data, Table III's "end retransmissions per flow per 100 KB".
func retxPer100KB(f *FabricRun) float64 {
	if f.Bytes == 0 {
		return math.NaN()
	}
	return float64(f.HostCounters["Retransmits"]) / (float64(f.Bytes) / 100e3)
}

// tables fill res.Table (one row per cell) and the notes: FCT per size
// bin, and rocetor beside the paper.
func (e *netrtFabric) tables(res *Results) {
	groups := GroupRuns(res.Runs)
	res.Table = MakeTable(groups, netrtFabricColumns())
	res.Notes = append(res.Notes, tableNote("FCT per flow size (Fig. 10; median over seeds, ms): average / 90th percentile:", netrtBinTable(groups)))
	if e.multipath {
		res.Notes = append(res.Notes, tableNote("Beside the paper (seed 000 §IV-B 2, Fig. 9, Table III; change per seed on the same flows, median and range; the paper's from its text, 15 senders of 1 MB over 1 to 4+ paths):",
			netrtMultipathVersusPaper(groups)))
		return
	}
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 000 §IV-C, Fig. 10; change against lossy GBN per seed on the same flows, median and range; the paper's from its text):",
		netrtFabricVersusPaper(groups)))
}

func netrtFabricColumns() []Column {
	pt := func(k string) func(*Group) string { return func(g *Group) string { return g.Point[k] } }
	sp := func(f func(*FabricRun) float64, prec int) func(*Group) string {
		return func(g *Group) string { return fabricSpread(g, f, prec) }
	}
	occ := func(f func(*fabric.NetRTOccupancy) float64) func(*FabricRun) float64 {
		return func(r *FabricRun) float64 {
			if r.NetRT == nil {
				return math.NaN()
			}
			return f(r.NetRT) / 1e3
		}
	}
	return []Column{
		{"multipath", pt("multipath")}, {"scheme", pt("scheme")}, {"seeds", seedsCell},
		{"avg FCT ms", sp(meanFCTms, 3)}, {"p90 FCT ms", sp(p90FCTms, 3)}, {"p99 FCT ms", sp(p99FCTms, 3)},
		{"e2e retransmits", sp(hostCount("Retransmits"), 0)}, {"per 100 KB", sp(retxPer100KB, 2)}, {"timeouts", sp(hostCount("Timeouts"), 0)},
		{"drops", sp(lostDrops, 0)},
		{"PFC frames", sp(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
		{"NetRT requests", sp(stageCount("netrt_src", "Ports.Requests"), 0)},
		{"NetRT resent", sp(func(f *FabricRun) float64 {
			return float64(f.Stages["netrt_src"]["Ports.Retrans"] + f.Stages["netrt_src"]["Ports.Paced"])
		}, 0)},
		{"pool peak / mean KB", func(g *Group) string {
			return fabricSpread(g, occ(func(o *fabric.NetRTOccupancy) float64 { return float64(o.PoolPeakBytes) }), 0) + " / " +
				fabricSpread(g, occ(func(o *fabric.NetRTOccupancy) float64 { return o.PoolMeanBytes }), 1)
		}},
		{"reorder peak / mean KB", func(g *Group) string {
			return fabricSpread(g, occ(func(o *fabric.NetRTOccupancy) float64 { return float64(o.ReorderPeakBytes) }), 0) + " / " +
				fabricSpread(g, occ(func(o *fabric.NetRTOccupancy) float64 { return o.ReorderMeanBytes }), 1)
		}},
		{"switch buffer peak KB", sp(func(f *FabricRun) float64 { return float64(f.BufferPeak) / 1e3 }, 0)},
	}
}

// binFCT is f of a run's size bin i (NaN if it has none or no flows).
func binFCT(i int, f func(fabric.Bucket) float64) func(*FabricRun) float64 {
	return func(r *FabricRun) float64 {
		if i >= len(r.FCT) || r.FCT[i].Flows == 0 {
			return math.NaN()
		}
		return f(r.FCT[i])
	}
}

func binMean(b fabric.Bucket) float64 { return b.MeanFCTNs / 1e6 }
func binP90(b fabric.Bucket) float64  { return float64(b.P90FCTNs) / 1e6 }
func binP99(b fabric.Bucket) float64  { return float64(b.P99FCTNs) / 1e6 }

// netrtBins are the size bins' names, from the first run that has them.
func netrtBins(groups []Group) []string {
	for _, g := range groups {
		for _, r := range g.OK() {
			var names []string
			for _, b := range r.Fabric.FCT {
				names = append(names, b.Range)
			}
			return names
		}
	}
	return nil
}

// netrtBinTable is Fig. 10: a row per size bin (and multipath choice),
// a column per scheme, average / p90 FCT.
func netrtBinTable(groups []Group) Table {
	t := Table{Columns: []string{"flow size", "multipath", "flows"}}
	var schemes, modes []string
	for _, g := range groups {
		if !slices.Contains(schemes, g.Point["scheme"]) {
			schemes = append(schemes, g.Point["scheme"])
		}
		if !slices.Contains(modes, g.Point["multipath"]) {
			modes = append(modes, g.Point["multipath"])
		}
	}
	t.Columns = append(t.Columns, schemes...)
	for i, bin := range netrtBins(groups) {
		for _, m := range modes {
			row := []string{bin, m, ""}
			for _, s := range schemes {
				g := findGroup(groups, map[string]string{"scheme": s, "multipath": m})
				if g == nil {
					row = append(row, "–")
					continue
				}
				row[2] = fmtFloat(fabricMedian(g, binFCT(i, func(b fabric.Bucket) float64 { return float64(b.Flows) })), 0)
				row = append(row, fmtFloat(fabricMedian(g, binFCT(i, binMean)), 3)+" / "+fmtFloat(fabricMedian(g, binFCT(i, binP90)), 3))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// netrtFabricClaims are what the seed's text says of Fig. 10 (§IV-C),
// each scheme against lossy GBN: on the average and the 90th-percentile
// FCT of short flows (below 100 KB: the first two size bins) and of
// all flows.
var netrtFabricClaims = []struct{ scheme, flows, avg, p90 string }{
	{"gbn+pfc", "all", "up to −16.7 %", "not given"},
	{"gbn+pfc", "short", "+10 % (10 KB)", "up to > +100 %"},
	{"irn", "short", "up to −30 %", "not given"},
	{"irn", "long", "slightly worse than NetRT", "not given"},
	{"gbn+netrt", "short", "−13.5 … −24.5 %", "up to −46.8 %"},
	{"gbn+netrt", "long", "best of the four", "not given"},
}

// netrtFabricVersusPaper sets each claim beside rocetor's change per
// seed, bin by bin where the claim is about short or long flows.
func netrtFabricVersusPaper(groups []Group) Table {
	t := Table{Columns: []string{"scheme", "flows", "paper: avg FCT vs GBN", "rocetor", "paper: p90 FCT vs GBN", "rocetor (p90)"}}
	bins := netrtBins(groups)
	for _, m := range modesOf(groups) {
		base := findGroup(groups, map[string]string{"scheme": "gbn", "multipath": m})
		for _, c := range netrtFabricClaims {
			g := findGroup(groups, map[string]string{"scheme": c.scheme, "multipath": m})
			if base == nil || g == nil {
				continue
			}
			if c.flows == "all" {
				t.Rows = append(t.Rows, []string{c.scheme, "all", c.avg, seedChange(g, base, meanFCTms), c.p90, seedChange(g, base, p90FCTms)})
				continue
			}
			for i, bin := range bins {
				if (i < 2) != (c.flows == "short") {
					continue
				}
				t.Rows = append(t.Rows, []string{c.scheme, bin, c.avg, seedChange(g, base, binFCT(i, binMean)), c.p90, seedChange(g, base, binFCT(i, binP90))})
			}
		}
	}
	return t
}

func modesOf(groups []Group) []string {
	var modes []string
	for _, g := range groups {
		if !slices.Contains(modes, g.Point["multipath"]) {
			modes = append(modes, g.Point["multipath"])
		}
	}
	return modes
}

// netrtMultipathVersusPaper sets rocetor's changes beside Fig. 9's text
// (§IV-B 2): a per-packet choice without NetRT against ECMP, NetRT
// against the same choice without it, and with NetRT against ECMP;
// on the average and the 99th-percentile FCT of all flows.
func netrtMultipathVersusPaper(groups []Group) Table {
	t := Table{Columns: []string{"comparison", "paper: avg FCT", "rocetor", "paper: tail FCT", "rocetor (p99)"}}
	ecmp := findGroup(groups, map[string]string{"scheme": "gbn", "multipath": "ecmp"})
	for _, m := range modesOf(groups) {
		if m == "ecmp" {
			continue
		}
		gbn := findGroup(groups, map[string]string{"scheme": "gbn", "multipath": m})
		nrt := findGroup(groups, map[string]string{"scheme": "gbn+netrt", "multipath": m})
		for _, c := range []struct {
			name, avg, tail string
			a, b            *Group
		}{
			{"GBN, " + m + " over ECMP", "up to +100 %", "up to +61 %", gbn, ecmp},
			{"GBN + NetRT over GBN, both " + m, "−37 … −60 %", "−40 … −52 %", nrt, gbn},
			{"GBN + NetRT, " + m + ", over GBN with ECMP", "−11 … −17 %", "up to −29 %", nrt, ecmp},
		} {
			if c.a == nil || c.b == nil {
				continue
			}
			t.Rows = append(t.Rows, []string{c.name, c.avg, seedChange(c.a, c.b, meanFCTms), c.tail, seedChange(c.a, c.b, p99FCTms)})
		}
	}
	return t
}

// Plots are Fig. 10's panels: average and 90th-percentile FCT by flow
// size, a line per cell.
func (e *netrtFabric) Plots() []PlotSpec {
	var empty fabric.Result // its bins' names: the default bins', which every cell uses
	_ = empty.Summarize(fabric.StatsOptions{})
	var names []string
	for _, b := range empty.FCT {
		names = append(names, b.Range)
	}
	series := func(g *Group) string { return g.Point["multipath"] + " " + g.Point["scheme"] }
	lines := func(f func(fabric.Bucket) float64) func(*Group) []Line {
		return func(g *Group) []Line {
			var l Line
			for i := range netrtBins([]Group{*g}) {
				if y := fabricMedian(g, binFCT(i, f)); !math.IsNaN(y) {
					l.Points = append(l.Points, XY{X: float64(i), Y: y})
				}
			}
			return []Line{l}
		}
	}
	name := e.Name()
	return []PlotSpec{
		{File: name + "-avg.png", Title: name + ": average FCT by flow size (Fig. 10a; median over seeds)", XLabel: "flow size", YLabel: "average FCT (ms)",
			Series: series, Lines: lines(binMean), XNames: names},
		{File: name + "-p90.png", Title: name + ": 90th-percentile FCT by flow size (Fig. 10c; median over seeds)", XLabel: "flow size", YLabel: "p90 FCT (ms)",
			Series: series, Lines: lines(binP90), XNames: names},
	}
}
