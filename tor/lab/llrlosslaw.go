package lab

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"rocetor/tor/fabric"
)

// llrLossLaw measures seed 003's §4.1 law on rocetor's llr: a link
// losing p of its frames, with k copies of each retransmission (Eq. 1),
// loses p^(k+1) of them for good ("1, 1, and 2 copies … should
// theoretically result in loss rates of 10^-10, 10^-8, and 10^-9",
// Fig. 8: 1e-9 at 1e-3 with two copies). A fabric run cannot resolve
// that (llr-fabric: 3 × 10⁹ packets on one link for 1e-9); this is one
// link and nothing else (llrLink: the same tor/llr stage, built by
// tor/pipeline as tord and the simulator build it, at both ends of one
// corrupting wire), driven as fast as the CPU goes, at corruption rates
// where p^(k+1) is countable, and at 1e-3 as far as its packet count
// bounds it.
//
// Cases, each a flag value:
//
//   - protego-oneway: the seed's setting. Only the data's direction
//     corrupts (the seed's §3 assumes a link corrupts one way, as 91.8 %
//     do), and no loss notice is sent again (notice_retry 1 s: Protego
//     relies on the copies and ackNoTimeout alone): the law's own
//     conditions;
//   - protego: the same recovery on a link corrupting both ways, as
//     fabric.LinkLoss corrupts (llr-fabric): the loss notice, one frame
//     on the reverse wire, is lost with p too, and with it the
//     retransmission, so about p·(p + p^k) is lost for good;
//   - rocetor: both ways, with tor/llr's notice_retry (ack_timeout/4):
//     a head of line still missing is named again, so the timeout takes
//     a sequence only when every round — the first notice and three
//     retries — failed, each with about p + p^k.
//
// ack_timeout is 16 µs rather than tord's 1 ms: the seed sets 7 µs at
// 100G (§A, Fig. 17) from the retransmission delay, and the pair's is a
// few 1 µs steps; the law does not depend on it while it outlasts the
// retransmission, and the reordering buffer then stays under llr's
// pause level (llrLinkBurst), so no PFC shapes the stream. Copies are
// fixed by --copies (Eq. 1 would give 5 at 3e-2 for a 1e-9 target,
// making the loss uncountable at every rate). tx_buffer 4 MiB: the
// whole stream a stuck head holds.
type llrLossLaw struct {
	fabricBase
	sc      scaleFlags
	rates   string
	copies  string
	cases   string
	packets int

	rateList   []float64
	copiesList []int
	caseList   []string
}

func newLLRLossLaw() *llrLossLaw {
	return &llrLossLaw{sc: scaleFlags{scale: ScalePaper}, rates: "3e-2,1e-2,3e-3,1e-3", copies: "1,2",
		cases: "protego-oneway,protego,rocetor"}
}

func (e *llrLossLaw) Name() string { return "llr-loss-law" }

func (e *llrLossLaw) Synopsis() string {
	return "Protego's §4.1 law (effective loss p^(k+1) with k copies) on one corrupting link of rocetor's llr, in memory, as many packets as the CPU allows"
}

func (e *llrLossLaw) Flags(fs *flag.FlagSet) {
	e.sc.flags(fs)
	fs.StringVar(&e.rates, "rates", e.rates, "comma-separated corruption rates of the link")
	fs.StringVar(&e.copies, "copies", e.copies, "comma-separated copies per retransmission (Eq. 1's k)")
	fs.StringVar(&e.cases, "cases", e.cases, "protego-oneway (data direction corrupts, no notice retry: the law's conditions), protego (both ways, no retry), rocetor (both ways, tor/llr's notice retry)")
	fs.IntVar(&e.packets, "packets", 0, "data packets per cell (0: paper 4,000,000, ci 100,000)")
}

func (e *llrLossLaw) Setup() (Options, error) {
	if err := e.sc.check(); err != nil {
		return Options{}, err
	}
	var err error
	if e.rateList, err = rates(e.rates); err != nil {
		return Options{}, err
	}
	if e.caseList, err = wordList("cases", e.cases, "protego-oneway", "protego", "rocetor"); err != nil {
		return Options{}, err
	}
	e.copiesList = nil
	for _, s := range splitList(e.copies) {
		k, err := strconv.Atoi(s)
		if err != nil || k < 1 || k > 8 {
			return Options{}, Usagef("--copies: %q: want 1 to 8", s)
		}
		e.copiesList = append(e.copiesList, k)
	}
	switch {
	case len(e.rateList) == 0 || len(e.copiesList) == 0 || len(e.caseList) == 0:
		return Options{}, Usagef("--rates, --copies, --cases: none given")
	case e.packets < 0:
		return Options{}, Usagef("--packets %d: want ≥ 0", e.packets)
	}
	if e.packets == 0 {
		e.packets = map[string]int{ScalePaper: 4_000_000, ScaleCI: 100_000}[e.sc.scale]
	}
	return Options{}, nil
}

const (
	llrLawAckTimeout = 16 * time.Microsecond
	llrLawNoRetry    = time.Second
)

