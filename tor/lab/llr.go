package lab

import (
	"context"
	"flag"
	"math"
	"strconv"
	"time"

	"rocetor/tor/pipeline"
)

// The Protego experiments (seed 003, §5): corruption loss on the link
// between tor1 and tor2 of the link topology, with link-local
// retransmission off, non-blocking (nb) or blocking on both ends of it.
// llr-loss measures how much loss reaches the endpoints and what it
// costs (Fig. 8, Fig. 12); llr-tail the tail FCT of short WRITEs (Fig. 10,
// Fig. 11, Table 2).

// llrModes are the link modes the experiments compare.
var llrModes = []string{"off", "nb", "blocking"}

// LLR returns the llr section of a switch: every port toward another
// switch is protected, in the options' mode; none (no ports) when it is
// off. With --llr-monitor the links start dormant and watched, and the
// monitor reads every 100 ms rather than every second: the testbed's
// runs last seconds, not hours.
func (p *Plan) LLR(node string) pipeline.LLRConfig {
	if p.Options.LLR == "" || p.Options.LLR == "off" || p.Node(node).Kind != SwitchNode {
		return pipeline.LLRConfig{}
	}
	// The Tx buffer also holds frames still queued for the link (tor/llr
	// numbers frames as they are queued), so it covers tord's 1 MiB data
	// queue and a round trip: with 256 KiB, frames beyond it went
	// unprotected and 37 of 10^6 reached the hosts at 1e-3. ackNoTimeout
	// must outlast a retransmission on two busy CPUs, and stay below the
	// hosts' 16 ms RTO.
	s := pipeline.LLRConfig{Mode: p.Options.LLR, TxBuffer: 2 << 20, AckTimeout: 8 * time.Millisecond}
	if s.Ports = p.switchPorts(node); len(s.Ports) == 0 {
		return pipeline.LLRConfig{}
	}
	if p.Options.LLRMonitor {
		s.Dormant, s.Watch, s.Monitor = true, true, &pipeline.LLRMonitorConfig{Interval: 100 * time.Millisecond}
	}
	return s
}

// llrFigures are what the switches counted of one run: protected
// packets and what the link layer could not recover, from the sending
// and receiving ends of the impaired link.
type llrFigures struct {
	Packets, Unrecovered, TxPeak, RxPeak float64
	Copies                               float64 // retransmitted frames per lost one
}

func llrOf(r *Run) llrFigures {
	return llrFigures{
		Packets:     sum(r, "rocetor_llr_protected_packets_total"),
		Unrecovered: sum(r, "rocetor_llr_ack_timeouts_total"),
		Copies:      sum(r, "rocetor_llr_copies_total") / max(sum(r, "rocetor_llr_retransmitted_total"), 1),
		TxPeak:      maxOf(r, "rocetor_llr_tx_buffer_peak_bytes"),
		RxPeak:      maxOf(r, "rocetor_llr_reorder_buffer_peak_bytes"),
	}
}

// linkLoss is what a run lost on the impaired link (the plan's first
// impair site and the switch port at its other end), protected or not:
// the frames the near switch's pipeline sent into the link — its data
// queue toward the far switch, every original, numbered or not (llr's
// copies, dummies, ACKs and notices leave by other queues) — that the
// far switch's pipeline never received: the frames its port handed the
// worker, which llr's receiver counts after de-duplicating them and
// consuming its own control frames, less PFC and PAUSE, which end at the
// port. Unprotected, that is what the impairment destroyed of the data;
// protected, what llr did not recover, whichever frame the loss struck
// (an original, a copy, a notice, an ACK) and whether or not the frame
// was numbered. A run that ended in flight would count its last frames:
// the runs end only when every transfer has completed.
func linkLoss(p *Plan, r *Run) (sent, lost float64) {
	if len(p.Sites) == 0 {
		return 0, 0
	}
	site := p.Sites[0]
	far, ok := p.Peer(site.Node, site.Port)
	if !ok {
		return 0, 0
	}
	near, fs := r.Switches[site.Node], r.Switches[far.Node]
	sent = near.Sum("rocetor_queue_dequeued_packets_total", `port="`+site.Port+`"`, `queue="data"`)
	port := `port="` + far.Iface + `"`
	got := fs.Sum("rocetor_port_rx_packets_total", port) - fs.Sum("rocetor_port_pfc_rx_frames_total", port) -
		fs.Sum("rocetor_port_pause_rx_frames_total", port)
	return sent, max(sent-got, 0)
}

