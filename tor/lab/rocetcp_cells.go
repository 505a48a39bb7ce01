package lab

import (
	"fmt"
	"math"
	"strconv"
)

// RoCETCPCell is one (qos, netrt, mix) cell of roce-tcp's JSON: its
// figures over the cell's runs, each with its spread.
type RoCETCPCell struct {
	QoS   bool   `json:"qos"`
	NetRT bool   `json:"netrt"`
	Mix   string `json:"mix"` // roce, tcp or both
	Runs  int    `json:"runs"`
	// RoCE's goodput, end-to-end retransmitted packets and timeouts
	// (roceperf's), with RoCE in the mix.
	RoCEGoodput Spread `json:"roce_goodput_gbps"`
	E2ERetx     Spread `json:"e2e_retx"`
	Timeouts    Spread `json:"timeouts"`
	// TCP's throughput at the receiver and the sender's retransmitted
	// segments (iperf3's), with TCP in the mix.
	TCPGbps Spread `json:"tcp_gbps"`
	TCPRetx Spread `json:"tcp_retx"`
	// Ping's round-trip times from the TCP sender to its receiver
	// (DSCP 0: the lossy class with QoS), in µs, and the share of
	// pings unanswered.
	PingP50  Spread `json:"ping_p50_us"`
	PingP99  Spread `json:"ping_p99_us"`
	PingLost Spread `json:"ping_lost"`
	// Drops in tor1's queues toward the core, where the flows meet:
	// the data queue (RoCE's with QoS, everyone's without) and the
	// lossy one (TCP's and ping's with QoS).
	DataDrops  Spread `json:"data_queue_drops"`
	LossyDrops Spread `json:"lossy_queue_drops"`
	// Destroyed is what the impaired link destroyed (RoCEv2 frames).
	Destroyed Spread `json:"destroyed"`
	// NetRT's own view, with NetRT: requests tor2 sent, packets tor1
	// retransmitted from its pool, flows tor2 gave up on (each give-up
	// leaves a loss to the endpoints, an end-to-end retransmission).
	NetRTRequests Spread `json:"netrt_requests"`
	NetRTRetx     Spread `json:"netrt_retransmits"`
	NetRTWaits    Spread `json:"netrt_waits"`
	// Wait is how long the switches' workers waited for a CPU during a
	// run, in ms, all switches together
	// (rocetor_worker_run_delay_seconds_total).
	Wait Spread `json:"tord_wait_ms"`
	// RoCEKept and TCPKept (mix both) are the mean goodput and
	// throughput as shares of the same qos and netrt's runs alone; nil
	// where there is no such share.
	RoCEKept *float64 `json:"roce_kept,omitempty"`
	TCPKept  *float64 `json:"tcp_kept,omitempty"`
	// Checks are issue 28's claims on the cell, each "met" or "NOT
	// met" with the figure behind it: with QoS RoCE keeps ≥ 90 % of its
	// goodput alone; with NetRT no end-to-end retransmission.
	Checks []string `json:"checks,omitempty"`
	Errors []string `json:"errors,omitempty"`
}

// roceKeepsShare is what RoCE beside TCP must keep of its goodput alone
// with QoS (issue 28).
const roceKeepsShare = 0.9

