package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// Experiment is a named measurement on a fabric, the same on either
// backend. The framework parses its flags, has a Backend bring up the
// topology Setup asks for (or reuse one that is up), calls Run, writes
// the results (JSON, Markdown, plots) and tears the fabric down
// (RunExperiment). To add one, implement this interface in a file of its
// own and add it to the Catalogue; docs/testbed.md walks through an
// example.
type Experiment interface {
	// Name is the name testbed run takes, e.g. loss-sweep.
	Name() string
	// Synopsis is one line for testbed help.
	Synopsis() string
	// Flags registers the experiment's flags; the command adds its own
	// and its backend's (--json, --md, --plot; testbed's --reuse,
	// --keep, --bin, --prefix, ...).
	Flags(fs *flag.FlagSet)
	// Setup returns, after the flags are parsed, the fabric to run on:
	// its topology, switch options and initial impairment. The backend
	// fills in what is its own (the namespace testbed's prefix).
	Setup() (Options, error)
	// Run measures. It appends each measurement to res.Runs as it goes
	// (so an interrupted run still reports what it measured), records
	// its parameters in res.Params and fills res.Table.
	Run(ctx context.Context, env *Env, res *Results) error
	// Plots describes the PNG plots of --plot; nil for none.
	Plots() []PlotSpec
}

// Entry is one experiment of the catalogue: its name and how to make
// one, with its flags at their defaults, and why the simulator does not
// run it, if it does not.
type Entry struct {
	Name  string
	New   func() Experiment
	NoSim string // empty: both backends run it
	// NoTestbed is why the namespace testbed does not run it, if it
	// does not: the fabric-scale experiments (FabricScale) are the
	// simulator's alone.
	NoTestbed string
}

// Catalogue lists the experiments, sorted by name (testbed list and
// torsim list print it). Every one runs on namespaces; those without
// NoSim in the simulator too.
var Catalogue = []Entry{
	{Name: "dcp-ar", New: func() Experiment { return newDCPAR() }},
	{Name: "dcp-fabric", New: func() Experiment { return newDCPFabric() }, NoTestbed: fabricScale},
	{Name: "dcp-incast", New: func() Experiment { return newDCPIncast() }},
	{Name: "dcp-loss", New: func() Experiment { return newDCPLoss() }},
	{Name: "dcqcn-fairness", New: func() Experiment { return newDCQCNFairness() }},
	{Name: "dcqcn-incast", New: func() Experiment { return newDCQCNIncast() }},
	{Name: "demo", New: func() Experiment { return newDemo() }, NoSim: "it shows the live switches' processes and metrics URLs"},
	{Name: "fasr-scale", New: func() Experiment { return newFaSRScale() }, NoTestbed: fabricScale},
	{Name: "five-way", New: func() Experiment { return newFiveWay() }, NoTestbed: fabricScale},
	{Name: "irn-fabric", New: func() Experiment { return newIRNFabric() }, NoTestbed: fabricScale},
	{Name: "llr-fabric", New: func() Experiment { return newLLRFabric() }, NoTestbed: fabricScale},
	{Name: "llr-loss", New: func() Experiment { return newLLRLoss() }},
	{Name: "llr-loss-law", New: func() Experiment { return newLLRLossLaw() }, NoTestbed: fabricScale},
	{Name: "llr-monitor", New: func() Experiment { return newLLRMonitor() },
		NoSim: "llr's corruption monitor is tord's, reading the interfaces' counters on the wall clock"},
	{Name: "llr-tail", New: func() Experiment { return newLLRTail() }},
	{Name: "loss-sweep", New: func() Experiment { return newLossSweep() }},
	{Name: "netrt-fabric", New: func() Experiment { return newNetRTFabric() }, NoTestbed: fabricScale},
	{Name: "netrt-incast", New: func() Experiment { return newNetRTIncast() }, NoTestbed: fabricScale},
	{Name: "netrt-loss", New: func() Experiment { return newNetRTLoss() }},
	{Name: "netrt-multipath", New: func() Experiment { return newNetRTMultipath() }},
	{Name: "netrt-multipath-fabric", New: func() Experiment { return newNetRTMultipathFabric() }, NoTestbed: fabricScale},
	{Name: "roce-tcp", New: func() Experiment { return newRoCETCP() },
		NoSim: "the simulator has no TCP and no ICMP: iperf3 and ping run in the hosts' namespaces"},
	{Name: "sr-concurrency", New: func() Experiment { return newSRConcurrency() }},
	{Name: "sr-loss", New: func() Experiment { return newSRLoss() }},
}

// fabricScale is why the fabric-scale experiments do not run on the
// testbed.
const fabricScale = "it simulates a seed's fabric (tens to hundreds of hosts at 40-100 Gbit/s), beyond what namespaces on one machine carry"

// Find returns the catalogue's entry of that name.
func Find(name string) (Entry, bool) {
	for _, e := range Catalogue {
		if e.Name == name {
			return e, true
		}
	}
	return Entry{}, false
}

