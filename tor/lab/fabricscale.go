package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// FabricScale is an experiment at a seed's own fabric scale (issue 29:
// NetRT's incast, IRN's 54-server fat tree): each cell — one scheme at
// one parameter point and one seed — is one simulation of tor/fabric
// that the experiment describes itself (topology, switch YAML, hosts'
// transport and congestion control, flows), run by a backend that is
// the simulator (Simulator). The testbed's Env, which moves roceperf
// transfers between a few namespaces, has no room for it; these
// experiments are the simulator's alone (Entry.NoTestbed).
//
// Their Setup validates the flags and returns Options that no backend
// opens; their Run is never called (RunExperiment calls Simulate).
type FabricScale interface {
	Experiment
	// Simulate runs every cell on sim, appending each to res.Runs as
	// it goes, and fills res.Table, res.Params and res.Topology.
	Simulate(ctx context.Context, sim Simulator, out io.Writer, res *Results) error
}

// Simulator runs one simulation of tor/fabric to its end and returns
// its result, the frames' books checked (simnet.Backend).
type Simulator interface {
	Simulate(ctx context.Context, tp topo.Topology, o fabric.Options, flows []workload.Flow, ro fabric.RunOptions) (*fabric.Result, error)
}

// runFabricScale is RunExperiment for a FabricScale experiment.
func runFabricScale(ctx context.Context, exp FabricScale, b Backend, out Output, w io.Writer) (*Results, error) {
	sim, ok := b.(Simulator)
	if !ok {
		return nil, Usagef("%s runs in the simulator only (torsim run %s): %s", exp.Name(), exp.Name(), fabricScale)
	}
	res := &Results{Schema: resultsSchema, Experiment: exp.Name(), Command: out.Command, Started: time.Now().UTC(),
		Machine: thisMachine(), Backend: b.Name(), Params: map[string]string{}}
	cells, _ := b.(*Cells)
	if cells != nil {
		cells.begin(exp.Name())
	}
	err := exp.Simulate(ctx, sim, w, res)
	res.Finished = time.Now().UTC()
	if cells != nil {
		var write bool
		if write, err = cells.finish(res, w, err); !write {
			return res, err
		}
	}
	if werr := writeResults(res, exp, out, w); werr != nil {
		if err == nil {
			return res, fmt.Errorf("writing: %w", werr)
		}
		return res, fmt.Errorf("%w; writing: %w", err, werr)
	}
	return res, err
}

// fabricBase is what every FabricScale experiment shares: the Run the
// framework never calls and no plots unless it has its own.
type fabricBase struct{}

func (fabricBase) Run(context.Context, *Env, *Results) error {
	return Usagef("a fabric-scale experiment runs in the simulator (torsim run), not on an Env")
}