// maxOf is a gauge's largest value over a run's switches.
func maxOf(r *Run, metric string) float64 {
	var m float64
	for _, s := range r.Switches {
		m = max(m, s.Sum(metric))
	}
	return m
}

// ---- llr-loss ----

type llrLoss struct {
	dcpFlags // size, count, mtu, depth, host rate, timeout
	losses   string
	modes    string
	lossList []float64
	modeList []string
}

// LLRLossCell is one (loss, mode) of llr-loss's JSON.
type LLRLossCell struct {
	Loss          float64 `json:"loss"`
	Mode          string  `json:"mode"`
	Packets       float64 `json:"packets"`     // frames sent into the link (linkLoss)
	Unrecovered   float64 `json:"unrecovered"` // of them, never received beyond it (linkLoss)
	EffectiveLoss float64 `json:"effective_loss"`
	// Protected are the frames llr numbered and kept (0 when off).
	Protected float64 `json:"protected"`
	// AckTimeouts are the sequences llr's receivers gave up on.
	AckTimeouts  float64  `json:"ack_timeouts"`
	Destroyed    WireLoss `json:"destroyed"` // what the impairment destroyed, by class
	GoodputRatio float64  `json:"goodput_ratio"`
	Copies       float64  `json:"copies"`
	TxPeak       float64  `json:"tx_buffer_peak_bytes"`
	RxPeak       float64  `json:"rx_buffer_peak_bytes"`
	E2ERetx      int64    `json:"e2e_retx"`
	Error        string   `json:"error,omitempty"`
}

func newLLRLoss() *llrLoss { return &llrLoss{losses: "1e-5,1e-4,1e-3,1e-2", modes: "off,nb,blocking"} }

func (e *llrLoss) Name() string { return "llr-loss" }
func (e *llrLoss) Synopsis() string {
	return "Protego's Fig. 8/12: corruption on the tor1→tor2 link, link-local retransmission off, nb or blocking: effective loss, goodput, buffers"
}

func (e *llrLoss) Flags(fs *flag.FlagSet) {
	e.opts = DefaultOptions("link")
	e.register(fs, 1<<20, 1000)
	fs.StringVar(&e.opts.Topology, "topology", e.opts.Topology, "link (corruption on tor1's port toward tor2) or chain (on core's port toward tor2)")
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated corruption rates on tor1's port toward tor2")
	fs.StringVar(&e.modes, "modes", e.modes, "comma-separated link modes: off, nb, blocking")
}

func (e *llrLoss) Setup() (Options, error) {
	var err error
	if e.lossList, err = rates(e.losses); err != nil {
		return Options{}, err
	}
	if e.modeList, err = modes(e.modes); err != nil {
		return Options{}, err
	}
	if err := e.check(); err != nil {
		return Options{}, err
	}
	o := e.opts
	if o.Topology != "link" && o.Topology != "chain" {
		return Options{}, Usagef("--topology %q: want link or chain", o.Topology)
	}
	o.LLR, o.LLRMonitor = "", false
	return o, nil
}

// rates parses a list of loss rates in (0, 1).
func rates(s string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, Usagef("%q is not a loss rate in (0, 1)", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, Usagef("no loss rate given")
	}
	return out, nil
}

// modes parses a list of link modes.
func modes(s string) ([]string, error) {
	var out []string
	for _, m := range splitList(s) {
		switch m {
		case "off", "nb", "blocking":
			out = append(out, m)
		default:
			return nil, Usagef("mode %q: want off, nb or blocking", m)
		}
	}
	if len(out) == 0 {
		return nil, Usagef("no mode given")
	}
	return out, nil
}

