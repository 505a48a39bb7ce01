package lab

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	nicc "rocetor/nic/cc"
	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// irnFabric is IRN's default scenario (seed 004 §4.1–4.3, Figs. 1–6):
// a k = 6 three-tier fat tree (54 servers, 45 six-port switches), 40
// Gbit/s links of 2 µs, every host sending WebSearch-sized flows with
// Poisson arrivals to random destinations at 70 % load; IRN without
// PFC against RoCE (go-back-N) with PFC, and each with and without
// PFC. Every parameter the seed gives is the seed's:
//
//   - buffers 2 × BDP = 240 KB per port ("buffers sized at twice the
//     BDP … for each input port"); rocetor's switch is output-queued,
//     so a lossy port's egress queue holds 240 KB, and with PFC the
//     egress queue holds the whole switch (6 × 240 KB) while each
//     ingress port's peer is paused past 220 KB ("buffer size minus a
//     headroom equal to the upstream link's BDP") — the input port's
//     budget, as the seed's input-queued switch keeps it — and resumed
//     below 218 KB, which the seed does not give (--pfc-xon);
//   - RTO_high 320 µs, RTO_low 100 µs with N = 3 (IRN), RoCE without
//     PFC a fixed 320 µs, timeouts off with PFC (1 s here: "We disable
//     timeouts when PFC is enabled");
//   - IRN's BDP-FC at 110 packets of 1 KB (the longest path's 120 KB);
//   - flows start at line rate, with or without DCQCN or TIMELY.
//
// The RoCE hosts' window is not in the seed: a commodity RoCE NIC has
// no BDP-FC ("RoCE … does not" limit its outstanding packets, §3.2),
// so --gbn-window 0 lifts it (the largest flow's packets); 110, IRN's
// cap, is the first look of issue 29, which hid most of the paper's
// difference. The cells of both show what it changes.
//
// Flow sizes: WebSearch, capped at 3 MB (--max-size), as the seed's
// workload's largest flows are ("15 % of the flows are between
// 200KB-3MB"); --cdf replaces the distribution (a file shaped after the
// seed's text is docs/results/fabric/irn-seed-sizes.txt), --queue the
// lossy egress budget — both to measure why IRN drops less here than
// the seed's 8.5 % (docs/experiments.md) —, and --voq gives every
// switch port a data queue per input port served round robin
// (egress.by_input), the scheduling of the seed's input-queued
// switches with virtual output queues, each queue with the port's
// budget (240 KB, or the switch's with PFC), and --input-buffer keeps
// each input port's frames within a budget across its queues, as the
// seed's 240 KB per input port. The hosts' NICs: --host-burst sets how
// many packets a QP sends a turn (1: packet by packet, as the seed's
// QPs each polling the MAC would share it), --qps gives each host pair
// that many QPs, its flows taking them in turn (the seed's QPs are its
// flows' applications; rocetor's one QP a pair runs a pair's flows one
// after another).
//
// IRN's factor analysis (§4.3, Fig. 7) is two more schemes, both
// without PFC: irn-gbn (go-back-N instead of SACKs, BDP-FC kept) and
// irn-nobdpfc (BDP-FC off, SACKs kept: the bitmaps track the largest
// flow), nic/irn's Config.GoBackN and NoBDPFC.
//
// Each cell keeps its slowest flows per size bin with their timeouts
// and its flows split by whether they timed out (keep); --flows writes
// every flow. Two diagnostics measure why, not what:
// --no-timeout-recovery leaves IRN's expiries without their resends,
// --irn-ack-every sets its receiver's ACK coalescing (docs/experiments.md,
// "DCQCN and TIMELY": a spurious expiry's resends draw the ACKs
// coalescing holds back).
type irnFabric struct {
	fabricBase
	sc       scaleFlags
	schemes  string
	ccs      string
	windows  string
	duration time.Duration
	load     float64
	maxSize  int
	k        int
	cdf      string
	queue    string
	ecn      string
	rtoHigh  time.Duration
	rtoLow   time.Duration
	flowsDir string
	// noTORecovery: IRN's expiries resend nothing (a diagnostic).
	noTORecovery bool
	// ackEvery is IRN's receiver's ACK coalescing (0: irn's default).
	ackEvery int
	flowsErr error // the first flow file that could not be written
	delta    uint
	// timely is TIMELY's parameters over the TIMELY paper's (--timely,
	// JSON); timelyCfg is them with delta, nil when neither is set.
	timely    string
	timelyCfg *nicc.TimelyConfig
	voq       bool   // a data queue per input port (egress.by_input)
	inputBuf  string // each input port's buffer across its queues (egress.input_limit)
	burst     int    // packets a host's QP sends a turn (0: nic's 16)
	xon       string // PFC's resume threshold (the seed gives none)
	qps       int    // QPs of each communicating pair (0: one)

	schemeList []string
	ccList     []string
	windowList []int
}

