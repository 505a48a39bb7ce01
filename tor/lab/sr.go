package lab

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
)

// The selective-retransmission experiments (FaSR, seed 001 §V; IRN, seed
// 004): sr-loss is FaSR's Fig. 7(a) — one QP's goodput under random loss
// at core, for every loss recovery the project has; sr-concurrency is
// Fig. 7(b)/(c), Fig. 8(b) and Fig. 9(b) — 16 to 5,000 QPs at once,
// their aggregate goodput, the SR state each transport needs for them,
// and FaSR's fast-path share.
//
// Both pace the sender (sr-concurrency's senders together) at
// --host-rate, 200 Mbit/s by default, well below what the testbed
// carries. Paced at the links' 1 Gbit/s, the chain's
// five processes on two CPUs are the bottleneck (one QP: about 0.6
// Gbit/s), queues fill, and at 1 % loss IRN and FaSR kept 68 % and 82 %
// of their lossless goodput, against 96 % and 97 % at 200 Mbit/s
// (docs/experiments.md); with thousands of QPs, which no window bounds
// together, tor2's 1 MiB queue toward h2 overflowed even without loss.

// srHostRate is both experiments' default sending rate.
const srHostRate = "200M"

// srOptions are the SR experiments' (and dcp-loss's) testbed defaults:
// the switches' workers sleep as soon as they find no work
// (--poll interrupt). Polling adaptively, each spins tens of
// microseconds after every frame, which at these rates is all the time:
// two spinning switches and the paced sender (which spins while its
// shaper holds frames) on two CPUs left the receiver and the switches
// waiting for a CPU for milliseconds. In the same minute, 2026-11-25,
// sr-concurrency's lossless runs at 16 and 5,000 QPs were clean in 2 of
// 6 adaptive and 6 of 6 interrupt (docs/experiments.md).
func srOptions(topology string) Options {
	o := DefaultOptions(topology)
	o.Poll = "interrupt"
	return o
}

// srReport is what the SR experiments read of roceperf's JSON summary
// beyond Summary: an endpoint's SR state (nic.SRState, docs/roceperf.md,
// sr_*) and FaSR's counters, the client's and under "server" the
// server's.
type srReport struct {
	StateBytesPerQP int       `json:"sr_state_bytes_per_qp"`
	SharedBytes     int       `json:"sr_shared_bytes"`
	StateBytes      int       `json:"sr_state_bytes"`
	BDPPackets      int       `json:"sr_bdp_packets"`
	FaSR            *srFaSR   `json:"fasr"`
	Server          *srReport `json:"server"`
}

// srFaSR are the FaSR counters the experiments report.
type srFaSR struct {
	FastOps        uint64  `json:"fast_ops"`
	SlowOps        uint64  `json:"slow_ops"`
	FastPathRatio  float64 `json:"fast_path_ratio"`
	PeakUnits      uint64  `json:"peak_units"`
	PeakBlocks     uint64  `json:"peak_blocks"`
	UnitsExhausted uint64  `json:"units_exhausted"`
	GBNFallbacks   uint64  `json:"gbn_fallbacks"`
}

// srOf reads a run's roceperf summary, a round's (Env.MeasureRound)
// from its clients' (srOfRound); nil when it has none.
func srOf(r *Run) *srReport {
	if len(r.Flows) > 0 {
		return srOfRound(r.Flows)
	}
	return srReportOf(r.Perf)
}

// srReportOf reads one client's summary; nil without one.
func srReportOf(f *PerfResult) *srReport {
	if f == nil || len(f.ClientRaw) == 0 {
		return nil
	}
	var s srReport
	if json.Unmarshal(f.ClientRaw, &s) != nil {
		return nil
	}
	return &s
}

// srOfRound is the SR state of a round's clients as one report: the
// clients' added up (each sender's endpoint holds its own QPs' state and
// pool), the server's as the clients report it — the round's one
// endpoint with every client's QPs, the same in each client's report
// (docs/roceperf.md, "Many clients"), so the largest is taken.
func srOfRound(flows []*PerfResult) *srReport {
	var m *srReport
	for _, f := range flows {
		s := srReportOf(f)
		switch {
		case s == nil:
			continue
		case m == nil:
			m = s
			continue
		}
		m.StateBytes, m.SharedBytes = m.StateBytes+s.StateBytes, m.SharedBytes+s.SharedBytes
		if s.Server != nil && (m.Server == nil || s.Server.StateBytes > m.Server.StateBytes) {
			m.Server = s.Server
		}
	}
	return m
}

// finite is v, or 0 for a figure a failed run left NaN or infinite
// (JSON has neither).
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// lossyFirst orders loss rates as measured: the lossy ones as given, the
// lossless reference last (the first run after the switches restart is
// the slowest, whatever it is), and adds it when absent.
func lossyFirst(losses []float64) []float64 {
	var out []float64
	for _, l := range losses {
		if l > 0 {
			out = append(out, l)
		}
	}
	return append(out, 0)
}

