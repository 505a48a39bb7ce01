package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// dcpFabric is DCP's large-scale simulation (seed 002 §6.2, Figs. 13
// and 16, Table 5, and §2's Fig. 1): "a two-layer CLOS network with 16
// spine switches, 16 leaf switches, and 256 servers (16 per rack) …
// All links operate at 100 Gbps … the propagation delay of all links
// is set to 1 µs … The switch buffer size is 32 MB". Four schemes (§6.2:
// "DCP, PFC, and IRN are combined with AR, ECMP, and AR"; IRN with ECMP
// as well, Fig. 13):
//
//   - dcp: DCP NICs, every switch trimming (tor/trim) and routing
//     adaptively (forwarding.multipath adaptive, §5: "selects the
//     egress port with the lowest queue length");
//   - pfc: go-back-N over a lossless fabric (PFC), ECMP, no window cap
//     (a RoCE NIC has none, seed 004 §3.2) and no timeout;
//   - irn-ecmp, irn-ar: IRN without PFC, with ECMP or adaptive routing.
//
// Four workloads, each a set of cells:
//
//   - websearch (Fig. 13): WebSearch flows, Poisson arrivals to random
//     destinations at each --loads; P50 and P95 slowdown. The IRN + AR
//     cells also measure Fig. 1: at 32 MB nothing is dropped, so every
//     IRN retransmission there is spurious (the receiver counts the
//     copies it already had as duplicates), and DCP's are zero.
//   - incast (Fig. 16, Table 5): WebSearch at --incast-bg plus
//     --incast-to-1 incasts of --incast-size flows at 5 % of the
//     hosts' capacity, each burst to a random receiver from random
//     senders; with and without DCQCN (--cc); the header-only loss
//     ratio of Table 5: header-only packets dropped anywhere over those
//     the switches made.
//   - allreduce, alltoall (Fig. 14): every group of hosts runs one ring
//     AllReduce or one AllToAll of --op-size each member at once, no
//     CC; the mean and max JCT over groups and the flows' FCTs
//     (dcpfabricai.go says how the seed's words map to flows).
//
// What the seed does not give, and rocetor chooses (each a flag or a
// constant here, stated in docs/experiments.md):
//
//   - the trim threshold: tord's 64 KiB of the data queue; N, the WRR's
//     incast degree: 22, Table 5's first (with rocetor's r = 16.76
//     that is below N−1, where §4.2's formula gives no weight and the
//     control queue gets tor/trim's MinWeight, 0.1 of the data's;
//     --trim-min-weight sets that weight);
//   - the shared buffer: 32 MiB with dynamic thresholds (α 1, the ns-3
//     RDMA MMU's), PFC pausing an ingress port's peer past 256 KiB with
//     32 KiB of headroom (two 1 µs links' worth at 100 Gbit/s);
//   - IRN's parameters from its own seed (004 §4.1): BDP-FC 110
//     packets (100 Gbit/s × the 9 µs round trip), RTO_high 320 µs,
//     RTO_low 100 µs; DCP's coarse timeout nic/dcp's default;
//   - the incast flows' size, 64 KB (the seed gives the degree and the
//     load, not the size);
//   - MTU 1024 (the seed's 1 KB, §4.3 footnote 10);
//   - DCP's RetransQ: nic/dcp's 256 entries a QP (the seed keeps it in
//     host memory and gives no size, §4.3); --retransq sets it;
//   - DCP's send window: none, nic/dcp's default (the seed's RNIC sends
//     from the window its CC module gives, awin, §4.3, and does not
//     size it); --dcp-window sets one, dcpFabricBDP being the fabric's
//     BDP.
//   - the control queue's room: the shared buffer's, no bound of its own
//     (the seed gives none, §4.2); --trim-control-limit sets one
//     (tor/trim's control_limit), to find where header-only packets
//     are lost (Table 5).
//
// --flows DIR writes each cell's flows, one line a flow, for finding
// which flows set a percentile and where their time went.
// --qps N gives each communicating pair N QPs, its flows taking them
// in turn: each QP has its own UDP source port and so its own ECMP
// path, as a simulator that gives every flow a new source port (the
// HPCC lineage of ns-3 RDMA simulators) does; with one, every step of
// a ring pair keeps the path ECMP hashed it to.
type dcpFabric struct {
	fabricBase
	sc        scaleFlags
	schemes   string
	workloads string
	loads     string
	ccs       string
	duration  time.Duration
	incast    int
	incastBG  float64
	incastSz  int
	degree    int
	threshold string
	ecn       string
	leaves    int
	hosts     int
	opSize    int
	groups    string
	retransQ  int
	window    int
	minWeight float64
	// ctrlLimit bounds the trimming ports' control queue (tor/trim's
	// control_limit; empty: none); flowsDir, when set, gets each
	// cell's flows, one line each (writeFlows).
	ctrlLimit string
	flowsDir  string
	// qps is the QPs of each communicating pair (0: one), a pair's
	// flows taking them in turn (fabric.Options.QPs): each QP has its
	// own UDP source port, so its own ECMP hash.
	qps int

	schemeList, workloadList, ccList []string
	loadList                         []float64
}