// setLink puts the link in mode and the corruption rate on it.
func setLink(ctx context.Context, env *Env, mode string, loss float64) error {
	o := env.Fabric.Plan().Options
	o.LLR = mode
	if err := env.Fabric.Reconfigure(ctx, o); err != nil {
		return err
	}
	m := env.Fabric.Impairment()
	m.Loss, m.Corrupt = 0, loss
	return env.Fabric.SetImpairment(ctx, m)
}

func (e *llrLoss) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	res.Params = e.params(map[string]string{"losses": e.losses, "modes": e.modes})
	var cells []LLRLossCell
	defer func() {
		res.Cells = cells
		res.Table = llrLossTable(cells)
	}()
	measure := func(mode string, loss float64) (*Run, error) {
		if err := setLink(ctx, env, mode, loss); err != nil {
			return nil, err
		}
		point := map[string]string{"loss": strconv.FormatFloat(loss, 'g', -1, 64), "mode": mode}
		run := env.Measure(ctx, point, 1, e.transfer(plan, from, to, "gbn"))
		res.Runs = append(res.Runs, run)
		progress(env, &run)
		return &res.Runs[len(res.Runs)-1], ctx.Err()
	}
	clean, err := measure("off", 0)
	if err != nil {
		return err
	}
	for _, loss := range e.lossList {
		for _, mode := range e.modeList {
			r, err := measure(mode, loss)
			if err != nil {
				return err
			}
			f := llrOf(r)
			c := LLRLossCell{Loss: loss, Mode: mode, Protected: f.Packets, AckTimeouts: f.Unrecovered, Copies: f.Copies,
				TxPeak: f.TxPeak, RxPeak: f.RxPeak, GoodputRatio: goodput(r) / goodput(clean), Error: firstLine(r.Error),
				Destroyed: wireLoss(r)}
			c.Packets, c.Unrecovered = linkLoss(plan, r)
			if c.Packets > 0 {
				c.EffectiveLoss = c.Unrecovered / c.Packets
			}
			if r.Perf != nil {
				c.E2ERetx = r.Perf.Client.RetxPackets
			}
			cells = append(cells, c)
		}
	}
	return nil
}

func llrLossTable(cells []LLRLossCell) Table {
	t := Table{Columns: append([]string{"loss", "mode", "packets", "unrecovered", "effective loss", "goodput vs no loss",
		"copies", "Tx buffer peak (KiB)", "Rx buffer peak (KiB)", "e2e retx"}, wireColumns...)}
	for _, c := range cells {
		t.Rows = append(t.Rows, append([]string{strconv.FormatFloat(c.Loss, 'g', -1, 64), c.Mode, fmtInt(c.Packets),
			fmtInt(c.Unrecovered), strconv.FormatFloat(c.EffectiveLoss, 'g', 3, 64), fmtFloat(c.GoodputRatio*100, 1) + "%",
			fmtFloat(c.Copies, 1), fmtFloat(c.TxPeak/1024, 1), fmtFloat(c.RxPeak/1024, 1), strconv.FormatInt(c.E2ERetx, 10)},
			c.Destroyed.cells()...))
	}
	return t
}

func (e *llrLoss) Plots() []PlotSpec {
	loss := func(g *Group) float64 {
		v, _ := strconv.ParseFloat(g.Point["loss"], 64)
		if v == 0 {
			return math.NaN()
		}
		return math.Log10(v)
	}
	return []PlotSpec{{File: "goodput.png", Title: "llr-loss: goodput under corruption", XLabel: "log10(corruption rate)",
		YLabel: "goodput (Gbit/s)", X: loss, Y: func(g *Group) float64 { return g.Median(goodput) },
		Series: func(g *Group) string { return g.Point["mode"] }}}
}

// ---- llr-tail ----

type llrTail struct {
	dcpFlags
	sizes    string
	loss     float64
	modes    string
	sizeList []int
	modeList []string
}

// llrTailCell is one (size, mode) of llr-tail's JSON.
type llrTailCell struct {
	Size int    `json:"size"`
	Mode string `json:"mode"`
	FCT  struct {
		P50   float64 `json:"p50"`
		P99   float64 `json:"p99"`
		P999  float64 `json:"p999"`
		P9999 float64 `json:"p9999"`
	} `json:"fct_us"`
	E2ERetx     int64    `json:"e2e_retx"`
	Timeouts    int64    `json:"timeouts"`
	Unrecovered float64  `json:"unrecovered"` // frames the link lost for good (linkLoss)
	Destroyed   WireLoss `json:"destroyed"`   // what the impairment destroyed, by class
	Error       string   `json:"error,omitempty"`
}

