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

// The congestion-control experiments (project issue 16): DCQCN (the
// switches mark ECN, roceperf's endpoints are its notification and
// reaction points) under every loss recovery, at testbed scale, in the
// shape of NetRT's Fig. 8 and DCP's Fig. 16.
//
//   - dcqcn-fairness: four flows (--senders) through one bottleneck
//     converge to fair shares and hold the queue between Kmin and Kmax;
//     without DCQCN the queue sits at its limit. Each flow is 400 WRITEs
//     of 64 KiB (25 MiB), about 4 s at its 50 Mbit/s share: the rates
//     reach their shares within the first 50 ms in the simulator, so
//     Jain's index over the last half measures converged rates, a
//     thousand alpha periods and timer events after the start.
//   - dcqcn-incast: n flows (4 by default) meet at one port; with DCQCN
//     the queue stays below its limit and nothing is dropped there,
//     without it the queue overflows (dcqcnDefaults says why the limit
//     is below the flows' windows).
//
// Both run on the testbed and in the simulator (torsim run), which
// samples the queue on virtual time and adds each sender's DCQCN rate
// over time (Series.CCRate, plotted as rates-cc-*.png).
//
// Both run on the dumbbell: n senders behind tor1 write each to a
// receiver of its own behind tor2 (roceperf serves one client per
// process), so the n flows meet at tor1's port toward tor2, shaped to
// --bottleneck-rate below the other ports: that port is the incast's
// "1". Every sender is paced at --line-rate, by default the bottleneck's
// rate, so n flows offer n times what the port drains. Every switch
// marks ECN on its data queues in every run; runs with --cc none differ
// only in that the senders do not react (the receivers still answer
// marks with CNPs). During each run tor1 is scraped every --sample: the
// bottleneck queue's depth, and each sender's port's received bytes,
// which on the dumbbell are that sender's flow (Series).

// dcqcnDefaults are the testbed the experiments build unless told
// otherwise. The 2-CPU testbed carries about 0.6 Gbit/s in all, so the
// bottleneck is 200 Mbit/s and the other ports 1 Gbit/s (their queues
// stay empty). Kmin and Kmax, 20 KB and 100 KB, leave a band wide
// against the frames a worker moves per batch (tord's rate-derived
// default at 200 Mbit/s, 5 KB and 20 KB, is a few batches), and DCP's
// trimming threshold, 160 KiB, lies above Kmax so that DCQCN acts before
// the switch trims.
//
// The queue limit must be below what the flows keep in flight without a
// congestion control, so that without DCQCN the queue overflows, and
// above what arrives before DCQCN's first cuts take hold, so that with
// it nothing drops. What a flow keeps in flight is Go-Back-N's window,
// 128 packets (nic/gbn; roceperf does not change it), about 134 KB of
// 1 KiB-MTU frames on the wire, not roceperf's posted depth: four
// windows are 537 KB, the depth at which the queue of the 4-sender
// incast without DCQCN settles in the simulator. dcqcn-incast's 1 MiB,
// its limit until 2026-11-29, held four windows, so nothing dropped
// with DCQCN or without and the experiment could not show DCQCN's
// effect (project issue 28). Its limit is now 448 KiB (459 KB), 78 KB
// below four windows, and its default is 4 senders: with fewer the
// windows fit (three are 402 KB). With DCQCN the 4-sender queue peaks
// at 120–150 KB in the simulator at the testbed's parameters (50–150 µs
// per link, TestDCQCNIncastBinds), and in TestDCQCNModelHeadroom's
// model, whose flows have no window, four senders starting together
// drop nothing into 448 KiB with CNPs up to 2 ms late (58 packets into
// 256 KiB). dcqcn-fairness keeps 256 KiB, also below four windows.
// Each incast flow posts 1 MiB (--depth 16 WRITEs of 64 KiB) so that
// its window is always full.
func dcqcnDefaults(incast bool) Options {
	o := srOptions("dumbbell")
	o.BottleneckRate, o.QueueLimit = "200M", "256KiB"
	o.ECN, o.ECNMin, o.ECNMax, o.ECNPMax = true, "20KB", "100KB", 20
	o.TrimThreshold = "160KiB"
	if incast {
		o.QueueLimit = "448KiB"
	}
	return o
}