// roceTCPCells summarises the runs, a cell per point in the order the
// points first ran.
func roceTCPCells(runs []Run, plan *Plan) []RoCETCPCell {
	node, port := plan.Bottleneck()
	var cells []RoCETCPCell
	for _, g := range GroupRuns(runs) {
		c := RoCETCPCell{QoS: g.Point["qos"] == "on", NetRT: g.Point["netrt"] == "on", Mix: g.Point["mix"], Runs: len(g.Runs)}
		col := func(f func(r *Run) float64) Spread {
			var vs []float64
			for _, r := range g.Runs {
				vs = append(vs, f(r))
			}
			return spreadOf(vs)
		}
		roce := func(f func(s *Summary) float64) Spread {
			return col(func(r *Run) float64 {
				if r.Perf == nil || c.Mix == mixTCP {
					return math.NaN()
				}
				return f(&r.Perf.Client)
			})
		}
		c.RoCEGoodput = roce(func(s *Summary) float64 { return s.GoodputGbps })
		c.E2ERetx = roce(func(s *Summary) float64 { return float64(s.RetxPackets) })
		c.Timeouts = roce(func(s *Summary) float64 { return float64(s.Timeouts) })
		tcp := func(f func(t *TCPResult) float64) Spread {
			return col(func(r *Run) float64 {
				if r.TCP == nil {
					return math.NaN()
				}
				return f(r.TCP)
			})
		}
		c.TCPGbps = tcp(func(t *TCPResult) float64 { return t.Gbps })
		c.TCPRetx = tcp(func(t *TCPResult) float64 { return float64(t.Retransmits) })
		c.PingP50 = col(func(r *Run) float64 { return r.Ping.Quantile(0.5) })
		c.PingP99 = col(func(r *Run) float64 { return r.Ping.Quantile(0.99) })
		c.PingLost = col(func(r *Run) float64 { return r.Ping.Lost() })
		drops := func(queue string) Spread {
			return col(func(r *Run) float64 {
				if r.Switches == nil {
					return math.NaN()
				}
				return r.Switches[node].Sum("rocetor_queue_drops_total", `port="`+port+`"`, `queue="`+queue+`"`)
			})
		}
		c.DataDrops = drops("data")
		if c.QoS { // without the qos section there is no lossy queue
			c.LossyDrops = drops("lossy")
		}
		c.Destroyed = col(func(r *Run) float64 {
			if r.Switches == nil {
				return math.NaN()
			}
			return r.Destroyed("")
		})
		c.Wait = col(func(r *Run) float64 {
			if r.Switches == nil {
				return math.NaN()
			}
			return 1e3 * sum(r, "rocetor_worker_run_delay_seconds_total")
		})
		if c.NetRT {
			netrt := func(metric string) Spread {
				return col(func(r *Run) float64 {
					if r.Switches == nil {
						return math.NaN()
					}
					return sum(r, metric)
				})
			}
			c.NetRTRequests = netrt("rocetor_netrt_requests_sent_total")
			c.NetRTRetx = netrt("rocetor_netrt_retransmitted_total")
			c.NetRTWaits = netrt("rocetor_netrt_waits_total")
		}
		for _, r := range g.Runs {
			if r.Error != "" {
				c.Errors = append(c.Errors, fmt.Sprintf("#%d: %s", r.Repeat, firstLine(r.Error)))
			}
		}
		cells = append(cells, c)
	}
	keep(cells)
	return cells
}

// keep fills the shares of the cells with both flows and the checks.
func keep(cells []RoCETCPCell) {
	alone := func(c RoCETCPCell, mix string) *RoCETCPCell {
		for i := range cells {
			if o := &cells[i]; o.QoS == c.QoS && o.NetRT == c.NetRT && o.Mix == mix {
				return o
			}
		}
		return nil
	}
	for i := range cells {
		c := &cells[i]
		if c.Mix == mixBoth {
			if a := alone(*c, mixRoCE); a != nil {
				c.RoCEKept = meanShare(c.RoCEGoodput, a.RoCEGoodput)
			}
			if a := alone(*c, mixTCP); a != nil {
				c.TCPKept = meanShare(c.TCPGbps, a.TCPGbps)
			}
		}
		c.Checks = checks(c)
	}
}

// meanShare is with's mean as a share of alone's, nil if either has no
// run or alone's is zero.
func meanShare(with, alone Spread) *float64 {
	if with.N == 0 || alone.N == 0 || alone.Mean == 0 {
		return nil
	}
	v := with.Mean / alone.Mean
	return &v
}

// checks are issue 28's claims that apply to a cell.
func checks(c *RoCETCPCell) []string {
	var out []string
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "NOT met"
	}
	if c.QoS && c.Mix == mixBoth && c.RoCEKept != nil {
		k := *c.RoCEKept
		out = append(out, fmt.Sprintf("RoCE keeps ≥ %.0f %% of its goodput alone: %s (%.1f %%)", roceKeepsShare*100,
			verdict(k >= roceKeepsShare), k*100))
	}
	if c.QoS && c.NetRT && c.Mix != mixTCP && c.E2ERetx.N > 0 {
		out = append(out, fmt.Sprintf("no end-to-end retransmission with NetRT: %s (at most %s)", verdict(c.E2ERetx.Max == 0),
			fmtInt(c.E2ERetx.Max)))
	}
	return out
}

