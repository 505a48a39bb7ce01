package lab

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// roceTCP is RoCE beside TCP (project issue 28, item 5): RoCE WRITEs
// and an iperf3 TCP flow through the same ToRs, with tord's default
// traffic classes (qos: {}) and without, with NetRT and without, each
// flow alone and both together, with ping across the TCP flow's path
// throughout.
//
// The fabric is the chain with two hosts per ToR — h1, h2 — tor1 —
// core1 — tor2 — h3, h4 (the multipath shape with one path) — RoCE from
// h1 to h3, TCP and ping from h2 to h4: separate hosts behind the same
// ToRs, as a rack's RDMA and TCP workloads are, so that the flows meet
// only where a fabric makes them meet, in tor1's queue toward the core
// and on the core's lossy link, not in one host's stack. The loss
// (--loss, default 1 %) is core1's link with tor2, as in netrt-loss; it
// destroys RoCEv2 frames only (tor/impair), so TCP and ping lose
// nothing there.
//
// Without QoS every frame shares a port's data queue, where TCP's window
// fills the queue RoCE needs. With it RoCE (DSCP 26) has the lossless
// data queue, TCP and ping (DSCP 0) the lossy one, each at DWRR weight
// 50: RoCE paced below half the bottleneck (--roce-rate) should keep
// its goodput alone and TCP take the rest. The cells say whether they
// did (Checks); the run records what happened either way.
//
// The ports run at 200 Mbit/s and RoCE at 80 so that the links, not the
// two CPUs, are what the flows share. At 1 Gbit/s (until 2026-11-29)
// RoCE and TCP together moved 0.50–0.56 Gbit/s: three tords, two
// roceperfs, iperf3 and ping on two CPUs, where TCP took CPU, not link,
// from RoCE, and no scheduler in a switch can give that back. The
// switches and hosts sleep when idle (srOptions, --host-poll), and
// RoCE's RTO is dcqcnRTO: the 16 ms default fired on delay in the
// NetRT cells (1–4 timeouts a run, no give-up). With both flows, TCP
// runs at least --lead plus 1.5 times RoCE's duration alone in the same
// cell, so that RoCE ends beside TCP.
type roceTCP struct {
	opts     Options
	runs     int
	size     int
	count    int
	mtu      int
	roceRate string
	tcpTime  time.Duration
	lead     time.Duration
	interval time.Duration
	timeout  time.Duration
	rto      time.Duration
	hostPoll string
	qos      string
	netrt    string
	mixes    string

	qosList, netrtList []bool
	mixList            []string
	// alone is RoCE's longest duration alone so far, by cell (qos,
	// netrt), which the cell's runs with both flows give TCP.
	alone map[[2]bool]time.Duration
}

// The mixes: which flows a run carries.
const (
	mixRoCE = "roce"
	mixTCP  = "tcp"
	mixBoth = "both"
)

func newRoCETCP() *roceTCP {
	o := srOptions("multipath")
	o.Paths, o.Senders, o.Receivers, o.Loss, o.Rate = 1, 2, 2, 0.01, "200M"
	return &roceTCP{opts: o, runs: 3, size: 65536, count: 500, mtu: 1024, roceRate: "80M", tcpTime: 4 * time.Second,
		lead: time.Second, interval: 50 * time.Millisecond, timeout: 2 * time.Minute, rto: dcqcnRTO, hostPoll: "interrupt",
		qos: "off,on", netrt: "off,on", mixes: "roce,tcp,both"}
}

func (e *roceTCP) Name() string { return "roce-tcp" }

func (e *roceTCP) Synopsis() string {
	return "RoCE WRITEs beside iperf3 TCP through the same ToRs, QoS off and on, NetRT off and on: RoCE goodput and e2e retransmissions, TCP throughput, ping RTT"
}