// testbedDCQCN are the DCQCN parameters the experiments give roceperf
// unless --dcqcn says otherwise (--dcqcn "" runs ConnectX's defaults).
// ConnectX's defaults are made for 25–100 Gbit/s, where a QP's CNPs come
// microseconds apart. At 200 Mbit/s a QP sends a packet every 45 µs, so
// its CNPs come at best that far apart, and alpha, which ConnectX
// updates every µs (dce_tcp_rtt 1, g ≈ 1/205), decays to almost nothing
// between two: cuts are a few percent, while the 300 µs timer raises the
// rate by 5 and 50 Mbit/s (2.5 % and 25 % of the line) at a time. In a
// first smoke run of dcqcn-fairness with them (2026-11-25, 2.6 MB per
// flow) each flow was cut 517 times and still averaged 199.6 of its 200
// Mbit/s, and the bottleneck dropped 976 packets (410 without DCQCN).
//
// Scaled to the testbed, in the paper's proportions (Zhu et al. §3.1
// and §5: the NP sends at most one CNP per N = 50 µs, and alpha's
// period K = 55 µs is longer than N, so that under congestion every
// alpha period holds a CNP and alpha rises): min_time_between_cnps 200
// µs, longer than the spacing of one QP's frames at its fair share
// (1 KiB frames every 86 µs with 2 senders, 173 µs with 4), so the
// notification point paces CNPs rather than answering every mark; the
// alpha period dce_tcp_rtt 220 µs; the increase timer 1 ms, AI 2 and
// HAI 10 Mbit/s (1 % and 5 % of the line). The alpha period was 100
// µs, shorter than the CNP spacing, and min_time_between_cnps was
// ConnectX's 4 µs, which the notification point, then on the batch
// clock, met by answering a whole receive batch with one CNP: in the
// recorded 4-sender incast 85 % of the marks had none, and each QP's
// mean rate stayed at 194–199 Mbit/s. TestDCQCNModel runs nic/cc's
// DCQCN through a model of the bottleneck with ConnectX's defaults and
// these; TestDCQCNIncastBinds (simnet) runs the experiments: each QP's
// rate falls to its share and the queue stays bounded.
const testbedDCQCN = "min-time-between-cnps=200,dce-tcp-rtt=220,rpg-time-reset=1000,rpg-ai-rate=2,rpg-hai-rate=10"

// dcqcnRTO is the senders' first retransmission timeout: IRN's rule
// (seed 004 §4.1), the round trip plus the time a full bottleneck queue
// takes to drain, so that no timer fires while a packet still waits in
// the queue. dcqcn-incast's 448 KiB drains in 18.4 ms at 200 Mbit/s,
// above roceperf's default of 16 ms; the testbed's round trip is ~300
// µs when every process has a CPU and milliseconds more when a host
// waits for one, hence 32 ms. At 16 ms the testbed's runs of 2026-11-29
// timed out 30–50 times per flow with 0–7 NAKs: nearly every timeout
// was spurious, and each sent a window again behind the one still
// queued. TestDCQCNIncastRTO reproduces that in the simulator.
// roce-tcp's RoCE sender takes the same.
const dcqcnRTO = 32 * time.Millisecond

// dcqcnExp is both experiments; incast says which.
type dcqcnExp struct {
	incast     bool
	opts       Options
	transports string
	ccs        string
	senders    string
	size       int
	count      int
	mtu        int
	depth      int
	lineRate   string
	dcqcn      string
	sample     time.Duration
	timeout    time.Duration
	rto        time.Duration
	hostPoll   string

	fabric        Options // what Setup asked for
	transportList []string
	ccList        []string
	nList         []int
	dcqcnParams   map[string]string
}

func newDCQCNFairness() *dcqcnExp {
	return &dcqcnExp{transports: "gbn", ccs: "dcqcn,none", senders: "4", count: 400, dcqcn: testbedDCQCN}
}

func newDCQCNIncast() *dcqcnExp {
	return &dcqcnExp{incast: true, transports: "gbn", ccs: "dcqcn,none", senders: "4", count: 256, dcqcn: testbedDCQCN}
}

func (e *dcqcnExp) Name() string {
	if e.incast {
		return "dcqcn-incast"
	}
	return "dcqcn-fairness"
}

func (e *dcqcnExp) Synopsis() string {
	if e.incast {
		return "DCQCN under an n:1 incast through tor1's port toward tor2: bottleneck depth, drops, PFC pauses and CNPs with DCQCN and without, per transport"
	}
	return "DCQCN's fairness: two flows through one bottleneck, their rates over time (Jain's index) and the queue between Kmin and Kmax, with DCQCN and without"
}

