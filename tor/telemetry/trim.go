package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/trim"
)

// trimCollector exports the trimming stages' counters per trimming port,
// summed over the workers. What the WRR then serves per queue, and the
// header-only packets the control queue refused, are the egress queues'
// series: rocetor_queue_dequeued_{packets,bytes}_total and
// rocetor_queue_drops_total{queue="control"}.
type trimCollector struct {
	ports []string
	on    []bool // ports that trim
	trims []*trim.Stage
}

var (
	dTrimmed = prometheus.NewDesc("rocetor_trim_trimmed_packets_total",
		"DCP data packets trimmed to header-only packets because the port's data queue was over the threshold.", []string{"port"}, nil)
	dTrimmedBytes = prometheus.NewDesc("rocetor_trim_trimmed_bytes_total",
		"Bytes trimming removed from DCP data packets (payload and the headers after the DCP header).", []string{"port"}, nil)
	dHO = prometheus.NewDesc("rocetor_trim_ho_packets_total",
		"Header-only packets put on the port's control queue: trimmed here or upstream.", []string{"port"}, nil)
	dTrimDropped = prometheus.NewDesc("rocetor_trim_dropped_total",
		"Packets dropped over the trim threshold because they cannot be trimmed, by class: non_dcp (tag 00, or not RoCEv2), ack (DCP ACK, tag 01), no_frame (DCP data NetRT holds in place, no frame to trim a copy in).",
		[]string{"port", "class"}, nil)
)

// NewTrim returns the collector of the rocetor_trim_ series over every
// worker's trimming stage, for the ports of ports that cfg trims.
func NewTrim(ports []string, cfg *trim.Config, trims []*trim.Stage) prometheus.Collector {
	c := &trimCollector{ports: ports, on: make([]bool, len(ports)), trims: trims}
	for i, p := range ports {
		c.on[i] = cfg.Trims(p)
	}
	return c
}

func (c *trimCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- dTrimmed
	ch <- dTrimmedBytes
	ch <- dHO
	ch <- dTrimDropped
}

func (c *trimCollector) Collect(ch chan<- prometheus.Metric) {
	n := min(len(c.ports), trim.MaxPorts)
	sum := make([]trim.PortStats, n)
	for _, s := range c.trims {
		st := s.Snapshot()
		for i := range sum {
			sum[i].Add(&st.Ports[i])
		}
	}
	for i := range sum {
		if !c.on[i] {
			continue
		}
		p, port := &sum[i], c.ports[i]
		ch <- prometheus.MustNewConstMetric(dTrimmed, prometheus.CounterValue, float64(p.Trimmed), port)
		ch <- prometheus.MustNewConstMetric(dTrimmedBytes, prometheus.CounterValue, float64(p.TrimmedBytes), port)
		ch <- prometheus.MustNewConstMetric(dHO, prometheus.CounterValue, float64(p.HeaderOnly), port)
		ch <- prometheus.MustNewConstMetric(dTrimDropped, prometheus.CounterValue, float64(p.DropNonDCP), port, "non_dcp")
		ch <- prometheus.MustNewConstMetric(dTrimDropped, prometheus.CounterValue, float64(p.DropAck), port, "ack")
		ch <- prometheus.MustNewConstMetric(dTrimDropped, prometheus.CounterValue, float64(p.DropNoFrame), port, "no_frame")
	}
}