// parseLosses parses a list of loss rates in [0, 1).
func parseLosses(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v >= 0 && v < 1) {
			return nil, Usagef("--losses: %q is not a loss rate in [0, 1)", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, Usagef("--losses: none given")
	}
	return out, nil
}

// srFabric puts the switches in what a transport of sr-loss needs and
// returns the roceperf transport its endpoints run: netrt is gbn
// endpoints with NetRT on the ToRs, dcp a fabric that parses DCP (core's
// loss is trimming then); the others plain switches.
func srFabric(ctx context.Context, env *Env, transport string) (string, error) {
	o := env.Fabric.Plan().Options
	o.NetRT, o.DCP = transport == "netrt", transport == "dcp"
	if err := env.Fabric.Reconfigure(ctx, o); err != nil {
		return "", err
	}
	if transport == "netrt" {
		return "gbn", nil
	}
	return transport, nil
}

// srImpair sets the loss at the impair site (core on the chain, tor1's
// port toward tor2 on the link): dropped, or for DCP trimmed (as
// dcp-loss).
func srImpair(ctx context.Context, env *Env, loss float64, trim bool) error {
	m := env.Fabric.Impairment()
	m.Loss, m.Trim = loss, trim && loss > 0
	if err := env.Fabric.SetImpairment(ctx, m); err != nil {
		return fmt.Errorf("loss %g: %w", loss, err)
	}
	return nil
}

// lostAt is what the impair sites did to the senders' data packets,
// originals and retransmissions alike, each of which must be sent again:
// destroyed, or trimmed for DCP. The ACKs and NAKs they destroyed on the
// way back are control (wireLoss).
func lostAt(r *Run) float64 {
	return r.Destroyed("data") + sum(r, "rocetor_impair_trimmed_total")
}

// ---- sr-loss ----

// srLoss is FaSR's Fig. 7(a) (seed 001 §V-B): one QP writing 8 KB
// messages h1 → h2 through the chain, random loss at core, for each
// transport; goodput against the same transport's lossless goodput in
// the same session.
type srLoss struct {
	opts       Options
	transports string
	losses     string
	size       int
	count      int
	mtu        int
	depth      int
	hostRate   string
	timeout    time.Duration
	ref        referenceOpts

	transportList []string
	lossList      []float64
	lossless      map[string]float64 // by transport, for the ratio plot
}

// SRLossCell is one (transport, loss) of sr-loss's JSON.
type SRLossCell struct {
	Transport string  `json:"transport"`
	Loss      float64 `json:"loss"`
	Goodput   float64 `json:"goodput_gbps"`
	Lossless  float64 `json:"lossless_goodput_gbps"`
	// Ratio is Goodput / Lossless, null when the lossless run is not a
	// reference (referenceCells says why).
	Ratio *float64 `json:"goodput_ratio"`
	referenceCells
	Retx      int64    `json:"retx_packets"` // what the sending endpoint sent again
	Timeouts  int64    `json:"timeouts"`
	Lost      float64  `json:"lost_packets"`       // what core dropped (trimmed, for dcp) during the run
	TorRetx   *float64 `json:"tor_retx,omitempty"` // netrt: what tor1 resent from its pool
	Destroyed WireLoss `json:"destroyed"`          // what the impairment destroyed, by class
	Error     string   `json:"error,omitempty"`

	ref reference // the lossless run, for the table
}

func newSRLoss() *srLoss {
	return &srLoss{transports: "gbn,irn,fasr,netrt,dcp", losses: "0,0.0001,0.001,0.005,0.01,0.02"}
}

func (e *srLoss) Name() string { return "sr-loss" }
func (e *srLoss) Synopsis() string {
	return "FaSR's Fig. 7(a): one QP's 8 KB WRITEs through the chain under random loss at core, goodput of gbn, irn, fasr, NetRT and DCP against their own lossless goodput"
}

func (e *srLoss) Flags(fs *flag.FlagSet) {
	e.opts = srOptions("chain")
	FabricFlags(fs, &e.opts, false)
	e.ref = defaultReference
	e.ref.flags(fs)
	// 5,000 messages of 8 KiB: 40,000 packets, about 400 losses at 1 %
	// and 40 at 0.1 %; under two seconds a run at 200 Mbit/s.
	e.size, e.count, e.mtu, e.hostRate, e.timeout = 8192, 5000, 1024, srHostRate, 2*time.Minute
	fs.StringVar(&e.transports, "transports", e.transports, "comma-separated: gbn, irn, fasr, netrt (gbn endpoints, NetRT on the ToRs), dcp (trimmed at core)")
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated loss rates on core's link with tor2 (both ways unless --one-way); each transport's lossless run is measured whether 0 is listed or not")
	fs.IntVar(&e.size, "size", e.size, "bytes per WRITE")
	fs.IntVar(&e.count, "count", e.count, "WRITEs per run")
	fs.IntVar(&e.mtu, "mtu", e.mtu, "RoCE path MTU")
	fs.IntVar(&e.depth, "depth", e.depth, "WRITEs in flight (0: roceperf's, 256 KiB worth)")
	fs.StringVar(&e.hostRate, "host-rate", e.hostRate, "the sender's rate (empty: the switches' --rate)")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
}