// dcqcnTransports are the loss recoveries the experiments pair with
// DCQCN: endpoints' (gbn, irn, fasr), NetRT on the ToRs with gbn
// endpoints, and DCP endpoints on trimming switches.
var dcqcnTransports = []string{"gbn", "irn", "fasr", "netrt", "dcp"}

func (e *dcqcnExp) Flags(fs *flag.FlagSet) {
	e.opts = dcqcnDefaults(e.incast)
	FabricFlags(fs, &e.opts, false)
	e.size, e.mtu, e.sample, e.timeout, e.rto = 64<<10, 1024, 100*time.Millisecond, 2*time.Minute, dcqcnRTO
	if e.incast {
		e.depth = 16 // 1 MiB posted per flow: Go-Back-N's window always full (dcqcnDefaults)
	}
	fs.StringVar(&e.transports, "transports", e.transports, "comma-separated: gbn, irn, fasr, netrt (gbn endpoints, NetRT on the ToRs), dcp (DCP endpoints, every switch trimming)")
	fs.StringVar(&e.ccs, "cc", e.ccs, "comma-separated congestion controls of the senders: dcqcn, none (the switches mark ECN in both), fixed")
	what := "number of senders (the dumbbell has as many receivers)"
	if e.incast {
		what = "comma-separated incast degrees n (hosts: the largest n senders and as many receivers)"
	}
	fs.StringVar(&e.senders, "senders", e.senders, what)
	fs.IntVar(&e.size, "size", e.size, "bytes per WRITE")
	fs.IntVar(&e.count, "count", e.count, "WRITEs per flow and run")
	fs.IntVar(&e.mtu, "mtu", e.mtu, "RoCE path MTU")
	fs.IntVar(&e.depth, "depth", e.depth, "WRITEs in flight per flow (0: roceperf's, 256 KiB worth)")
	fs.StringVar(&e.lineRate, "line-rate", "", "each sender's line rate: its port's pacing and where DCQCN starts and returns to (default: --bottleneck-rate)")
	fs.StringVar(&e.dcqcn, "dcqcn", e.dcqcn, "DCQCN parameters for roceperf, comma-separated NAME=VALUE with roceperf's --dcqcn- flag names; the default is scaled to the testbed's rates (dcqcn.go), \"\" runs ConnectX's defaults")
	fs.DurationVar(&e.sample, "sample", e.sample, "how often tor1 is scraped during a run for the queue depth and the flows' rates")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
	// The hosts poll adaptively (roceperf's default). Sleeping when idle,
	// as sr-concurrency's hosts do, was worse here: each wake-up delays
	// the ACKs and CNPs the loop runs on. Quiet machine, 2026-11-29,
	// two runs each alternating, --cc dcqcn, RTO 32 ms: incast drops
	// 0 and 2,117 adaptive against 13,763 and 5,016 interrupt; fairness
	// 8,306 and 3,481 against 14,407 and 17,624
	// (docs/results/dcqcn-host-poll-ab.txt).
	e.hostPoll = ""
	fs.StringVar(&e.hostPoll, "host-poll", e.hostPoll, "roceperf's --poll on every host: adaptive, busy or interrupt (empty: roceperf's, adaptive)")
	fs.DurationVar(&e.rto, "rto", e.rto, "the senders' first retransmission timeout (roceperf --rto); the default covers a full bottleneck queue and the testbed's round trip (dcqcnRTO)")
}

