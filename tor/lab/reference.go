package lab

import (
	"flag"
	"fmt"
	"math"
	"slices"
)

// A lossless reference is the run a loss experiment divides by (sr-loss,
// sr-concurrency, dcp-loss: "goodput as a share of the transport's
// lossless"). It is one only if the transport recovered nothing in it: a
// lossless run that retransmitted or timed out recovered from losses no
// impairment made (a queue that overflowed, a timer shorter than the
// queueing delay, a QP the scheduler starved), its goodput is that
// recovery's and not the lossless goodput, and a ratio to it means
// nothing (the recorded sr-concurrency had IRN time out 1,354 times in
// its "lossless" 5,000-QP run and a cell at 100.9 % of it). Such a run is
// reported as it is, its retransmissions and timeouts beside it, and no
// ratio is computed from it.
//
// On two CPUs an unclean lossless run is mostly a stall: a process that
// shares the CPUs (a build, a scrape, the kernel) delays a switch or an
// endpoint for milliseconds, a queue overflows or a timer expires. One
// stall should not cost a cell its reference, so an experiment measures
// the lossless run again, up to --reference-retries more times, until
// --reference-runs of them are clean; every run it set aside is in the
// record and in the cell's lossless_discarded, and the reference is the
// median of the clean ones (their spread beside it). A transport that
// never makes a clean run still gets no ratio.

// referenceOpts is how an experiment measures its references.
type referenceOpts struct {
	Runs    int // clean lossless runs a reference is the median of
	Retries int // lossless runs measured beyond Runs, at most, to get them
}

// defaultReference: three clean runs, not one. One lossless run's
// goodput moves with what else the two CPUs carry: dcp-loss's (unpaced)
// spanned 0.45–0.60 Gbit/s between runs, and a short sr-loss run at 200
// Mbit/s had IRN's lossless at 0.173 and its 1 % run at 0.182 (105 %).
var defaultReference = referenceOpts{Runs: 3, Retries: 2}

func (o *referenceOpts) flags(fs *flag.FlagSet) {
	fs.IntVar(&o.Runs, "reference-runs", o.Runs, "clean lossless runs each reference is the median of")
	fs.IntVar(&o.Retries, "reference-retries", o.Retries,
		"lossless runs measured again, at most, when one is not a reference (each is reported)")
}

func (o referenceOpts) check() error {
	if o.Runs < 1 || o.Retries < 0 {
		return Usagef("--reference-runs must be ≥ 1 and --reference-retries ≥ 0")
	}
	return nil
}

// reference is a transport's lossless runs as the experiments judge
// them. The zero value is no reference (none measured).
type reference struct {
	Goodput  float64 // median over the clean runs (when too few are clean, the last unclean one's)
	Min, Max float64 // the clean runs' goodput
	Runs     int     // clean runs
	// Retx and Timeouts are what the sender sent again and its timer
	// expiries: 0 in a reference; the last unclean run's otherwise.
	Retx     int64
	Timeouts int64
	// SwitchDrops are the frames the switches dropped for a full queue
	// or rx ring (switchDrops), over the clean runs: what tells a fabric
	// that lost packets from a timer that expired on a delay.
	SwitchDrops float64
	Discarded   []discarded // lossless runs that were not clean, in order
	Error       string
	need        int // clean runs it takes; 1 for one run's reading
}

// discarded is a lossless run that was not a reference.
type discarded struct {
	Goodput     float64 `json:"goodput_gbps"`
	Retx        int64   `json:"retx_packets"`
	Timeouts    int64   `json:"timeouts"`
	SwitchDrops float64 `json:"switch_drops"`
	Error       string  `json:"error,omitempty"`
}

// switchDrops is what a run's switches dropped that no impairment chose:
// frames refused by a full egress queue and frames the kernel dropped
// for a full AF_XDP rx ring (a worker that fell behind).
func switchDrops(r *Run) float64 {
	return sum(r, "rocetor_queue_drops_total") + sum(r, "rocetor_port_xdp_rx_dropped_total")
}

// referenceOf reads one lossless run.
func referenceOf(r *Run) reference {
	g := finite(goodput(r))
	ref := reference{Goodput: g, Min: g, Max: g, SwitchDrops: switchDrops(r), Error: firstLine(r.Error), need: 1}
	if r.Perf != nil {
		ref.Retx, ref.Timeouts = r.Perf.Client.RetxPackets, r.Perf.Client.Timeouts
	} else if ref.Error == "" {
		ref.Error = "no summary"
	}
	if ref.Error == "" && ref.Goodput > 0 && ref.Retx == 0 && ref.Timeouts == 0 {
		ref.Runs = 1
	}
	return ref
}