func (e *srLoss) Setup() (Options, error) {
	var err error
	if e.transportList, err = wordList("transports", e.transports, "gbn", "irn", "fasr", "netrt", "dcp"); err != nil {
		return Options{}, err
	}
	if e.lossList, err = parseLosses(e.losses); err != nil {
		return Options{}, err
	}
	if err := e.ref.check(); err != nil {
		return Options{}, err
	}
	switch {
	case len(e.transportList) == 0:
		return Options{}, Usagef("--transports: none given")
	case e.size < 1 || e.count < 1 || e.depth < 0:
		return Options{}, Usagef("--size and --count must be ≥ 1, --depth ≥ 0")
	case e.timeout <= 0:
		return Options{}, Usagef("--timeout must be > 0")
	}
	o := e.opts
	o.Topology, o.Loss, o.NetRT, o.DCP = "chain", 0, false, false
	return o, nil
}

func (e *srLoss) transfer(plan *Plan, transport string) Transfer {
	rate := e.hostRate
	if rate == "" && plan.Options.Rate != "0" {
		rate = plan.Options.Rate
	}
	return Transfer{Op: "write", From: plan.ByRole(RoleSender)[0], To: plan.ByRole(RoleReceiver)[0], Size: e.size,
		Count: e.count, QPs: 1, Transport: transport, MTU: e.mtu, Depth: e.depth, Rate: rate, Timeout: e.timeout}
}

func (e *srLoss) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	res.Params = map[string]string{"transports": e.transports, "losses": e.losses, "size": strconv.Itoa(e.size),
		"count": strconv.Itoa(e.count), "mtu": strconv.Itoa(e.mtu), "depth": strconv.Itoa(e.depth),
		"host_rate": e.hostRate, "timeout": e.timeout.String()}
	var cells []SRLossCell
	defer func() {
		res.Cells = cells
		res.Table = srLossTable(cells)
	}()
	for _, tr := range e.transportList {
		endpoints, err := srFabric(ctx, env, tr)
		if err != nil {
			return err
		}
		var mine []SRLossCell
		var lossless reference
		for _, loss := range lossyFirst(e.lossList) {
			if err := srImpair(ctx, env, loss, tr == "dcp"); err != nil {
				return err
			}
			point := map[string]string{"transport": tr, "loss": strconv.FormatFloat(loss, 'g', -1, 64)}
			var c SRLossCell
			measure := func(repeat int) (*Run, error) {
				res.Runs = append(res.Runs, env.Measure(ctx, point, repeat, e.transfer(plan, endpoints)))
				r := &res.Runs[len(res.Runs)-1]
				c = srLossCellOf(r, tr, loss)
				env.printf("run %s: goodput %.3f Gbit/s, %d retransmitted for %.0f lost, %d timeouts%s\n", pointKey(point),
					c.Goodput, c.Retx, c.Lost, c.Timeouts, errSuffix(c.Error))
				return r, ctx.Err()
			}
			var err error
			if loss == 0 {
				if lossless, err = measureReference(env, tr, e.ref, measure); err != nil {
					return err
				}
				if !slices.Contains(e.lossList, 0) {
					continue // measured as the reference only
				}
			} else if _, err = measure(1); err != nil {
				return err
			}
			mine = append(mine, c)
		}
		for i := range mine {
			c := &mine[i]
			c.Lossless, c.Ratio, c.ref = lossless.Goodput, lossless.ratio(c.Goodput), lossless
			c.referenceCells = lossless.cells()
		}
		// Cells by loss rate, the lossless one (when listed) first.
		slices.SortStableFunc(mine, func(a, b SRLossCell) int { return cmpFloat(a.Loss, b.Loss) })
		cells = append(cells, mine...)
	}
	return srImpair(ctx, env, 0, false)
}

// srLossCellOf reads one run; the reference comes later.
func srLossCellOf(r *Run, tr string, loss float64) SRLossCell {
	c := SRLossCell{Transport: tr, Loss: loss, Goodput: finite(goodput(r)), Lost: lostAt(r), Error: firstLine(r.Error),
		Destroyed: wireLoss(r)}
	if r.Perf != nil {
		c.Retx, c.Timeouts = r.Perf.Client.RetxPackets, r.Perf.Client.Timeouts
	}
	if tr == "netrt" {
		v := sum(r, "rocetor_netrt_retransmitted_total")
		c.TorRetx = &v
	}
	return c
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": FAILED: " + e
}