// Lookup returns a new experiment of the catalogue by name, its flags
// at their defaults.
func Lookup(name string) (Experiment, bool) {
	e, ok := Find(name)
	if !ok {
		return nil, false
	}
	return e.New(), true
}

// Names returns the catalogue's names, sorted.
func Names() []string {
	out := make([]string, len(Catalogue))
	for i, e := range Catalogue {
		out[i] = e.Name
	}
	return out
}

// Fabric is what an experiment sees of the switches: their counters and
// the impairment. The namespace testbed (netns.Testbed) is one; tests
// use a fake.
type Fabric interface {
	Plan() *Plan
	// Scrape reads every switch's rocetor_ metrics, by node.
	Scrape(ctx context.Context) (map[string]Sample, error)
	// ScrapeNode reads one switch's.
	ScrapeNode(ctx context.Context, node string) (Sample, error)
	// Impairment is what the impair sites do now.
	Impairment() Impairment
	// SetImpairment changes it and returns once traffic passes again.
	SetImpairment(ctx context.Context, m Impairment) error
	// State lists the switches' tord processes and metrics URLs.
	State() *State
	// Reconfigure gives the switches what new options say (NetRT,
	// trimming, rates; not the topology or the impairment) and returns
	// once traffic passes again.
	Reconfigure(ctx context.Context, o Options) error
}

// Env is what an experiment runs with.
type Env struct {
	Fabric Fabric
	Perf   Perf
	Out    io.Writer // progress for the user
	// Apps runs iperf3 and ping in the hosts; nil where there are none
	// (the simulator).
	Apps Apps
}

func (e *Env) printf(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format, args...)
	}
}

// Measure runs one transfer between two scrapes of every switch and
// returns it as a Run: roceperf's summary and what each switch counted
// meanwhile. Failures are recorded in Run.Error, not returned, so one
// failed point does not lose the others.
func (e *Env) Measure(ctx context.Context, point map[string]string, repeat int, t Transfer) Run {
	run := Run{Point: point, Repeat: repeat, Started: time.Now().UTC()}
	e.between(ctx, &run, func() error {
		var err error
		run.Perf, err = e.Perf.Transfer(ctx, t)
		return err
	})
	return run
}

// MeasureRound runs transfers from several hosts into one receiving
// host at once, as one round of one server (Perf.Round), between two
// scrapes of every switch, and returns them as one Run: each sender's
// result in Flows (nil for one that reported nothing), and in Perf
// their merger (mergeRound), which readers of one transfer's Run read
// as they would one client's with all the QPs.
func (e *Env) MeasureRound(ctx context.Context, point map[string]string, repeat int, ts []Transfer) Run {
	run := Run{Point: point, Repeat: repeat, Started: time.Now().UTC()}
	e.between(ctx, &run, func() error {
		var err error
		run.Flows, err = e.Perf.Round(ctx, ts)
		run.Perf = mergeRound(run.Flows)
		return err
	})
	return run
}

// MeasureAll runs transfers at once, between two scrapes of every
// switch, and returns them as one Run with a result per transfer in
// Flows (nil for one that failed; the errors are joined in Run.Error).
// Each transfer needs a receiving host of its own: roceperf serves one
// run at a time.
func (e *Env) MeasureAll(ctx context.Context, point map[string]string, ts []Transfer) Run {
	return e.MeasureSeries(ctx, point, ts, nil)
}

// MeasureSeries is MeasureAll that, with a spec, also scrapes one switch
// every spec.Interval while the transfers run and keeps what it read in
// Run.Series.
func (e *Env) MeasureSeries(ctx context.Context, point map[string]string, ts []Transfer, spec *SeriesSpec) Run {
	run := Run{Point: point, Repeat: 1, Started: time.Now().UTC()}
	e.between(ctx, &run, func() error {
		if p, ok := e.Perf.(SeriesPerf); ok && spec != nil {
			var err error
			run.Flows, run.Series, err = p.AllSeries(ctx, ts, *spec)
			return err
		}
		if p, ok := e.Perf.(Simultaneous); ok {
			if spec != nil {
				return Usagef("sampling a switch while transfers run needs a live fabric or a simulator that samples")
			}
			var err error
			run.Flows, err = p.All(ctx, ts)
			return err
		}
		var smp *sampler
		if spec != nil {
			smp = startSampler(ctx, e.Fabric, *spec, len(ts))
		}
		run.Flows = make([]*PerfResult, len(ts))
		errs := make([]error, len(ts))
		var wg sync.WaitGroup
		for i, t := range ts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				run.Flows[i], errs[i] = e.Perf.Transfer(ctx, t)
				if errs[i] != nil {
					errs[i] = fmt.Errorf("%s → %s: %w", t.From, t.To, errs[i])
				}
				if smp != nil {
					smp.ended(i)
				}
			}()
		}
		wg.Wait()
		if smp != nil {
			run.Series = smp.stop()
		}
		return errors.Join(errs...)
	})
	return run
}