// FabricRun is one simulation of a fabric-scale cell as a Run keeps
// it: the flows' statistics and the counters the tables read, not the
// whole fabric.Result (its per-switch detail and books stay in the
// simulation).
type FabricRun struct {
	SimTimeNs int64         `json:"sim_time_ns"`
	Flows     int           `json:"flows"`
	Completed int           `json:"completed"`
	All       fabric.Bucket `json:"fct_all"`
	Short     fabric.Bucket `json:"fct_short"`
	Long      fabric.Bucket `json:"fct_long"`
	// FCT is per size bin (fabric.DefaultBins), Bytes the flows' data.
	FCT          []fabric.Bucket             `json:"fct_bins,omitempty"`
	Bytes        int64                       `json:"bytes,omitempty"`
	HostCounters map[string]int64            `json:"host_counters"`
	Stages       map[string]map[string]int64 `json:"stages,omitempty"`
	Drops        map[string]uint64           `json:"switch_drops,omitempty"`
	PFCFrames    uint64                      `json:"pfc_frames"`
	PFCPauseNs   int64                       `json:"pfc_pause_ns"`
	ECNMarked    uint64                      `json:"ecn_marked"`
	PacketHops   uint64                      `json:"packet_hops"`
	GoodputGbps  float64                     `json:"goodput_gbps"`
	// SR is the hosts' SR memory and FaSR's pool use (fasr-scale);
	// Links the impaired links and LLRPorts the protected switch ports
	// (llr-fabric).
	SR       fabric.SRResult        `json:"sr"`
	Links    []fabric.LinkResult    `json:"links,omitempty"`
	LLRPorts []fabric.LLRPortResult `json:"llr_ports,omitempty"`
	// Classes are the statistics of some of the flows, by the
	// experiment's name for them (llr-fabric: the flows whose path
	// crosses a corrupting link); ClassRetransmits the request packets
	// their senders sent again.
	Classes          map[string]fabric.Bucket `json:"fct_classes,omitempty"`
	ClassRetransmits map[string]int64         `json:"class_retransmits,omitempty"`
	// Extra are figures an experiment reads from the whole result
	// (fasr-scale: goodput_90_gbps).
	Extra map[string]float64 `json:"extra,omitempty"`
	// Slowest are the slowest flows of each size bin with what their
	// senders attributed to them (irn-fabric: which flows a bin's tail
	// is and whether they timed out).
	Slowest []SlowFlow `json:"slowest,omitempty"`
	// HODrops are the DCP header-only packets dropped anywhere,
	// switches and hosts, except those a host drops as stale or a
	// duplicate (their packet needs nothing more): each leaves its
	// packet to the sender's coarse timeout (seed 002 §4.5).
	HODrops uint64 `json:"ho_drops,omitempty"`
	// HODropsBy splits HODrops by where and why: "switch:REASON" or
	// "host:REASON" (dataplane's and nic/dcp's drop reasons).
	HODropsBy map[string]uint64 `json:"ho_drops_by,omitempty"`
	// BufferPeak is the most bytes one switch held; NetRT its pools'
	// and reordering buffers' occupancy, when the ToRs run it.
	BufferPeak int                    `json:"buffer_peak_bytes,omitempty"`
	NetRT      *fabric.NetRTOccupancy `json:"netrt,omitempty"`
	// WallNs is how long the simulation took here: not deterministic,
	// left out of every table.
	WallNs int64 `json:"wall_ns"`
}

// newFabricRun keeps what a Run needs of r.
func newFabricRun(r *fabric.Result, wall time.Duration) *FabricRun {
	f := &FabricRun{SimTimeNs: r.SimTimeNs, Flows: r.Flows, Completed: r.Completed, All: r.All, Short: r.Short, Long: r.Long,
		HostCounters: r.HostCounters, Stages: r.Stages, Drops: r.Drops, PFCFrames: r.PFCFrames, PFCPauseNs: r.PFCPauseNs,
		ECNMarked: r.ECNMarked, PacketHops: r.PacketHops, GoodputGbps: r.GoodputGbps, SR: r.SR, Links: r.Links,
		LLRPorts: r.LLRPorts, WallNs: wall.Nanoseconds(), FCT: r.FCT, BufferPeak: r.Buffer.PeakBytes,
		NetRT: r.NetRT}
	f.HODrops, f.HODropsBy = hoDropped(r.Books)
	return f
}

// hoDropped counts the header-only packets b's nodes dropped, in all
// and by where and why, but for the stale and duplicate ones hosts
// ignore (as hoDrops does on the testbed).
func hoDropped(b *fabric.Books) (uint64, map[string]uint64) {
	if b == nil {
		return 0, nil
	}
	var t uint64
	var by map[string]uint64
	for _, side := range []struct {
		where string
		nodes []fabric.NodeBooks
	}{{"switch", b.Switches}, {"host", b.Hosts}} {
		for _, nb := range side.nodes {
			for reason, n := range nb.HeaderOnly {
				if reason == "nic_stale" || reason == "nic_duplicate" || n == 0 {
					continue
				}
				if by == nil {
					by = map[string]uint64{}
				}
				t += n
				by[side.where+":"+reason] += n
			}
		}
	}
	return t, by
}

// Drop is the switches' drops of every reason.
func (f *FabricRun) Drop() float64 {
	var t uint64
	for _, v := range f.Drops {
		t += v
	}
	return float64(t)
}

// simulateCell runs one cell and appends it to res.Runs; a failed
// simulation is recorded in the Run and returned.
func simulateCell(ctx context.Context, sim Simulator, res *Results, point map[string]string, seed int,
	tp topo.Topology, o fabric.Options, flows []workload.Flow, ro fabric.RunOptions) (*FabricRun, error) {
	return simulateCellKeep(ctx, sim, res, point, seed, tp, o, flows, ro, nil)
}