func newLLRTail() *llrTail {
	return &llrTail{sizes: "143,24387", loss: 1e-3, modes: "noloss,off,nb,blocking"}
}

func (e *llrTail) Name() string { return "llr-tail" }
func (e *llrTail) Synopsis() string {
	return "Protego's Fig. 10/11: tail FCT of 1- and 17-packet WRITEs at 1e-3 corruption on the tor1→tor2 link, protection off, nb, blocking"
}

func (e *llrTail) Flags(fs *flag.FlagSet) {
	e.opts = DefaultOptions("link")
	FabricFlags(fs, &e.opts, false)
	// One WRITE in flight: each is a flow of its own, as in the paper,
	// so a lost last packet waits for the sender's RTO; with several in
	// flight the next one's packets reveal the gap at once.
	e.count, e.mtu, e.depth, e.timeout = 10000, 1024, 1, 5*time.Minute
	fs.IntVar(&e.count, "count", e.count, "WRITEs per size and mode (p99.99 needs 10,000)")
	fs.IntVar(&e.depth, "depth", e.depth, "WRITEs in flight")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
	fs.StringVar(&e.sizes, "sizes", e.sizes, "comma-separated WRITE sizes in bytes (143: one packet, 24387: 17 at MTU 1024 with DCP-free headers)")
	fs.Float64Var(&e.loss, "loss", e.loss, "corruption rate on tor1's port toward tor2")
	fs.StringVar(&e.modes, "modes", e.modes, "comma-separated: noloss, off, nb, blocking")
}

func (e *llrTail) Setup() (Options, error) {
	var err error
	if e.sizeList, err = intList("sizes", e.sizes, 1, math.MaxInt, "a size in bytes"); err != nil {
		return Options{}, err
	}
	e.modeList = nil
	for _, m := range splitList(e.modes) {
		switch m {
		case "noloss", "off", "nb", "blocking":
			e.modeList = append(e.modeList, m)
		default:
			return Options{}, Usagef("--modes: %q: want noloss, off, nb or blocking", m)
		}
	}
	if len(e.sizeList) == 0 || len(e.modeList) == 0 || !(e.loss > 0 && e.loss < 1) {
		return Options{}, Usagef("--sizes, --modes and --loss in (0, 1) are needed")
	}
	if e.count < 1 || e.timeout <= 0 {
		return Options{}, Usagef("--count must be ≥ 1 and --timeout > 0")
	}
	o := e.opts
	o.Topology = "link"
	return o, nil
}

func (e *llrTail) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	res.Params = e.params(map[string]string{"sizes": e.sizes, "modes": e.modes, "loss": strconv.FormatFloat(e.loss, 'g', -1, 64)})
	var cells []llrTailCell
	defer func() {
		res.Cells = cells
		res.Table = llrTailTable(cells)
	}()
	for _, mode := range e.modeList {
		link, loss := mode, e.loss
		if mode == "noloss" {
			link, loss = "off", 0
		}
		if err := setLink(ctx, env, link, loss); err != nil {
			return err
		}
		for _, size := range e.sizeList {
			t := e.transfer(plan, from, to, "gbn")
			t.Size = size
			point := map[string]string{"size": strconv.Itoa(size), "mode": mode}
			run := env.Measure(ctx, point, 1, t)
			res.Runs = append(res.Runs, run)
			progress(env, &run)
			if err := ctx.Err(); err != nil {
				return err
			}
			c := llrTailCell{Size: size, Mode: mode, Error: firstLine(run.Error), Destroyed: wireLoss(&run)}
			_, c.Unrecovered = linkLoss(plan, &run)
			if run.Perf != nil {
				s := &run.Perf.Client
				c.FCT.P50, c.FCT.P99, c.FCT.P999, c.FCT.P9999 = s.FCT.P50, s.FCT.P99, s.FCT.P999, s.FCT.P9999
				c.E2ERetx, c.Timeouts = s.RetxPackets, s.Timeouts
			}
			cells = append(cells, c)
		}
	}
	return nil
}