func newIRNFabric() *irnFabric {
	return &irnFabric{sc: scaleFlags{scale: ScalePaper}, schemes: "irn,irn+pfc,roce+pfc,roce", ccs: "none", windows: "0,110", load: 0.7, maxSize: 3_000_000, cdf: "websearch", queue: "240KB", xon: irnXON,
		rtoHigh: irnRTOHigh, rtoLow: irnRTOLow}
}

func (e *irnFabric) Name() string { return "irn-fabric" }

func (e *irnFabric) Synopsis() string {
	return "IRN's Figs. 1-7 (seed 004 §4.2-4.3): k=6 fat tree at 70 % WebSearch load, IRN and RoCE with and without PFC, IRN's ablations: slowdown, FCT, p99 FCT"
}

func (e *irnFabric) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.schemes, "schemes", e.schemes, "schemes to run: irn, irn+pfc, roce+pfc, roce (RoCE is go-back-N); IRN's ablations (Fig. 7): irn-gbn (go-back-N instead of SACKs), irn-nobdpfc (BDP-FC off)")
	fs.StringVar(&e.ccs, "cc", e.ccs, "congestion controls, each a set of cells: none, dcqcn, timely (Figs. 4-6: dcqcn,timely)")
	fs.StringVar(&e.windows, "gbn-window", e.windows, "RoCE hosts' windows in packets, each a set of RoCE cells (0: none, the largest flow's packets; 110: IRN's BDP-FC cap)")
	fs.DurationVar(&e.duration, "duration", 0, "how long flows arrive (0: paper 10ms, ci 1ms)")
	fs.Float64Var(&e.load, "load", e.load, "offered load per host, of its 40 Gbit/s")
	fs.IntVar(&e.maxSize, "max-size", e.maxSize, "cap on flow sizes in bytes (the seed's largest flows are 3 MB; 0: WebSearch's own, up to 30 MB)")
	fs.IntVar(&e.k, "k", 0, "fat tree arity (0: 6, the seed's 54 servers, at both scales)")
	fs.StringVar(&e.cdf, "cdf", e.cdf, "flow size distribution: websearch, datamining, hadoop or a file of \"size percent\" lines")
	fs.StringVar(&e.ecn, "ecn", "", "DCQCN's marking: empty for the rate-derived profile (Kmin 160 KB, Kmax 640 KB, Pmax 20 % at 40G), or KMIN-KMAX[-PMAX] in bytes with units and Pmax in percent (the DCQCN paper's: 5KB-200KB-1)")
	fs.DurationVar(&e.rtoHigh, "rto-high", e.rtoHigh, "RTO_high, and the fixed timeout of RoCE without PFC (the seed's 320µs)")
	fs.BoolVar(&e.noTORecovery, "no-timeout-recovery", false, "IRN's timer expiries enter no loss recovery and resend nothing (irn.Config.NoTimeoutRecovery): a diagnostic for spurious expiries on a lossless fabric")
	fs.IntVar(&e.ackEvery, "irn-ack-every", 0, "IRN's receiver acknowledges every this many in-order packets unasked (irn.Config.AckEvery; 0: irn's 16)")
	fs.StringVar(&e.flowsDir, "flows", e.flowsDir, "write each cell's flow file (one line a completed flow: size, FCT, ideal FCT, retransmits, timeouts; docs/simulator.md) into this directory")
	fs.DurationVar(&e.rtoLow, "rto-low", e.rtoLow, "IRN's RTO_low, with at most 3 packets in flight (the seed's 100µs)")
	fs.UintVar(&e.delta, "timely-delta", 0, "TIMELY's additive increment δ in Mbit/s (0: the TIMELY paper's 10, set for 10 Gbit/s links)")
	fs.StringVar(&e.timely, "timely", "", "TIMELY's parameters that differ from the TIMELY paper's, a JSON object of nic/cc.TimelyConfig's names (e.g. {\"t_low_us\": 100}); --timely-delta applies after")
	fs.StringVar(&e.queue, "queue", e.queue, "each lossy egress queue's budget (the seed's 2 × BDP per input port; with PFC the switch's 6 × 240KB regardless)")
	fs.BoolVar(&e.voq, "voq", false, "a data queue per input port on every switch port, served round robin (egress.by_input), as the seed's input-queued switches serve their virtual output queues; not with --cc dcqcn")
	fs.StringVar(&e.inputBuf, "input-buffer", "", "each switch input port's buffer, across the queues its frames wait in (egress.input_limit; with --voq and 240KB the seed's switches); empty: none")
	fs.StringVar(&e.xon, "pfc-xon", e.xon, "the PFC cells' resume threshold per input port, below the pause at 220KB (the seed does not give it)")
	fs.IntVar(&e.burst, "host-burst", 0, "packets a host's QP sends before its NIC turns to the next QP with work (0: nic's 16; 1: packet by packet, as the seed's QPs each polling the MAC)")
	fs.IntVar(&e.qps, "qps", 0, "QPs of each communicating host pair, its flows taking them in turn, each its own UDP source port (0: one, a pair's flows one after another on one path)")
}

