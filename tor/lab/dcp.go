package lab

import (
	"context"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"rocetor/dataplane"
)

// The DCP experiments (seed 002 §6.1): loss recovery by trimming
// (dcp-loss, Fig. 10), the lossless control plane under incast
// (dcp-incast, §6.3 and Table 5), and adaptive routing over unequal paths
// (dcp-ar, Fig. 11). Each runs roceperf's dcp transport against gbn on
// the same switches.

// dcpFlags are what all three share.
type dcpFlags struct {
	opts     Options
	size     int
	count    int
	mtu      int
	depth    int
	hostRate string
	timeout  time.Duration
}

func (d *dcpFlags) register(fs *flag.FlagSet, size, count int) {
	FabricFlags(fs, &d.opts, false)
	d.size, d.count, d.mtu, d.timeout = size, count, 1024, 2*time.Minute
	fs.IntVar(&d.size, "size", d.size, "bytes per WRITE")
	fs.IntVar(&d.count, "count", d.count, "WRITEs per flow and run")
	fs.IntVar(&d.mtu, "mtu", d.mtu, "RoCE path MTU")
	fs.IntVar(&d.depth, "depth", d.depth, "WRITEs in flight per flow (0: roceperf's, 256 KiB worth)")
	fs.StringVar(&d.hostRate, "host-rate", "", "each sender's rate (default: the switches' --rate)")
	fs.DurationVar(&d.timeout, "timeout", d.timeout, "roceperf's --timeout per run")
}

func (d *dcpFlags) check() error {
	switch {
	case d.size < 1 || d.count < 1:
		return Usagef("--size and --count must be ≥ 1")
	case d.timeout <= 0:
		return Usagef("--timeout must be > 0")
	}
	return nil
}

// transfer is one WRITE flow of the experiment from one host to another.
func (d *dcpFlags) transfer(plan *Plan, from, to, transport string) Transfer {
	rate := d.hostRate
	if rate == "" && plan.Options.Rate != "0" {
		rate = plan.Options.Rate
	}
	return Transfer{Op: "write", From: from, To: to, Size: d.size, Count: d.count, QPs: 1,
		Transport: transport, MTU: d.mtu, Depth: d.depth, Rate: rate, Timeout: d.timeout}
}

