package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/inband"
)

// intCollector exports the INT stages' counters per stamping port,
// summed over the workers.
type intCollector struct {
	ports []string
	on    uint64 // ports that stamp, bit i for port i; 0: all
	ints  []*inband.Stage
}

var (
	dINTStamped = prometheus.NewDesc("rocetor_int_stamped_total",
		"INT records the port stamped into RoCEv2 frames carrying an INT request tail (HPCC).", []string{"port"}, nil)
	dINTSkipped = prometheus.NewDesc("rocetor_int_skipped_total",
		"INT request tails the port left unstamped, by reason: full (every reserved record filled: a path longer than the sender's budget), malformed (the magic, but a bad header or a short frame).",
		[]string{"port", "reason"}, nil)
	dINTEchoes = prometheus.NewDesc("rocetor_int_echoes_total",
		"INT echo tails (receivers' ACKs returning the records) that passed the port unstamped.", []string{"port"}, nil)
)

// NewINT returns the collector of the rocetor_int_ series over every
// worker's INT stage, for the ports of ports that mask names (0: all).
func NewINT(ports []string, mask uint64, ints []*inband.Stage) prometheus.Collector {
	return &intCollector{ports: ports, on: mask, ints: ints}
}

func (c *intCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dINTStamped
	ch <- dINTSkipped
	ch <- dINTEchoes
}

func (c *intCollector) Collect(ch chan<- prometheus.Metric) {
	n := min(len(c.ports), inband.MaxPorts)
	sum := make([]inband.PortStats, n)
	for _, s := range c.ints {
		st := s.Snapshot()
		for i := range sum {
			sum[i].Add(&st.Ports[i])
		}
	}
	for i := range sum {
		if c.on != 0 && c.on&(1<<i) == 0 {
			continue
		}
		p, port := &sum[i], c.ports[i]
		ch <- prometheus.MustNewConstMetric(dINTStamped, prometheus.CounterValue, float64(p.Stamped), port)
		ch <- prometheus.MustNewConstMetric(dINTSkipped, prometheus.CounterValue, float64(p.Full), port, "full")
		ch <- prometheus.MustNewConstMetric(dINTSkipped, prometheus.CounterValue, float64(p.Malformed), port, "malformed")
		ch <- prometheus.MustNewConstMetric(dINTEchoes, prometheus.CounterValue, float64(p.Echoes), port)
	}
}