func (e *roceTCP) Flags(fs *flag.FlagSet) {
	FabricFlags(fs, &e.opts, true)
	fs.StringVar(&e.qos, "with-qos", e.qos, "comma-separated: off (every frame on the data queue), on (tord's default traffic classes, qos: {})")
	fs.StringVar(&e.netrt, "with-netrt", e.netrt, "comma-separated: off, on (NetRT between tor1 and tor2)")
	fs.StringVar(&e.mixes, "mixes", e.mixes, "comma-separated: roce (RoCE alone), tcp (TCP alone), both")
	fs.IntVar(&e.runs, "runs", e.runs, "runs of every cell, for the spread")
	fs.IntVar(&e.size, "size", e.size, "RoCE WRITE size in bytes")
	fs.IntVar(&e.count, "count", e.count, "RoCE WRITEs per run")
	fs.IntVar(&e.mtu, "mtu", e.mtu, "RoCE path MTU")
	fs.StringVar(&e.roceRate, "roce-rate", e.roceRate, "roceperf's sending rate: below the data queue's DWRR share (half of --rate) for RoCE to keep its goodput beside TCP")
	fs.DurationVar(&e.tcpTime, "tcp-time", e.tcpTime, "iperf3's run time at least; with both flows RoCE starts --lead after TCP, and TCP runs at least --lead plus 1.5× RoCE's longest duration alone in the cell")
	fs.DurationVar(&e.lead, "lead", e.lead, "how long TCP runs before RoCE starts (both flows)")
	fs.DurationVar(&e.interval, "ping-interval", e.interval, "ping's interval")
	fs.DurationVar(&e.timeout, "timeout", e.timeout, "roceperf's --timeout per run")
	fs.DurationVar(&e.rto, "rto", e.rto, "the RoCE sender's first retransmission timeout (roceperf --rto)")
	fs.StringVar(&e.hostPoll, "host-poll", e.hostPoll, "roceperf's --poll on both RoCE hosts: adaptive, busy or interrupt (empty: roceperf's, adaptive)")
}

// onOff parses a comma-separated list of off and on.
func onOff(flag, s string) ([]bool, error) {
	var out []bool
	for _, v := range splitList(s) {
		switch v {
		case "off":
			out = append(out, false)
		case "on":
			out = append(out, true)
		default:
			return nil, Usagef("--%s: %q is neither off nor on", flag, v)
		}
	}
	if len(out) == 0 {
		return nil, Usagef("--%s: none given", flag)
	}
	return out, nil
}

func (e *roceTCP) Setup() (Options, error) {
	var err error
	if e.qosList, err = onOff("with-qos", e.qos); err != nil {
		return Options{}, err
	}
	if e.netrtList, err = onOff("with-netrt", e.netrt); err != nil {
		return Options{}, err
	}
	e.mixList = nil
	for _, m := range splitList(e.mixes) {
		if m != mixRoCE && m != mixTCP && m != mixBoth {
			return Options{}, Usagef("--mixes: %q is not roce, tcp or both", m)
		}
		e.mixList = append(e.mixList, m)
	}
	switch {
	case len(e.mixList) == 0:
		return Options{}, Usagef("--mixes: none given")
	case e.runs < 1 || e.size < 1 || e.count < 1:
		return Options{}, Usagef("--runs, --size and --count must be ≥ 1")
	case e.tcpTime < time.Second || e.lead < 0 || e.lead >= e.tcpTime:
		return Options{}, Usagef("--tcp-time must be ≥ 1s and --lead in [0, --tcp-time)")
	case e.interval < 2*time.Millisecond || e.timeout <= 0 || e.rto <= 0:
		return Options{}, Usagef("--ping-interval must be ≥ 2ms (ping's floor), --timeout and --rto > 0")
	case !validPoll(e.hostPoll):
		return Options{}, Usagef("--host-poll %q: want adaptive, busy or interrupt", e.hostPoll)
	}
	o := e.opts
	o.Topology, o.Paths, o.Senders, o.Receivers = "multipath", 1, 2, 2
	o.QoS, o.NetRT = e.qosList[0], e.netrtList[0]
	return o, nil
}