func (e *dcqcnExp) Setup() (Options, error) {
	var err error
	if e.transportList, err = wordList("transports", e.transports, dcqcnTransports...); err != nil {
		return Options{}, err
	}
	if e.ccList, err = wordList("cc", e.ccs, "dcqcn", "none", "fixed"); err != nil {
		return Options{}, err
	}
	if e.nList, err = intList("senders", e.senders, 1, 16, "1 to 16"); err != nil {
		return Options{}, err
	}
	e.dcqcnParams = map[string]string{}
	for _, kv := range splitList(e.dcqcn) {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimPrefix(strings.TrimSpace(k), "dcqcn-")
		if !ok || k == "" || strings.TrimSpace(v) == "" {
			return Options{}, Usagef("--dcqcn: %q: want NAME=VALUE", kv)
		}
		e.dcqcnParams[k] = strings.TrimSpace(v)
	}
	switch {
	case len(e.transportList) == 0 || len(e.ccList) == 0 || len(e.nList) == 0:
		return Options{}, Usagef("--transports, --cc and --senders: none given")
	case e.size < 1 || e.count < 1 || e.depth < 0:
		return Options{}, Usagef("--size and --count must be ≥ 1, --depth ≥ 0")
	case e.timeout <= 0 || e.sample <= 0 || e.rto <= 0:
		return Options{}, Usagef("--timeout, --sample and --rto must be > 0")
	case !validPoll(e.hostPoll):
		return Options{}, Usagef("--host-poll %q: want adaptive, busy or interrupt", e.hostPoll)
	}
	o := e.opts
	if !o.ECN {
		o.ECNMin, o.ECNMax, o.ECNPMax = "", "", 0 // --ecn=false: no marking, whatever the thresholds
	}
	if e.lineRate == "" && o.BottleneckRate == "" && o.Rate == "0" {
		return Options{}, Usagef("--line-rate: needed when no port is shaped (--rate 0 and no --bottleneck-rate)")
	}
	if e.lineRate != "" {
		var r dataplane.Rate
		if err := r.UnmarshalText([]byte(e.lineRate)); err != nil || r == 0 {
			return Options{}, Usagef("--line-rate %q: want a rate above 0, e.g. 200M", e.lineRate)
		}
	}
	if o.TrimThreshold != "" && o.QueueLimit != "" && slices.Contains(e.transportList, "dcp") {
		var th, limit dataplane.Bytes
		if th.UnmarshalText([]byte(o.TrimThreshold)) == nil && limit.UnmarshalText([]byte(o.QueueLimit)) == nil && th >= limit {
			return Options{}, Usagef("--trim-threshold %s: want below --queue-limit %s, or DCP's data is dropped before it is trimmed", o.TrimThreshold, o.QueueLimit)
		}
	}
	n := slices.Max(e.nList)
	o.Topology, o.Senders, o.Receivers, o.Loss = "dumbbell", n, n, 0
	o.NetRT, o.DCP, o.Trim = false, false, false
	e.fabric = o
	return o, nil
}

// rate is the senders' line rate.
func (e *dcqcnExp) rate(o Options) string {
	switch {
	case e.lineRate != "":
		return e.lineRate
	case o.BottleneckRate != "":
		return o.BottleneckRate
	}
	return o.Rate
}

// transfer is sender i's flow to receiver i under congestion control cc.
func (e *dcqcnExp) transfer(plan *Plan, i int, transport, cc string) Transfer {
	rate := e.rate(plan.Options)
	t := Transfer{Op: "write", From: plan.ByRole(RoleSender)[i], To: plan.ByRole(RoleReceiver)[i], Size: e.size,
		Count: e.count, QPs: 1, Transport: transport, MTU: e.mtu, Depth: e.depth, Rate: rate, CC: cc, RTO: e.rto, Poll: e.hostPoll, Timeout: e.timeout}
	if cc != "none" {
		t.LineRate = rate
	}
	if cc == "dcqcn" && len(e.dcqcnParams) > 0 {
		t.DCQCN = e.dcqcnParams
	}
	return t
}

// dcqcnFabric puts the switches in what a transport needs and returns
// the transport its endpoints run: netrt is gbn endpoints with NetRT on
// the ToRs, dcp DCP endpoints with every switch trimming (DCP's
// lossless control plane: header-only packets instead of drops). The
// marking, the bottleneck and the queues are want's, also on a testbed
// reused from another experiment (--reuse).
func dcqcnFabric(ctx context.Context, env *Env, want Options, transport string) (string, error) {
	o := env.Fabric.Plan().Options
	o.Rate, o.BottleneckRate, o.QueueLimit, o.TrimThreshold = want.Rate, want.BottleneckRate, want.QueueLimit, want.TrimThreshold
	o.ECN, o.ECNMin, o.ECNMax, o.ECNPMax = want.ECN, want.ECNMin, want.ECNMax, want.ECNPMax
	o.NetRT, o.DCP, o.Trim = transport == "netrt", transport == "dcp", transport == "dcp"
	if err := env.Fabric.Reconfigure(ctx, o); err != nil {
		return "", err
	}
	if transport == "netrt" {
		return "gbn", nil
	}
	return transport, nil
}