func newDCPFabric() *dcpFabric {
	return &dcpFabric{sc: scaleFlags{scale: ScalePaper}, schemes: "dcp,pfc,irn-ecmp,irn-ar", workloads: "websearch,incast",
		loads: "0.3,0.5", ccs: "none,dcqcn", incastBG: 0.5, incastSz: 64_000, degree: 22, threshold: "64KiB", groups: workload.LayoutRail}
}

func (e *dcpFabric) Name() string { return "dcp-fabric" }

func (e *dcpFabric) Synopsis() string {
	return "DCP's Figs. 13, 16, Table 5 (seed 002 §6.2): 16×16 leaf-spine, 256 hosts at 100G, WebSearch and 128-to-1 incast: DCP, PFC, IRN (ECMP, AR)"
}

func (e *dcpFabric) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.schemes, "schemes", e.schemes, "schemes: dcp (trimming + adaptive routing), pfc (lossless go-back-N, ECMP), irn-ecmp, irn-ar")
	fs.StringVar(&e.workloads, "workloads", e.workloads, "websearch (Fig. 13: each --loads, no CC), incast (Fig. 16, Table 5: WebSearch at --incast-bg plus incast, each --cc), allreduce and alltoall (Fig. 14: every group at once, no CC)")
	fs.StringVar(&e.loads, "loads", e.loads, "WebSearch loads of the websearch cells")
	fs.StringVar(&e.ccs, "cc", e.ccs, "congestion controls of the incast cells: none, dcqcn")
	fs.DurationVar(&e.duration, "duration", 0, "how long flows arrive (0: paper 1ms, ci 200us; see docs/experiments.md for why not longer)")
	fs.IntVar(&e.incast, "incast", 0, "senders of each incast burst (0: paper 128, the seed's; ci 16; 255 is Table 5's other)")
	fs.Float64Var(&e.incastBG, "incast-bg", e.incastBG, "WebSearch load under the incast (Fig. 16: 0.5; Table 5: 0.3)")
	fs.IntVar(&e.incastSz, "incast-size", e.incastSz, "bytes of each incast flow")
	fs.IntVar(&e.degree, "incast-degree", e.degree, "N of the trimming switches' WRR (Table 5: 22 or 16)")
	fs.StringVar(&e.threshold, "trim-threshold", e.threshold, "data queue depth past which DCP packets are trimmed")
	fs.StringVar(&e.ecn, "ecn", "", "DCQCN's marking: empty for the rate-derived profile (Kmin 400 KB, Kmax 1.6 MB at 100G), or KMIN-KMAX[-PMAX] in bytes with units and Pmax in percent, e.g. 16KiB-60KiB")
	fs.IntVar(&e.leaves, "leaves", 0, "leaves and spines (0: paper 16, ci 4)")
	fs.IntVar(&e.hosts, "hosts", 0, "hosts per leaf (0: paper 16; ci 8, or 4 when every workload is allreduce or alltoall, the paper's 1:1 leaf)")
	fs.IntVar(&e.opSize, "op-size", 0, "bytes of each group member's data in allreduce and alltoall, cut in a slice per member (0: paper 20000000, a fifteenth of the seed's 300 MB; ci 1000000)")
	fs.IntVar(&e.retransQ, "retransq", 0, "DCP's RetransQ in entries per QP (0: nic/dcp's default, 256; the seed gives no size, §4.3)")
	fs.IntVar(&e.window, "dcp-window", 0, fmt.Sprintf("DCP's send window in packets in flight per QP, retransmissions included (0: none, nic/dcp's default; the fabric's BDP is %d, seed 002 §4.3's awin)", dcpFabricBDP))
	fs.Float64Var(&e.minWeight, "trim-min-weight", 0, "the control queue's WRR weight (control:data) when N is past r + 1, as at N = 22 (0: tor/trim's min_weight, 0.1)")
	fs.StringVar(&e.ctrlLimit, "trim-control-limit", "", "bound of the trimming ports' control (header-only) queue in bytes with units, e.g. 256KiB (empty: none, the shared buffer's dynamic threshold alone; tor/trim's control_limit)")
	fs.StringVar(&e.flowsDir, "flows", "", "write each cell's flows to DIR/WORKLOAD-LOAD-SCHEME-CC-seedN.tsv, one line a flow: size, FCT, slowdown, resends, timeouts, path")
	fs.IntVar(&e.qps, "qps", 0, "QPs of each communicating host pair, its flows taking them in turn: each its own UDP source port, so its own ECMP path (0: one, every flow of a pair on one path)")
	fs.StringVar(&e.groups, "groups", e.groups, "allreduce and alltoall groups: rail (group g of the g-th host of every leaf: every flow crosses a spine) or rack (a leaf's hosts)")
}

