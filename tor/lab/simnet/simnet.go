package simnet

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/pipeline"
	"rocetor/tor/telemetry"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// Backend runs lab experiments in the fabric simulator. Its zero value
// simulates links without propagation delay; Default has torsim's.
type Backend struct {
	// HostDelay and FabricDelay are the propagation delays of host
	// links and switch-to-switch links. A veth has none; the testbed's
	// round trip (~300 µs between two hosts of the chain) is software:
	// tord's and roceperf's polling and the kernel's. Set them to the
	// testbed's to compare timing, leave them small to see the
	// mechanisms alone.
	HostDelay, FabricDelay time.Duration
	// Stall takes switches (or hosts) off their CPU in every
	// simulation, as other processes on the testbed's two CPUs take
	// tord and roceperf off theirs (fabric.Stall).
	Stall fabric.Stalls
	// Jitter spreads every port's frames in every simulation
	// (fabric.Options.Jitter): none by default, as every record was
	// measured.
	Jitter time.Duration
}

// Default is the backend with torsim's default delays: 1 µs per link.
func Default() *Backend {
	return &Backend{HostDelay: time.Microsecond, FabricDelay: time.Microsecond}
}

// Name implements lab.Backend.
func (b *Backend) Name() string { return "torsim" }

// Open implements lab.Backend: it lays the topology out as the testbed
// would (lab.NewPlan: the same nodes, ports and switch configurations)
// and returns an Env whose transfers each run one simulation of it.
func (b *Backend) Open(_ context.Context, o lab.Options, out io.Writer) (*lab.Env, func() error, error) {
	if o.Prefix == "" {
		o.Prefix = "torsim-" // names no namespace; NewPlan wants one
	}
	if err := supported(o); err != nil {
		return nil, nil, err
	}
	plan, err := lab.NewPlan(o)
	if err != nil {
		return nil, nil, err
	}
	f := &Fabric{b: b, seed: o.Seed, plan: plan, imp: o.Impairment(), counters: map[string]lab.Sample{}}
	return &lab.Env{Fabric: f, Perf: f, Out: out}, func() error { return nil }, nil
}

// supported refuses what the simulator cannot do: unshaped links have
// no rate to simulate, and a simulated switch runs one worker.
func supported(o lab.Options) error {
	switch {
	case o.Rate == "0":
		return fmt.Errorf("%w: --rate 0 (unshaped) has no rate to simulate: give the links' rate", lab.ErrUsage)
	case o.NumWorkers() > 1:
		return fmt.Errorf("%w: --workers %d: a simulated switch runs one worker", lab.ErrUsage, o.Workers)
	}
	return nil
}

// Fabric is one experiment's fabric in the simulator: its plan and
// impairment, and the counters of every run so far. It implements
// lab.Fabric and lab.Perf; a transfer (or a round) is one simulation
// of the whole fabric, so switches start every transfer empty, as
// the testbed's do after a Reconfigure.
type Fabric struct {
	b        *Backend
	seed     uint64 // the experiment's --seed
	plan     *lab.Plan
	imp      lab.Impairment
	counters map[string]lab.Sample // by switch, added up over the runs
	runs     uint64
}

// Plan implements lab.Fabric.
func (f *Fabric) Plan() *lab.Plan { return f.plan }

// Scrape implements lab.Fabric: every switch's counters added up over
// the transfers so far, and its gauges as the last transfer left them.
func (f *Fabric) Scrape(context.Context) (map[string]lab.Sample, error) {
	out := map[string]lab.Sample{}
	for n, s := range f.counters {
		out[n] = maps.Clone(s)
	}
	return out, nil
}

// ScrapeNode implements lab.Fabric.
func (f *Fabric) ScrapeNode(_ context.Context, node string) (lab.Sample, error) {
	s, ok := f.counters[node]
	if !ok && f.plan.Node(node) == nil {
		return nil, fmt.Errorf("no switch %q", node)
	}
	return maps.Clone(s), nil
}

// Impairment implements lab.Fabric.
func (f *Fabric) Impairment() lab.Impairment { return f.imp }

// SetImpairment implements lab.Fabric; the next transfer sees it.
func (f *Fabric) SetImpairment(_ context.Context, m lab.Impairment) error {
	f.imp = m
	return nil
}

// State implements lab.Fabric: a simulated fabric has no processes.
func (f *Fabric) State() *lab.State { return nil }

// Reconfigure implements lab.Fabric: the next transfer's switches are
// built from o.
func (f *Fabric) Reconfigure(_ context.Context, o lab.Options) error {
	o.Prefix = f.plan.Options.Prefix
	if err := supported(o); err != nil {
		return err
	}
	p, err := lab.NewPlan(o)
	if err != nil {
		return err
	}
	if p.Shape() != f.plan.Shape() {
		return fmt.Errorf("%w: reconfigure: the topology cannot change", lab.ErrUsage)
	}
	f.plan = p
	return nil
}

// Transfer implements lab.Perf: one simulation with one transfer.
func (f *Fabric) Transfer(ctx context.Context, t lab.Transfer) (*lab.PerfResult, error) {
	rs, err := f.Round(ctx, []lab.Transfer{t})
	if err != nil {
		return nil, err
	}
	return rs[0], nil
}

