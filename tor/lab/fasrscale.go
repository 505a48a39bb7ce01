package lab

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// fasrScale is sr-concurrency's fabric form (FaSR, seed 001 §V-C and
// §V-D 3; Figs. 7(c), 8(b), 10): thousands of QPs at once across many
// host pairs of a fabric at 1 % loss, GBN against IRN and FaSR — their
// aggregate goodput and its share of the same transport's lossless
// goodput, the SR memory each needs for its QPs by the project's one
// accounting (nic.SRState: docs/experiments.md, "SR memory, one
// accounting"), FaSR's shared-pool use (peak units and blocks, how
// often it ran out) and its fast-path share (Fig. 9(b)).
//
// The fabric is Fig. 10's (§V-D 3, the seed's one fabric: "four
// backbone switches and 32 leaf switches, each connecting ten servers",
// 400 Gbit/s between switches, 100 Gbit/s to servers, base RTT 40 µs,
// MTU 1 KB): a leaf-spine of 320 hosts, each link 5 µs (eight
// traversals a round trip). Every parameter besides:
//
//   - the pairs: host i writes to host i + N/2, so that every flow
//     crosses a spine (the seed's testbed, Fig. 7(c), is one server and
//     three clients; §V-D 3 does not say its traffic); --qps is the
//     QPs of all pairs together, split evenly, a multiple of the pairs
//     (the seed's axis is "concurrent QPs", 16 to 5K; the issue asks up
//     to 10,000: 1, 8, 32 and 64 a pair, 160 to 10,240);
//   - the loss: 1 % of the RoCE packets each spine sends (§V-C 2: "at
//     5K concurrent QPs under … packet loss", Fig. 10 "under 1% Loss
//     Rate"): every packet, data or ACK, crosses one spine, so each is
//     lost with 1 %, as the testbed's P4 program drops them;
//   - the BDP 500 packets (100 Gbit/s × 40 µs): the window of every
//     transport (GBN's too: a RoCE NIC's window is not the issue here,
//     loss is), IRN's bitmaps, and FaSR's pool, which at BDP 500 is the
//     seed's §III-D 20 units and 70 blocks;
//   - no congestion control (§V-A: "We turned off DCQCN");
//   - 4 KiB WRITEs (sr-concurrency's), --bytes per pair (at least 4 per
//     QP): enough for the pairs' goodput to be bandwidth's, not the
//     round trip's;
//   - RTOs: 400 µs (ten round trips) for all; IRN's RTO_low 100 µs
//     (seed 004 §3.1's N = 3 rule, scaled as irn-fabric's);
//   - the QP contexts: on chip at no cost unless --qpc-cache gives the
//     hosts' NICs a QP-context cache (nic.QPCache), the seed's cause of
//     IRN's and CX6's loss at thousands of QPs (§V-C 1): the budget is
//     the seed's FPGA's QPC SRAM, 1.4 MB (§V-A: "1.4MB for QPC"), a
//     miss the PCIe round trip it measured, 1.2 µs (§II: "PCIe latency
//     accounts for 1.2us"; §V-C 3: "a PCIe delay of approximately
//     1.2 μs"), each context 256 B (§V-A) plus the transport's SR state
//     per QP (nic.SRState).
type fasrScale struct {
	fabricBase
	sc         scaleFlags
	transports string
	qps        string
	losses     string
	bytes      int
	size       int
	rto        time.Duration
	qpcCache   dataplane.Bytes
	qpcMiss    time.Duration

	transportList []string
	qpList        []int
	lossList      []float64
}

func newFaSRScale() *fasrScale {
	return &fasrScale{sc: scaleFlags{scale: ScalePaper}, transports: "gbn,irn,fasr", losses: "0,0.01", size: 4096,
		rto: 400 * time.Microsecond, qpcMiss: fasrQPCMiss}
}

func (e *fasrScale) Name() string { return "fasr-scale" }