func (e *irnFabric) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	e.schemeList = splitList(e.schemes)
	for _, s := range e.schemeList {
		if _, _, err := irnScheme(s); err != nil {
			return Options{}, err
		}
	}
	e.ccList = splitList(e.ccs)
	for _, c := range e.ccList {
		if c != "none" && c != "dcqcn" && c != "timely" {
			return Options{}, Usagef("--cc %q: want none, dcqcn or timely", c)
		}
	}
	e.windowList = nil
	for _, w := range splitList(e.windows) {
		n, err := strconv.Atoi(w)
		if err != nil || n < 0 {
			return Options{}, Usagef("--gbn-window %q: want packets, 0 for none", w)
		}
		e.windowList = append(e.windowList, n)
	}
	switch {
	case len(e.schemeList) == 0 || len(e.ccList) == 0 || len(e.windowList) == 0:
		return Options{}, Usagef("--schemes, --cc and --gbn-window need a value each")
	case e.maxSize < 0 || e.duration < 0:
		return Options{}, Usagef("--max-size %d, --duration %v: want 0 or more", e.maxSize, e.duration)
	case !ecnFlagOK(e.ecn):
		return Options{}, Usagef("--ecn %q: want KMIN-KMAX[-PMAX], e.g. 5KB-200KB-1", e.ecn)
	case e.ackEvery < 0 || e.ackEvery > 0xffff:
		return Options{}, Usagef("--irn-ack-every %d: want 0 (irn's default) to 65535", e.ackEvery)
	case e.rtoLow <= 0 || e.rtoHigh < e.rtoLow:
		return Options{}, Usagef("--rto-low %v, --rto-high %v: want 0 < low ≤ high", e.rtoLow, e.rtoHigh)
	case e.queue == "" || strings.ContainsAny(e.queue, "{}:,\n"):
		return Options{}, Usagef("--queue %q: want a byte size, e.g. 240KB", e.queue)
	case !xonOK(e.xon):
		return Options{}, Usagef("--pfc-xon %q: want a byte size below 220KB, e.g. 218KB", e.xon)
	case strings.ContainsAny(e.inputBuf, "{}:,\n"):
		return Options{}, Usagef("--input-buffer %q: want a byte size, e.g. 240KB", e.inputBuf)
	case e.delta > 40_000:
		return Options{}, Usagef("--timely-delta %d: want Mbit/s up to the line rate, 40000", e.delta)
	case e.voq && slices.Contains(e.ccList, "dcqcn"):
		return Options{}, Usagef("--voq with --cc dcqcn: DCQCN's marking is on the data queue alone")
	case e.load <= 0 || e.load > 1:
		return Options{}, Usagef("--load %v: want (0, 1]", e.load)
	case e.burst < 0 || e.burst > 1024 || e.qps < 0 || e.qps > 256:
		return Options{}, Usagef("--host-burst %d, --qps %d: want 0 to 1024 and 0 to 256", e.burst, e.qps)
	case e.k != 0 && (e.k < 2 || e.k%2 != 0):
		return Options{}, Usagef("--k %d: want an even arity", e.k)
	}
	if e.timely != "" || e.delta != 0 {
		t := nicc.DefaultTimelyConfig()
		if e.timely != "" {
			d := json.NewDecoder(strings.NewReader(e.timely))
			d.DisallowUnknownFields()
			if err := d.Decode(&t); err != nil {
				return Options{}, Usagef("--timely %q: %v", e.timely, err)
			}
			if err := t.Validate(); err != nil {
				return Options{}, Usagef("--timely %q: %v", e.timely, err)
			}
		}
		if e.delta != 0 {
			t.Delta = uint32(e.delta)
		}
		e.timelyCfg = &t
	}
	if _, err := workload.LoadCDF(e.cdf); err != nil {
		return Options{}, Usagef("--cdf: %v", err)
	}
	if e.duration == 0 {
		e.duration = 10 * time.Millisecond
		if e.sc.scale == ScaleCI {
			e.duration = time.Millisecond
		}
	}
	if e.k == 0 {
		e.k = 6
	}
	return Options{}, nil
}