// DCQCNCell is one (transport, cc, senders) of the JSON.
type DCQCNCell struct {
	Transport string  `json:"transport"`
	CC        string  `json:"cc"`
	Senders   int     `json:"senders"`
	Goodput   float64 `json:"goodput_gbps"` // the flows' sum
	FCT       struct {
		P50 float64 `json:"p50"`
		P99 float64 `json:"p99"`
	} `json:"fct_us"` // the median of the flows' p50s, the largest p99
	// QueueDrops are the bottleneck port's queue drops (its byte
	// budget), Drops every queue's on every switch.
	QueueDrops float64 `json:"queue_drops"`
	Drops      float64 `json:"drops"`
	Trimmed    float64 `json:"trimmed"`    // DCP packets trimmed to header-only packets, every switch
	PFCPauses  float64 `json:"pfc_pauses"` // PFC frames the switches sent (NetRT's pauses)
	CEMarked   float64 `json:"ce_marked"`  // packets the bottleneck queue marked
	// CNPsSent and CNPsReceived are the endpoints' (roceperf's
	// cnps_sent, cnps_received, client and server), RateCuts the
	// senders' DCQCN rate decreases.
	CNPsSent     int64 `json:"cnps_sent"`
	CNPsReceived int64 `json:"cnps_received"`
	RateCuts     int64 `json:"rate_cuts"`
	Retx         int64 `json:"retx_packets"`
	Timeouts     int64 `json:"timeouts"`
	// Jain is Jain's fairness index of the flows' rates over the last
	// half of the time they all ran, FlowRates those rates in Mbit/s;
	// null when fewer than two samples fall there.
	Jain      *float64   `json:"jain_last_half"`
	FlowRates []float64  `json:"flow_rates_mbps"`
	Depth     DepthStats `json:"depth"`
	// Wait is how long the bottleneck switch's workers waited for a
	// CPU during the run, in ms (rocetor_worker_run_delay_seconds_total):
	// a queue is neither served nor marked meanwhile. Absent in the
	// simulator, whose switches wait for nothing.
	Wait *float64 `json:"tord_wait_ms,omitempty"`
	// NetRT is what the ToRs' NetRT stages did, in netrt's cells only.
	NetRT *dcqcnNetRT `json:"netrt,omitempty"`
	Error string      `json:"error,omitempty"`
}

// dcqcnNetRT are the NetRT counters that tell the source ToR's own
// retransmissions apart from the senders' (Retx): what it resent into
// the bottleneck, of which tail probes, for how many requests, and how
// many of those copies reached tor2 after their originals (Late: below
// the flow's ePSN, passed to the RNIC, which discards them). A probe
// or request the stage turned away because the original had not left
// tor1 yet is counted apart (ProbesDeferred, InQueue): before they
// were, such copies overtook their originals on the strict-priority
// retransmit queue (docs/experiments.md, DCQCN).
type dcqcnNetRT struct {
	Retransmitted  float64 `json:"pool_retransmitted"`
	TailProbes     float64 `json:"tail_probes"`
	ProbesDeferred float64 `json:"tail_probes_deferred"`
	Requests       float64 `json:"requests"`
	InQueue        float64 `json:"requested_in_queue"`
	Late           float64 `json:"late_at_destination"`
	// RetxQueueDrops are the bottleneck port's retransmit queue's
	// drops, part of QueueDrops.
	RetxQueueDrops float64 `json:"retransmit_queue_drops"`
}

// netrtOf reads a run's NetRT counters, every switch's added up, the
// retransmit queue's drops at the bottleneck (node's port).
func netrtOf(r *Run, node, port string) *dcqcnNetRT {
	return &dcqcnNetRT{
		Retransmitted:  sum(r, "rocetor_netrt_retransmitted_total"),
		TailProbes:     sum(r, "rocetor_netrt_tail_probes_total"),
		ProbesDeferred: sum(r, "rocetor_netrt_tail_probes_deferred_total"),
		Requests:       sum(r, "rocetor_netrt_requests_received_total"),
		InQueue:        sum(r, "rocetor_netrt_retransmit_in_queue_total"),
		Late:           sum(r, "rocetor_netrt_data_packets_total", `outcome="late"`),
		RetxQueueDrops: r.Switches[node].Sum("rocetor_queue_drops_total", `port="`+port+`"`, `queue="retransmit"`),
	}
}