func (e *dcpFabric) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	var err error
	if e.schemeList, err = wordList("schemes", e.schemes, "dcp", "pfc", "irn-ecmp", "irn-ar"); err != nil {
		return Options{}, err
	}
	if e.workloadList, err = wordList("workloads", e.workloads, "websearch", "incast", "allreduce", "alltoall"); err != nil {
		return Options{}, err
	}
	if e.ccList, err = wordList("cc", e.ccs, "none", "dcqcn"); err != nil {
		return Options{}, err
	}
	e.loadList = nil
	for _, s := range splitList(e.loads) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 || v > 1 {
			return Options{}, Usagef("--loads %q: want loads in (0, 1]", s)
		}
		e.loadList = append(e.loadList, v)
	}
	switch {
	case len(e.schemeList) == 0 || len(e.workloadList) == 0 || len(e.ccList) == 0 || len(e.loadList) == 0:
		return Options{}, Usagef("--schemes, --workloads, --cc and --loads need a value each")
	case e.duration < 0 || e.incast < 0 || e.incastSz < 1 || e.degree < 2 || e.leaves < 0 || e.hosts < 0 || e.opSize < 0 || e.retransQ < 0 || e.retransQ > 0xffff || e.window < 0 || e.minWeight < 0 || e.minWeight > 1000 || e.qps < 0 || e.qps > 256:
		return Options{}, Usagef("--duration, --incast, --incast-size, --incast-degree, --leaves, --hosts, --op-size, --retransq, --dcp-window, --trim-min-weight, --qps: out of range")
	case e.groups != workload.LayoutRail && e.groups != workload.LayoutRack:
		return Options{}, Usagef("--groups %q: want rail or rack", e.groups)
	case e.ctrlLimit != "" && !bytesFlagOK(e.ctrlLimit):
		return Options{}, Usagef("--trim-control-limit %q: want bytes with units, e.g. 256KiB", e.ctrlLimit)
	case !ecnFlagOK(e.ecn):
		return Options{}, Usagef("--ecn %q: want KMIN-KMAX[-PMAX%%], e.g. 16KiB-60KiB", e.ecn)
	case e.incastBG < 0 || e.incastBG > 1:
		return Options{}, Usagef("--incast-bg %v: want [0, 1]", e.incastBG)
	}
	ci := e.sc.scale == ScaleCI
	// 1 ms: 15 cells of 100 µs took 160 s of CPU here (docs/experiments.md),
	// so three seeds of 1 ms are about the hour
	e.duration = cmpDur(e.duration, time.Millisecond, 200*time.Microsecond, ci)
	e.leaves = cmp0(e.leaves, pick(ci, 4, 16))
	// The AI cells alone take the paper's 1:1 leaf at ci: 4 hosts
	// under 4 uplinks (with 8 the collectives meet a 2:1 core).
	onlyAI := !slices.ContainsFunc(e.workloadList, func(w string) bool { return !aiWorkload(w) })
	e.hosts = cmp0(e.hosts, pick(ci, pick(onlyAI, 4, 8), 16))
	e.incast = cmp0(e.incast, pick(ci, 16, 128))
	e.opSize = cmp0(e.opSize, pick(ci, dcpAICIOp, dcpAIPaperOp))
	if slices.Contains(e.workloadList, "incast") && e.incast >= e.leaves*e.hosts {
		return Options{}, Usagef("--incast %d: want fewer than the %d hosts", e.incast, e.leaves*e.hosts)
	}
	return Options{}, nil
}