func srLossTable(cells []SRLossCell) Table {
	t := Table{Columns: []string{"transport", "loss", "goodput (Gbit/s)", "lossless (Gbit/s)", "of lossless",
		"lost at core", "retx", "retx per loss", "timeouts", wireColumns[0]}}
	for _, c := range cells {
		perLoss := "–"
		if c.Lost > 0 {
			perLoss = fmtFloat(float64(c.Retx)/c.Lost, 1)
		}
		if c.TorRetx != nil && c.Lost > 0 {
			perLoss += fmt.Sprintf(" (ToR %s)", fmtFloat(*c.TorRetx/c.Lost, 1))
		}
		t.Rows = append(t.Rows, []string{c.Transport, strconv.FormatFloat(c.Loss*100, 'g', -1, 64) + "%",
			fmtFloat(c.Goodput, 3), fmtFloat(c.Lossless, 3), c.ref.ratioCell(c.Ratio, 1), fmtInt(c.Lost),
			strconv.FormatInt(c.Retx, 10), perLoss, strconv.FormatInt(c.Timeouts, 10), fmtInt(c.Destroyed.Control)})
	}
	return t
}

func (e *srLoss) Plots() []PlotSpec {
	loss := func(g *Group) float64 {
		v, _ := strconv.ParseFloat(g.Point["loss"], 64)
		if v == 0 {
			return math.NaN() // the reference: 100 % by definition, and no place on a log axis
		}
		return math.Log10(v * 100)
	}
	return []PlotSpec{{File: "goodput.png", Title: "sr-loss: one QP's goodput under random loss",
		XLabel: "log10(loss at core, %)", YLabel: "goodput, % of the transport's lossless",
		Prepare: func(groups []Group) {
			e.lossless = map[string]float64{}
			for i := range groups {
				if g := &groups[i]; g.Point["loss"] == "0" {
					if v, ok := cleanMedian(g); ok {
						e.lossless[g.Point["transport"]] = v
					}
				}
			}
		},
		X: loss, Y: func(g *Group) float64 {
			ref, ok := e.lossless[g.Point["transport"]]
			return share(g.Median(goodput), ref, ok)
		},
		Series: func(g *Group) string { return g.Point["transport"] }, LegendBottom: true}}
}

// ---- sr-concurrency ----

// srConcurrency is FaSR's §V-C (Fig. 7(b), 7(c)), Fig. 8(b) and Fig.
// 9(b): N QPs into one roceperf server, each QP writing 4 KiB messages
// (one at a time at 5,000 QPs: roceperf keeps at most 16 MiB in flight),
// at 0 and 1 % random loss on the way. As in the paper, several senders
// write into one receiver: --senders hosts behind tor1 (the dumbbell
// with one receiver), each with its share of the QPs, the messages and
// the rate, as clients of one round of roceperf serve --clients, whose
// one endpoint holds every QP's receiving state (Env.MeasureRound).
// --senders 1 is one client on h1 with all the QPs on the link, the
// shape of the figures recorded before (docs/testbed.md).
type srConcurrency struct {
	opts       Options
	transports string
	qps        string
	losses     string
	senders    int
	size       int
	perQP      int
	minCount   int
	mtu        int
	hostRate   string
	hostPoll   string
	bdp        int
	timeout    time.Duration
	ref        referenceOpts

	transportList []string
	qpList        []int
	lossList      []float64
	lossless      map[string]float64 // by transport and QPs, for the ratio plot
}