// ccReport is what the experiments read of roceperf's JSON beyond
// Summary: DCQCN's signals and the congestion control's figures, the
// client's and under "server" the server's.
type ccReport struct {
	CEReceived   int64 `json:"ce_received"`
	CNPsSent     int64 `json:"cnps_sent"`
	CNPsReceived int64 `json:"cnps_received"`
	CC           *struct {
		RateCuts int64 `json:"rate_cuts"`
	} `json:"cc"`
	Server *ccReport `json:"server"`
}

// ccOf reads a flow's congestion figures, both ends added up.
func ccOf(f *PerfResult) (sent, received, cuts int64) {
	if f == nil || len(f.ClientRaw) == 0 {
		return 0, 0, 0
	}
	var r ccReport
	if json.Unmarshal(f.ClientRaw, &r) != nil {
		return 0, 0, 0
	}
	for _, c := range []*ccReport{&r, r.Server} {
		if c == nil {
			continue
		}
		sent, received = sent+c.CNPsSent, received+c.CNPsReceived
		if c.CC != nil {
			cuts += c.CC.RateCuts
		}
	}
	return sent, received, cuts
}

// dcqcnCellOf reads one run.
func dcqcnCellOf(r *Run, tr, cc string, n int, node, port string) DCQCNCell {
	c := DCQCNCell{Transport: tr, CC: cc, Senders: n, Goodput: finite(goodput(r)), Error: firstLine(r.Error)}
	c.FCT.P50, c.FCT.P99 = flowFCT(r)
	c.FCT.P50, c.FCT.P99 = finite(c.FCT.P50), finite(c.FCT.P99)
	c.QueueDrops = r.Switches[node].Sum("rocetor_queue_drops_total", `port="`+port+`"`)
	c.CEMarked = r.Switches[node].Sum("rocetor_queue_ce_marked_total", `port="`+port+`"`)
	c.Drops = sum(r, "rocetor_queue_drops_total")
	c.Trimmed = sum(r, "rocetor_trim_trimmed_packets_total")
	c.PFCPauses = sum(r, "rocetor_port_pfc_tx_frames_total")
	if w := 1e3 * r.Switches[node].Sum("rocetor_worker_run_delay_seconds_total"); w > 0 {
		c.Wait = &w
	}
	if tr == "netrt" {
		c.NetRT = netrtOf(r, node, port)
	}
	for _, f := range r.Flows {
		s, rcv, cuts := ccOf(f)
		c.CNPsSent, c.CNPsReceived, c.RateCuts = c.CNPsSent+s, c.CNPsReceived+rcv, c.RateCuts+cuts
		if f != nil {
			c.Retx, c.Timeouts = c.Retx+f.Client.RetxPackets, c.Timeouts+f.Client.Timeouts
		}
	}
	if s := r.Series; s != nil {
		c.FlowRates = s.FlowRates(s.LastHalf())
		if j := Jain(c.FlowRates); !math.IsNaN(j) {
			c.Jain = &j
		}
		c.Depth = s.DepthStats()
	}
	return c
}

func (e *dcqcnExp) params() map[string]string {
	return map[string]string{"transports": e.transports, "cc": e.ccs, "senders": e.senders, "size": strconv.Itoa(e.size),
		"count": strconv.Itoa(e.count), "mtu": strconv.Itoa(e.mtu), "depth": strconv.Itoa(e.depth), "line_rate": e.lineRate,
		"dcqcn": e.dcqcn, "sample": e.sample.String(), "timeout": e.timeout.String()}
}

