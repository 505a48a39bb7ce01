package lab

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"
)

// netrtLoss reproduces NetRT's testbed experiment (seed 000 §IV-A,
// Fig. 6, Fig. 7, Table III): WRITEs of several sizes from h1 to h2 on
// the chain with random loss at core, GBN endpoints with NetRT off
// (baseline) and on. Every cell runs baseline then NetRT; switching
// restarts tor1 and tor2, so the occupancy high-water marks they report
// belong to that one cell.
//
// With multipath set it is netrt-multipath (§IV-C, Fig. 9, Table III):
// the same cells on the multipath topology, tor1 spraying packets over
// K cores whose ports toward tor2 add k × skew of delay, so that
// reordering, not loss, is what the receiver's GBN suffers from.
type netrtLoss struct {
	multipath bool
	opts      Options
	losses    string
	sizes     string
	count     int
	mtu       int
	hostRate  string
	timeout   time.Duration

	lossList []float64
	sizeList []int
}

func newNetRTLoss() *netrtLoss {
	return &netrtLoss{opts: DefaultOptions("chain"), losses: "0.001,0.005,0.01,0.05", sizes: "10000,100000,1000000",
		count: 200, mtu: 1024, timeout: 5 * time.Minute}
}

func newNetRTMultipath() *netrtLoss {
	e := newNetRTLoss()
	e.multipath, e.losses, e.sizes = true, "0", "100000,1000000"
	e.opts = DefaultOptions("multipath")
	e.opts.Paths, e.opts.Multipath, e.opts.Skew = 4, "spray", 100*time.Microsecond
	return e
}

func (e *netrtLoss) Name() string {
	if e.multipath {
		return "netrt-multipath"
	}
	return "netrt-loss"
}

func (e *netrtLoss) Synopsis() string {
	if e.multipath {
		return "NetRT's Fig. 9: WRITE FCT and end-to-end retransmissions with per-packet spraying over paths of unequal delay, GBN with NetRT off and on"
	}
	return "NetRT's Fig. 6/7: WRITE FCT and end-to-end retransmissions per loss rate and size, GBN with NetRT off and on"
}

func (e *netrtLoss) Flags(fs *flag.FlagSet) {
	FabricFlags(fs, &e.opts, false)
	if e.multipath {
		fs.IntVar(&e.opts.Paths, "paths", e.opts.Paths, "parallel core switches tor1 sprays over")
		fs.DurationVar(&e.opts.Skew, "skew", e.opts.Skew, "extra delay per path: core k delays its packets toward tor2 by (k−1) × skew")
	}
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated loss rates at the cores' ports toward tor2")
	fs.StringVar(&e.sizes, "sizes", e.sizes, "comma-separated WRITE sizes in bytes")
	fs.IntVar(&e.count, "count", e.count, "WRITEs per cell and mode")
	fs.IntVar(&e.mtu, "mtu", e.mtu, "RoCE path MTU")
	fs.StringVar(&e.hostRate, "host-rate", "", "roceperf's sending rate (default: the switches' --rate)")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
}

func (e *netrtLoss) Setup() (Options, error) {
	e.lossList, e.sizeList = nil, nil
	for _, s := range splitList(e.losses) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0 && v < 1) {
			return Options{}, Usagef("--losses: %q is not a loss rate in [0, 1)", s)
		}
		e.lossList = append(e.lossList, v)
	}
	var err error
	if e.sizeList, err = intList("sizes", e.sizes, 1, math.MaxInt, "a size in bytes"); err != nil {
		return Options{}, err
	}
	switch {
	case len(e.lossList) == 0 || len(e.sizeList) == 0:
		return Options{}, Usagef("--losses and --sizes: none given")
	case e.count < 1:
		return Options{}, Usagef("--count must be ≥ 1")
	case e.timeout <= 0:
		return Options{}, Usagef("--timeout must be > 0")
	}
	o := e.opts
	o.Topology, o.NetRT, o.Loss = "chain", false, e.lossList[0]
	if e.multipath {
		o.Topology = "multipath"
	}
	return o, nil
}

// netrtMode is one half of a cell: roceperf's figures for one mode.
type netrtMode struct {
	FCT struct {
		Mean float64 `json:"mean"`
		P50  float64 `json:"p50"`
		P99  float64 `json:"p99"`
	} `json:"fct_us"`
	E2ERetx   int64    `json:"e2e_retx"`
	Goodput   float64  `json:"goodput_gbps"`
	Timeouts  int64    `json:"timeouts"`
	Destroyed WireLoss `json:"destroyed"` // what the impairment destroyed, by class
	Error     string   `json:"error,omitempty"`
}