// simulateCellKeep is simulateCell, keep (if not nil) reading what
// else the run keeps from the whole result (its flows' records).
func simulateCellKeep(ctx context.Context, sim Simulator, res *Results, point map[string]string, seed int,
	tp topo.Topology, o fabric.Options, flows []workload.Flow, ro fabric.RunOptions, keep func(*fabric.Result, *FabricRun)) (*FabricRun, error) {
	run := Run{Point: point, Repeat: seed, Started: time.Now().UTC()}
	simulate := func() error {
		r, err := sim.Simulate(ctx, tp, o, flows, ro)
		if err != nil {
			return err
		}
		run.Fabric = newFabricRun(r, time.Since(run.Started))
		for _, f := range flows {
			run.Fabric.Bytes += int64(f.Size)
		}
		if keep != nil {
			keep(r, run.Fabric)
		}
		return nil
	}
	var err error
	if c, ok := sim.(*Cells); ok {
		// Sharded or merged (cells.go): this call's Run simulated here,
		// elsewhere, or read back.
		err = c.cell(ctx, &run, cellInputs{tp, o, flows, ro}, simulate)
	} else {
		err = simulate()
	}
	if err != nil {
		run.Error = err.Error()
	}
	res.Runs = append(res.Runs, run)
	return run.Fabric, err
}

// fabricCell is one cell of an experiment's sweep: its point, seed,
// topology, options, flows and run options, and what its progress line
// says of the result.
type fabricCell struct {
	point map[string]string
	seed  int
	tp    topo.Topology
	o     fabric.Options
	flows []workload.Flow
	ro    fabric.RunOptions
	keep  func(*fabric.Result, *FabricRun)
}

// runFabricCell simulates c, printing a progress line to out:
// "NAME: seed S, k=v …: SAY (wall)". A failed simulation is printed and
// returned only when ctx is done (the sweep goes on otherwise).
func runFabricCell(ctx context.Context, sim Simulator, res *Results, out io.Writer, name string, c fabricCell,
	say func(*FabricRun) string) error {
	start := time.Now()
	fmt.Fprintf(out, "%s: seed %d, %s: %d flows... ", name, c.seed, pointKey(c.point), len(c.flows))
	fr, err := simulateCellKeep(ctx, sim, res, c.point, c.seed, c.tp, c.o, c.flows, c.ro, c.keep)
	if err != nil {
		fmt.Fprintf(out, "%v\n", err)
		if ctx.Err() != nil {
			return err
		}
		return nil
	}
	fmt.Fprintf(out, "%s (%v)\n", say(fr), time.Since(start).Round(time.Second))
	return nil
}

// findGroup is the group whose point has every key of want as want has
// it; nil if none.
func findGroup(groups []Group, want map[string]string) *Group {
	for i := range groups {
		ok := true
		for k, v := range want {
			ok = ok && groups[i].Point[k] == v
		}
		if ok {
			return &groups[i]
		}
	}
	return nil
}

// Scales of a fabric-scale experiment (--scale): paper runs the seed's
// fabric and parameters, as long as the docs say; ci a reduced form in
// seconds that CI runs and asserts the seed's claim on.
const (
	ScalePaper = "paper"
	ScaleCI    = "ci"
)

// scaleFlags are --scale and --seeds, which every fabric-scale
// experiment takes.
type scaleFlags struct {
	scale string
	seeds int
}

func (s *scaleFlags) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.scale, "scale", ScalePaper, "paper: the seed's fabric and parameters (minutes to an hour); ci: the reduced form CI asserts on (seconds)")
	fs.IntVar(&s.seeds, "seeds", 0, "seeds per cell, 1, 2, …; the spread over them is reported (0: 3 at paper scale, 1 at ci)")
}

func (s *scaleFlags) check() error {
	switch {
	case s.scale != ScalePaper && s.scale != ScaleCI:
		return Usagef("--scale %q: want paper or ci", s.scale)
	case s.seeds < 0:
		return Usagef("--seeds %d: want 1 or more (0: the scale's)", s.seeds)
	}
	return nil
}

// n is the seeds to run.
func (s *scaleFlags) n() int {
	switch {
	case s.seeds > 0:
		return s.seeds
	case s.scale == ScaleCI:
		return 1
	}
	return 3
}