func (e *fasrScale) Synopsis() string {
	return "FaSR's Figs. 7(c), 8(b), 10 (seed 001 §V) on a fabric: up to 10,000 QPs over many host pairs at 1 % loss: GBN, IRN, FaSR goodput, SR memory, pool use, fast-path share"
}

func (e *fasrScale) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.transports, "transports", e.transports, "comma-separated: gbn, irn, fasr")
	fs.StringVar(&e.qps, "qps", "", "QPs of all pairs together, each a multiple of the pairs (default: paper 160,1280,5120,10240; ci 16,512)")
	fs.StringVar(&e.losses, "losses", e.losses, "loss rates of each spine's RoCE packets; 0 is the lossless reference")
	fs.IntVar(&e.bytes, "bytes", 0, "bytes each pair writes (default 4 MB, 335 µs at 100 Gbit/s; at least 4 WRITEs per QP)")
	fs.IntVar(&e.size, "size", e.size, "bytes per WRITE")
	fs.DurationVar(&e.rto, "rto", e.rto, "every transport's first retransmission timeout (IRN's RTO_high)")
	fs.TextVar(&e.qpcCache, "qpc-cache", e.qpcCache, "each NIC's QP-context cache, e.g. 1.4MB (the seed's, §V-A); 0: every context on chip at no cost")
	fs.DurationVar(&e.qpcMiss, "qpc-miss", e.qpcMiss, "with --qpc-cache: the time a context fetch holds the NIC's pipeline (the seed's PCIe latency, §II)")
}

func (e *fasrScale) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	var err error
	if e.transportList, err = wordList("transports", e.transports, "gbn", "irn", "fasr"); err != nil {
		return Options{}, err
	}
	q := e.qps
	if q == "" {
		q = map[string]string{ScalePaper: "160,1280,5120,10240", ScaleCI: "16,512"}[e.sc.scale]
	}
	if e.qpList, err = intList("qps", q, 1, 20000, "1 to 20000"); err != nil {
		return Options{}, err
	}
	if e.lossList, err = parseLosses(e.losses); err != nil {
		return Options{}, err
	}
	if e.bytes == 0 {
		e.bytes = 4_000_000
	}
	pairs := e.pairs()
	switch {
	case len(e.transportList) == 0:
		return Options{}, Usagef("--transports: none given")
	case slices.ContainsFunc(e.qpList, func(n int) bool { return n%pairs != 0 }):
		return Options{}, Usagef("--qps %v: want multiples of the %d pairs", e.qpList, pairs)
	case e.qpcCache < 0 || e.qpcMiss < 0:
		return Options{}, Usagef("--qpc-cache %v, --qpc-miss %v: want neither negative", e.qpcCache, e.qpcMiss)
	case e.size < 1 || e.bytes < e.size || e.rto <= 0:
		return Options{}, Usagef("--size %d, --bytes %d, --rto %v: want a WRITE, at least one per pair, a timeout", e.size, e.bytes, e.rto)
	}
	return Options{}, nil
}

// The seed's fabric (Fig. 10, §V-D 3) and the BDP it implies.
const (
	fasrHostRate   = 100e9
	fasrFabricRate = 400e9
	fasrDelay      = 5 * sim.Microsecond // 40 µs base RTT over eight traversals
	fasrBDP        = 500                 // packets of 1 KB: 100 Gbit/s × 40 µs
	fasrIRNRTOLow  = 100 * time.Microsecond
	fasrQPCMiss    = 1200 * time.Nanosecond // §II, §V-C 3: the PCIe latency
)

// shape is the leaf-spine's leaves, spines and hosts per leaf: Fig. 10's
// at paper scale, 4 × 2 × 2 at ci.
func (e *fasrScale) shape() (leaves, spines, hosts int) {
	if e.sc.scale == ScaleCI {
		return 4, 2, 2
	}
	return 32, 4, 10
}

func (e *fasrScale) pairs() int {
	l, _, h := e.shape()
	return l * h / 2
}