// All implements lab.Simultaneous: one simulation in which every
// transfer runs at once.
func (f *Fabric) All(ctx context.Context, ts []lab.Transfer) ([]*lab.PerfResult, error) {
	return f.Round(ctx, ts)
}

// Round implements lab.Perf: one simulation in which every transfer
// runs at once.
func (f *Fabric) Round(ctx context.Context, ts []lab.Transfer) ([]*lab.PerfResult, error) {
	out, _, err := f.simulate(ctx, ts, nil)
	return out, err
}

// AllSeries implements lab.SeriesPerf: one simulation in which every
// transfer runs at once, spec's switch sampled every spec.Interval of
// virtual time (series.go).
func (f *Fabric) AllSeries(ctx context.Context, ts []lab.Transfer, spec lab.SeriesSpec) ([]*lab.PerfResult, *lab.Series, error) {
	return f.simulate(ctx, ts, &spec)
}

// simulate runs ts in one simulation, sampling spec's switch if spec
// is not nil.
func (f *Fabric) simulate(ctx context.Context, ts []lab.Transfer, spec *lab.SeriesSpec) ([]*lab.PerfResult, *lab.Series, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f.runs++
	r, err := f.build(ts)
	if err != nil {
		return nil, nil, err
	}
	var smp *seriesSampler
	if spec != nil {
		if smp, err = newSeriesSampler(r, *spec, len(ts)); err != nil {
			return nil, nil, err
		}
	}
	r.ro.Stop = ctx.Done()
	res, err := r.net.Run(r.flows, r.ro)
	if err != nil {
		return nil, nil, err
	}
	if err := res.Books.Check(); err != nil {
		return nil, nil, fmt.Errorf("simulation %d: %w", f.runs, err) // a frame lost without a counter
	}
	var series *lab.Series
	if smp != nil {
		series = smp.finish(res)
	}
	if err := f.collect(r.net); err != nil {
		return nil, nil, err
	}
	out := make([]*lab.PerfResult, len(ts))
	var errs []error
	for i, t := range ts {
		out[i] = r.summary(i, t, res)
		if out[i].Client.Messages < int64(t.Count) {
			errs = append(errs, fmt.Errorf("%s → %s: %d of %d messages completed within %v of simulated time",
				t.From, t.To, out[i].Client.Messages, t.Count, r.ro.Until))
		}
	}
	return out, series, errors.Join(errs...)
}

// collect adds what every switch of a finished simulation counted to
// the fabric's counters, by the metric names tord's /metrics uses
// (tor/telemetry: the same collectors over the same stages), so that
// an experiment reads a simulated switch as it reads a live one.
// Counters add up over the runs; gauges (occupancy peaks, states) are
// the last run's.
func (f *Fabric) collect(n *fabric.Network) error {
	now := n.Sim.Now() / sim.Nanosecond
	for _, s := range n.Switches {
		s.Pipe.Publish(now)
		got, err := telemetry.Gather(telemetry.Switch{Config: &s.Cfg, Pipelines: []*pipeline.Pipeline{s.Pipe}})
		if err != nil {
			return fmt.Errorf("switch %s: %w", s.Name, err)
		}
		acc := f.counters[s.Name]
		if acc == nil {
			acc = lab.Sample{}
			f.counters[s.Name] = acc
		}
		for k, v := range got {
			if lab.IsCounter(k) {
				acc[k] += v
			} else {
				acc[k] = v
			}
		}
	}
	return nil
}

// Flags registers the backend's own flags, --delay, --fabric-delay, --stall and --jitter,
// as the simulator's free-form runs name them. The seed is the
// experiment's --seed (Options.Seed).
func (b *Backend) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&b.HostDelay, "delay", b.HostDelay, "propagation delay of host links")
	fs.DurationVar(&b.FabricDelay, "fabric-delay", b.FabricDelay, "propagation delay of switch-to-switch links")
	fs.Var(&b.Stall, "stall", "take switches or hosts off their CPU: "+fabric.StallSyntax)
	fs.DurationVar(&b.Jitter, "jitter", b.Jitter, "delay each frame any port sends by up to this much more than its link's delay, uniformly, keeping order (0: none)")
}

// Simulate implements lab.Simulator for the fabric-scale experiments:
// one simulation of tp with o, the backend's stalls and jitter applied, its frames'
// books checked. The experiment gives every delay and rate itself; the
// backend's HostDelay and FabricDelay are the testbed-shaped
// experiments'.
func (b *Backend) Simulate(ctx context.Context, tp topo.Topology, o fabric.Options, flows []workload.Flow, ro fabric.RunOptions) (*fabric.Result, error) {
	o.Jitter = b.Jitter.Nanoseconds()
	n, err := fabric.Build(tp, o)
	if err != nil {
		return nil, err
	}
	if _, err := b.Stall.Apply(n); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ro.Stop = ctx.Done()
	res, err := n.Run(flows, ro)
	if err != nil {
		return nil, err
	}
	return res, res.Books.Check()
}