func (d *dcpFlags) params(extra map[string]string) map[string]string {
	p := map[string]string{"size": strconv.Itoa(d.size), "count": strconv.Itoa(d.count), "mtu": strconv.Itoa(d.mtu),
		"depth":     strconv.Itoa(d.depth),
		"host_rate": d.hostRate, "timeout": d.timeout.String()}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// goodput is a run's goodput in Gbit/s: the single transfer's, or the
// sum over concurrent flows; NaN when a flow failed.
func goodput(r *Run) float64 {
	if r.Perf != nil {
		return r.Perf.Client.GoodputGbps
	}
	if len(r.Flows) == 0 {
		return math.NaN()
	}
	var g float64
	for _, f := range r.Flows {
		if f == nil {
			return math.NaN()
		}
		g += f.Client.GoodputGbps
	}
	return g
}

// flowFCT returns, over a run's flows, the median of their p50 FCTs and
// the largest p99, in µs.
func flowFCT(r *Run) (p50, p99 float64) {
	var p50s []float64
	p99 = math.NaN()
	for _, f := range r.Flows {
		if f == nil {
			continue
		}
		p50s = append(p50s, f.Client.FCT.P50)
		if math.IsNaN(p99) || f.Client.FCT.P99 > p99 {
			p99 = f.Client.FCT.P99
		}
	}
	if len(p50s) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(p50s)
	return p50s[len(p50s)/2], p99
}

// sum adds a metric over every switch of a run.
func sum(r *Run, metric string, match ...string) float64 {
	var t float64
	for _, s := range r.Switches {
		t += s.Sum(metric, match...)
	}
	return t
}

// hoDrops counts the header-only packets a run lost, each one a packet
// whose sender waits for the coarse timeout (seed 002 §4.5): every
// switch's rocetor_dcp_ho_drops_total, whatever queue, tx ring or stage
// dropped them, and what each endpoint could not take (roceperf's
// ho_drops) — except the stale and duplicate ones a sender ignores,
// whose packet needs no retransmission.
func hoDrops(r *Run) float64 {
	t := sum(r, "rocetor_dcp_ho_drops_total")
	add := func(e *EndpointDrops) {
		if e == nil {
			return
		}
		for reason, n := range e.HODrops {
			if reason != "nic_stale" && reason != "nic_duplicate" {
				t += float64(n)
			}
		}
	}
	for _, f := range append(slices.Clip(r.Flows), r.Perf) {
		if f != nil {
			add(&f.Client.EndpointDrops)
			add(f.Client.Server)
		}
	}
	return t
}

// progress is the line a DCP run prints.
func progress(env *Env, r *Run) {
	if r.Error != "" {
		env.printf("run %s: FAILED: %s\n", pointKey(r.Point), firstLine(r.Error))
		return
	}
	env.printf("run %s: goodput %.3f Gbit/s, trimmed %.0f, HO drops %.0f\n", pointKey(r.Point), goodput(r),
		sum(r, "rocetor_trim_trimmed_packets_total")+sum(r, "rocetor_impair_trimmed_total"), hoDrops(r))
}

// ---- dcp-loss ----

// dcpLoss is Fig. 10: one long flow h1 → h2 on the chain with random
// loss at core, made by trimming for DCP (core's impair rule trims what
// it picks, as the paper's P4 switch did) and by dropping for GBN. The
// switches do not trim for queue depth: DCP has no congestion window
// here (nic/cc paces at a fixed rate), and trimming at a 64 KiB depth
// with a flow's whole message window in flight trimmed more packets
// than the loss did and stalled the flow (docs/experiments.md).
//
// --loss-scope says what the loss hits: all (the default, as every
// record before it was made) destroys any frame of the fabric the rule
// picks, header-only packets, ACKs and NAKs among them, so DCP's coarse
// timeout sets its goodput; data picks data packets alone (impair's
// match data), its control plane untouched, as the seed's P4 switch
// dropped packets (§6.1: "Upon packet loss, the P4 switch executes the
// packet trimming module for DCP traffic"), so no header-only packet
// is lost and no timeout should fire.
type dcpLoss struct {
	dcpFlags
	losses   string
	scope    string
	lossList []float64
	ref      referenceOpts
}

// dcpLossCell is one loss rate of dcp-loss's JSON.
type dcpLossCell struct {
	Loss        float64 `json:"loss"`
	DCPGoodput  float64 `json:"dcp_goodput_gbps"`
	DCPLossless float64 `json:"dcp_lossless_goodput_gbps"`
	GBNGoodput  float64 `json:"gbn_goodput_gbps"`
	Ratio       float64 `json:"dcp_over_gbn"`
	// DCPOfLossless is DCPGoodput / DCPLossless, null when the lossless
	// DCP run is not a reference: it retransmitted or timed out
	// (lossless_retx_packets, lossless_timeouts), or failed.
	DCPOfLossless *float64 `json:"dcp_of_lossless"`
	referenceCells
	DCPRetx       int64   `json:"dcp_retx_packets"`
	GBNRetx       int64   `json:"gbn_retx_packets"`
	Trimmed       float64 `json:"trimmed"`
	QueueTrims    float64 `json:"queue_trims"` // DCP packets the switches trimmed for queue depth, beside core's loss
	HODrops       float64 `json:"ho_drops"`    // header-only packets lost, at the switches or the endpoints (hoDrops)
	GBNQueueDrops float64 `json:"gbn_queue_drops"`
	DCPTimeouts   int64   `json:"dcp_timeouts"`
	// DCPDestroyed is what the impairment destroyed in the DCP run, by
	// class: header-only packets and ACKs are control.
	DCPDestroyed WireLoss `json:"dcp_destroyed"`
	DCPError     string   `json:"dcp_error,omitempty"`
	GBNErr       string   `json:"gbn_error,omitempty"`

	ref reference // the lossless DCP run, for the table
}

func newDCPLoss() *dcpLoss { return &dcpLoss{losses: "0.0001,0.001,0.01,0.05", scope: LossAll} }

func (e *dcpLoss) Name() string { return "dcp-loss" }
func (e *dcpLoss) Synopsis() string {
	return "DCP's Fig. 10: goodput of one long flow on the chain under random loss at core, trimmed for DCP, dropped for GBN"
}

func (e *dcpLoss) Flags(fs *flag.FlagSet) {
	e.opts = srOptions("chain")
	// 64 KiB WRITEs, eight in flight: 512 KiB, within the switches'
	// 1 MiB queues (with 1 MiB WRITEs, 2 MiB in flight overflowed tor2's
	// queue toward h2 now and then, a loss only DCP's coarse timeout
	// repairs) and enough that a message waiting a round trip for a
	// retransmission does not idle the flow (with four: 82 % of the
	// lossless goodput at 1 % loss, with eight 92 %).
	e.register(fs, 64<<10, 800)
	e.depth = 8
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated loss rates on core's link with tor2, both ways unless --one-way")
	fs.StringVar(&e.scope, "loss-scope", e.scope, "what the loss hits: all (any frame: header-only packets, ACKs, NAKs too) or data (data packets alone, the control plane untouched, as the seed measures it)")
	e.ref = defaultReference
	e.ref.flags(fs)
}

func (e *dcpLoss) Setup() (Options, error) {
	e.lossList = nil
	for _, s := range splitList(e.losses) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0 && v < 1) {
			return Options{}, Usagef("--losses: %q is not a loss rate in (0, 1)", s)
		}
		e.lossList = append(e.lossList, v)
	}
	if len(e.lossList) == 0 {
		return Options{}, Usagef("--losses: none given")
	}
	if e.scope != LossAll && e.scope != LossData {
		return Options{}, Usagef("--loss-scope %q: want all or data", e.scope)
	}
	if err := e.check(); err != nil {
		return Options{}, err
	}
	if err := e.ref.check(); err != nil {
		return Options{}, err
	}
	o := e.opts
	o.Topology, o.Loss = "chain", 0
	return o, nil
}