func (e *fasrScale) topology() topo.Topology {
	l, s, h := e.shape()
	return topo.LeafSpine(l, s, h, topo.Tiers{HostRate: fasrHostRate, FabricRate: fasrFabricRate,
		HostDelay: fasrDelay, FabricDelay: fasrDelay})
}

// flows are the pairs' WRITEs with q QPs a pair: pair i (host i to
// host i + N/2) writes --bytes in --size WRITEs, at least 4 per QP, all
// posted at once (the pair's QPs take them in turn and keep them in
// their send queues).
func (e *fasrScale) flows(hosts, q int) []workload.Flow {
	pairs := hosts / 2
	var out []workload.Flow
	for i := 0; i < pairs; i++ {
		count := max((e.bytes+e.size-1)/e.size, 4*q)
		for range count {
			out = append(out, workload.Flow{Src: i, Dst: i + pairs, Size: e.size, After: -1})
		}
	}
	return out
}

// options are one cell's hosts and switches.
func (e *fasrScale) options(tr string, loss float64, seed uint64) fabric.Options {
	o := fabric.Options{Seed: seed, Transport: tr, BDP: fasrBDP, RTO: e.rto, MaxMessage: e.size}
	if tr == "irn" {
		o.RTOLow = fasrIRNRTOLow
	}
	if e.qpcCache > 0 {
		o.QPCache = nic.QPCache{Bytes: int(e.qpcCache), Miss: e.qpcMiss}
	}
	if loss > 0 {
		o.SwitchFor = map[string]string{"spine*": fmt.Sprintf("impair:\n  rules: [{port: all, direction: egress, match: roce, loss: %g}]\n", loss)}
	}
	return o
}

func (e *fasrScale) Simulate(ctx context.Context, fab Simulator, out io.Writer, res *Results) error {
	tp := e.topology()
	hosts := len(tp.Hosts())
	l, s, h := e.shape()
	res.Topology = fmt.Sprintf("leafspine %d leaves × %d spines × %d hosts (%d hosts, %d pairs), 100 Gbit/s to hosts, 400 Gbit/s between switches, 5 µs links (40 µs RTT); %d B WRITEs, %d B per pair; loss at the spines",
		l, s, h, hosts, hosts/2, e.size, e.bytes)
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "transports": e.transports,
		"qps": fmt.Sprint(e.qpList), "losses": e.losses, "bytes": strconv.Itoa(e.bytes), "size": strconv.Itoa(e.size),
		"rto": e.rto.String()}
	if e.qpcCache > 0 {
		// Only then: a record without the cache keeps its parameters.
		res.Params["qpc_cache"], res.Params["qpc_miss"] = strconv.Itoa(int(e.qpcCache)), e.qpcMiss.String()
	}
	for seed := 1; seed <= e.sc.n(); seed++ {
		for _, n := range e.qpList {
			q := n / (hosts / 2)
			flows := e.flows(hosts, q)
			for _, loss := range e.lossList {
				for _, tr := range e.transportList {
					o := e.options(tr, loss, uint64(seed))
					o.MaxQPs = fabric.QPsNeeded(flows, q)
					if w := len(flows) / (hosts / 2); w > 4096 {
						// All posted at once, as the seed's perftest keeps
						// every QP's queue full: past the hosts' 4,096
						// outstanding, each QP would hold one WRITE at a
						// time, idle between them.
						o.HostCQ = w
					}
					c := fabricCell{point: map[string]string{"transport": tr, "qps": strconv.Itoa(n), "loss": fmtLoss(loss)},
						seed: seed, tp: tp, o: o, flows: flows, ro: fabric.RunOptions{QPs: q}, keep: keepGoodput90}
					if err := runFabricCell(ctx, fab, res, out, e.Name(), c, func(fr *FabricRun) string {
						line := fmt.Sprintf("goodput %.2f Gbit/s, %d retransmits, %d timeouts, SR %d B a host",
							fr.GoodputGbps, fr.HostCounters["Retransmits"], fr.HostCounters["Timeouts"], fr.SR.HostBytes)
						if e.qpcCache > 0 {
							line += fmt.Sprintf(", %d QPC misses", fr.HostCounters["QPCMisses"])
						}
						return line
					}); err != nil {
						return err
					}
				}
			}
		}
	}
	groups := GroupRuns(res.Runs)
	res.Table = MakeTable(groups, e.columns(groups))
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 001 §V-C 2, §V-D 2; at 1 % loss, goodput as a share of the same transport's lossless goodput on the same QPs, per seed, median and range):",
		fasrVersusPaper(groups, e.qpList)))
	return nil
}