func (e *dcqcnExp) Run(ctx context.Context, env *Env, res *Results) error {
	plan := env.Fabric.Plan()
	senders := plan.ByRole(RoleSender)
	if n := slices.Max(e.nList); len(senders) < n || len(plan.ByRole(RoleReceiver)) < n {
		return Usagef("%s: %d senders need a dumbbell with %d senders and %d receivers, not %s", e.Name(), n, n, n, plan.Shape())
	}
	node, port := plan.Bottleneck()
	res.Params = e.params()
	res.Params["line_rate"] = e.rate(plan.Options)
	var cells []DCQCNCell
	defer func() {
		res.Cells = cells
		res.Table = dcqcnTable(cells)
	}()
	for _, tr := range e.transportList {
		endpoints, err := dcqcnFabric(ctx, env, e.fabric, tr)
		if err != nil {
			return err
		}
		for _, n := range e.nList {
			for _, cc := range e.ccList {
				var ts []Transfer
				for i := range n {
					ts = append(ts, e.transfer(plan, i, endpoints, cc))
				}
				spec := &SeriesSpec{Node: node, Port: port, Queue: "data", Flows: senders[:n], Interval: e.sample}
				point := map[string]string{"transport": tr, "cc": cc, "senders": strconv.Itoa(n)}
				res.Runs = append(res.Runs, env.MeasureSeries(ctx, point, ts, spec))
				r := &res.Runs[len(res.Runs)-1]
				c := dcqcnCellOf(r, tr, cc, n, node, port)
				cells = append(cells, c)
				env.printf("run %s: goodput %.3f Gbit/s, Jain %s, depth mean %.0f max %.0f B (%.0f%% in [Kmin, Kmax]), %.0f drops at %s→%s, %d CNPs%s\n",
					pointKey(point), c.Goodput, fmtJain(c.Jain), c.Depth.Mean, c.Depth.Max, c.Depth.InBand*100, c.QueueDrops, node, port,
					c.CNPsSent, errSuffix(c.Error))
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func fmtWait(w *float64) string {
	if w == nil {
		return "–"
	}
	return fmtFloat(*w, 1)
}

func fmtJain(j *float64) string {
	if j == nil {
		return "–"
	}
	return fmtFloat(*j, 3)
}

func dcqcnTable(cells []DCQCNCell) Table {
	t := Table{Columns: []string{"transport", "cc", "senders", "goodput (Gbit/s)", "FCT p50/p99 (µs)", "Jain (last half)",
		"flow rates (Mbit/s)", "depth mean/max (KB)", "in [Kmin, Kmax]", "at limit", "queue drops", "CE marked", "CNPs",
		"rate cuts", "PFC", "trimmed", "retx", "NetRT resent / probes / late", "tor1 wait (ms)"}}
	for _, c := range cells {
		var rates []string
		for _, r := range c.FlowRates {
			rates = append(rates, fmtFloat(r, 0))
		}
		if len(rates) == 0 {
			rates = []string{"–"}
		}
		netrt := "–"
		if n := c.NetRT; n != nil {
			netrt = fmtInt(n.Retransmitted) + " / " + fmtInt(n.TailProbes) + " / " + fmtInt(n.Late)
		}
		t.Rows = append(t.Rows, []string{c.Transport, c.CC, strconv.Itoa(c.Senders), fmtFloat(c.Goodput, 3),
			fmtInt(c.FCT.P50) + " / " + fmtInt(c.FCT.P99), fmtJain(c.Jain), strings.Join(rates, " "),
			fmtFloat(c.Depth.Mean/1e3, 1) + " / " + fmtFloat(c.Depth.Max/1e3, 1), pct(c.Depth.InBand, c.Depth.Samples),
			pct(c.Depth.AtLimit, c.Depth.Samples), fmtInt(c.QueueDrops), fmtInt(c.CEMarked), strconv.FormatInt(c.CNPsSent, 10),
			strconv.FormatInt(c.RateCuts, 10), fmtInt(c.PFCPauses), fmtInt(c.Trimmed), strconv.FormatInt(c.Retx, 10), netrt,
			fmtWait(c.Wait)})
	}
	return t
}

// ccRatePlot is each sender's DCQCN rate over time, which only the
// simulator samples (Series.CCRate): the rate trace.
func ccRatePlot(name, tr string, n int, only func(*Group) bool) PlotSpec {
	return PlotSpec{File: fmt.Sprintf("rates-cc-%s-%d.png", tr, n),
		Title:  fmt.Sprintf("%s: %s with DCQCN, %d senders: each sender's DCQCN rate", name, tr, n),
		XLabel: "time (s)", YLabel: "DCQCN rate (Mbit/s)", Optional: true,
		Only: func(g *Group) bool { return only(g) && g.Point["cc"] == "dcqcn" },
		Lines: func(g *Group) []Line {
			s := seriesOf(g)
			if s == nil {
				return nil
			}
			var lines []Line
			for i, r := range s.CCRate {
				var pts []XY
				for k, v := range r {
					if k < len(s.T) {
						pts = append(pts, XY{s.T[k], v / 1e6})
					}
				}
				lines = append(lines, Line{Name: "sender " + s.FlowPorts[i], Points: pts})
			}
			return lines
		}}
}

// pct is a share as a table cell, "–" with no sample.
func pct(v float64, samples int) string {
	if samples == 0 {
		return "–"
	}
	return fmtFloat(v*100, 0) + "%"
}

// seriesOf is the last run of a group that has a series, failed or not
// (a run without DCQCN that timed out still shows its queue).
func seriesOf(g *Group) *Series {
	for i := len(g.Runs) - 1; i >= 0; i-- {
		if s := g.Runs[i].Series; s != nil {
			return s
		}
	}
	return nil
}

// Plots are, per transport and number of senders, the bottleneck's
// depth over time with each cc and the thresholds, and per transport,
// cc and senders the flows' rates over time; dcqcn-incast adds the
// bottleneck's drops and the p99 FCT against the senders.
func (e *dcqcnExp) Plots() []PlotSpec {
	var specs []PlotSpec
	for _, tr := range e.transportList {
		for _, n := range e.nList {
			only := func(g *Group) bool { return g.Point["transport"] == tr && g.Point["senders"] == strconv.Itoa(n) }
			specs = append(specs, PlotSpec{File: fmt.Sprintf("depth-%s-%d.png", tr, n),
				Title:  fmt.Sprintf("%s: %s, %d senders: depth of tor1's queue toward tor2", e.Name(), tr, n),
				XLabel: "time (s)", YLabel: "queue depth (KB)", Only: only,
				Series: func(g *Group) string { return "cc " + g.Point["cc"] },
				Lines: func(g *Group) []Line {
					s := seriesOf(g)
					if s == nil {
						return nil
					}
					var depth []XY
					for i, t := range s.T {
						depth = append(depth, XY{t, s.Depth[i] / 1e3})
					}
					end := s.T[len(s.T)-1]
					flat := func(name string, v float64) Line {
						return Line{Name: name, Points: []XY{{0, v / 1e3}, {end, v / 1e3}}, Shared: true}
					}
					lines := []Line{{Name: "depth", Points: depth}}
					if s.Kmax > 0 {
						lines = append(lines, flat("Kmin", s.Kmin), flat("Kmax", s.Kmax))
					}
					if s.Limit > 0 {
						lines = append(lines, flat("limit", s.Limit))
					}
					return lines
				}})
			for _, cc := range e.ccList {
				specs = append(specs, PlotSpec{File: fmt.Sprintf("rates-%s-%s-%d.png", tr, cc, n),
					Title:  fmt.Sprintf("%s: %s with cc %s, %d senders: rate of each flow", e.Name(), tr, cc, n),
					XLabel: "time (s)", YLabel: "rate into tor1 (Mbit/s)",
					Only: func(g *Group) bool { return only(g) && g.Point["cc"] == cc },
					Lines: func(g *Group) []Line {
						s := seriesOf(g)
						if s == nil {
							return nil
						}
						var lines []Line
						for i, pts := range s.Rates() {
							lines = append(lines, Line{Name: "flow from " + s.FlowPorts[i], Points: pts})
						}
						return lines
					}})
				if cc == "dcqcn" {
					specs = append(specs, ccRatePlot(e.Name(), tr, n, only))
				}
			}
		}
	}
	if e.incast {
		n := func(g *Group) float64 { v, _ := strconv.Atoi(g.Point["senders"]); return float64(v) }
		series := func(g *Group) string { return g.Point["transport"] + " cc " + g.Point["cc"] }
		bottleneck := func(metric string) func(*Group) float64 {
			return func(g *Group) float64 {
				for i := len(g.Runs) - 1; i >= 0; i-- {
					if r := g.Runs[i]; r.Switches != nil && r.Series != nil {
						return r.Switches[r.Series.Node].Sum(metric, `port="`+r.Series.Port+`"`)
					}
				}
				return math.NaN()
			}
		}
		specs = append(specs,
			PlotSpec{File: "drops.png", Title: "dcqcn-incast: drops at tor1's queue toward tor2", XLabel: "senders",
				YLabel: "queue drops", X: n, Y: bottleneck("rocetor_queue_drops_total"), Series: series},
			PlotSpec{File: "fct_p99.png", Title: "dcqcn-incast: p99 FCT", XLabel: "senders", YLabel: "FCT p99 (µs)", X: n,
				Y:      func(g *Group) float64 { return g.Median(func(r *Run) float64 { _, p99 := flowFCT(r); return p99 }) },
				Series: series})
	}
	return specs
}