// SRConcurrencyCell is one (transport, qps, loss) of sr-concurrency's JSON.
type SRConcurrencyCell struct {
	Transport string  `json:"transport"`
	QPs       int     `json:"qps"`
	Loss      float64 `json:"loss"`
	Goodput   float64 `json:"goodput_gbps"` // all QPs together
	Lossless  float64 `json:"lossless_goodput_gbps"`
	// Ratio is Goodput / Lossless, null when the lossless run of the
	// same transport and QPs is not a reference (referenceCells says
	// why).
	Ratio *float64 `json:"goodput_ratio"`
	referenceCells
	// The receiver's SR state for the run's QPs (nic.SRState: what the
	// transport keeps beyond Go-Back-N): its per-QP state × QPs + what
	// it shares among them, sized for a BDP of sr_bdp_packets
	// (roceperf's; 0 when the state does not depend on it). One
	// sender's is the same figure (both sides of every QP live in each
	// endpoint's context); client_sr_state_bytes is the senders' own
	// reports, added up (each has its own shared pool).
	StateBytes       int      `json:"sr_state_bytes"`
	ClientStateBytes int      `json:"client_sr_state_bytes"`
	StateBytesPerQP  int      `json:"sr_state_bytes_per_qp"`
	SharedBytes      int      `json:"sr_shared_bytes"`
	BDPPackets       int      `json:"sr_bdp_packets"`
	FastPathRatio    *float64 `json:"fast_path_ratio,omitempty"` // FaSR's receiver: fast SR operations / all
	PeakUnits        *uint64  `json:"peak_units,omitempty"`      // FaSR's receiver: most SR state units in use
	UnitsExhausted   *uint64  `json:"units_exhausted,omitempty"` // FaSR's receiver: units asked for with none free
	Retx             int64    `json:"retx_packets"`
	Timeouts         int64    `json:"timeouts"`
	Lost             float64  `json:"lost_packets"`
	Messages         int      `json:"messages"`
	// Senders are the hosts that wrote; with more than one the cell's
	// figures are the round's (mergeRound: goodput the verified bytes
	// of all over the span from the first start to the last end,
	// messages, retransmissions and timeouts added up, the clients' SR
	// state added up), and PerSender is each one's own.
	Senders   int            `json:"senders"`
	PerSender []srSenderCell `json:"per_sender,omitempty"`
	Error     string         `json:"error,omitempty"`

	ref reference // the lossless run, for the table
}

// srSenderCell is one sender's part of a round, as its client reported
// it.
type srSenderCell struct {
	Host             string  `json:"host"`
	QPs              int     `json:"qps"`
	Count            int     `json:"count"` // WRITEs asked for
	Rate             string  `json:"rate"`  // its pacing
	Messages         int64   `json:"messages"`
	VerifiedBytes    int64   `json:"verified_bytes"`
	Goodput          float64 `json:"goodput_gbps"` // its own, over its own duration
	DurationS        float64 `json:"duration_s"`
	Retx             int64   `json:"retx_packets"`
	Timeouts         int64   `json:"timeouts"`
	ClientStateBytes int     `json:"client_sr_state_bytes"`
	Reported         bool    `json:"reported"` // false: its client printed no summary
}

func newSRConcurrency() *srConcurrency {
	return &srConcurrency{transports: "gbn,irn,fasr", qps: "16,256,1024,5000", losses: "0,0.01", senders: 2}
}

func (e *srConcurrency) Name() string { return "sr-concurrency" }
func (e *srConcurrency) Synopsis() string {
	return "FaSR's Fig. 7(b)/(c), 8(b), 9(b): 16 to 5,000 QPs from --senders hosts into one at 0 and 1 % loss, aggregate goodput, SR state, FaSR's fast-path share"
}

func (e *srConcurrency) Flags(fs *flag.FlagSet) {
	// The link topology: one switch process fewer than the chain on the
	// two CPUs. On the chain the switches fell behind now and then even
	// without loss: core's queue toward tor2 or tor2's toward h2
	// overflowed in 21 of 24 runs, 9 of the 12 lossless ones, which
	// retransmitted thousands of packets; on the link, in 6
	// (docs/experiments.md has both).
	e.opts = srOptions("link")
	FabricFlags(fs, &e.opts, false)
	e.ref = defaultReference
	e.ref.flags(fs)
	// 4 KiB messages (four packets), at least four per QP and 20,000 in
	// all: 80 MB, about 3.5 s a run at 200 Mbit/s, 800 losses at 1 %.
	e.size, e.perQP, e.minCount, e.mtu, e.hostRate, e.timeout = 4096, 4, 20000, 1024, srHostRate, 2*time.Minute
	// The hosts' endpoints sleep as soon as idle, as the switches do
	// (srOptions): two senders and the receiver polling adaptively
	// spin 44–62 % of a CPU each, and with two tords on the two CPUs
	// the switches waited for one long enough to fill 1 MiB queues
	// from 200 Mbit/s of input. The same lossless cells (gbn and irn,
	// 16 and 5,000 QPs, two senders, 2026-11-28, two other builds on
	// the machine): adaptive, 1 of 25 runs clean, up to 105,481
	// switch drops, 5 failed on retry_exceeded; interrupt, 0 drops in
	// 17 runs, 11 of them clean (the others 20 to 746 retransmissions
	// after timeouts of late ACKs).
	e.hostPoll = "interrupt"
	fs.StringVar(&e.opts.Topology, "topology", e.opts.Topology, "chain (loss on core's link with tor2; one sender) or link (h1 — tor1 — tor2 — h2, loss on tor1's link with tor2; with --senders N, N senders behind tor1)")
	fs.IntVar(&e.senders, "senders", e.senders, "hosts writing at once into the one receiver, each with its share of the QPs, the WRITEs and --host-rate, as clients of one roceperf serve --clients N (1 to 16); 1: one client with every QP")
	fs.StringVar(&e.transports, "transports", e.transports, "comma-separated: gbn, irn, fasr")
	fs.StringVar(&e.qps, "qps", e.qps, "comma-separated QP counts (1 to 8192)")
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated loss rates at the impair site; the lossless runs are measured whether 0 is listed or not")
	fs.IntVar(&e.size, "size", e.size, "bytes per WRITE")
	fs.IntVar(&e.perQP, "per-qp", e.perQP, "WRITEs per QP at least")
	fs.IntVar(&e.minCount, "min-count", e.minCount, "WRITEs per run at least")
	fs.IntVar(&e.mtu, "mtu", e.mtu, "RoCE path MTU")
	fs.StringVar(&e.hostRate, "host-rate", e.hostRate, "the senders' rate together, split evenly among them (empty: each at the switches' --rate)")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
	fs.StringVar(&e.hostPoll, "host-poll", e.hostPoll, "roceperf's --poll on every host: adaptive, busy or interrupt (empty: roceperf's, adaptive)")
	fs.IntVar(&e.bdp, "bdp", e.bdp, "roceperf's --bdp: packets IRN's window and bitmaps and FaSR's window and pool are sized for (0: roceperf's, 128)")
}