// keepGoodput90 keeps the goodput until 90 % of the bytes had
// arrived: 90 % of them over the time from the first WRITE's post to
// the completion that took the completed bytes past 90 %. The
// goodput over the whole run (GoodputGbps) ends with its last
// completion, which at hundreds of QPs is one QP's last packet lost
// and found by a timeout: the run's tail, not its throughput — the
// seed's perftest runs (Fig. 7(c)) measure a steady state.
func keepGoodput90(r *fabric.Result, fr *FabricRun) {
	type done struct{ end, size int64 }
	var ds []done
	var total int64
	first := int64(math.MaxInt64)
	for _, f := range r.Records {
		if f.OK {
			ds = append(ds, done{f.EndNs, int64(f.Size)})
			total += int64(f.Size)
			first = min(first, f.StartNs)
		}
	}
	slices.SortFunc(ds, func(a, b done) int { return cmp.Compare(a.end, b.end) })
	var sum int64
	for _, d := range ds {
		if sum += d.size; 10*sum >= 9*total {
			if d.end > first {
				fr.Extra = map[string]float64{"goodput_90_gbps": math.Round(float64(sum)*8/float64(d.end-first)*1000) / 1000}
			}
			return
		}
	}
}

func goodput90(f *FabricRun) float64 { return f.Extra["goodput_90_gbps"] }

func fmtLoss(l float64) string { return strconv.FormatFloat(l, 'g', -1, 64) }

// SR figures of a run: the receiving host's SR memory per QP (its
// endpoint's SR state over the QPs it is sized for) and FaSR's.
func srPerQP(f *FabricRun) float64 { return float64(f.SR.HostBytes) / float64(max(f.SR.QPs, 1)) }
func fastShare(f *FabricRun) float64 {
	ops := f.SR.FaSR["FastOps"] + f.SR.FaSR["SlowOps"]
	if ops == 0 {
		return 0
	}
	return 100 * float64(f.SR.FaSR["FastOps"]) / float64(ops)
}
func fasrCount(name string) func(*FabricRun) float64 {
	return func(f *FabricRun) float64 { return float64(f.SR.FaSR[name]) }
}
func goodputGbps(f *FabricRun) float64 { return f.GoodputGbps }

func (e *fasrScale) columns(groups []Group) []Column {
	ofLossless := func(f func(*FabricRun) float64) func(g *Group) string {
		return func(g *Group) string {
			if g.Point["loss"] == "0" {
				return "–"
			}
			base := findGroup(groups, map[string]string{"transport": g.Point["transport"], "qps": g.Point["qps"], "loss": "0"})
			if base == nil {
				return "no reference"
			}
			return ratioText(seedRatios(g, base, f), 100, 1, " %")
		}
	}
	cols := []Column{
		{"transport", pointCell("transport")}, {"QPs", pointCell("qps")}, {"loss", pointCell("loss")}, {"seeds", seedsCell},
		{"goodput Gbit/s", spreadCell(goodputGbps, 1)}, {"change vs lossless", ofLossless(goodputGbps)},
		{"goodput to 90 % Gbit/s", spreadCell(goodput90, 1)}, {"change vs lossless", ofLossless(goodput90)},
		{"retransmits", spreadCell(hostCount("Retransmits"), 0)}, {"timeouts", spreadCell(hostCount("Timeouts"), 0)},
		{"SR B per host", spreadCell(func(f *FabricRun) float64 { return float64(f.SR.HostBytes) }, 0)},
		{"SR B per QP", spreadCell(srPerQP, 1)},
		{"fast path %", spreadCell(fastShare, 1)},
		{"peak units", spreadCell(fasrCount("PeakUnits"), 0)}, {"peak blocks", spreadCell(fasrCount("PeakBlocks"), 0)},
		{"units short", spreadCell(fasrCount("UnitsExhausted"), 0)}, {"GBN fallbacks", spreadCell(fasrCount("GBNFallbacks"), 0)},
	}
	if e.qpcCache > 0 {
		// Only with the cache: a record without it keeps its table.
		cols = append(cols, Column{"QPC miss %", spreadCell(qpcMissShare, 2)},
			Column{"QPC stall ms (all hosts)", spreadCell(func(f *FabricRun) float64 { return float64(f.HostCounters["QPCStallNs"]) / 1e6 }, 2)})
	}
	return cols
}