func llrTailTable(cells []llrTailCell) Table {
	t := Table{Columns: append([]string{"size (B)", "mode", "FCT p50 (µs)", "p99", "p99.9", "p99.99", "e2e retx", "timeouts",
		"unrecovered"}, wireColumns...)}
	for _, c := range cells {
		t.Rows = append(t.Rows, append([]string{strconv.Itoa(c.Size), c.Mode, fmtInt(c.FCT.P50), fmtInt(c.FCT.P99),
			fmtInt(c.FCT.P999), fmtInt(c.FCT.P9999), strconv.FormatInt(c.E2ERetx, 10), strconv.FormatInt(c.Timeouts, 10),
			fmtInt(c.Unrecovered)}, c.Destroyed.cells()...))
	}
	return t
}

func (e *llrTail) Plots() []PlotSpec { return nil }

// ---- llr-monitor ----

// llrMonitor shows the corruption monitor at work (seed 003, appendix
// C): the link starts dormant, its senders only numbering frames
// (watch); corruption starts; the first run shows the receiving switch's
// monitor find the loss rate and the sending switch turn protection on,
// with the copies Eq. 1 asks for at the rate measured; the second run
// crosses the protected link.
type llrMonitor struct {
	dcpFlags
	losses   string
	mode     string
	lossList []float64
}

// LLRMonitorCell is one loss rate of llr-monitor's JSON.
type LLRMonitorCell struct {
	Loss             float64  `json:"loss"`
	Mode             string   `json:"mode"`
	Activated        bool     `json:"activated"`       // tor1's sender protects after the first run
	WatchedPackets   float64  `json:"watched_packets"` // frames tor1 sent numbered before protection came on
	MeasuredLoss     float64  `json:"measured_loss"`   // tor2's monitor, from the gaps
	Requests         float64  `json:"requests"`        // protection requests tor2 sent
	Copies           float64  `json:"copies"`          // copies per retransmitted frame in the protected run
	E2ERetxDetect    int64    `json:"e2e_retx_detect"` // end-to-end retransmissions in the first run
	E2ERetxProtected int64    `json:"e2e_retx"`        // … in the protected run
	Unrecovered      float64  `json:"unrecovered"`     // frames the link lost for good in the protected run (linkLoss)
	AckTimeouts      float64  `json:"ack_timeouts"`    // sequences llr gave up on in the protected run
	Destroyed        WireLoss `json:"destroyed"`       // what the impairment destroyed in the protected run, by class
	GoodputRatio     float64  `json:"goodput_ratio"`   // protected run against the clean reference
	Error            string   `json:"error,omitempty"`
}

func newLLRMonitor() *llrMonitor { return &llrMonitor{losses: "1e-4,1e-3", mode: "blocking"} }

func (e *llrMonitor) Name() string { return "llr-monitor" }
func (e *llrMonitor) Synopsis() string {
	return "Protego's appendix C: dormant links, corruption starts, the monitor turns link-local retransmission on"
}

func (e *llrMonitor) Flags(fs *flag.FlagSet) {
	e.opts = DefaultOptions("link")
	e.register(fs, 1<<20, 200)
	fs.StringVar(&e.losses, "losses", e.losses, "comma-separated corruption rates on tor1's port toward tor2")
	fs.StringVar(&e.mode, "mode", e.mode, "link mode once protected: nb or blocking")
}

func (e *llrMonitor) Setup() (Options, error) {
	var err error
	if e.lossList, err = rates(e.losses); err != nil {
		return Options{}, err
	}
	if e.mode != "nb" && e.mode != "blocking" {
		return Options{}, Usagef("--mode %q: want nb or blocking", e.mode)
	}
	if err := e.check(); err != nil {
		return Options{}, err
	}
	o := e.opts
	o.Topology, o.LLR, o.LLRMonitor = "link", "", false
	return o, nil
}