// roceTCPTable is the Markdown table of the cells.
func roceTCPTable(cells []RoCETCPCell) Table {
	t := Table{Columns: []string{"QoS", "NetRT", "flows", "runs", "RoCE goodput (Gbit/s)", "RoCE e2e retx", "RoCE timeouts",
		"TCP (Gbit/s)", "TCP retx", "ping p50 (µs)", "ping p99 (µs)", "data / lossy queue drops", "NetRT requests / ToR retx / give-ups", "tords' wait (ms)", "RoCE kept", "TCP kept", "checks"}}
	pct := func(v *float64) string {
		if v == nil {
			return "–"
		}
		return fmtFloat(*v*100, 1) + " %"
	}
	for _, c := range cells {
		check := ""
		for i, k := range c.Checks {
			if i > 0 {
				check += "; "
			}
			check += k
		}
		if len(c.Errors) > 0 {
			check += fmt.Sprintf(" (%d failed: %s)", len(c.Errors), c.Errors[0])
		}
		t.Rows = append(t.Rows, []string{onOffName(c.QoS), onOffName(c.NetRT), c.Mix, strconv.Itoa(c.Runs),
			c.RoCEGoodput.format(3), c.E2ERetx.format(0), c.Timeouts.format(0), c.TCPGbps.format(3), c.TCPRetx.format(0),
			c.PingP50.format(0), c.PingP99.format(0), c.DataDrops.format(0) + " / " + c.LossyDrops.format(0), netrtCol(c),
			c.Wait.format(1), pct(c.RoCEKept), pct(c.TCPKept), check})
	}
	return t
}

// Plots draws RoCE's goodput and TCP's throughput per mix, a line per
// (QoS, NetRT) setting, and ping's p99.
func (e *roceTCP) Plots() []PlotSpec {
	names := []string{mixRoCE, mixTCP, mixBoth}
	x := func(g *Group) float64 {
		for i, n := range names {
			if g.Point["mix"] == n {
				return float64(i)
			}
		}
		return math.NaN()
	}
	series := func(g *Group) string { return "QoS " + g.Point["qos"] + ", NetRT " + g.Point["netrt"] }
	median := func(f func(r *Run) float64) func(*Group) float64 {
		return func(g *Group) float64 { return g.Median(f) }
	}
	roce := median(func(r *Run) float64 {
		if r.Perf == nil || r.Point["mix"] == mixTCP {
			return math.NaN()
		}
		return r.Perf.Client.GoodputGbps
	})
	tcp := median(func(r *Run) float64 {
		if r.TCP == nil {
			return math.NaN()
		}
		return r.TCP.Gbps
	})
	p99 := median(func(r *Run) float64 { return r.Ping.Quantile(0.99) / 1000 })
	xl := "flows"
	return []PlotSpec{
		{File: "roce_goodput.png", Title: "roce-tcp: RoCE goodput", XLabel: xl, YLabel: "Gbit/s", X: x, Y: roce, Series: series, XNames: names},
		{File: "tcp_throughput.png", Title: "roce-tcp: TCP throughput", XLabel: xl, YLabel: "Gbit/s", X: x, Y: tcp, Series: series, XNames: names},
		{File: "ping_p99.png", Title: "roce-tcp: ping p99 across TCP's path", XLabel: xl, YLabel: "ms", X: x, Y: p99, Series: series, XNames: names},
	}
}

// netrtCol is the NetRT column of a cell: "–" without NetRT.
func netrtCol(c RoCETCPCell) string {
	if !c.NetRT {
		return "–"
	}
	return c.NetRTRequests.format(0) + " / " + c.NetRTRetx.format(0) + " / " + c.NetRTWaits.format(0)
}