func (e *dcpLoss) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	res.Params = e.params(map[string]string{"losses": e.losses, "loss_scope": e.scope})
	var cells []dcpLossCell
	defer func() {
		res.Cells = cells
		res.Table = dcpLossTable(cells, e.scope)
	}()
	measure := func(m Impairment, transport string, repeat int) (*Run, error) {
		// DCP on a DCP fabric: every switch parses DCP headers (a
		// header-only packet of a WRITE First is malformed otherwise);
		// GBN, whose DSCP 26 would read as a DCP tag, on plain ones.
		o := env.Fabric.Plan().Options
		o.DCP = transport == "dcp"
		if err := env.Fabric.Reconfigure(ctx, o); err != nil {
			return nil, err
		}
		if err := env.Fabric.SetImpairment(ctx, m); err != nil {
			return nil, fmt.Errorf("loss %g: %w", m.Loss, err)
		}
		point := map[string]string{"loss": strconv.FormatFloat(m.Loss, 'g', -1, 64), "transport": transport}
		run := env.Measure(ctx, point, repeat, e.transfer(plan, from, to, transport))
		res.Runs = append(res.Runs, run)
		progress(env, &run)
		return &res.Runs[len(res.Runs)-1], ctx.Err()
	}
	base := env.Fabric.Impairment()
	base.Loss, base.Trim, base.Scope = 0, false, e.scope
	for _, loss := range e.lossList {
		m := base
		m.Loss, m.Trim = loss, true
		d, err := measure(m, "dcp", 1)
		if err != nil {
			return err
		}
		m.Trim = false
		g, err := measure(m, "gbn", 1)
		if err != nil {
			return err
		}
		c := dcpLossCell{Loss: loss, DCPGoodput: goodput(d), GBNGoodput: goodput(g),
			Trimmed: sum(d, "rocetor_impair_trimmed_total"), QueueTrims: sum(d, "rocetor_trim_trimmed_packets_total"), HODrops: hoDrops(d),
			GBNQueueDrops: sum(g, "rocetor_queue_drops_total"), DCPError: firstLine(d.Error), GBNErr: firstLine(g.Error),
			DCPDestroyed: wireLoss(d)}
		c.Ratio = c.DCPGoodput / c.GBNGoodput
		if d.Perf != nil {
			c.DCPRetx, c.DCPTimeouts = d.Perf.Client.RetxPackets, d.Perf.Client.Timeouts
		}
		if g.Perf != nil {
			c.GBNRetx = g.Perf.Client.RetxPackets
		}
		cells = append(cells, c)
	}
	// The lossless reference last: the first run after the testbed
	// comes up is the slowest, whatever it is.
	lossless, err := measureReference(env, "dcp", e.ref, func(repeat int) (*Run, error) { return measure(base, "dcp", repeat) })
	if err != nil {
		return err
	}
	for i := range cells {
		c := &cells[i]
		c.DCPLossless, c.DCPOfLossless, c.ref = lossless.Goodput, lossless.ratio(c.DCPGoodput), lossless
		c.referenceCells = lossless.cells()
	}
	return nil
}