// minWeightKey is the trim section's min_weight for --trim-min-weight,
// nothing at 0: the switches' YAML, and so the recorded cells' inputs,
// stay as they were without the flag.
func minWeightKey(w float64) string {
	if w == 0 {
		return ""
	}
	return fmt.Sprintf(", min_weight: %v", w)
}

// controlLimitKey is the trim section's control_limit for
// --trim-control-limit, nothing when unset (as minWeightKey).
func controlLimitKey(l string) string {
	if l == "" {
		return ""
	}
	return ", control_limit: " + l
}

func pick(ci bool, c, p int) int {
	if ci {
		return c
	}
	return p
}

func cmpDur(v, paper, ci time.Duration, isCI bool) time.Duration {
	switch {
	case v != 0:
		return v
	case isCI:
		return ci
	}
	return paper
}

// The seed's parameters (§6.2), and IRN's from its own (seed 004 §4.1).
const (
	dcpFabricRate  = 100e9
	dcpFabricDelay = sim.Microsecond
	dcpFabricBDP   = 110 // packets: 100 Gbit/s × the ~9 µs round trip of 4 hops each way
	dcpFabricMTU   = 1024
	dcpIncastLoad  = 0.05 // Fig. 16: "128-to-1 incast traffic at 5% average load"
	// dcpFabricBuffer is every switch's: 32 MB shared, dynamic
	// thresholds; the queues' own limit is the whole buffer.
	dcpFabricBuffer = "egress: {queue_limit: 32MiB}\nbuffer: {size: 32MiB}\n"
	dcpFabricPFC    = "pfc: {xoff: 256KiB, xon: 128KiB, headroom: 32KiB}\n"
)

// options are the hosts and switches of one cell.
// cellOptions are the simulation options of the cell at pt over flows,
// its websearch, incast or collective cells alike: the scheme's and
// CC's (options, given the largest flow in packets), with room for the
// flows' QPs and their largest message.
func (e *dcpFabric) cellOptions(pt map[string]string, flows []workload.Flow, seed int) fabric.Options {
	biggest := 1
	for _, f := range flows {
		biggest = max(biggest, f.Size)
	}
	o := e.options(pt["scheme"], pt["cc"], (biggest+dcpFabricMTU-1)/dcpFabricMTU, uint64(seed))
	o.MaxQPs, o.MaxMessage = fabric.QPsNeeded(flows, max(1, e.qps)), biggest
	return o
}

