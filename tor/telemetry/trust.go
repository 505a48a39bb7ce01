package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/trust"
)

// trustCollector exports the trust stages' refusals per ingress port and
// kind, summed over the workers. PFC refusals are the worker's
// (rocetor_port_pfc_refused_frames_total).
type trustCollector struct {
	ports  []string
	stages []*trust.Stage
}

// NewTrust returns the collector of rocetor_trust_refused_total over
// every worker's trust stage; ports names the switch's ports in order.
func NewTrust(ports []string, stages []*trust.Stage) prometheus.Collector {
	return &trustCollector{ports: ports, stages: stages}
}

var dTrustRefused = prometheus.NewDesc("rocetor_trust_refused_total",
	"Frames dropped at a trust boundary, by the port they came in on and kind: llr (a link-shim frame on a port llr does not protect), "+
		"netrt_host (a NetRT message from a host port), netrt_peer (a NetRT message from a source outside netrt.prefixes), "+
		"dcp_payload (a DCP header-only packet carrying payload).",
	[]string{"port", "kind"}, nil)

func (c *trustCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dTrustRefused }

func (c *trustCollector) Collect(ch chan<- prometheus.Metric) {
	n := min(len(c.ports), trust.MaxPorts)
	sum := make([]trust.PortStats, n)
	for _, s := range c.stages {
		st := s.Snapshot()
		for i := range sum {
			sum[i].Add(&st.Ports[i])
		}
	}
	for i := range sum {
		p, port := &sum[i], c.ports[i]
		for _, k := range []struct {
			kind string
			v    uint64
		}{{"llr", p.LLR}, {"netrt_host", p.NetRTHost}, {"netrt_peer", p.NetRTPeer}, {"dcp_payload", p.DCPPayload}} {
			ch <- prometheus.MustNewConstMetric(dTrustRefused, prometheus.CounterValue, float64(k.v), port, k.kind)
		}
	}
}