// roceTCPHosts are the hosts of the two flows: RoCE from the first
// sender to the first receiver, TCP and ping from the second to the
// second.
type roceTCPHosts struct{ roceFrom, roceTo, tcpFrom, tcpTo string }

func (e *roceTCP) Run(ctx context.Context, env *Env, res *Results) error {
	if env.Apps == nil {
		return Usagef("roce-tcp runs iperf3 and ping in the hosts, which this backend has not")
	}
	plan := env.Fabric.Plan()
	s, r := plan.ByRole(RoleSender), plan.ByRole(RoleReceiver)
	if len(s) < 2 || len(r) < 2 {
		return fmt.Errorf("roce-tcp needs two hosts behind each ToR, the plan has %d and %d", len(s), len(r))
	}
	h := roceTCPHosts{s[0], r[0], s[1], r[1]}
	res.Params = map[string]string{"with_qos": e.qos, "with_netrt": e.netrt, "mixes": e.mixes, "runs": strconv.Itoa(e.runs),
		"size": strconv.Itoa(e.size), "count": strconv.Itoa(e.count), "mtu": strconv.Itoa(e.mtu), "roce_rate": e.roceRate,
		"tcp_time": e.tcpTime.String(), "lead": e.lead.String(), "rto": e.rto.String(), "host_poll": e.hostPoll, "ping_interval": e.interval.String(), "transport": "gbn",
		"roce": h.roceFrom + " → " + h.roceTo, "tcp": h.tcpFrom + " → " + h.tcpTo, "ping": h.tcpFrom + " → " + h.tcpTo + ", DSCP 0"}
	defer func() {
		cells := roceTCPCells(res.Runs, plan)
		res.Cells, res.Table = cells, roceTCPTable(cells)
		for _, c := range cells {
			for _, k := range c.Checks {
				env.printf("roce-tcp: qos %v, netrt %v, %s: %s\n", c.QoS, c.NetRT, c.Mix, k)
			}
		}
	}()
	e.alone = map[[2]bool]time.Duration{}
	for _, qos := range e.qosList {
		for _, netrt := range e.netrtList {
			o := env.Fabric.Plan().Options
			o.QoS, o.NetRT = qos, netrt
			if err := env.Fabric.Reconfigure(ctx, o); err != nil {
				return fmt.Errorf("qos %v, netrt %v: %w", qos, netrt, err)
			}
			for rep := 1; rep <= e.runs; rep++ {
				for _, mix := range e.mixList {
					if err := ctx.Err(); err != nil {
						return err
					}
					point := map[string]string{"qos": onOffName(qos), "netrt": onOffName(netrt), "mix": mix}
					run := e.measure(ctx, env, point, rep, mix, h, e.tcpFor(qos, netrt, mix))
					if mix == mixRoCE && run.Perf != nil {
						cell := [2]bool{qos, netrt}
						e.alone[cell] = max(e.alone[cell], time.Duration(run.Perf.Client.DurationS*float64(time.Second)))
					}
					res.Runs = append(res.Runs, run)
					env.printf("%s\n", describeRoCETCP(&run))
				}
			}
		}
	}
	return ctx.Err()
}