// NetRTCell is one (loss, size) cell of netrt-loss's JSON.
type NetRTCell struct {
	Loss     float64   `json:"loss"`
	Size     int       `json:"size"`
	Baseline netrtMode `json:"baseline"`
	NetRT    netrtMode `json:"netrt"`
	// FCTReduction is 1 − mean FCT with NetRT / mean FCT without.
	FCTReduction     float64 `json:"fct_reduction"`
	PoolPeakBytes    float64 `json:"pool_peak_bytes"`
	PoolMeanBytes    float64 `json:"pool_mean_bytes"`
	ReorderPeakBytes float64 `json:"reorder_peak_bytes"`
	ReorderMeanBytes float64 `json:"reorder_mean_bytes"`
	// NetRT's own view: requests tor2 sent, packets tor1 retransmitted
	// from its pool, flows tor2 gave up on.
	Requests    float64 `json:"requests"`
	Retransmits float64 `json:"retransmits"`
	Waits       float64 `json:"waits"`
}

func modeOf(r *Run) netrtMode {
	m := netrtMode{Destroyed: wireLoss(r)}
	if r.Error != "" {
		m.Error = firstLine(r.Error)
	}
	if r.Perf == nil {
		m.FCT.Mean, m.FCT.P50, m.FCT.P99 = math.NaN(), math.NaN(), math.NaN()
		return m
	}
	s := &r.Perf.Client
	m.FCT.Mean, m.FCT.P50, m.FCT.P99 = s.FCT.Mean, s.FCT.P50, s.FCT.P99
	m.E2ERetx, m.Goodput, m.Timeouts = s.RetxPackets, s.GoodputGbps, s.Timeouts
	return m
}

// netrtGauges reads the NetRT occupancy figures of a run: peaks are the
// switches' high-water marks, means the byte-time integrals over the
// run's duration.
func netrtGauges(r *Run, c *NetRTCell) {
	d := 0.0
	if r.Perf != nil {
		d = r.Perf.Client.DurationS
	}
	for _, s := range r.Switches {
		c.PoolPeakBytes = max(c.PoolPeakBytes, s.Sum("rocetor_netrt_pool_peak_bytes"))
		c.ReorderPeakBytes = max(c.ReorderPeakBytes, s.Sum("rocetor_netrt_reorder_peak_bytes"))
		if d > 0 {
			c.PoolMeanBytes += s.Sum("rocetor_netrt_pool_byte_seconds_total") / d
			c.ReorderMeanBytes += s.Sum("rocetor_netrt_reorder_byte_seconds_total") / d
		}
		c.Requests += s.Sum("rocetor_netrt_requests_sent_total")
		c.Retransmits += s.Sum("rocetor_netrt_retransmitted_total")
		c.Waits += s.Sum("rocetor_netrt_waits_total")
	}
}

func (e *netrtLoss) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	rate := e.hostRate
	if rate == "" && plan.Options.Rate != "0" {
		rate = plan.Options.Rate
	}
	res.Params = map[string]string{"losses": e.losses, "sizes": e.sizes, "count": strconv.Itoa(e.count),
		"mtu": strconv.Itoa(e.mtu), "host_rate": rate, "timeout": e.timeout.String(), "transport": "gbn"}
	var cells []NetRTCell
	defer func() {
		res.Cells = cells
		res.Table = netrtTable(cells)
	}()
	base := env.Fabric.Impairment()
	for _, loss := range e.lossList {
		m := base
		m.Loss = loss
		if err := env.Fabric.SetImpairment(ctx, m); err != nil {
			return fmt.Errorf("loss %g: %w", loss, err)
		}
		for _, size := range e.sizeList {
			c := NetRTCell{Loss: loss, Size: size}
			for _, on := range []bool{false, true} {
				if err := ctx.Err(); err != nil {
					return err
				}
				o := env.Fabric.Plan().Options
				o.NetRT = on
				if err := env.Fabric.Reconfigure(ctx, o); err != nil {
					return fmt.Errorf("netrt %v: %w", on, err)
				}
				point := map[string]string{"loss": strconv.FormatFloat(loss, 'g', -1, 64), "size": strconv.Itoa(size),
					"netrt": strconv.FormatBool(on)}
				run := env.Measure(ctx, point, 1, Transfer{Op: "write", From: from, To: to, Size: size, Count: e.count,
					QPs: 1, Transport: "gbn", MTU: e.mtu, Rate: rate, Timeout: e.timeout})
				res.Runs = append(res.Runs, run)
				env.printf("%s\n", describeRun(&run))
				if on {
					c.NetRT = modeOf(&run)
					netrtGauges(&run, &c)
				} else {
					c.Baseline = modeOf(&run)
				}
			}
			c.FCTReduction = 1 - c.NetRT.FCT.Mean/c.Baseline.FCT.Mean
			cells = append(cells, c)
		}
	}
	return ctx.Err()
}

