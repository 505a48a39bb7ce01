package perf

import (
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// serve --metrics ADDR serves Prometheus metrics on /metrics, so that a
// testbed scrapes its hosts as it scrapes its switches. The figures are
// the endpoint's over every round: the finished rounds' totals, plus the
// running round's endpoint as last published (about once a
// millisecond). Names follow tord's: the rocetor_ prefix, base units,
// _total counters, no per-flow labels.

// serveMetrics sums the server's rounds at scrape time. Safe for
// concurrent use: the serve loop updates it, the HTTP server reads it.
type serveMetrics struct {
	mu    sync.Mutex
	ended Counters // the endpoints of the rounds that ended
	runs  map[bool]uint64
	bytes uint64 // verified bytes of finished runs
	// The running round: its endpoint, QPs and clients.
	live    session
	qps     int
	clients int
	descs   map[string]*prometheus.Desc
}

var metricHelp = []struct{ name, help string }{
	{"roceperf_runs_total", "Client runs finished, by result (ok: verified; failed)."},
	{"roceperf_qps", "QPs of the round running now, every client's."},
	{"roceperf_clients", "Clients of the round running now."},
	{"roceperf_verified_bytes_total", "Bytes the server verified in finished runs."},
	{"roceperf_packets_sent_total", "Frames the endpoint sent on its port."},
	{"roceperf_packets_received_total", "Frames the endpoint received on its port."},
	{"roceperf_retransmitted_packets_total", "Packets the endpoint's transport sent again."},
	{"roceperf_timeouts_total", "Retransmission timeouts of the endpoint's transport."},
	{"roceperf_naks_sent_total", "NAKs the endpoint sent."},
	{"roceperf_naks_received_total", "NAKs the endpoint received."},
	{"roceperf_ce_received_total", "CE-marked packets the endpoint received."},
	{"roceperf_cnps_sent_total", "CNPs the endpoint sent (DCQCN's notification point)."},
	{"roceperf_cnps_received_total", "CNPs the endpoint received."},
	{"roceperf_int_no_room_total", "INT tails the endpoint left out: no room in the frame buffer."},
}

func newServeMetrics() *serveMetrics {
	m := &serveMetrics{runs: map[bool]uint64{}, descs: map[string]*prometheus.Desc{}}
	for _, h := range metricHelp {
		var labels []string
		if h.name == "roceperf_runs_total" {
			labels = []string{"result"}
		}
		m.descs[h.name] = prometheus.NewDesc("rocetor_"+h.name, h.help, labels, nil)
	}
	return m
}

// started records the round now running: its session and clients.
func (m *serveMetrics) started(s session, rs []*serverRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live, m.qps, m.clients = s, 0, len(rs)
	for _, r := range rs {
		m.qps += r.p.h.QPs
	}
}

// stopped moves the round's stopped endpoint's counters into the totals,
// in one step with forgetting it, so a scrape counts them once.
func (m *serveMetrics) stopped(c Counters) {
	m.mu.Lock()
	defer m.mu.Unlock()
	addCounters(&m.ended, &c)
	m.live, m.qps, m.clients = nil, 0, 0
}

// finished counts a run.
func (m *serveMetrics) finished(rep *ServerReport, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs[err == nil]++
	m.bytes += uint64(rep.VerifiedBytes)
}

func addCounters(to, c *Counters) {
	to.PacketsSent += c.PacketsSent
	to.PacketsReceived += c.PacketsReceived
	to.RetxPackets += c.RetxPackets
	to.Timeouts += c.Timeouts
	to.NAKsSent += c.NAKsSent
	to.NAKsReceived += c.NAKsReceived
	to.CEReceived += c.CEReceived
	to.CNPsSent += c.CNPsSent
	to.CNPsReceived += c.CNPsReceived
	to.INTNoRoom += c.INTNoRoom
}

// Describe implements prometheus.Collector.
func (m *serveMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the ended rounds plus the
// running one's endpoint.
func (m *serveMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.ended
	if m.live != nil {
		live := m.live.LiveCounters()
		addCounters(&t, &live)
	}
	c := func(name string, v uint64) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.CounterValue, float64(v))
	}
	g := func(name string, v int) {
		ch <- prometheus.MustNewConstMetric(m.descs[name], prometheus.GaugeValue, float64(v))
	}
	runs := m.descs["roceperf_runs_total"]
	ch <- prometheus.MustNewConstMetric(runs, prometheus.CounterValue, float64(m.runs[true]), "ok")
	ch <- prometheus.MustNewConstMetric(runs, prometheus.CounterValue, float64(m.runs[false]), "failed")
	g("roceperf_qps", m.qps)
	g("roceperf_clients", m.clients)
	c("roceperf_verified_bytes_total", m.bytes)
	c("roceperf_packets_sent_total", t.PacketsSent)
	c("roceperf_packets_received_total", t.PacketsReceived)
	c("roceperf_retransmitted_packets_total", t.RetxPackets)
	c("roceperf_timeouts_total", t.Timeouts)
	c("roceperf_naks_sent_total", t.NAKsSent)
	c("roceperf_naks_received_total", t.NAKsReceived)
	c("roceperf_ce_received_total", t.CEReceived)
	c("roceperf_cnps_sent_total", t.CNPsSent)
	c("roceperf_cnps_received_total", t.CNPsReceived)
	c("roceperf_int_no_room_total", t.INTNoRoom)
}

// serveMetricsHTTP listens on addr and serves m on /metrics until the
// returned stop is called.
func serveMetricsHTTP(addr string, m *serveMetrics) (net.Addr, func(), error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(m); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln) // returns when stop closes it
	return ln.Addr(), func() { srv.Close() }, nil
}