func (e *dcpFabric) options(scheme, cc string, largest int, seed uint64) fabric.Options {
	o := fabric.Options{Seed: seed, CC: cc, MTU: dcpFabricMTU, BDP: dcpFabricBDP, Switch: dcpFabricBuffer}
	switch scheme {
	case "dcp":
		o.Transport, o.DCPRetransQ, o.DCPWindow = "dcp", e.retransQ, e.window
		o.Switch += "forwarding: {multipath: adaptive}\n" +
			fmt.Sprintf("trim: {threshold: %s, incast_degree: %d%s%s}\n", e.threshold, e.degree, minWeightKey(e.minWeight), controlLimitKey(e.ctrlLimit))
	case "pfc":
		o.Transport, o.GBNWindow, o.RTO = "gbn", largest, irnNoTimeout
		o.Switch += "forwarding: {multipath: ecmp}\n" + dcpFabricPFC
	case "irn-ecmp", "irn-ar":
		o.Transport, o.RTO, o.RTOLow = "irn", irnRTOHigh, irnRTOLow
		o.Switch += "forwarding: {multipath: " + map[string]string{"irn-ecmp": "ecmp", "irn-ar": "adaptive"}[scheme] + "}\n"
	}
	if cc == "dcqcn" {
		o.Switch += dcqcnMarking(e.ecn)
	}
	return o
}

func (e *dcpFabric) topology() topo.Topology {
	return topo.LeafSpine(e.leaves, e.leaves, e.hosts, topo.Tiers{HostRate: dcpFabricRate, FabricRate: dcpFabricRate,
		HostDelay: dcpFabricDelay, FabricDelay: dcpFabricDelay})
}

// flows are one workload's: WebSearch at load, with the incast on top
// for the incast cells.
func (e *dcpFabric) flows(tp topo.Topology, wl string, load float64, seed uint64) ([]workload.Flow, error) {
	s := workload.Spec{Name: "poisson", CDF: "websearch", Load: load, Duration: e.duration, Racks: fabric.Racks(tp)}
	if wl == "incast" {
		s.Name, s.Load = "poisson+incast", e.incastBG
		s.Incast, s.IncastSize, s.IncastLoad = e.incast, e.incastSz, dcpIncastLoad
	}
	return s.Flows(len(tp.Hosts()), dcpFabricRate, rand.New(rand.NewPCG(seed, sim.Seed(seed, 6))))
}

// cells are the experiment's points, each with its flows' workload and
// load.
func (e *dcpFabric) cells() []map[string]string {
	var out []map[string]string
	for _, wl := range e.workloadList {
		if aiWorkload(wl) {
			for _, s := range e.schemeList {
				out = append(out, map[string]string{"workload": wl, "load": "-", "scheme": s, "cc": "none"})
			}
			continue
		}
		if wl == "websearch" {
			for _, l := range e.loadList {
				for _, s := range e.schemeList {
					out = append(out, map[string]string{"workload": wl, "load": fmt.Sprint(l), "scheme": s, "cc": "none"})
				}
			}
			continue
		}
		for _, cc := range e.ccList {
			for _, s := range e.schemeList {
				if s == "pfc" && cc != "none" {
					continue // Fig. 16 compares the lossy schemes
				}
				out = append(out, map[string]string{"workload": wl, "load": fmt.Sprint(e.incastBG), "scheme": s, "cc": cc})
			}
		}
	}
	return out
}