// between scrapes every switch, runs measure, scrapes them again and
// keeps in run what each counted meanwhile; the first error goes to
// run.Error. Without the first scrape nothing is measured.
func (e *Env) between(ctx context.Context, run *Run, measure func() error) {
	before, err := e.Fabric.Scrape(ctx)
	if err != nil {
		run.Error = err.Error()
		return
	}
	if err := measure(); err != nil {
		run.Error = err.Error()
	}
	after, err := e.Fabric.Scrape(ctx)
	if err != nil {
		if run.Error == "" {
			run.Error = err.Error()
		}
		return
	}
	run.Switches = map[string]Sample{}
	for node, a := range after {
		run.Switches[node] = Delta(before[node], a)
	}
}

// A Backend brings up the fabric an experiment's Options describe: the
// namespace testbed (package netns: live tord and roceperf processes)
// or the fabric simulator. Whatever it needs beyond the Options (where
// its binaries are, whether to reuse a fabric that is up) is its own
// value's.
type Backend interface {
	// Name is what ran the results (Results.Backend): "testbed" for the
	// namespaces, "torsim" for the simulator.
	Name() string
	// Open validates o, brings up the fabric it describes and returns
	// the Env to run the experiment on and a function that tears the
	// fabric down (or leaves it as it was found); close is never nil
	// when err is nil. Progress goes to out.
	Open(ctx context.Context, o Options, out io.Writer) (env *Env, close func() error, err error)
}

// Output is what RunExperiment writes besides the table it prints: each field
// names a file, or is empty for none.
type Output struct {
	JSON    string    // the cells as one JSON array; "-": Stdout
	Record  string    // the whole Results as JSON (testbed plot reads it)
	MD      string    // the results as Markdown
	Plot    string    // a folder for the experiment's PNG plots
	Command string    // the command line, for the results
	Out     io.Writer // progress and the table; nil: discarded
	Stdout  io.Writer // where JSON "-" goes
}

// RunExperiment runs exp on a fabric b brings up, writes what out asks (JSON
// cells, record, Markdown, plots) and tears the fabric down. On error
// the results measured so far are still written.
func RunExperiment(ctx context.Context, exp Experiment, b Backend, out Output) (res *Results, err error) {
	o, err := exp.Setup()
	if err != nil {
		return nil, err
	}
	w := out.Out
	if w == nil {
		w = io.Discard
	}
	if fe, ok := exp.(FabricScale); ok {
		return runFabricScale(ctx, fe, b, out, w)
	}
	env, closeFabric, err := b.Open(ctx, o, w)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := closeFabric(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	res = newResults(exp, env.Fabric.Plan(), out.Command)
	res.Backend = b.Name()
	err = exp.Run(ctx, env, res)
	res.Finished = time.Now().UTC()
	if werr := writeResults(res, exp, out, w); werr != nil {
		err = errors.Join(err, werr)
	}
	return res, err
}

// newResults starts the results of an experiment on a plan.
func newResults(exp Experiment, plan *Plan, command string) *Results {
	return &Results{Schema: resultsSchema, Experiment: exp.Name(), Command: command, Started: time.Now().UTC(),
		Machine: thisMachine(), Topology: plan.Shape(), Options: plan.Options, Params: map[string]string{}}
}

// writeResults prints the Markdown table and writes the files asked for.
// With no runs at all there is nothing to write.
func writeResults(res *Results, exp Experiment, dst Output, out io.Writer) error {
	if len(res.Runs) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	res.Table.Markdown(out)
	fmt.Fprintln(out)
	var errs []error
	if dst.JSON != "" {
		errs = append(errs, res.WriteCells(dst.JSON, dst.Stdout))
	}
	if dst.Record != "" {
		errs = append(errs, res.WriteJSON(dst.Record))
	}
	if dst.MD != "" {
		errs = append(errs, res.WriteMarkdown(dst.MD))
	}
	if dst.Plot != "" {
		files, err := WritePlots(dst.Plot, exp.Plots(), GroupRuns(res.Runs))
		errs = append(errs, err)
		if len(files) > 0 {
			fmt.Fprintf(out, "testbed: plots %s\n", strings.Join(files, " "))
		}
	}
	return errors.Join(errs...)
}

// Flags registers the output flags every backend's run command takes,
// with one meaning on both: --json, --record, --md, --plot.
func (o *Output) Flags(fs *flag.FlagSet) {
	fs.StringVar(&o.JSON, "json", "", "write the results as one JSON array, an object per cell, to this file (- for standard output)")
	fs.StringVar(&o.Record, "record", "", "write the whole record as JSON to this file: every run with its transfers' summaries and each switch's counters, command, machine")
	fs.StringVar(&o.MD, "md", "", "write the results as Markdown to this file")
	fs.StringVar(&o.Plot, "plot", "", "write PNG plots into this folder")
}

// WriteCatalogue prints the catalogue, a line per experiment: its name,
// the backends that run it and what it measures (testbed list, torsim
// list).
func WriteCatalogue(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "EXPERIMENT\tRUNS ON\tWHAT IT MEASURES")
	for _, e := range Catalogue {
		on := "testbed, torsim"
		switch {
		case e.NoSim != "":
			on = "testbed"
		case e.NoTestbed != "":
			on = "torsim"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, on, e.New().Synopsis())
	}
	return tw.Flush()
}