func (e *srConcurrency) Setup() (Options, error) {
	var err error
	if e.transportList, err = wordList("transports", e.transports, "gbn", "irn", "fasr"); err != nil {
		return Options{}, err
	}
	if e.qpList, err = intList("qps", e.qps, 1, 8192, "1 to 8192"); err != nil {
		return Options{}, err
	}
	if e.lossList, err = parseLosses(e.losses); err != nil {
		return Options{}, err
	}
	if err := e.ref.check(); err != nil {
		return Options{}, err
	}
	switch {
	case len(e.transportList) == 0 || len(e.qpList) == 0:
		return Options{}, Usagef("--transports and --qps: none given")
	case e.size < 1 || e.perQP < 1 || e.minCount < 1:
		return Options{}, Usagef("--size, --per-qp and --min-count must be ≥ 1")
	case e.timeout <= 0:
		return Options{}, Usagef("--timeout must be > 0")
	case e.bdp < 0 || e.bdp > 1<<16:
		return Options{}, Usagef("--bdp %d: want 0 (roceperf's) to 65536 packets", e.bdp)
	case e.senders < 1 || e.senders > 16:
		return Options{}, Usagef("--senders %d: want 1 to 16", e.senders)
	case !validPoll(e.hostPoll):
		return Options{}, Usagef("--host-poll %q: want adaptive, busy or interrupt", e.hostPoll)
	case slices.Min(e.qpList) < e.senders:
		return Options{}, Usagef("--qps %d: fewer QPs than --senders %d", slices.Min(e.qpList), e.senders)
	}
	if e.hostRate != "" {
		var r dataplane.Rate
		if err := r.UnmarshalText([]byte(e.hostRate)); err != nil || uint64(r) < uint64(e.senders) {
			return Options{}, Usagef("--host-rate %q: want a rate, e.g. 200M", e.hostRate)
		}
	}
	o := e.opts
	switch {
	case o.Topology != "chain" && o.Topology != "link":
		return Options{}, Usagef("--topology %q: want chain or link", o.Topology)
	case o.Topology == "chain" && e.senders > 1:
		return Options{}, Usagef("--senders %d: the chain has one sender; --topology link has as many as asked", e.senders)
	case e.senders > 1:
		// The link with more hosts behind tor1: the dumbbell with one
		// receiver, its impair site the same port, tor1's toward tor2,
		// which every sender's data crosses.
		o.Topology, o.Senders, o.Receivers = "dumbbell", e.senders, 1
	}
	o.Loss, o.NetRT, o.DCP = 0, false, false
	return o, nil
}

// count is the WRITEs of a run with n QPs.
func (e *srConcurrency) count(n int) int { return max(e.perQP*n, e.minCount) }

// transfers are a run's with n QPs: a transfer from each of the first
// --senders senders to the receiver, the QPs, the WRITEs and
// --host-rate split evenly among them (the first ones one more QP and
// WRITE, so none has fewer WRITEs than QPs).
func (e *srConcurrency) transfers(plan *Plan, transport string, n int) []Transfer {
	rate := e.hostRate
	if rate == "" && plan.Options.Rate != "0" {
		rate = plan.Options.Rate
	} else if rate != "" && e.senders > 1 {
		var r dataplane.Rate
		r.UnmarshalText([]byte(rate)) // Setup checked it
		rate = strconv.FormatUint(uint64(r)/uint64(e.senders), 10)
	}
	var ts []Transfer
	for i, from := range plan.ByRole(RoleSender)[:e.senders] {
		ts = append(ts, Transfer{Op: "write", From: from, To: plan.ByRole(RoleReceiver)[0], Size: e.size,
			Count: evenPart(e.count(n), e.senders, i), QPs: evenPart(n, e.senders, i), Transport: transport, MTU: e.mtu,
			Rate: rate, BDP: e.bdp, Poll: e.hostPoll, Timeout: e.timeout})
	}
	return ts
}