// qpcMissShare is the share of QP-context lookups that missed the cache
// (nic.QPCache), over all hosts.
func qpcMissShare(f *FabricRun) float64 {
	n := f.HostCounters["QPCHits"] + f.HostCounters["QPCMisses"]
	if n == 0 {
		return 0
	}
	return 100 * float64(f.HostCounters["QPCMisses"]) / float64(n)
}

// fasrVersusPaper sets each transport's goodput at 1 % loss, against
// its lossless goodput, and its SR memory per QP beside the seed's.
func fasrVersusPaper(groups []Group, qps []int) Table {
	t := Table{Columns: []string{"QPs", "transport", "paper: throughput at 1 % (Fig. 7(c), 5K QPs)", "rocetor: goodput at 1 % vs lossless",
		"to 90 %",
		"paper: SR memory per QP (§V-A, Fig. 8(b))", "rocetor: SR B per QP"}}
	paper := map[string][2]string{
		"gbn":  {"CX6: ≈ 13× below FaSR", "0 (none)"},
		"irn":  {"−30 % (IRN+: concurrency bound)", "20 B + 5 × BDP of bitmaps"},
		"fasr": {"above 92 % (−8 % or less)", "1 B + 1,600 B shared (≈ 10 bits at 1 %)"},
	}
	for _, n := range qps {
		for _, tr := range []string{"gbn", "irn", "fasr"} {
			q := strconv.Itoa(n)
			lossy := findGroup(groups, map[string]string{"transport": tr, "qps": q, "loss": "0.01"})
			base := findGroup(groups, map[string]string{"transport": tr, "qps": q, "loss": "0"})
			if lossy == nil || base == nil {
				continue
			}
			t.Rows = append(t.Rows, []string{q, tr, paper[tr][0], ratioText(seedRatios(lossy, base, goodputGbps), 100, 1, " %"),
				ratioText(seedRatios(lossy, base, goodput90), 100, 1, " %"), paper[tr][1], fabricSpread(lossy, srPerQP, 1)})
		}
	}
	return t
}

// Plots are Fig. 7(c)'s goodput and Fig. 8(b)'s memory against the QPs.
func (e *fasrScale) Plots() []PlotSpec {
	x := func(g *Group) float64 { v, _ := strconv.Atoi(g.Point["qps"]); return float64(v) }
	series := func(g *Group) string { return g.Point["transport"] + " at " + g.Point["loss"] }
	return []PlotSpec{
		{File: "fasr-scale-goodput.png", Title: "fasr-scale: aggregate goodput (Fig. 7(c); median over seeds)", XLabel: "QPs",
			YLabel: "goodput (Gbit/s)", X: x, Series: series, Y: func(g *Group) float64 { return fabricMedian(g, goodputGbps) }},
		{File: "fasr-scale-memory.png", Title: "fasr-scale: SR memory per QP (Fig. 8(b))", XLabel: "QPs", YLabel: "SR bytes per QP",
			X: x, Series: func(g *Group) string { return g.Point["transport"] }, Only: func(g *Group) bool { return g.Point["loss"] == "0" },
			Y: func(g *Group) float64 { return fabricMedian(g, srPerQP) }},
	}
}