// xonOK reports whether s is a size below the PFC cells' pause at
// 220 KB.
func xonOK(s string) bool {
	var b dataplane.Bytes
	return b.UnmarshalText([]byte(s)) == nil && b < 220_000 && !strings.ContainsAny(s, "{}:,\n")
}

// irnScheme is a scheme's transport, whether its switches pause, and
// which of IRN's ablations (seed 004 §4.3, Fig. 7) it runs: irn-gbn
// recovers with go-back-N instead of SACKs (BDP-FC kept), irn-nobdpfc
// has BDP-FC off (SACKs kept); both without PFC, as IRN's default.
func irnScheme(s string) (transport string, pfc bool, err error) {
	switch s {
	case "irn", "irn-gbn", "irn-nobdpfc":
		return "irn", false, nil
	case "irn+pfc":
		return "irn", true, nil
	case "roce":
		return "gbn", false, nil
	case "roce+pfc":
		return "gbn", true, nil
	}
	return "", false, Usagef("scheme %q: want irn, irn+pfc, roce+pfc, roce, irn-gbn or irn-nobdpfc", s)
}

// The seed's parameters (§4.1).
const (
	irnRate      = 40e9
	irnDelay     = 2 * sim.Microsecond
	irnBDPFC     = 110 // packets: the 120 KB BDP of the longest path
	irnRTOHigh   = 320 * time.Microsecond
	irnRTOLow    = 100 * time.Microsecond
	irnNoTimeout = time.Second // "We disable timeouts when PFC is enabled"
	irnXON       = "218KB"     // PFC's resume, a little below the pause at 220KB
)

// options are the hosts and switches of one cell.
func (e *irnFabric) options(scheme, cc string, window, largest int, seed uint64) fabric.Options {
	tr, pfc, _ := irnScheme(scheme)
	o := fabric.Options{Seed: seed, Transport: tr, CC: cc, BDP: irnBDPFC, RTO: e.rtoHigh, Switch: e.egress(e.queue), HostBurst: e.burst}
	if tr == "irn" {
		o.RTOLow = e.rtoLow
		o.IRNGoBackN = scheme == "irn-gbn"
		o.IRNNoTimeoutRecovery = e.noTORecovery
		o.IRNAckEvery = e.ackEvery
		if scheme == "irn-nobdpfc" {
			o.IRNNoBDPFC = largest // no cap: the bitmaps track the largest flow
		}
	} else {
		o.GBNWindow = window
		if window == 0 {
			o.GBNWindow = largest
		}
	}
	if pfc {
		// With queues of the switch's 1440KB.
		o.Switch, o.RTO = e.egress("1440KB")+"pfc: {xoff: 220KB, xon: "+e.xon+"}\n", irnNoTimeout
		if tr == "irn" {
			o.RTOLow = irnNoTimeout
		}
	}
	if cc == "dcqcn" {
		o.Switch += dcqcnMarking(e.ecn)
	}
	if cc == "timely" && e.timelyCfg != nil {
		t := *e.timelyCfg
		o.Timely = &t
	}
	return o
}

// egress is the switches' egress section: each queue's budget, with
// --voq a data queue per input port, with --input-buffer each input
// port's budget across them.
func (e *irnFabric) egress(limit string) string {
	s := "egress: {queue_limit: " + limit
	if e.voq {
		s += ", by_input: true"
	}
	if e.inputBuf != "" {
		s += ", input_limit: " + e.inputBuf
	}
	return s + "}\n"
}