// llrLawYAML is the two switches' configuration for one cell: llr on
// up at both ends, the wire's loss on up's egress at a, and at b too
// unless only the data's direction corrupts.
func llrLawYAML(cse string, p float64, k int, seed uint64) [2]string {
	retry := llrLawAckTimeout / 4
	if cse != "rocetor" {
		retry = llrLawNoRetry
	}
	l := fmt.Sprintf("llr: {ports: [up], ack_timeout: %v, notice_retry: %v, copies: %d, tx_buffer: 4MiB}\n", llrLawAckTimeout, retry, k)
	imp := func(s uint64) string {
		return fmt.Sprintf("impair: {seed: %d, rules: [{port: up, direction: egress, loss: %g}]}\n", s, p)
	}
	y := [2]string{l + imp(2*seed), l}
	if cse != "protego-oneway" {
		y[1] += imp(2*seed + 1)
	}
	return y
}

// llrLawCell runs one cell: packets data packets, then ten timeouts'
// worth of nothing, so that every loss is recovered or skipped.
func llrLawCell(ctx context.Context, cse string, p float64, k int, seed uint64, packets int) (*FabricRun, error) {
	r, err := newLLRLink(llrLawYAML(cse, p, k, seed))
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for i := 0; i < packets; i += llrLinkBurst {
		if i%(1<<16) == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r.step(min(llrLinkBurst, packets-i))
	}
	r.drain(10 * int64(llrLawAckTimeout))
	tx, rx := r.stats()
	ex := map[string]float64{
		"injected": float64(r.n), "to_host": float64(r.b.toHost),
		"protected": float64(tx.Protected), "expected": float64(rx.Expected), "lost": float64(rx.LossesDetected),
		"notices": float64(rx.NoticesSent), "notice_retries": float64(rx.NoticeRetries),
		"ack_timeouts": float64(rx.AckTimeouts), "skipped": float64(rx.Skipped),
		"retransmitted": float64(tx.Retransmitted), "copies": float64(tx.Copies), "duplicates": float64(rx.Duplicates),
		"pause_sent": float64(rx.PauseSent), "rx_buffer_peak": float64(rx.RxBytesMax), "tx_buffer_peak": float64(tx.TxBytesMax),
		"unprotected": float64(tx.UnprotectedTxFull + tx.UnprotectedSync + tx.UnprotectedQueue),
	}
	return &FabricRun{SimTimeNs: r.now, Extra: ex, WallNs: time.Since(t0).Nanoseconds()}, nil
}

func (e *llrLossLaw) Simulate(ctx context.Context, sim Simulator, out io.Writer, res *Results) error {
	res.Topology = fmt.Sprintf("one llr link between two in-memory switches (tor/pipeline), 1 µs steps of %d data packets of %d B payload, ack_timeout %v", llrLinkBurst, llrLinkPayload, llrLawAckTimeout)
	res.Params = map[string]string{"scale": e.sc.scale, "seeds": strconv.Itoa(e.sc.n()), "rates": e.rates,
		"copies": e.copies, "cases": e.cases, "packets": strconv.Itoa(e.packets)}
	for _, cse := range e.caseList {
		for _, k := range e.copiesList {
			for _, p := range e.rateList {
				for seed := 1; seed <= e.sc.n(); seed++ {
					if err := e.cell(ctx, sim, res, out, cse, p, k, seed); err != nil {
						return err
					}
				}
			}
		}
	}
	res.Table = llrLawTable(res.Runs)
	res.Notes = append(res.Notes, llrLawFits(res.Runs)...)
	return nil
}

// cell runs one cell into res.Runs: here, or, sharded (--shard,
// --cells), in the shard whose it is, its inputs the two switches' YAML
// and the packets.
func (e *llrLossLaw) cell(ctx context.Context, sim Simulator, res *Results, out io.Writer, cse string, p float64, k, seed int) error {
	run := Run{Point: map[string]string{"case": cse, "copies": strconv.Itoa(k), "rate": fmt.Sprint(p)}, Repeat: seed, Started: time.Now().UTC()}
	simulate := func() error {
		fr, err := llrLawCell(ctx, cse, p, k, uint64(seed), e.packets)
		run.Fabric = fr
		return err
	}
	var err error
	if c, ok := sim.(*Cells); ok {
		y := llrLawYAML(cse, p, k, uint64(seed))
		err = c.cell(ctx, &run, cellInputs{o: fabric.Options{Seed: uint64(seed), Switch: y[0] + "---\n" + y[1]},
			ro: fabric.RunOptions{QPs: e.packets}}, simulate)
	} else {
		err = simulate()
	}
	if err != nil {
		run.Error = err.Error()
	}
	res.Runs = append(res.Runs, run)
	switch {
	case err != nil && ctx.Err() != nil:
		return err
	case err != nil:
		fmt.Fprintf(out, "%s k=%d p=%g seed %d: %v\n", cse, k, p, seed, err)
	default:
		x := run.Fabric.Extra
		fmt.Fprintf(out, "%s k=%d p=%g seed %d: %.0f sequences, %.0f lost, %.0f skipped (%.3g s)\n", cse, k, p, seed,
			x["expected"], x["lost"], x["skipped"], float64(run.Fabric.WallNs)/1e9)
	}
	return nil
}

