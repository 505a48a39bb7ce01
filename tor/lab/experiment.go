package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Experiment is a named measurement on a testbed. The framework parses
// its flags, brings up the topology Setup asks for (or reuses one that
// is up), calls Run, writes the results (JSON, Markdown, plots) and
// tears the testbed down. To add one, implement this interface in a file
// of its own and add it to the experiments table; docs/testbed.md walks
// through an example.
type Experiment interface {
	// Name is the name testbed run takes, e.g. loss-sweep.
	Name() string
	// Synopsis is one line for testbed help.
	Synopsis() string
	// Flags registers the experiment's flags; the framework adds its
	// own (--json, --md, --plot, --reuse, --keep, --bin, --prefix, ...).
	Flags(fs *flag.FlagSet)
	// Setup returns, after the flags are parsed, the testbed to run on:
	// its topology, switch options and initial impairment. The framework
	// fills in the prefix.
	Setup() (Options, error)
	// Run measures. It appends each measurement to res.Runs as it goes
	// (so an interrupted run still reports what it measured), records
	// its parameters in res.Params and fills res.Table.
	Run(ctx context.Context, env *Env, res *Results) error
	// Plots describes the PNG plots of --plot; nil for none.
	Plots() []PlotSpec
}

// Entry is one experiment of the catalogue: its name and how to make
// one, with its flags at their defaults.
type Entry struct {
	Name string
	New  func() Experiment
}

// Catalogue lists the experiments every backend runs, sorted by name
// (testbed list prints it).
var Catalogue = []Entry{
	{"dcp-ar", func() Experiment { return newDCPAR() }},
	{"dcp-incast", func() Experiment { return newDCPIncast() }},
	{"dcp-loss", func() Experiment { return newDCPLoss() }},
	{"dcqcn-fairness", func() Experiment { return newDCQCNFairness() }},
	{"dcqcn-incast", func() Experiment { return newDCQCNIncast() }},
	{"demo", func() Experiment { return newDemo() }},
	{"llr-loss", func() Experiment { return newLLRLoss() }},
	{"llr-monitor", func() Experiment { return newLLRMonitor() }},
	{"llr-tail", func() Experiment { return newLLRTail() }},
	{"loss-sweep", func() Experiment { return newLossSweep() }},
	{"netrt-loss", func() Experiment { return newNetRTLoss() }},
	{"netrt-multipath", func() Experiment { return newNetRTMultipath() }},
	{"sr-concurrency", func() Experiment { return newSRConcurrency() }},
	{"sr-loss", func() Experiment { return newSRLoss() }},
}

// Lookup returns a new experiment of the catalogue by name, its flags
// at their defaults.
func Lookup(name string) (Experiment, bool) {
	for _, e := range Catalogue {
		if e.Name == name {
			return e.New(), true
		}
	}
	return nil, false
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
// the impairment. *Testbed is the real one.
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

// RunConfig is the framework's side of testbed run.
type RunConfig struct {
	StateDir string
	Prefix   string // empty: DefaultPrefix(topology)
	Bin      string
	Src      string
	Reuse    bool   // run on the testbed with this prefix that is up
	Keep     bool   // leave the testbed up afterwards
	JSON     string // the cells, a JSON array ("-": standard output)
	Record   string // the whole Results
	MD       string
	Plot     string
	Command  string    // the command line, for the results
	Out      io.Writer // progress and tables
	Stdout   io.Writer // where --json - goes
}

// RunExperiment brings up (or reuses) the testbed, runs exp, writes the
// results and removes the testbed (unless Keep or Reuse). On error the
// results measured so far are still written.
func RunExperiment(ctx context.Context, exp Experiment, rc RunConfig) (res *Results, err error) {
	o, err := exp.Setup()
	if err != nil {
		return nil, err
	}
	o.Prefix = rc.Prefix
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix(o.Topology)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	out := rc.Out
	if out == nil {
		out = io.Discard
	}
	if rc.Bin == "" {
		// Fail before building anything if roceperf cannot be built.
		src := rc.Src
		if src == "" {
			if src, err = FindModuleRoot(); err != nil {
				return nil, err
			}
		}
		if _, err := os.Stat(filepath.Join(src, "cmd", "roceperf")); err != nil {
			return nil, fmt.Errorf("%s needs roceperf, and %s has no cmd/roceperf yet: pass --bin DIR with tord and roceperf", exp.Name(), src)
		}
		rc.Src = src
	}

	var tb *Testbed
	if rc.Reuse {
		if tb, err = Open(rc.StateDir, o.Prefix, out); err != nil {
			return nil, err
		}
		if got := tb.Plan().Options.Topology; got != o.Topology {
			return nil, Usagef("--reuse: testbed %s is a %s, %s needs a %s", tb.st.Name, got, exp.Name(), o.Topology)
		}
		orig := tb.Impairment()
		defer func() {
			// Leave the reused testbed as it was found.
			rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if rerr := tb.SetImpairment(rctx, orig); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restore impairment: %w", rerr))
			}
		}()
		if err := tb.SetImpairment(ctx, o.Impairment()); err != nil {
			return nil, err
		}
	} else {
		if tb, err = Up(ctx, o, UpConfig{StateDir: rc.StateDir, Bin: rc.Bin, Src: rc.Src, Out: out}); err != nil {
			return nil, err
		}
		defer func() {
			if rc.Keep {
				fmt.Fprintf(out, "testbed: kept %s up (logs in %s); testbed down --prefix %s removes it\n", tb.st.Name, tb.st.Dir, o.Prefix)
				return
			}
			if derr := tb.Down(); derr != nil {
				err = errors.Join(err, fmt.Errorf("tear down: %w", derr))
			}
		}()
	}
	env, err := tb.Env(ctx, rc.Bin, rc.Src)
	if err != nil {
		return nil, err
	}
	res = newResults(exp, tb.Plan(), rc.Command)
	err = exp.Run(ctx, env, res)
	res.Finished = time.Now().UTC()
	if werr := writeResults(res, exp, rc, out); werr != nil {
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
func writeResults(res *Results, exp Experiment, rc RunConfig, out io.Writer) error {
	if len(res.Runs) == 0 {
		return nil
	}
	fmt.Fprintln(out)
	res.Table.Markdown(out)
	fmt.Fprintln(out)
	var errs []error
	if rc.JSON != "" {
		errs = append(errs, res.WriteCells(rc.JSON, rc.Stdout))
	}
	if rc.Record != "" {
		errs = append(errs, res.WriteJSON(rc.Record))
	}
	if rc.MD != "" {
		errs = append(errs, res.WriteMarkdown(rc.MD))
	}
	if rc.Plot != "" {
		files, err := WritePlots(rc.Plot, exp.Plots(), GroupRuns(res.Runs))
		errs = append(errs, err)
		if len(files) > 0 {
			fmt.Fprintf(out, "testbed: plots %s\n", strings.Join(files, " "))
		}
	}
	return errors.Join(errs...)
}