func (e *llrMonitor) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	from, to := plan.ByRole(RoleSender)[0], plan.ByRole(RoleReceiver)[0]
	res.Params = e.params(map[string]string{"losses": e.losses, "mode": e.mode})
	var cells []LLRMonitorCell
	defer func() {
		res.Cells = cells
		res.Table = llrMonitorTable(cells)
	}()
	measure := func(point map[string]string) *Run {
		run := env.Measure(ctx, point, 1, e.transfer(plan, from, to, "gbn"))
		res.Runs = append(res.Runs, run)
		progress(env, &run)
		return &res.Runs[len(res.Runs)-1]
	}
	if err := setLink(ctx, env, "off", 0); err != nil {
		return err
	}
	clean := measure(map[string]string{"loss": "0", "phase": "clean"})
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, loss := range e.lossList {
		// Fresh switches for each rate, dormant and watching: a
		// monitor that saw the last rate would switch the new tor1 on
		// at once.
		if err := setLink(ctx, env, "off", 0); err != nil {
			return err
		}
		o := env.Fabric.Plan().Options
		o.LLR, o.LLRMonitor = e.mode, true
		if err := env.Fabric.Reconfigure(ctx, o); err != nil {
			return err
		}
		m := env.Fabric.Impairment()
		m.Loss, m.Corrupt = 0, loss
		if err := env.Fabric.SetImpairment(ctx, m); err != nil {
			return err
		}
		l := strconv.FormatFloat(loss, 'g', -1, 64)
		detect := measure(map[string]string{"loss": l, "phase": "detect"})
		if err := ctx.Err(); err != nil {
			return err
		}
		prot := measure(map[string]string{"loss": l, "phase": "protected"})
		if err := ctx.Err(); err != nil {
			return err
		}
		t1, t2 := detect.Switches["tor1"], detect.Switches["tor2"]
		c := LLRMonitorCell{Loss: loss, Mode: e.mode,
			Activated:      prot.Switches["tor1"].Sum("rocetor_llr_active", `port="tor2"`) == 1,
			WatchedPackets: t1.Sum("rocetor_llr_watched_packets_total", `port="tor2"`),
			MeasuredLoss:   t2.Sum("rocetor_llr_monitor_loss_ratio", `port="tor1"`, `source="gaps"`),
			Requests:       t2.Sum("rocetor_llr_protect_requests_sent_total", `port="tor1"`),
			AckTimeouts:    sum(prot, "rocetor_llr_ack_timeouts_total"),
			Destroyed:      wireLoss(prot),
			Copies:         llrOf(prot).Copies,
			GoodputRatio:   goodput(prot) / goodput(clean),
			Error:          firstLine(detect.Error + prot.Error)}
		_, c.Unrecovered = linkLoss(plan, prot)
		if detect.Perf != nil {
			c.E2ERetxDetect = detect.Perf.Client.RetxPackets
		}
		if prot.Perf != nil {
			c.E2ERetxProtected = prot.Perf.Client.RetxPackets
		}
		cells = append(cells, c)
	}
	return nil
}

func llrMonitorTable(cells []LLRMonitorCell) Table {
	t := Table{Columns: []string{"loss", "mode", "activated", "watched before", "measured loss", "requests", "copies",
		"e2e retx (detect)", "e2e retx (protected)", "unrecovered", "goodput vs no loss"}}
	t.Columns = append(t.Columns, wireColumns...)
	for _, c := range cells {
		t.Rows = append(t.Rows, []string{strconv.FormatFloat(c.Loss, 'g', -1, 64), c.Mode, strconv.FormatBool(c.Activated),
			fmtInt(c.WatchedPackets), strconv.FormatFloat(c.MeasuredLoss, 'g', 3, 64), fmtInt(c.Requests), fmtFloat(c.Copies, 1),
			strconv.FormatInt(c.E2ERetxDetect, 10), strconv.FormatInt(c.E2ERetxProtected, 10), fmtInt(c.Unrecovered),
			fmtFloat(c.GoodputRatio*100, 1) + "%"})
		t.Rows[len(t.Rows)-1] = append(t.Rows[len(t.Rows)-1], c.Destroyed.cells()...)
	}
	return t
}

func (e *llrMonitor) Plots() []PlotSpec { return nil }