// netrtTable is the Markdown table of the cells.
func netrtTable(cells []NetRTCell) Table {
	t := Table{Columns: []string{"loss", "size (B)", "GBN FCT mean/p50/p99 (µs)", "GBN e2e retx",
		"NetRT FCT mean/p50/p99 (µs)", "NetRT e2e retx", "FCT reduction", "pool peak/mean (KiB)", "reorder peak/mean (KiB)", "requests", "ToR retx",
		"NetRT " + wireColumns[0]}}
	fct := func(m netrtMode) string {
		if m.Error != "" {
			return "failed: " + m.Error
		}
		return fmt.Sprintf("%s / %s / %s", fmtInt(m.FCT.Mean), fmtInt(m.FCT.P50), fmtInt(m.FCT.P99))
	}
	kib := func(peak, mean float64) string { return fmt.Sprintf("%.1f / %.1f", peak/1024, mean/1024) }
	for _, c := range cells {
		t.Rows = append(t.Rows, []string{strconv.FormatFloat(c.Loss*100, 'g', -1, 64) + "%", strconv.Itoa(c.Size),
			fct(c.Baseline), strconv.FormatInt(c.Baseline.E2ERetx, 10), fct(c.NetRT), strconv.FormatInt(c.NetRT.E2ERetx, 10),
			fmtFloat(c.FCTReduction*100, 0) + "%", kib(c.PoolPeakBytes, c.PoolMeanBytes), kib(c.ReorderPeakBytes, c.ReorderMeanBytes),
			fmtInt(c.Requests), fmtInt(c.Retransmits), fmtInt(c.NetRT.Destroyed.Control)})
	}
	return t
}

// Plots draws mean FCT and end-to-end retransmissions against the loss
// rate, a line per size and mode (netrt-loss), or against the size
// (netrt-multipath, whose loss is usually one value).
func (e *netrtLoss) Plots() []PlotSpec {
	num := func(key string, scale float64) func(*Group) float64 {
		return func(g *Group) float64 {
			v, err := strconv.ParseFloat(g.Point[key], 64)
			if err != nil {
				return math.NaN()
			}
			return v * scale
		}
	}
	mode := func(g *Group) string {
		if g.Point["netrt"] == "true" {
			return "GBN + NetRT"
		}
		return "GBN"
	}
	fct := func(g *Group) float64 { return g.Median(perfOf(func(s *Summary) float64 { return s.FCT.Mean })) / 1000 }
	retx := func(g *Group) float64 {
		return g.Median(perfOf(func(s *Summary) float64 { return float64(s.RetxPackets) }))
	}
	if e.multipath {
		x := num("size", 1e-3)
		return []PlotSpec{
			{File: "fct_mean.png", Title: e.Name() + ": mean FCT", XLabel: "WRITE size (KB)", YLabel: "mean FCT (ms)", X: x, Y: fct, Series: mode},
			{File: "e2e_retx.png", Title: e.Name() + ": end-to-end retransmitted packets", XLabel: "WRITE size (KB)", YLabel: "packets", X: x, Y: retx, Series: mode},
		}
	}
	// netrt-loss: one plot per size, as the paper's Fig. 6 (a)–(c).
	var specs []PlotSpec
	x := num("loss", 100)
	for _, size := range e.sizeList {
		sz := strconv.Itoa(size)
		only := func(g *Group) bool { return g.Point["size"] == sz }
		specs = append(specs,
			PlotSpec{File: "fct_mean_" + sz + ".png", Title: fmt.Sprintf("%s: mean FCT of %d B WRITEs", e.Name(), size),
				XLabel: "loss at core (%)", YLabel: "mean FCT (ms)", X: x, Y: fct, Series: mode, Only: only},
			PlotSpec{File: "e2e_retx_" + sz + ".png", Title: fmt.Sprintf("%s: end-to-end retransmissions, %d B WRITEs", e.Name(), size),
				XLabel: "loss at core (%)", YLabel: "packets", X: x, Y: retx, Series: mode, Only: only})
	}
	return specs
}