func (e *irnFabric) topology() topo.Topology {
	return topo.FatTree(e.k, topo.Tiers{HostRate: irnRate, FabricRate: irnRate, CoreRate: irnRate,
		HostDelay: irnDelay, FabricDelay: irnDelay, CoreDelay: irnDelay})
}

func (e *irnFabric) flows(tp topo.Topology, seed uint64) ([]workload.Flow, error) {
	wl := workload.Spec{Name: "poisson", CDF: e.cdf, Load: e.load, Duration: e.duration, MaxSize: e.maxSize, Racks: fabric.Racks(tp)}
	return wl.Flows(len(tp.Hosts()), irnRate, rand.New(rand.NewPCG(seed, sim.Seed(seed, 6))))
}

// cells are the experiment's points: each scheme under each congestion
// control, the RoCE ones at each window.
func (e *irnFabric) cells() []map[string]string {
	var out []map[string]string
	for _, cc := range e.ccList {
		for _, s := range e.schemeList {
			if tr, _, _ := irnScheme(s); tr == "irn" {
				out = append(out, map[string]string{"scheme": s, "cc": cc, "gbn_window": "-"})
				continue
			}
			for _, w := range e.windowList {
				out = append(out, map[string]string{"scheme": s, "cc": cc, "gbn_window": windowName(w)})
			}
		}
	}
	return out
}

func windowName(w int) string {
	if w == 0 {
		return "none"
	}
	return strconv.Itoa(w)
}

func (e *irnFabric) Simulate(ctx context.Context, sim Simulator, out io.Writer, res *Results) error {
	tp := e.topology()
	res.Topology = fmt.Sprintf("%s (%d hosts, %d switches), 40 Gbit/s, 2 µs links; WebSearch ≤ %d B, Poisson at %.0f %% load for %v",
		tp.Name, len(tp.Hosts()), len(tp.Nodes)-len(tp.Hosts()), e.maxSize, 100*e.load, e.duration)
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "schemes": e.schemes, "cc": e.ccs,
		"gbn_window": e.windows, "duration": e.duration.String(), "load": fmt.Sprint(e.load), "max_size": strconv.Itoa(e.maxSize), "k": strconv.Itoa(e.k)}
	if e.cdf != "websearch" || e.queue != "240KB" || e.ecn != "" || e.rtoHigh != irnRTOHigh || e.rtoLow != irnRTOLow {
		res.Params["cdf"], res.Params["queue"], res.Params["ecn"] = e.cdf, e.queue, e.ecn
		res.Params["rto_high"], res.Params["rto_low"] = e.rtoHigh.String(), e.rtoLow.String()
	}
	if e.noTORecovery {
		res.Params["no_timeout_recovery"] = "true"
	}
	if e.voq {
		res.Params["voq"] = "true"
	}
	if e.inputBuf != "" {
		res.Params["input_buffer"] = e.inputBuf
	}
	if e.burst != 0 {
		res.Params["host_burst"] = strconv.Itoa(e.burst)
	}
	if e.xon != irnXON {
		res.Params["pfc_xon"] = e.xon
	}
	if e.qps != 0 {
		res.Params["qps"] = strconv.Itoa(e.qps)
	}
	if e.ackEvery != 0 {
		res.Params["irn_ack_every"] = strconv.Itoa(e.ackEvery)
	}
	if e.delta != 0 {
		res.Params["timely_delta"] = strconv.FormatUint(uint64(e.delta), 10)
	}
	if e.timely != "" {
		res.Params["timely"] = e.timely
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		flows, err := e.flows(tp, uint64(seed))
		if err != nil {
			return err
		}
		biggest := 1 // bytes of the largest flow
		for _, f := range flows {
			biggest = max(biggest, f.Size)
		}
		largest := (biggest + 1023) / 1024
		for _, pt := range e.cells() {
			w, _ := strconv.Atoi(pt["gbn_window"])
			o := e.options(pt["scheme"], pt["cc"], w, largest, uint64(seed))
			o.MaxQPs, o.MaxMessage = fabric.QPsNeeded(flows, max(1, e.qps)), biggest
			start := time.Now()
			fmt.Fprintf(out, "irn-fabric: seed %d, %s, cc %s, gbn window %s: %d flows... ", seed, pt["scheme"], pt["cc"], pt["gbn_window"], len(flows))
			fr, err := simulateCellKeep(ctx, sim, res, pt, seed, tp, o, flows, fabric.RunOptions{QPs: e.qps}, e.keep(pt, seed))
			if err != nil {
				fmt.Fprintf(out, "%v\n", err)
				if ctx.Err() != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(out, "slowdown %.2f, p99 FCT %.2f ms (%v)\n", fr.All.MeanSlowdown, p99FCTms(fr), time.Since(start).Round(time.Second))
		}
	}
	groups := GroupRuns(res.Runs)
	res.Table = MakeTable(groups, irnColumns())
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 004 §4.2; the scheme's metric over the baseline's, per seed on the same flows, median and range; the paper's from its text, its figures being plots without numbers in the seed's text):",
		irnVersusPaper(groups)))
	return e.flowsErr
}