// measureReference measures lossless runs with measure (given the run's
// repeat, from 1) until o.Runs of them are clean or o.Retries more have
// been measured, and returns the reference they make.
func measureReference(env *Env, what string, o referenceOpts, measure func(repeat int) (*Run, error)) (reference, error) {
	var clean []reference
	var bad reference // the last run that was not clean
	var set []discarded
	for i := 1; len(clean) < o.Runs && i <= o.Runs+o.Retries; i++ {
		r, err := measure(i)
		if err != nil {
			return reference{}, err
		}
		one := referenceOf(r)
		if one.clean() {
			clean = append(clean, one)
			continue
		}
		referenceNote(env, what, one)
		bad = one
		set = append(set, discarded{Goodput: one.Goodput, Retx: one.Retx, Timeouts: one.Timeouts,
			SwitchDrops: one.SwitchDrops, Error: one.Error})
	}
	if len(clean) < o.Runs {
		bad.Runs, bad.need, bad.Discarded = len(clean), o.Runs, set
		return bad, nil
	}
	ref := reference{Runs: len(clean), need: o.Runs, Discarded: set}
	g := make([]float64, len(clean))
	for i, c := range clean {
		g[i] = c.Goodput
		ref.SwitchDrops += c.SwitchDrops
	}
	slices.Sort(g)
	ref.Goodput, ref.Min, ref.Max = median(g), g[0], g[len(g)-1]
	if len(set) > 0 {
		env.printf("%s: reference from %d clean lossless run(s) after %d set aside\n", what, len(clean), len(set))
	}
	return ref, nil
}

// median of sorted values.
func median(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// clean reports whether the runs make a lossless reference: as many
// clean runs as it takes (each finished, moved data, and the transport
// neither retransmitted nor timed out).
func (ref reference) clean() bool {
	return ref.need > 0 && ref.Runs >= ref.need && ref.Error == "" && ref.Goodput > 0
}

// ratio is goodput g as a share of the reference's; nil when the
// reference is not clean (JSON null: no ratio).
func (ref reference) ratio(g float64) *float64 {
	if !ref.clean() {
		return nil
	}
	v := finite(g / ref.Goodput)
	return &v
}

// why says what keeps the runs from being a reference; "" when they are one.
func (ref reference) why() string {
	switch {
	case ref.clean():
		return ""
	case ref.need == 0:
		return "not measured"
	case ref.Error != "":
		return "failed: " + ref.Error
	case ref.Retx == 0 && ref.Timeouts == 0:
		return "no goodput"
	}
	why := fmt.Sprintf("%d retx, %d timeouts, %.0f switch drops", ref.Retx, ref.Timeouts, ref.SwitchDrops)
	if ref.need > 1 {
		why += fmt.Sprintf("; %d of %d runs clean", ref.Runs, ref.need)
	}
	return why
}

// ratioCell is a ratio column's text: the percentage with prec
// decimals, or why there is none.
func (ref reference) ratioCell(r *float64, prec int) string {
	if r == nil {
		return "no reference (" + ref.why() + ")"
	}
	return fmtFloat(*r*100, prec) + "%"
}

// referenceCells are the reference's fields of an experiment's cell.
type referenceCells struct {
	LosslessClean    bool  `json:"lossless_clean"`
	LosslessRetx     int64 `json:"lossless_retx_packets"`
	LosslessTimeouts int64 `json:"lossless_timeouts"`
	// LosslessSwitchDrops: what the switches dropped in the lossless
	// runs for a full queue or rx ring (no impairment was set).
	LosslessSwitchDrops float64 `json:"lossless_switch_drops"`
	// LosslessRuns are the clean runs the reference is the median of,
	// LosslessMin and LosslessMax their goodput.
	LosslessRuns int     `json:"lossless_runs"`
	LosslessMin  float64 `json:"lossless_goodput_min_gbps"`
	LosslessMax  float64 `json:"lossless_goodput_max_gbps"`
	// LosslessDiscarded are the lossless runs set aside as not clean,
	// each measured again.
	LosslessDiscarded []discarded `json:"lossless_discarded"`
}

func (ref reference) cells() referenceCells {
	d := ref.Discarded
	if d == nil {
		d = []discarded{}
	}
	return referenceCells{LosslessClean: ref.clean(), LosslessRetx: ref.Retx, LosslessTimeouts: ref.Timeouts,
		LosslessSwitchDrops: ref.SwitchDrops, LosslessRuns: ref.Runs, LosslessMin: ref.Min, LosslessMax: ref.Max,
		LosslessDiscarded: d}
}

// cleanRun reports whether a lossless run of a record is clean (the
// plots' test: they read the record's runs, not the cells).
func cleanRun(r *Run) bool { return referenceOf(r).clean() }

// share is 100 × g / ref, or NaN (no point on a plot) without a reference.
func share(g float64, ref float64, ok bool) float64 {
	if !ok || !(ref > 0) {
		return math.NaN()
	}
	return 100 * g / ref
}

// referenceNote prints a warning when a lossless run is not clean.
func referenceNote(env *Env, what string, ref reference) {
	if !ref.clean() {
		env.printf("%s: the lossless run is NOT a reference (%s): no ratio is computed from it unless a run measured again is\n", what, ref.why())
	}
}

// cleanMedian is the median goodput of a group's clean lossless runs
// (the plots' reference: the runs set aside are in the group too); ok is
// false when none is clean.
func cleanMedian(g *Group) (float64, bool) {
	var v []float64
	for _, r := range g.Runs {
		if cleanRun(r) {
			v = append(v, goodput(r))
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	return median(v), true
}
