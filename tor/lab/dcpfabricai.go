package lab

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// dcp-fabric's AI workload (seed 002 §6.2, Fig. 14): "We arrange 256
// servers into 16 groups, with 16 servers per group. Each group
// executes an AllReduce or AllToAll operation, starting execution at
// the same time. The total traffic for one AllReduce/AllToAll operation
// is 300 MB. For AllReduce, the total traffic is partitioned into 16
// slices (i.e., flows), and then transmitted following a RingAllReduce
// procedure. For AllToAll, the total traffic is partitioned into 16
// slices, with one slice transmitted to each group member. We measure
// the time of the last completed flow within each group as the Job
// Completion Time (JCT) for that group, and we also measure the CDF of
// individual flows' FCT."
//
// How rocetor reads it (workload.Collective; docs/experiments.md says
// the same):
//
//   - "300 MB" is each member's data, the size a collective benchmark
//     is given, cut into N = 16 slices of 300/16 = 18.75 MB. The
//     AllToAll sentence forces this: "one slice transmitted to each
//     group member" needs every member to have 16 slices, so the
//     AllReduce sentence, worded the same, is read the same way.
//     AllToAll: each member sends one slice to each of the 15 others at
//     once (its own stays local), 240 flows a group. AllReduce: the
//     RingAllReduce procedure's 2(N−1) = 30 steps, each member sending
//     one slice to the next on the ring per step, 480 flows a group;
//     a step's flow starts when the flow into its source in the step
//     before completed (the chunk it forwards). Each member sends 562.5
//     MB (AllReduce) or 281.25 MB (AllToAll): 45 ms and 22.5 ms at
//     line rate, the lower bounds of the JCT.
//   - The groups: the seed does not say which servers form one. A
//     group of one rack's 16 servers (--groups rack) would never leave
//     its leaf, and the schemes' load balancing, the figure's subject,
//     would have nothing to do; rocetor's default (--groups rail) makes
//     group g of the g-th server of every rack, so every flow crosses
//     a spine. The ring runs in rack order.
//   - No congestion control (§6.2's default; Fig. 14 gives no CC).
//
// The seed's 300 MB is shrunk fifteenfold at paper scale: one seed of
// the eight cells at 1 MB took 61 s of CPU here (56 user, 5 system),
// growing linearly with the size (DCP's AllReduce: 3.7 s at 1 MB, 17.3
// s at 5 MB), so 300 MB would be about five hours a seed; 20 MB is
// about 20 minutes, three seeds the hour. Simulated time is
// what shrinks (issue 29's rule), the fabric stays the seed's;
// --op-size 300000000 runs the seed's size.
const (
	dcpAISeedOp  = 300_000_000 // bytes of each member's data (§6.2: "300 MB")
	dcpAIPaperOp = dcpAISeedOp / 15
	dcpAICIOp    = 1_000_000
)

// aiWorkload tells whether wl is one of Fig. 14's collectives.
func aiWorkload(wl string) bool { return wl == "allreduce" || wl == "alltoall" }

// simulateAI runs one AI cell: every group's operation at once.
func (e *dcpFabric) simulateAI(ctx context.Context, fab Simulator, res *Results, out io.Writer, tp topo.Topology,
	pt map[string]string, seed int) error {
	groups, err := workload.Groups(fabric.Racks(tp), e.groups)
	if err != nil {
		return err
	}
	flows, err := workload.Collective(groups, pt["workload"], e.opSize)
	if err != nil {
		return err
	}
	o := e.cellOptions(pt, flows, seed)
	c := fabricCell{point: pt, seed: seed, tp: tp, o: o, flows: flows, ro: fabric.RunOptions{QPs: e.qps}, keep: keepJCT(workload.FlowGroups(groups, flows), len(groups))}
	if e.flowsDir != "" {
		c.keep = chainKeep(c.keep, writeFlows(filepath.Join(e.flowsDir, flowsFile(pt, seed))))
	}
	return runFabricCell(ctx, fab, res, out, e.Name(), c, func(fr *FabricRun) string {
		return fmt.Sprintf("JCT mean %.3f ms, max %.3f ms; FCT p99 %.3f ms; retransmits %d, drops %.0f, trimmed %d",
			fr.Extra["jct_mean_ms"], fr.Extra["jct_max_ms"], p99FCTms(fr), fr.HostCounters["Retransmits"], fr.Drop(),
			fr.Stages["trim"]["Ports.Trimmed"])
	})
}

