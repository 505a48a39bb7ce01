package main

import (
	"fmt"
	"math"
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

// reference is a transport's lossless run as the experiments judge it.
// The zero value is no reference (none measured).
type reference struct {
	Goodput  float64
	Retx     int64 // what the sender sent again
	Timeouts int64 // the sender's timer expiries
	// SwitchDrops are the frames the switches dropped in the run for a
	// full queue or rx ring (switchDrops): what tells a fabric that lost
	// packets from a timer that expired on a delay.
	SwitchDrops float64
	Error       string
	measured    bool
}

// switchDrops is what a run's switches dropped that no impairment chose:
// frames refused by a full egress queue and frames the kernel dropped
// for a full AF_XDP rx ring (a worker that fell behind).
func switchDrops(r *Run) float64 {
	return sum(r, "rocetor_queue_drops_total") + sum(r, "rocetor_port_xdp_rx_dropped_total")
}

// referenceOf reads a lossless run.
func referenceOf(r *Run) reference {
	ref := reference{Goodput: finite(goodput(r)), SwitchDrops: switchDrops(r), Error: firstLine(r.Error), measured: true}
	if r.Perf != nil {
		ref.Retx, ref.Timeouts = r.Perf.Client.RetxPackets, r.Perf.Client.Timeouts
	} else if ref.Error == "" {
		ref.Error = "no summary"
	}
	return ref
}

// clean reports whether the run is a lossless reference: it finished,
// moved data, and the transport neither retransmitted nor timed out.
func (ref reference) clean() bool {
	return ref.measured && ref.Error == "" && ref.Goodput > 0 && ref.Retx == 0 && ref.Timeouts == 0
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

// why says what keeps the run from being a reference; "" when it is one.
func (ref reference) why() string {
	switch {
	case ref.clean():
		return ""
	case !ref.measured:
		return "not measured"
	case ref.Error != "":
		return "failed: " + ref.Error
	case ref.Retx == 0 && ref.Timeouts == 0:
		return "no goodput"
	}
	return fmt.Sprintf("%d retx, %d timeouts, %.0f switch drops", ref.Retx, ref.Timeouts, ref.SwitchDrops)
}

// ratioCell is a ratio column's text: the percentage with prec
// decimals, or why there is none.
func (ref reference) ratioCell(r *float64, prec int) string {
	if r == nil {
		return "no reference (" + ref.why() + ")"
	}
	return fmtFloat(*r*100, prec) + "%"
}

// cleanRun reports whether a lossless run of a record is a reference
// (the plots' test: they read the record's runs, not the cells).
func cleanRun(r *Run) bool { return referenceOf(r).clean() }

// share is 100 × g / ref, or NaN (no point on a plot) without a reference.
func share(g float64, ref float64, ok bool) float64 {
	if !ok || !(ref > 0) {
		return math.NaN()
	}
	return 100 * g / ref
}

// referenceNote prints a warning when a lossless run is not a reference.
func referenceNote(env *Env, what string, ref reference) {
	if !ref.clean() {
		env.printf("%s: the lossless run is NOT a reference (%s): no ratio is computed from it\n", what, ref.why())
	}
}

// allClean reports whether every run of a group of lossless runs is a
// reference.
func allClean(g *Group) bool {
	for _, r := range g.Runs {
		if !cleanRun(r) {
			return false
		}
	}
	return len(g.Runs) > 0
}