// lossScopeNames label a loss scope in a table.
var lossScopeNames = map[string]string{LossAll: "every frame", LossData: "data only"}

func dcpLossTable(cells []dcpLossCell, scope string) Table {
	t := Table{Columns: []string{"loss", "loss hits", "DCP goodput (Gbit/s)", "of lossless", "GBN goodput (Gbit/s)", "DCP / GBN",
		"DCP retx", "GBN retx", "trimmed at core", "trimmed for depth", "HO drops", "DCP timeouts", "GBN queue drops", "DCP " + wireColumns[0]}}
	for _, c := range cells {
		t.Rows = append(t.Rows, []string{strconv.FormatFloat(c.Loss*100, 'g', -1, 64) + "%", lossScopeNames[scope], fmtFloat(c.DCPGoodput, 3),
			c.ref.ratioCell(c.DCPOfLossless, 0), fmtFloat(c.GBNGoodput, 3), fmtFloat(c.Ratio, 1) + "×",
			strconv.FormatInt(c.DCPRetx, 10), strconv.FormatInt(c.GBNRetx, 10), fmtInt(c.Trimmed), fmtInt(c.QueueTrims),
			fmtInt(c.HODrops), strconv.FormatInt(c.DCPTimeouts, 10), fmtInt(c.GBNQueueDrops), fmtInt(c.DCPDestroyed.Control)})
	}
	return t
}

func (e *dcpLoss) Plots() []PlotSpec {
	loss := func(g *Group) float64 {
		v, _ := strconv.ParseFloat(g.Point["loss"], 64)
		if v == 0 {
			return math.NaN() // the lossless reference has no place on a log-free axis
		}
		return v * 100
	}
	return []PlotSpec{{File: "goodput.png", Title: "dcp-loss: goodput of one long flow", XLabel: "loss at core (%)",
		YLabel: "goodput (Gbit/s)", X: loss, Y: func(g *Group) float64 { return g.Median(goodput) },
		Series: func(g *Group) string { return g.Point["transport"] }}}
}

// ---- dcp-incast ----

// dcpIncast is the lossless control plane under incast (§4.2, §6.3): n
// senders behind tor1 each write to a receiver of their own behind tor2,
// so that n flows meet at tor1's one port toward tor2. DCP runs with
// every switch trimming (WRR weight for --incast-degree), GBN on the same
// switches without trimming.
type dcpIncast struct {
	dcpFlags
	senders string
	nList   []int
}

// dcpIncastCell is one n of dcp-incast's JSON.
type dcpIncastCell struct {
	Senders   int     `json:"senders"`
	HODrops   float64 `json:"ho_drops"`
	HOPackets float64 `json:"ho_packets"`
	Goodput   float64 `json:"goodput_gbps"`
	FCT       struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"fct_us"`
	GBNGoodput float64 `json:"gbn_goodput_gbps"`
	GBNFCT     struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"gbn_fct_us"`
	GBNDrops float64 `json:"gbn_queue_drops"`
	Error    string  `json:"error,omitempty"`
}

func newDCPIncast() *dcpIncast { return &dcpIncast{senders: "2,4,6"} }

func (e *dcpIncast) Name() string { return "dcp-incast" }
func (e *dcpIncast) Synopsis() string {
	return "DCP's lossless control plane: n-to-1 incast through tor1's port toward tor2, DCP with trimming vs GBN without"
}

func (e *dcpIncast) Flags(fs *flag.FlagSet) {
	e.opts = DefaultOptions("dumbbell")
	e.opts.IncastDegree = 4
	e.register(fs, 64<<10, 100)
	fs.StringVar(&e.senders, "senders", e.senders, "comma-separated incast degrees n to run (hosts: the largest n senders and as many receivers)")
}

func (e *dcpIncast) Setup() (Options, error) {
	var err error
	if e.nList, err = intList("senders", e.senders, 1, 16, "1 to 16"); err != nil {
		return Options{}, err
	}
	if len(e.nList) == 0 {
		return Options{}, Usagef("--senders: none given")
	}
	if err := e.check(); err != nil {
		return Options{}, err
	}
	o := e.opts
	o.Topology, o.Senders, o.Receivers, o.Trim = "dumbbell", slices.Max(e.nList), slices.Max(e.nList), true
	return o, nil
}