// keepJCT records each group's JCT — its last flow's completion less
// its first flow's post — as the mean, max and min over the groups in
// milliseconds (Extra: jct_mean_ms, jct_max_ms, jct_min_ms), and the
// groups with a flow that did not complete (groups_incomplete; their
// JCT counts what did). of is each flow's group.
func keepJCT(of []int, groups int) func(*fabric.Result, *FabricRun) {
	return func(r *fabric.Result, fr *FabricRun) {
		start, end := make([]int64, groups), make([]int64, groups)
		for g := range start {
			start[g] = math.MaxInt64
		}
		bad := make([]bool, groups)
		for i, rec := range r.Records {
			g := of[i]
			if g < 0 {
				continue
			}
			start[g], end[g] = min(start[g], rec.StartNs), max(end[g], rec.EndNs)
			bad[g] = bad[g] || !rec.OK
		}
		sum, mx, mn, incomplete := 0.0, 0.0, math.Inf(1), 0
		for g := range start {
			j := float64(end[g]-start[g]) / 1e6
			sum, mx, mn = sum+j, math.Max(mx, j), math.Min(mn, j)
			if bad[g] {
				incomplete++
			}
		}
		if fr.Extra == nil {
			fr.Extra = map[string]float64{}
		}
		fr.Extra["jct_mean_ms"], fr.Extra["jct_max_ms"], fr.Extra["jct_min_ms"] = sum/float64(groups), mx, mn
		fr.Extra["groups_incomplete"] = float64(incomplete)
	}
}

func extra(k string) func(*FabricRun) float64 {
	return func(f *FabricRun) float64 { return f.Extra[k] }
}

func p50FCTms(f *FabricRun) float64 { return float64(f.All.P50FCTNs) / 1e6 }

// dcpAIColumns are the AI cells' table: Fig. 14's JCT and flow FCTs,
// and what the schemes did to get there.
func dcpAIColumns() []Column {
	return []Column{
		{"workload", pointCell("workload")}, {"scheme", pointCell("scheme")}, {"seeds", seedsCell},
		{"flows", spreadCell(func(f *FabricRun) float64 { return float64(f.Flows) }, 0)},
		{"mean JCT (ms)", spreadCell(extra("jct_mean_ms"), 3)},
		{"max JCT (ms)", spreadCell(extra("jct_max_ms"), 3)},
		{"P50 flow FCT (ms)", spreadCell(p50FCTms, 3)},
		{"P99 flow FCT (ms)", spreadCell(p99FCTms, 3)},
		{"retransmits", spreadCell(hostCount("Retransmits"), 0)},
		{"duplicates at receivers", spreadCell(hostCount("Duplicates"), 0)},
		{"timeouts", spreadCell(hostCount("Timeouts"), 0)},
		{"drops", spreadCell(func(f *FabricRun) float64 { return f.Drop() }, 0)},
		{"trimmed", spreadCell(stageCount("trim", "Ports.Trimmed"), 0)},
		{"PFC frames", spreadCell(func(f *FabricRun) float64 { return float64(f.PFCFrames) }, 0)},
	}
}

// dcpAIVersusPaper sets DCP's mean JCT beside each scheme's, per seed,
// with Fig. 14's figures from the seed's text.
func dcpAIVersusPaper(groups []Group) Table {
	t := Table{Columns: []string{"workload", "against", "paper: DCP's JCT lower by", "rocetor: DCP's mean JCT against the scheme's"}}
	paper := map[string]map[string]string{
		"allreduce": {"pfc": "61 %", "irn-ar": "44 % (the seed's IRN is IRN + AR)", "irn-ecmp": "not given", "mp-rdma": "38 %"},
		"alltoall":  {"pfc": "46 %", "irn-ar": "45 % (the seed's IRN is IRN + AR)", "irn-ecmp": "not given", "mp-rdma": "5 %"},
	}
	for _, wl := range []string{"allreduce", "alltoall"} {
		d := findGroup(groups, map[string]string{"workload": wl, "scheme": "dcp"})
		if d == nil {
			continue
		}
		for _, s := range []string{"pfc", "irn-ar", "irn-ecmp"} {
			if o := findGroup(groups, map[string]string{"workload": wl, "scheme": s}); o != nil {
				t.Rows = append(t.Rows, []string{wl, s, paper[wl][s], seedChange(d, o, extra("jct_mean_ms"))})
			}
		}
		t.Rows = append(t.Rows, []string{wl, "mp-rdma", paper[wl]["mp-rdma"], "not in rocetor"})
	}
	return t
}

// splitAI parts groups into the AI cells' and the others'.
func splitAI(groups []Group) (ai, other []Group) {
	for _, g := range groups {
		if aiWorkload(g.Point["workload"]) {
			ai = append(ai, g)
		} else {
			other = append(other, g)
		}
	}
	return ai, other
}

// aiTables puts the AI cells' table in res: the main table when there
// is no other (main), else a note; and the paper's figures beside
// rocetor's.
func (e *dcpFabric) aiTables(res *Results, ai []Group, main bool) {
	if len(ai) == 0 {
		return
	}
	t := MakeTable(ai, dcpAIColumns())
	if main {
		res.Table = t
	} else {
		res.Notes = append(res.Notes, tableNote("AllReduce and AllToAll (Fig. 14):", t))
	}
	res.Notes = append(res.Notes, tableNote("Beside the paper (seed 002 §6.2, Fig. 14: DCP's mean JCT over groups against each scheme's, per seed, median and range; the paper's from its text; MP-RDMA is not in rocetor):",
		dcpAIVersusPaper(ai)))
}
