package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/fwd"
)

// adaptiveCollector exports how many packets adaptive routing sent to
// each port (tor/fwd Stats.AdaptiveChoices), summed over the workers.
type adaptiveCollector struct {
	ports  []string
	stages []*fwd.Stage
}

// NewAdaptive returns the collector of rocetor_fwd_adaptive_choices_total
// over every worker's forwarding stage; ports names the switch's ports
// in order.
func NewAdaptive(ports []string, stages []*fwd.Stage) prometheus.Collector {
	return &adaptiveCollector{ports: ports, stages: stages}
}

var dAdaptive = prometheus.NewDesc("rocetor_fwd_adaptive_choices_total",
	"Packets of adaptive multipath groups that adaptive routing sent to the port (the member with the shortest queue, or the ECMP choice within the bias).",
	[]string{"port"}, nil)

func (c *adaptiveCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dAdaptive }

func (c *adaptiveCollector) Collect(ch chan<- prometheus.Metric) {
	n := min(len(c.ports), fwd.CountedPorts)
	sum := make([]uint64, n)
	for _, s := range c.stages {
		st := s.Snapshot()
		for i := range sum {
			sum[i] += st.AdaptiveChoices[i]
		}
	}
	for i, v := range sum {
		ch <- prometheus.MustNewConstMetric(dAdaptive, prometheus.CounterValue, float64(v), c.ports[i])
	}
}