// fabricValues are f of the group's simulations, sorted.
func fabricValues(g *Group, f func(*FabricRun) float64) []float64 {
	var v []float64
	for _, r := range g.OK() {
		v = append(v, f(r.Fabric))
	}
	sort.Float64s(v)
	return v
}

// fabricMedian is the median of f over the group's seeds (NaN for none).
func fabricMedian(g *Group, f func(*FabricRun) float64) float64 {
	v := fabricValues(g, f)
	switch n := len(v); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return v[n/2]
	default:
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// fabricSpread writes f over the group's seeds as its median and, with
// more than one seed, the range: "12.3 (11.9–13.0)".
func fabricSpread(g *Group, f func(*FabricRun) float64, prec int) string {
	v := fabricValues(g, f)
	if len(v) == 0 {
		return "–"
	}
	m := fmtFloat(fabricMedian(g, f), prec)
	if len(v) == 1 {
		return m
	}
	return fmt.Sprintf("%s (%s–%s)", m, fmtFloat(v[0], prec), fmtFloat(v[len(v)-1], prec))
}

// pointCell and spreadCell are the cells of a fabric-scale table: a
// value of the group's point, and fabricSpread of f.
func pointCell(k string) func(*Group) string { return func(g *Group) string { return g.Point[k] } }
func spreadCell(f func(*FabricRun) float64, prec int) func(*Group) string {
	return func(g *Group) string { return fabricSpread(g, f, prec) }
}

// seedsCell is the cell of the seeds whose simulation ran.
func seedsCell(g *Group) string { return strconv.Itoa(len(g.OK())) }

// Metrics of a simulation the tables read.
func meanSlowdown(f *FabricRun) float64 { return f.All.MeanSlowdown }
func meanFCTms(f *FabricRun) float64    { return f.All.MeanFCTNs / 1e6 }
func p99FCTms(f *FabricRun) float64     { return float64(f.All.P99FCTNs) / 1e6 }
func hostCount(name string) func(*FabricRun) float64 {
	return func(f *FabricRun) float64 { return float64(f.HostCounters[name]) }
}
func stageCount(stage, name string) func(*FabricRun) float64 {
	return func(f *FabricRun) float64 { return float64(f.Stages[stage][name]) }
}

// tableNote renders t as Markdown under a heading line, for
// Results.Notes.
func tableNote(heading string, t Table) string {
	var b strings.Builder
	b.WriteString(heading + "\n\n")
	t.Markdown(&b)
	return strings.TrimRight(b.String(), "\n")
}

// dcqcnMarking is a switch's ECN section for DCQCN from an --ecn flag:
// empty for the rate-derived profile (Kmin 4 KB and Kmax 16 KB per
// Gbit/s, Pmax 20 %), or KMIN-KMAX[-PMAX], byte sizes with units and
// Pmax in percent (the DCQCN paper's: 5KB-200KB-1).
func dcqcnMarking(ecn string) string {
	f := strings.Split(ecn, "-")
	switch len(f) {
	case 2:
		return fmt.Sprintf("ecn: {profiles: {default: {min_threshold: %s, max_threshold: %s}}}\n", f[0], f[1])
	case 3:
		return fmt.Sprintf("ecn: {profiles: {default: {min_threshold: %s, max_threshold: %s, probability: %s}}}\n", f[0], f[1], f[2])
	}
	return "ecn: {}\n"
}

// ecnFlagOK reports whether an --ecn flag has dcqcnMarking's form; the
// switch's configuration checks the values.
func ecnFlagOK(ecn string) bool {
	n := len(strings.Split(ecn, "-"))
	return ecn == "" || (n == 2 || n == 3) && !strings.ContainsAny(ecn, "{}:,\n ")
}

// setClasses sets fr.Classes to the statistics of each class's flows;
// a class whose flows give none (no flow completed) is left out.
func (fr *FabricRun) setClasses(by map[string][]fabric.FlowRecord) {
	fr.Classes = map[string]fabric.Bucket{}
	for c, recs := range by {
		sub := &fabric.Result{Records: recs}
		if sub.Summarize(fabric.StatsOptions{}) == nil {
			fr.Classes[c] = sub.All
		}
	}
}