// evenPart is part i of n split into k parts as evenly as can be, the
// first n mod k parts one more.
func evenPart(n, k, i int) int {
	if i < n%k {
		return n/k + 1
	}
	return n / k
}

func (e *srConcurrency) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	if got := len(plan.ByRole(RoleSender)); got < e.senders {
		return Usagef("%s: --senders %d needs as many senders, not %s", e.Name(), e.senders, plan.Shape())
	}
	res.Params = map[string]string{"transports": e.transports, "qps": e.qps, "losses": e.losses, "size": strconv.Itoa(e.size),
		"senders": strconv.Itoa(e.senders), "per_qp": strconv.Itoa(e.perQP), "min_count": strconv.Itoa(e.minCount), "mtu": strconv.Itoa(e.mtu),
		"host_rate": e.hostRate, "timeout": e.timeout.String(), "bdp": strconv.Itoa(e.bdp)}
	var cells []SRConcurrencyCell
	defer func() {
		res.Cells = cells
		res.Table = srConcurrencyTable(cells)
	}()
	if _, err := srFabric(ctx, env, "gbn"); err != nil {
		return err
	}
	key := func(tr string, n int) string { return tr + "/" + strconv.Itoa(n) }
	lossless := map[string]reference{}
	byLoss := map[float64][]SRConcurrencyCell{}
	for _, loss := range lossyFirst(e.lossList) {
		if err := srImpair(ctx, env, loss, false); err != nil {
			return err
		}
		for _, n := range e.qpList {
			for _, tr := range e.transportList {
				point := map[string]string{"transport": tr, "qps": strconv.Itoa(n), "loss": strconv.FormatFloat(loss, 'g', -1, 64),
					"senders": strconv.Itoa(e.senders)}
				var c SRConcurrencyCell
				measure := func(repeat int) (*Run, error) {
					ts := e.transfers(plan, tr, n)
					if len(ts) == 1 {
						res.Runs = append(res.Runs, env.Measure(ctx, point, repeat, ts[0]))
					} else {
						res.Runs = append(res.Runs, env.MeasureRound(ctx, point, repeat, ts))
					}
					r := &res.Runs[len(res.Runs)-1]
					c = srConcurrencyCellOf(r, tr, n, loss, ts)
					env.printf("run %s: goodput %.3f Gbit/s, SR state %d B, %d retransmitted for %.0f lost, %d timeouts%s\n",
						pointKey(point), c.Goodput, c.StateBytes, c.Retx, c.Lost, c.Timeouts, errSuffix(c.Error))
					return r, ctx.Err()
				}
				if loss == 0 {
					ref, err := measureReference(env, pointKey(point), e.ref, measure)
					if err != nil {
						return err
					}
					lossless[key(tr, n)] = ref
				} else if _, err := measure(1); err != nil {
					return err
				}
				byLoss[loss] = append(byLoss[loss], c)
			}
		}
	}
	for _, loss := range e.lossList {
		for _, c := range byLoss[loss] {
			ref := lossless[key(c.Transport, c.QPs)]
			c.Lossless, c.Ratio, c.ref = ref.Goodput, ref.ratio(c.Goodput), ref
			c.referenceCells = ref.cells()
			cells = append(cells, c)
		}
	}
	return srImpair(ctx, env, 0, false)
}

// srConcurrencyCellOf reads one run of transfers ts: a round's
// figures are its merger's (Run.Perf, srOf), each sender's beside them.
func srConcurrencyCellOf(r *Run, tr string, n int, loss float64, ts []Transfer) SRConcurrencyCell {
	c := SRConcurrencyCell{Transport: tr, QPs: n, Loss: loss, Goodput: finite(goodput(r)), Lost: lostAt(r), Error: firstLine(r.Error),
		Senders: len(ts)}
	for i, f := range r.Flows {
		sc := srSenderCell{Host: ts[i].From, QPs: ts[i].QPs, Count: ts[i].Count, Rate: ts[i].Rate, Reported: f != nil}
		if f != nil {
			s := f.Client
			sc.Messages, sc.VerifiedBytes, sc.Goodput, sc.DurationS = s.Messages, s.VerifiedBytes, finite(s.GoodputGbps), s.DurationS
			sc.Retx, sc.Timeouts = s.RetxPackets, s.Timeouts
		}
		if sr := srReportOf(f); sr != nil {
			sc.ClientStateBytes = sr.StateBytes
		}
		c.PerSender = append(c.PerSender, sc)
	}
	if r.Perf != nil {
		c.Retx, c.Timeouts, c.Messages = r.Perf.Client.RetxPackets, r.Perf.Client.Timeouts, int(r.Perf.Client.Messages)
	}
	if s := srOf(r); s != nil {
		c.ClientStateBytes = s.StateBytes
		c.StateBytesPerQP, c.SharedBytes, c.StateBytes, c.BDPPackets = s.StateBytesPerQP, s.SharedBytes, s.StateBytes, s.BDPPackets
		if v := s.Server; v != nil {
			c.StateBytesPerQP, c.SharedBytes, c.StateBytes, c.BDPPackets = v.StateBytesPerQP, v.SharedBytes, v.StateBytes, v.BDPPackets
			if f := v.FaSR; f != nil {
				c.FastPathRatio, c.PeakUnits, c.UnitsExhausted = &f.FastPathRatio, &f.PeakUnits, &f.UnitsExhausted
			}
		}
	}
	return c
}