// llrLawSum is a (case, copies, rate)'s runs pooled over seeds.
type llrLawSum struct {
	cse                                       string
	k                                         int
	p                                         float64
	expected, lost, notices, retries, skipped float64
	pauses, rxPeak                            float64
}

func llrLawSums(runs []Run) []*llrLawSum {
	var out []*llrLawSum
	idx := map[string]*llrLawSum{}
	for _, r := range runs {
		if r.Fabric == nil || r.Fabric.Extra == nil {
			continue
		}
		key := r.Point["case"] + "/" + r.Point["copies"] + "/" + r.Point["rate"]
		s := idx[key]
		if s == nil {
			k, _ := strconv.Atoi(r.Point["copies"])
			p, _ := strconv.ParseFloat(r.Point["rate"], 64)
			s = &llrLawSum{cse: r.Point["case"], k: k, p: p}
			idx[key] = s
			out = append(out, s)
		}
		x := r.Fabric.Extra
		s.expected += x["expected"]
		s.lost += x["lost"]
		s.notices += x["notices"]
		s.retries += x["notice_retries"]
		s.skipped += x["skipped"]
		s.pauses += x["pause_sent"]
		s.rxPeak = max(s.rxPeak, x["rx_buffer_peak"])
	}
	return out
}

// llrLawUpper is the 95 % upper bound of a Poisson rate from n events
// in t trials: 3/t for none (the rule of three), else n + 2√n + 2 over t
// (a close approximation of the exact bound for these counts).
func llrLawUpper(n, t float64) float64 {
	if t == 0 {
		return 0
	}
	if n == 0 {
		return 3 / t
	}
	return (n + 2*math.Sqrt(n) + 2) / t
}

func llrLawTable(runs []Run) Table {
	t := Table{Columns: []string{"case", "copies k", "rate p", "sequences", "measured loss", "notices", "notice retries",
		"skipped", "effective loss", "95 % bound", "law p^(k+1)", "p·(p+p^k)", "PFC pauses"}}
	for _, s := range llrLawSums(runs) {
		eff := "0"
		if s.skipped > 0 {
			eff = fmt.Sprintf("%.3g", s.skipped/s.expected)
		}
		t.Rows = append(t.Rows, []string{s.cse, strconv.Itoa(s.k), fmt.Sprint(s.p), fmt.Sprintf("%.0f", s.expected),
			fmt.Sprintf("%.3g", s.lost/max(s.expected, 1)), fmt.Sprintf("%.0f", s.notices), fmt.Sprintf("%.0f", s.retries),
			fmt.Sprintf("%.0f", s.skipped), eff, fmt.Sprintf("< %.2g", llrLawUpper(s.skipped, s.expected)),
			fmt.Sprintf("%.3g", math.Pow(s.p, float64(s.k+1))), fmt.Sprintf("%.3g", s.p*(s.p+math.Pow(s.p, float64(s.k)))),
			fmt.Sprintf("%.0f", s.pauses)})
	}
	return t
}

// llrLawFits fits log(effective loss) against log(p) by least squares,
// per (case, copies) over the rates with a skip counted: the exponent
// the law predicts is k+1.
func llrLawFits(runs []Run) []string {
	type key struct {
		cse string
		k   int
	}
	var order []key
	pts := map[key][][2]float64{}
	for _, s := range llrLawSums(runs) {
		kk := key{s.cse, s.k}
		if _, ok := pts[kk]; !ok {
			order = append(order, kk)
			pts[kk] = nil
		}
		if s.skipped > 0 {
			pts[kk] = append(pts[kk], [2]float64{math.Log(s.p), math.Log(s.skipped / s.expected)})
		}
	}
	var notes []string
	for _, kk := range order {
		if b, ok := llrLawSlope(pts[kk]); ok {
			notes = append(notes, fmt.Sprintf("%s, k=%d: effective loss ∝ p^%.2f over %d rates (the law: p^%d)", kk.cse, kk.k, b, len(pts[kk]), kk.k+1))
		} else {
			notes = append(notes, fmt.Sprintf("%s, k=%d: skips at %d rate(s), no fit", kk.cse, kk.k, len(pts[kk])))
		}
	}
	return []string{strings.Join(notes, "; ")}
}

// llrLawSlope is the least-squares slope of y on x; ok with two points
// or more.
func llrLawSlope(xy [][2]float64) (float64, bool) {
	if len(xy) < 2 {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	for _, v := range xy {
		sx, sy, sxx, sxy = sx+v[0], sy+v[1], sxx+v[0]*v[0], sxy+v[0]*v[1]
	}
	n := float64(len(xy))
	return (n*sxy - sx*sy) / (n*sxx - sx*sx), true
}

func (e *llrLossLaw) Plots() []PlotSpec { return nil }
