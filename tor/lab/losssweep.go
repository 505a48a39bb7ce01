package lab

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// lossSweep measures how a transport's flow completion times and
// goodput degrade with random loss: NetRT's headline setting (seed 000
// §IV: loss injected at the core switch of h1 — ToR — core — ToR — h2).
// For each loss rate the core's impair rule is set (tord restarted), and
// for each transport roceperf sends --count messages of --size bytes
// from h1 to h2.
type lossSweep struct {
	name, synopsis string

	opts       Options // fabric flags (rate, burst, seed, ...)
	losses     string
	transports string
	op         string
	size       int
	count      int
	qps        int
	mtu        int
	hostRate   string
	timeout    time.Duration
	repeat     int

	lossList      []float64
	transportList []string
}

func newLossSweep() *lossSweep {
	return &lossSweep{name: "loss-sweep",
		synopsis: "FCT and goodput of roceperf transfers h1→h2 on the chain, per loss rate at core and transport",
		opts:     DefaultOptions("chain"), losses: "0,0.001,0.01"}
}

func (e *lossSweep) Name() string     { return e.name }
func (e *lossSweep) Synopsis() string { return e.synopsis }

func (e *lossSweep) Flags(fs *flag.FlagSet) {
	FabricFlags(fs, &e.opts, false)
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated loss rates on core's link with tor2, both ways unless --one-way")
	fs.StringVar(&e.transports, "transports", "gbn", "comma-separated roceperf transports")
	fs.StringVar(&e.op, "op", "write", "roceperf operation: write, send or read")
	fs.IntVar(&e.size, "size", 65536, "bytes per message")
	fs.IntVar(&e.count, "count", 200, "messages per run")
	fs.IntVar(&e.qps, "qps", 1, "queue pairs")
	fs.IntVar(&e.mtu, "mtu", 1024, "RoCE path MTU")
	fs.StringVar(&e.hostRate, "host-rate", "", "roceperf's sending rate (default: the switches' --rate, so loss, not congestion, is measured)")
	fs.DurationVar(&e.timeout, "timeout", time.Minute, "roceperf's --timeout per run")
	fs.IntVar(&e.repeat, "repeat", 1, "runs per point; the table shows medians")
}

func (e *lossSweep) Setup() (Options, error) {
	e.lossList = nil
	for _, s := range splitList(e.losses) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0 && v < 1) {
			return Options{}, Usagef("--losses: %q is not a loss rate in [0, 1)", s)
		}
		e.lossList = append(e.lossList, v)
	}
	e.transportList = splitList(e.transports)
	switch {
	case len(e.lossList) == 0:
		return Options{}, Usagef("--losses: none given")
	case len(e.transportList) == 0:
		return Options{}, Usagef("--transports: none given")
	case e.op != "write" && e.op != "send" && e.op != "read":
		return Options{}, Usagef("--op %q: want write, send or read", e.op)
	case e.size < 1 || e.count < 1 || e.qps < 1 || e.repeat < 1:
		return Options{}, Usagef("--size, --count, --qps and --repeat must be ≥ 1")
	case e.timeout <= 0:
		return Options{}, Usagef("--timeout must be > 0")
	}
	o := e.opts
	o.Topology = "chain"
	o.Loss = e.lossList[0]
	for _, l := range e.lossList {
		// Each loss rate must make a valid rule with the burst length.
		t := o
		t.Loss = l
		t.Prefix = DefaultPrefix("chain")
		if err := t.Validate(); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

// intList parses a comma-separated flag value of integers in [lo, hi],
// naming the flag and what it wants ("1 to 16") in the usage error.
func intList(flag, s string, lo, hi int, want string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < lo || n > hi {
			return nil, Usagef("--%s: %q is not %s", flag, f, want)
		}
		out = append(out, n)
	}
	return out, nil
}