func (e *dcpFabric) Simulate(ctx context.Context, fab Simulator, out io.Writer, res *Results) error {
	tp := e.topology()
	res.Topology = fmt.Sprintf("%s, %d leaves, %d spines, %d hosts, 100 Gbit/s, 1 µs links, 32 MiB shared buffers; WebSearch for %v",
		tp.Name, e.leaves, e.leaves, len(tp.Hosts()), e.duration)
	if slices.ContainsFunc(e.workloadList, aiWorkload) {
		res.Topology += fmt.Sprintf("; AllReduce/AllToAll of %d B each member, %s groups", e.opSize, e.groups)
	}
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "schemes": e.schemes, "workloads": e.workloads,
		"loads": e.loads, "cc": e.ccs, "duration": e.duration.String(), "incast": strconv.Itoa(e.incast), "incast_bg": fmt.Sprint(e.incastBG),
		"incast_size": strconv.Itoa(e.incastSz), "incast_degree": strconv.Itoa(e.degree), "trim_threshold": e.threshold, "ecn": e.ecn,
		"leaves": strconv.Itoa(e.leaves), "hosts_per_leaf": strconv.Itoa(e.hosts), "op_size": strconv.Itoa(e.opSize), "groups": e.groups}
	if e.retransQ != 0 {
		res.Params["retransq"] = strconv.Itoa(e.retransQ) // absent at the default: the committed records' params stay as they are
	}
	if e.window != 0 {
		res.Params["dcp_window"] = strconv.Itoa(e.window) // likewise
	}
	if e.minWeight != 0 {
		res.Params["trim_min_weight"] = fmt.Sprint(e.minWeight) // likewise
	}
	if e.qps != 0 {
		res.Params["qps"] = strconv.Itoa(e.qps) // likewise
	}
	if e.ctrlLimit != "" {
		res.Params["trim_control_limit"] = e.ctrlLimit // likewise
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		for _, pt := range e.cells() {
			if aiWorkload(pt["workload"]) {
				if err := e.simulateAI(ctx, fab, res, out, tp, pt, seed); err != nil {
					return err
				}
				continue
			}
			load, _ := strconv.ParseFloat(pt["load"], 64)
			flows, err := e.flows(tp, pt["workload"], load, uint64(seed))
			if err != nil {
				return err
			}
			o := e.cellOptions(pt, flows, seed)
			start := time.Now()
			fmt.Fprintf(out, "dcp-fabric: seed %d, %s %s, %s, cc %s: %d flows... ", seed, pt["workload"], pt["load"], pt["scheme"], pt["cc"], len(flows))
			var keep func(*fabric.Result, *FabricRun)
			if pt["workload"] == "incast" {
				keep = incastDetail(tp, e.incastSz, dcpFabricMTU)
			}
			if e.flowsDir != "" {
				keep = chainKeep(keep, writeFlows(filepath.Join(e.flowsDir, flowsFile(pt, seed))))
			}
			fr, err := simulateCellKeep(ctx, fab, res, pt, seed, tp, o, flows, fabric.RunOptions{QPs: e.qps}, keep)
			if err != nil {
				fmt.Fprintf(out, "%v\n", err)
				if ctx.Err() != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(out, "p50 slowdown %.2f, p95 %.2f, retransmits %d, drops %.0f (%v)\n", fr.All.P50Slowdown, fr.All.P95Slowdown,
				fr.HostCounters["Retransmits"], fr.Drop(), time.Since(start).Round(time.Second))
		}
	}
	ai, groups := splitAI(GroupRuns(res.Runs))
	e.aiTables(res, ai, len(groups) == 0)
	if len(groups) == 0 {
		return nil
	}
	res.Table = MakeTable(groups, dcpFabricColumns())
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 002 §6.2, Fig. 13: the tail (P95) slowdown's change against DCP's, per seed on the same flows, median and range; the paper's from its text):",
		dcpVersusPaper(groups)))
	if hasIncastDetail(groups) {
		res.Notes = append(res.Notes, tableNote(incastDetailHeading, MakeTable(groups, incastDetailColumns())))
	}
	return nil
}

// hoLossPct is Table 5's ratio: header-only packets lost over those
// made, in percent.
func hoLossPct(f *FabricRun) float64 {
	return 100 * float64(f.HODrops) / float64(max(f.Stages["trim"]["Ports.Trimmed"], 1))
}

