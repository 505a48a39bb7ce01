package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
)

// hoDropCollector exports, on a switch that parses DCP, the header-only
// packets among the workers' drops (dataplane.Snapshot.HODrops), by
// reason: wherever an HO packet dies — a full control or data queue, the
// tx ring, a stage — its sender waits for the coarse timeout (nic/dcp,
// seed 002 §4.5). rocetor_queue_drops_total{queue="control"} counts a
// trimming port's control-plane failures too, but of every frame there,
// and of no other place.
type hoDropCollector struct{ sources []metrics.Source }

// NewHODrops returns the collector of rocetor_dcp_ho_drops_total over
// the workers' snapshots.
func NewHODrops(workers []metrics.Source) prometheus.Collector {
	return &hoDropCollector{sources: workers}
}

var dHODrops = prometheus.NewDesc("rocetor_dcp_ho_drops_total",
	"DCP header-only packets dropped, by reason (a subset of rocetor_drops_total): each costs its sender DCP's coarse timeout.",
	[]string{"reason"}, nil)

func (c *hoDropCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dHODrops }

func (c *hoDropCollector) Collect(ch chan<- prometheus.Metric) {
	var sum [dataplane.MaxReasons]uint64
	for _, s := range c.sources {
		snap := s.Snapshot()
		for r, n := range snap.HODrops {
			sum[r] += n
		}
	}
	for r := 0; r < dataplane.NumReasons(); r++ {
		ch <- prometheus.MustNewConstMetric(dHODrops, prometheus.CounterValue, float64(sum[r]), dataplane.Reason(r).String())
	}
}