// wordList parses a comma-separated flag value whose every word must be
// one of allowed.
func wordList(flag, s string, allowed ...string) ([]string, error) {
	out := splitList(s)
	for _, w := range out {
		if !slices.Contains(allowed, w) {
			return nil, Usagef("--%s: %q: want %s or %s", flag, w, strings.Join(allowed[:len(allowed)-1], ", "), allowed[len(allowed)-1])
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (e *lossSweep) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	rate := e.hostRate
	if rate == "" && plan.Options.Rate != "0" {
		rate = plan.Options.Rate
	}
	res.Params = map[string]string{
		"losses": e.losses, "transports": e.transports, "op": e.op, "size": strconv.Itoa(e.size),
		"count": strconv.Itoa(e.count), "qps": strconv.Itoa(e.qps), "mtu": strconv.Itoa(e.mtu),
		"host_rate": rate, "timeout": e.timeout.String(), "repeat": strconv.Itoa(e.repeat),
		"burst": strconv.FormatFloat(plan.Options.Burst, 'g', -1, 64),
	}
	defer func() { res.Table = MakeTable(GroupRuns(res.Runs), lossColumns) }()
	base := env.Fabric.Impairment()
	for _, loss := range e.lossList {
		m := base
		m.Loss = loss
		if err := env.Fabric.SetImpairment(ctx, m); err != nil {
			return fmt.Errorf("loss %g: %w", loss, err)
		}
		for _, tr := range e.transportList {
			for rep := 1; rep <= e.repeat; rep++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				point := map[string]string{"transport": tr, "loss": strconv.FormatFloat(loss, 'g', -1, 64)}
				run := env.Measure(ctx, point, rep, Transfer{Op: e.op, From: from, To: to, Size: e.size, Count: e.count,
					QPs: e.qps, Transport: tr, MTU: e.mtu, Rate: rate, Timeout: e.timeout})
				res.Runs = append(res.Runs, run)
				env.printf("%s\n", describeRun(&run))
			}
		}
	}
	return ctx.Err()
}

// describeRun is one progress line.
func describeRun(r *Run) string {
	head := fmt.Sprintf("run %s", pointKey(r.Point))
	if r.Repeat > 1 {
		head += fmt.Sprintf(" #%d", r.Repeat)
	}
	if r.Error != "" {
		return head + ": FAILED: " + firstLine(r.Error)
	}
	s := r.Perf.Client
	return fmt.Sprintf("%s: %d messages, FCT p50 %.0f µs p99 %.0f µs, %.3f Gbit/s, %d retransmitted packets, %d timeouts, %.0f impair drops",
		head, s.Messages, s.FCT.P50, s.FCT.P99, s.GoodputGbps, s.RetxPackets, s.Timeouts, r.ImpairDrops())
}

func perfOf(f func(*Summary) float64) func(*Run) float64 {
	return func(r *Run) float64 { return f(&r.Perf.Client) }
}

// perfColumn is a column of the median of one summary field.
func perfColumn(header string, prec int, f func(*Summary) float64) Column {
	return Column{header, func(g *Group) string {
		v := g.Median(perfOf(f))
		if prec < 0 {
			return fmtInt(v)
		}
		return fmtFloat(v, prec)
	}}
}

// lossColumns is the loss sweep's table: per point, the medians over
// its successful repeats.
var lossColumns = []Column{
	{"transport", func(g *Group) string { return g.Point["transport"] }},
	{"loss", func(g *Group) string { return g.Point["loss"] }},
	{"ok runs", func(g *Group) string { return fmt.Sprintf("%d/%d", len(g.OK()), len(g.Runs)) }},
	perfColumn("messages", -1, func(s *Summary) float64 { return float64(s.Messages) }),
	perfColumn("FCT p50 (µs)", 0, func(s *Summary) float64 { return s.FCT.P50 }),
	perfColumn("FCT p99 (µs)", 0, func(s *Summary) float64 { return s.FCT.P99 }),
	perfColumn("goodput (Gbit/s)", 3, func(s *Summary) float64 { return s.GoodputGbps }),
	perfColumn("retx packets", -1, func(s *Summary) float64 { return float64(s.RetxPackets) }),
	perfColumn("timeouts", -1, func(s *Summary) float64 { return float64(s.Timeouts) }),
	{"impair drops", func(g *Group) string { return fmtInt(g.Median((*Run).ImpairDrops)) }},
	{"other drops", func(g *Group) string { return fmtInt(g.Median((*Run).OtherDrops)) }},
}

func (e *lossSweep) Plots() []PlotSpec {
	loss := func(g *Group) float64 {
		v, err := strconv.ParseFloat(g.Point["loss"], 64)
		if err != nil {
			return math.NaN()
		}
		return v * 100
	}
	series := func(g *Group) string { return g.Point["transport"] }
	return []PlotSpec{
		{File: "fct_p99.png", Title: "FCT p99 vs loss at core", XLabel: "loss (%)", YLabel: "FCT p99 (µs)",
			X: loss, Y: func(g *Group) float64 { return g.Median(perfOf(func(s *Summary) float64 { return s.FCT.P99 })) }, Series: series},
		{File: "goodput.png", Title: "Goodput vs loss at core", XLabel: "loss (%)", YLabel: "goodput (Gbit/s)",
			X: loss, Y: func(g *Group) float64 { return g.Median(perfOf(func(s *Summary) float64 { return s.GoodputGbps })) }, Series: series},
	}
}