// hoLostAt is how many of f's lost header-only packets were lost where
// prefix says ("switch:" or "host:", FabricRun.HODropsBy's keys): Table
// 5 counts the network's; a host loses them only past its RetransQ.
func hoLostAt(f *FabricRun, prefix string) uint64 {
	var n uint64
	for k, v := range f.HODropsBy {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func dcpFabricColumns() []Column {
	pt := func(k string) func(*Group) string { return func(g *Group) string { return g.Point[k] } }
	sp := func(f func(*FabricRun) float64, prec int) func(*Group) string {
		return func(g *Group) string { return fabricSpread(g, f, prec) }
	}
	return []Column{
		{"workload", pt("workload")}, {"load", pt("load")}, {"scheme", pt("scheme")}, {"cc", pt("cc")},
		{"seeds", seedsCell},
		{"P50 slowdown", sp(func(f *FabricRun) float64 { return f.All.P50Slowdown }, 2)},
		{"P95 slowdown", sp(func(f *FabricRun) float64 { return f.All.P95Slowdown }, 2)},
		{"P99 slowdown", sp(func(f *FabricRun) float64 { return f.All.P99Slowdown }, 2)},
		{"drops", sp(func(f *FabricRun) float64 { return f.Drop() }, 0)},
		{"retransmits", sp(hostCount("Retransmits"), 0)},
		{"duplicates at receivers", sp(hostCount("Duplicates"), 0)},
		{"timeouts", sp(hostCount("Timeouts"), 0)},
		{"trimmed", sp(stageCount("trim", "Ports.Trimmed"), 0)},
		{"HO lost", sp(func(f *FabricRun) float64 { return float64(f.HODrops) }, 0)},
		{"HO lost at switches", sp(func(f *FabricRun) float64 { return float64(hoLostAt(f, "switch:")) }, 0)},
		{"HO lost at hosts", sp(func(f *FabricRun) float64 { return float64(hoLostAt(f, "host:")) }, 0)},
		{"HO loss %", sp(hoLossPct, 3)},
		{"PFC frames", sp(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
		{"ECN marked", sp(func(f *FabricRun) float64 { return float64(f.ECNMarked) }, 0)},
	}
}

// dcpVersusPaper sets each scheme's tail slowdown beside DCP's on the
// same websearch cells, with what the seed's text says of Fig. 13.
func dcpVersusPaper(groups []Group) Table {
	t := Table{Columns: []string{"load", "scheme", "paper: DCP's P95 vs the scheme's", "rocetor: the scheme's P95 slowdown over DCP's"}}
	paper := map[string]map[string]string{
		"0.3": {"irn-ar": "DCP 5 % lower", "pfc": "not given (\"AR consistently outperform[s] ECMP\")", "irn-ecmp": "not given"},
		"0.5": {"irn-ar": "DCP 10 % lower", "pfc": "not given", "irn-ecmp": "not given"},
	}
	find := func(load, s string) *Group {
		for i := range groups {
			p := groups[i].Point
			if p["workload"] == "websearch" && p["load"] == load && p["scheme"] == s {
				return &groups[i]
			}
		}
		return nil
	}
	p95 := func(f *FabricRun) float64 { return f.All.P95Slowdown }
	for _, g := range groups {
		p := g.Point
		if p["workload"] != "websearch" || p["scheme"] != "dcp" {
			continue
		}
		for _, s := range []string{"pfc", "irn-ecmp", "irn-ar"} {
			if o := find(p["load"], s); o != nil {
				t.Rows = append(t.Rows, []string{p["load"], s, cmpStr(paper[p["load"]][s], "not given"), seedRatio(o, &g, p95)})
			}
		}
	}
	return t
}

// cmpStr is v, or def when v is empty.
func cmpStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Plots are Fig. 13's panels: P50 and P95 slowdown by load, a line per
// scheme.
func (e *dcpFabric) Plots() []PlotSpec {
	x := func(g *Group) float64 { v, _ := strconv.ParseFloat(g.Point["load"], 64); return v }
	series := func(g *Group) string { return g.Point["scheme"] }
	only := func(g *Group) bool { return g.Point["workload"] == "websearch" }
	var out []PlotSpec
	for _, m := range []struct {
		file, label string
		f           func(*FabricRun) float64
	}{{"p50", "P50 slowdown", func(f *FabricRun) float64 { return f.All.P50Slowdown }},
		{"p95", "P95 slowdown", func(f *FabricRun) float64 { return f.All.P95Slowdown }}} {
		out = append(out, PlotSpec{File: "dcp-fabric-" + m.file + ".png", Title: "dcp-fabric: WebSearch " + m.label + " (Fig. 13; median over seeds)",
			XLabel: "load", YLabel: m.label, X: x, Series: series, Only: only, Y: func(g *Group) float64 { return fabricMedian(g, m.f) }})
	}
	return out
}