func (e *dcpIncast) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	senders, receivers := plan.ByRole(RoleSender), plan.ByRole(RoleReceiver)
	res.Params = e.params(map[string]string{"senders": e.senders, "incast_degree": strconv.Itoa(plan.Options.IncastDegree)})
	var cells []dcpIncastCell
	defer func() {
		res.Cells = cells
		res.Table = dcpIncastTable(cells)
	}()
	for _, n := range e.nList {
		c := dcpIncastCell{Senders: n}
		for _, transport := range []string{"dcp", "gbn"} {
			o := env.Fabric.Plan().Options
			o.Trim = transport == "dcp"
			if err := env.Fabric.Reconfigure(ctx, o); err != nil {
				return err
			}
			var ts []Transfer
			for i := range n {
				ts = append(ts, e.transfer(plan, senders[i], receivers[i], transport))
			}
			point := map[string]string{"senders": strconv.Itoa(n), "transport": transport}
			run := env.MeasureAll(ctx, point, ts)
			res.Runs = append(res.Runs, run)
			progress(env, &run)
			if err := ctx.Err(); err != nil {
				return err
			}
			p50, p99 := flowFCT(&run)
			if transport == "dcp" {
				c.HODrops = hoDrops(&run)
				c.HOPackets = sum(&run, "rocetor_trim_trimmed_packets_total")
				c.Goodput, c.FCT.P50, c.FCT.P99, c.Error = goodput(&run), p50, p99, firstLine(run.Error)
			} else {
				c.GBNGoodput, c.GBNFCT.P50, c.GBNFCT.P99 = goodput(&run), p50, p99
				c.GBNDrops = sum(&run, "rocetor_queue_drops_total")
			}
		}
		cells = append(cells, c)
	}
	return nil
}

func dcpIncastTable(cells []dcpIncastCell) Table {
	t := Table{Columns: []string{"senders", "DCP goodput (Gbit/s)", "DCP FCT p50/p99 (µs)", "HO packets", "HO drops",
		"GBN goodput (Gbit/s)", "GBN FCT p50/p99 (µs)", "GBN queue drops"}}
	for _, c := range cells {
		t.Rows = append(t.Rows, []string{strconv.Itoa(c.Senders), fmtFloat(c.Goodput, 3),
			fmtInt(c.FCT.P50) + " / " + fmtInt(c.FCT.P99), fmtInt(c.HOPackets), fmtInt(c.HODrops),
			fmtFloat(c.GBNGoodput, 3), fmtInt(c.GBNFCT.P50) + " / " + fmtInt(c.GBNFCT.P99), fmtInt(c.GBNDrops)})
	}
	return t
}

func (e *dcpIncast) Plots() []PlotSpec {
	n := func(g *Group) float64 { v, _ := strconv.Atoi(g.Point["senders"]); return float64(v) }
	return []PlotSpec{{File: "goodput.png", Title: "dcp-incast: aggregate goodput", XLabel: "senders", YLabel: "goodput (Gbit/s)",
		X: n, Y: func(g *Group) float64 { return g.Median(goodput) }, Series: func(g *Group) string { return g.Point["transport"] }}}
}

// ---- dcp-ar ----

// dcpAR is Fig. 11: two senders behind tor1 write to two receivers
// behind tor2 over two paths whose capacities are 1:k (tor1's port
// toward core2 shaped to 1/k of the rate); DCP with adaptive routing
// against GBN with ECMP. The figure is the flows' mean goodput.
type dcpAR struct {
	dcpFlags
	ratios string
	kList  []float64
}

// dcpARCell is one ratio of dcp-ar's JSON.
type dcpARCell struct {
	Ratio      string  `json:"ratio"`
	DCPGoodput float64 `json:"dcp_goodput_gbps"`
	GBNGoodput float64 `json:"gbn_goodput_gbps"`
	DCPError   string  `json:"dcp_error,omitempty"`
	GBNError   string  `json:"gbn_error,omitempty"`
}

func newDCPAR() *dcpAR { return &dcpAR{ratios: "1,4,10"} }

func (e *dcpAR) Name() string { return "dcp-ar" }
func (e *dcpAR) Synopsis() string {
	return "DCP's Fig. 11: two flows over two paths of capacity 1:k, DCP with adaptive routing vs GBN with ECMP"
}