// keep is what a cell keeps of its flows' records: the slowest of each
// size bin (FabricRun.Slowest) and the flows that timed out beside the
// rest (FabricRun.Classes), and with --flows the flow file.
func (e *irnFabric) keep(pt map[string]string, seed int) func(*fabric.Result, *FabricRun) {
	return func(r *fabric.Result, fr *FabricRun) {
		fr.Slowest = slowest(r.Records, slowestPerBin)
		fr.setClasses(timeoutClasses(r.Records))
		if e.flowsDir != "" {
			if err := writeFlowFile(e.flowsDir, r, pt, seed); err != nil && e.flowsErr == nil {
				e.flowsErr = err
			}
		}
	}
}

func irnColumns() []Column {
	pt, sp := pointCell, spreadCell
	dropPct := func(f *FabricRun) float64 {
		return 100 * f.Drop() / float64(max(f.HostCounters["TxPackets"], 1))
	}
	// Of the data packets, retransmissions included: switch drops are
	// nearly all data (ACKs are a small share of a hot queue's bytes).
	dataPct := func(f *FabricRun) float64 {
		return 100 * f.Drop() / float64(max(f.HostCounters["Requests"], 1))
	}
	return []Column{
		{"scheme", pt("scheme")}, {"cc", pt("cc")}, {"gbn window", pt("gbn_window")},
		{"seeds", seedsCell},
		// A flow whose QP gave up (go-back-N's retries exhausted, as a
		// RoCE NIC's retry_cnt) has no FCT: the columns after this one
		// are of the flows that completed.
		{"flows failed", sp(func(f *FabricRun) float64 { return float64(f.Flows - f.Completed) }, 0)},
		{"avg slowdown", sp(meanSlowdown, 2)}, {"avg FCT ms", sp(meanFCTms, 3)}, {"p99 FCT ms", sp(p99FCTms, 2)},
		{"drops", sp(func(f *FabricRun) float64 { return f.Drop() }, 0)}, {"drop % of sent", sp(dropPct, 2)}, {"drop % of data sent", sp(dataPct, 2)},
		{"PFC frames", sp(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
		{"timeouts", sp(hostCount("Timeouts"), 0)}, {"retransmits", sp(hostCount("Retransmits"), 0)},
	}
}

// irnClaims are the seed's comparisons (§4.2.1-4.2.4): the scheme over
// the baseline, on each metric, as the paper gives it without and with
// explicit congestion control.
var irnClaims = []struct {
	name, scheme, base string
	none, withCC       string
}{
	{"RoCE+PFC over IRN (Figs. 1, 4)", "roce+pfc", "irn", "2.8-3.7×", "1.5-2.2×"},
	{"IRN+PFC over IRN (Figs. 2, 5)", "irn+pfc", "irn", "1.5-2×", "0.99-1.034×"},
	{"RoCE over RoCE+PFC (Figs. 3, 6)", "roce", "roce+pfc", "1.5-3×", "1.35-3.5×"},
	// §4.3 gives no numbers, Fig. 7 (average FCT) no congestion control.
	{"IRN go-back-N over IRN (Fig. 7)", "irn-gbn", "irn", "worse", "–"},
	{"IRN without BDP-FC over IRN (Fig. 7)", "irn-nobdpfc", "irn", "worse", "–"},
}

// irnVersusPaper sets rocetor's ratios beside the paper's: per seed,
// the scheme's metric over the baseline's on the same flows, the median
// over seeds and their range.
func irnVersusPaper(groups []Group) Table {
	t := Table{Columns: []string{"comparison", "cc", "gbn window", "paper (each metric)", "avg slowdown ×", "avg FCT ×", "p99 FCT ×"}}
	find := func(scheme, cc, w string) *Group {
		for i := range groups {
			p := groups[i].Point
			if p["scheme"] == scheme && p["cc"] == cc && (p["gbn_window"] == w || p["gbn_window"] == "-") {
				return &groups[i]
			}
		}
		return nil
	}
	var ccs, windows []string
	for _, g := range groups {
		if !slices.Contains(ccs, g.Point["cc"]) {
			ccs = append(ccs, g.Point["cc"])
		}
		if w := g.Point["gbn_window"]; w != "-" && !slices.Contains(windows, w) {
			windows = append(windows, w)
		}
	}
	if len(windows) == 0 {
		windows = []string{"-"}
	}
	for _, cc := range ccs {
		for _, c := range irnClaims {
			paper := c.none
			if cc != "none" {
				paper = c.withCC
			}
			for _, w := range windows {
				a, b := find(c.scheme, cc, w), find(c.base, cc, w)
				if a == nil || b == nil || (a.Point["gbn_window"] == "-" && b.Point["gbn_window"] == "-" && w != windows[0]) {
					continue
				}
				row := []string{c.name, cc, w, paper}
				for _, f := range []func(*FabricRun) float64{meanSlowdown, meanFCTms, p99FCTms} {
					row = append(row, seedRatio(a, b, f))
				}
				t.Rows = append(t.Rows, row)
			}
		}
	}
	return t
}

// seedRatio is f of a over f of b seed by seed: the median and, over
// several seeds, the range.
func seedRatio(a, b *Group, f func(*FabricRun) float64) string {
	return ratioText(seedRatios(a, b, f), 1, 2, "")
}

// seedChange is seedRatio as a change in percent: "-34 %".
func seedChange(a, b *Group, f func(*FabricRun) float64) string {
	return ratioText(seedRatios(a, b, f), 100, 0, " %")
}

// ratioText writes v, ratios, as they are (scale 1) or as a change
// (scale 100: percent): the median and, for several, the range.
func ratioText(v []float64, scale float64, prec int, unit string) string {
	if len(v) == 0 {
		return "–"
	}
	f := func(x float64) string {
		if scale != 1 {
			x = (x - 1) * scale
		}
		return fmtFloat(x, prec)
	}
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	if len(v) == 1 {
		return f(m) + unit
	}
	return fmt.Sprintf("%s%s (%s … %s)", f(m), unit, f(v[0]), f(v[len(v)-1]))
}

// seedRatios are f of a over f of b for each seed both ran, sorted.
func seedRatios(a, b *Group, f func(*FabricRun) float64) []float64 {
	var v []float64
	for _, ra := range a.OK() {
		for _, rb := range b.OK() {
			if ra.Repeat == rb.Repeat && f(rb.Fabric) > 0 {
				v = append(v, f(ra.Fabric)/f(rb.Fabric))
			}
		}
	}
	sort.Float64s(v)
	return v
}

// Plots are Figs. 1-3's three panels: each metric by scheme, a line per
// congestion control and RoCE window.
func (e *irnFabric) Plots() []PlotSpec {
	names := []string{"irn", "irn+pfc", "roce+pfc", "roce", "irn-gbn", "irn-nobdpfc"}
	x := func(g *Group) float64 { return float64(slices.Index(names, g.Point["scheme"])) }
	series := func(g *Group) string { return "cc " + g.Point["cc"] + ", gbn window " + g.Point["gbn_window"] }
	var out []PlotSpec
	for _, m := range []struct {
		file, label string
		f           func(*FabricRun) float64
	}{{"slowdown", "average slowdown", meanSlowdown}, {"fct", "average FCT (ms)", meanFCTms}, {"p99", "99th-percentile FCT (ms)", p99FCTms}} {
		out = append(out, PlotSpec{File: "irn-fabric-" + m.file + ".png", Title: "irn-fabric: " + m.label + " (median over seeds)",
			XLabel: "scheme", YLabel: m.label, XNames: names, X: x, Series: series,
			Y: func(g *Group) float64 { return fabricMedian(g, m.f) }})
	}
	return out
}