func onOffName(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// tcpFor is how long TCP runs in a mix of the cell (qos, netrt):
// --tcp-time, and with both flows at least --lead plus 1.5 times RoCE's
// longest duration alone in the cell.
func (e *roceTCP) tcpFor(qos, netrt bool, mix string) time.Duration {
	d := e.tcpTime
	if a := e.alone[[2]bool{qos, netrt}]; mix == mixBoth && a > 0 {
		d = max(d, e.lead+(a*3/2).Round(time.Second)+time.Second)
	}
	return d
}

// measure runs one mix between two scrapes of every switch: ping from
// the start to the end, TCP for tcpTime, RoCE's WRITEs (after --lead
// when TCP runs too).
func (e *roceTCP) measure(ctx context.Context, env *Env, point map[string]string, rep int, mix string, h roceTCPHosts, tcpTime time.Duration) Run {
	run := Run{Point: point, Repeat: rep, Started: time.Now().UTC()}
	env.between(ctx, &run, func() error {
		pctx, stopPing := context.WithCancel(ctx)
		defer stopPing()
		var wg sync.WaitGroup
		var pingErr, tcpErr, roceErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			run.Ping, pingErr = env.Apps.Ping(pctx, h.tcpFrom, h.tcpTo, e.interval)
		}()
		var tcp sync.WaitGroup
		if mix != mixRoCE {
			tcp.Add(1)
			go func() {
				defer tcp.Done()
				run.TCP, tcpErr = env.Apps.TCP(ctx, TCPFlow{From: h.tcpFrom, To: h.tcpTo, Duration: tcpTime})
			}()
		}
		if mix != mixTCP {
			if mix == mixBoth {
				select {
				case <-time.After(e.lead):
				case <-ctx.Done():
				}
			}
			run.Perf, roceErr = env.Perf.Transfer(ctx, Transfer{Op: "write", From: h.roceFrom, To: h.roceTo, Size: e.size,
				Count: e.count, QPs: 1, Transport: "gbn", MTU: e.mtu, Rate: e.roceRate, RTO: e.rto, Poll: e.hostPoll, Timeout: e.timeout})
		}
		tcp.Wait()
		stopPing()
		wg.Wait()
		if mix == mixBoth && run.Perf != nil && run.TCP != nil && !run.TCP.End.IsZero() && run.Perf.Client.End.After(run.TCP.End) {
			roceErr = errors.Join(roceErr, fmt.Errorf("RoCE ended %v after TCP: raise --tcp-time", run.Perf.Client.End.Sub(run.TCP.End).Round(time.Millisecond)))
		}
		return errors.Join(roceErr, tcpErr, pingErr)
	})
	return run
}

// describeRoCETCP is one progress line.
func describeRoCETCP(r *Run) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s #%d:", pointKey(r.Point), r.Repeat)
	if r.Perf != nil {
		s := r.Perf.Client
		fmt.Fprintf(&b, " RoCE %.3f Gbit/s, %d retransmitted, %d timeouts;", s.GoodputGbps, s.RetxPackets, s.Timeouts)
	}
	if r.TCP != nil {
		fmt.Fprintf(&b, " TCP %.3f Gbit/s, %d retransmits;", r.TCP.Gbps, r.TCP.Retransmits)
	}
	if r.Ping != nil {
		fmt.Fprintf(&b, " ping p50 %s µs p99 %s µs (%d of %d answered)", fmtInt(r.Ping.Quantile(0.5)), fmtInt(r.Ping.Quantile(0.99)),
			len(r.Ping.RTTus), r.Ping.Sent)
	}
	if r.Error != "" {
		b.WriteString(" FAILED: " + firstLine(r.Error))
	}
	return b.String()
}

// Spread is a figure over a cell's runs: mean, standard deviation
// (sample), minimum and maximum of the runs that gave it; all zero with
// N zero (none did).
type Spread struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// spreadOf is the spread of the values that are not NaN.
func spreadOf(vs []float64) Spread {
	vs = slices.DeleteFunc(slices.Clone(vs), math.IsNaN)
	if len(vs) == 0 {
		return Spread{}
	}
	s := Spread{N: len(vs), Min: slices.Min(vs), Max: slices.Max(vs)}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	s.Mean = sum / float64(len(vs))
	if len(vs) > 1 {
		ss := 0.0
		for _, v := range vs {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(vs)-1))
	}
	return s
}

// String is "mean ± sd (min–max)", "–" with no value.
func (s Spread) String() string { return s.format(3) }

func (s Spread) format(prec int) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return fmtFloat(s.Mean, prec)
	}
	return fmt.Sprintf("%s ± %s (%s–%s)", fmtFloat(s.Mean, prec), fmtFloat(s.SD, prec), fmtFloat(s.Min, prec), fmtFloat(s.Max, prec))
}