func (e *dcpAR) Flags(fs *flag.FlagSet) {
	e.opts = DefaultOptions("multipath")
	// 64 KiB WRITEs: roceperf keeps 256 KiB in flight per QP (four
	// messages). DCP has no congestion window of its own here (nic/cc
	// paces at a fixed rate), so with 1 MiB messages it had 2 MiB in
	// flight per flow, the switches trimmed more packets than the flows
	// carried, and the retransmissions ate the CPUs the whole testbed
	// shares (docs/experiments.md).
	e.register(fs, 64<<10, 400)
	fs.StringVar(&e.ratios, "ratios", e.ratios, "comma-separated k: the second path's capacity is 1/k of the first's")
}

func (e *dcpAR) Setup() (Options, error) {
	e.kList = nil
	for _, s := range splitList(e.ratios) {
		k, err := strconv.ParseFloat(s, 64)
		if err != nil || k < 1 || k > 100 {
			return Options{}, Usagef("--ratios: %q is not 1 to 100", s)
		}
		e.kList = append(e.kList, k)
	}
	if len(e.kList) == 0 {
		return Options{}, Usagef("--ratios: none given")
	}
	if err := e.check(); err != nil {
		return Options{}, err
	}
	var r dataplane.Rate
	if err := r.UnmarshalText([]byte(e.opts.Rate)); err != nil || r == 0 {
		return Options{}, Usagef("--rate %q: dcp-ar needs shaped links", e.opts.Rate)
	}
	o := e.opts
	o.Topology, o.Paths, o.Senders, o.Receivers = "multipath", 2, 2, 2
	return o, nil
}

// pathRates returns tor1's rates toward core1 and core2 for ratio 1:k.
func pathRates(rate string, k float64) []string {
	var r dataplane.Rate
	r.UnmarshalText([]byte(rate)) // checked by Setup
	return []string{rate, strconv.FormatUint(uint64(float64(r)/k), 10)}
}

func (e *dcpAR) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	senders, receivers := plan.ByRole(RoleSender), plan.ByRole(RoleReceiver)
	res.Params = e.params(map[string]string{"ratios": e.ratios})
	var cells []dcpARCell
	defer func() {
		res.Cells = cells
		res.Table = dcpARTable(cells)
	}()
	for _, k := range e.kList {
		c := dcpARCell{Ratio: "1:" + strconv.FormatFloat(k, 'g', -1, 64)}
		for _, transport := range []string{"dcp", "gbn"} {
			o := env.Fabric.Plan().Options
			o.PathRates = pathRates(o.Rate, k)
			o.Trim, o.Multipath = transport == "dcp", "ecmp"
			if transport == "dcp" {
				o.Multipath = "adaptive"
			}
			if err := env.Fabric.Reconfigure(ctx, o); err != nil {
				return err
			}
			ts := []Transfer{e.transfer(plan, senders[0], receivers[0], transport),
				e.transfer(plan, senders[1], receivers[1], transport)}
			point := map[string]string{"ratio": c.Ratio, "transport": transport}
			run := env.MeasureAll(ctx, point, ts)
			res.Runs = append(res.Runs, run)
			progress(env, &run)
			if err := ctx.Err(); err != nil {
				return err
			}
			mean := goodput(&run) / 2
			if transport == "dcp" {
				c.DCPGoodput, c.DCPError = mean, firstLine(run.Error)
			} else {
				c.GBNGoodput, c.GBNError = mean, firstLine(run.Error)
			}
		}
		cells = append(cells, c)
	}
	return nil
}

func dcpARTable(cells []dcpARCell) Table {
	t := Table{Columns: []string{"capacity ratio", "DCP + AR: mean goodput per flow (Gbit/s)", "GBN + ECMP (Gbit/s)"}}
	for _, c := range cells {
		t.Rows = append(t.Rows, []string{c.Ratio, fmtFloat(c.DCPGoodput, 3), fmtFloat(c.GBNGoodput, 3)})
	}
	return t
}

func (e *dcpAR) Plots() []PlotSpec {
	k := func(g *Group) float64 {
		v, _ := strconv.ParseFloat(g.Point["ratio"][2:], 64)
		return v
	}
	return []PlotSpec{{File: "goodput.png", Title: "dcp-ar: mean goodput per flow over paths of capacity 1:k", XLabel: "k",
		YLabel: "goodput (Gbit/s)", X: k, Y: func(g *Group) float64 { return g.Median(goodput) / 2 },
		Series: func(g *Group) string { return g.Point["transport"] }}}
}