func srConcurrencyTable(cells []SRConcurrencyCell) Table {
	t := Table{Columns: []string{"transport", "QPs", "loss", "goodput (Gbit/s)", "of lossless", "SR state (B)",
		"per QP + shared (B)", "fast path", "peak units", "lost", "retx", "timeouts"}}
	round := slices.ContainsFunc(cells, func(c SRConcurrencyCell) bool { return len(c.PerSender) > 0 })
	if round {
		t.Columns = append(t.Columns, "per sender: goodput (Gbit/s), retx")
	}
	for _, c := range cells {
		fp, units := "–", "–"
		if c.FastPathRatio != nil {
			fp = fmtFloat(*c.FastPathRatio*100, 1) + "%"
		}
		if c.PeakUnits != nil {
			units = strconv.FormatUint(*c.PeakUnits, 10)
			if *c.UnitsExhausted > 0 {
				units += fmt.Sprintf(" (%d short)", *c.UnitsExhausted)
			}
		}
		t.Rows = append(t.Rows, []string{c.Transport, strconv.Itoa(c.QPs), strconv.FormatFloat(c.Loss*100, 'g', -1, 64) + "%",
			fmtFloat(c.Goodput, 3), c.ref.ratioCell(c.Ratio, 1), strconv.Itoa(c.StateBytes),
			fmt.Sprintf("%d + %d", c.StateBytesPerQP, c.SharedBytes), fp, units, fmtInt(c.Lost),
			strconv.FormatInt(c.Retx, 10), strconv.FormatInt(c.Timeouts, 10)})
		if round {
			var each []string
			for _, s := range c.PerSender {
				each = append(each, fmt.Sprintf("%s %s, %d", s.Host, fmtFloat(s.Goodput, 3), s.Retx))
			}
			row := &t.Rows[len(t.Rows)-1]
			*row = append(*row, strings.Join(each, "; "))
		}
	}
	return t
}

func (e *srConcurrency) Plots() []PlotSpec {
	qps := func(g *Group) float64 {
		v, _ := strconv.Atoi(g.Point["qps"])
		return math.Log10(float64(v))
	}
	lossy := func(g *Group) bool { return g.Point["loss"] != "0" }
	series := func(g *Group) string { return g.Point["transport"] + " at " + g.Point["loss"] }
	memory := func(g *Group) float64 {
		for _, r := range g.OK() {
			if s := srOf(r); s != nil && s.Server != nil {
				return float64(s.Server.StateBytes) / 1024
			}
		}
		return math.NaN()
	}
	return []PlotSpec{
		{File: "goodput.png", Title: "sr-concurrency: aggregate goodput", XLabel: "log10(QPs)", YLabel: "goodput (Gbit/s)",
			X: qps, Y: func(g *Group) float64 { return g.Median(goodput) }, Series: series},
		{File: "goodput-ratio.png", Title: "sr-concurrency: goodput under loss, % of lossless", XLabel: "log10(QPs)",
			YLabel: "goodput, % of the lossless run's",
			Prepare: func(groups []Group) {
				e.lossless = map[string]float64{}
				for i := range groups {
					if g := &groups[i]; g.Point["loss"] == "0" {
						if v, ok := cleanMedian(g); ok {
							e.lossless[g.Point["transport"]+"/"+g.Point["qps"]] = v
						}
					}
				}
			},
			X: qps, Y: func(g *Group) float64 {
				ref, ok := e.lossless[g.Point["transport"]+"/"+g.Point["qps"]]
				return share(g.Median(goodput), ref, ok)
			}, Series: series, Only: lossy, LegendBottom: true},
		{File: "memory.png", Title: "sr-concurrency: receiver's SR state", XLabel: "log10(QPs)", YLabel: "SR state (KiB)",
			X: qps, Y: memory, Series: func(g *Group) string { return g.Point["transport"] },
			Only: func(g *Group) bool { return !lossy(g) }},
	}
}
