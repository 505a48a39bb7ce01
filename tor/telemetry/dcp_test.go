package telemetry

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
)

type fakeSource struct{ s dataplane.Snapshot }

func (f fakeSource) Snapshot() dataplane.Snapshot { return f.s }

// TestHODropMetrics checks rocetor_dcp_ho_drops_total: the workers'
// header-only drops summed by reason.
func TestHODropMetrics(t *testing.T) {
	var a, b dataplane.Snapshot
	a.HODrops[dataplane.ReasonQueueFull], a.HODrops[dataplane.ReasonTxFull] = 2, 1
	b.HODrops[dataplane.ReasonQueueFull] = 3
	ms := gather(t, NewHODrops([]metrics.Source{fakeSource{a}, fakeSource{b}}))
	for series, want := range map[string]float64{
		`rocetor_dcp_ho_drops_total{reason="queue_full"}`: 5,
		`rocetor_dcp_ho_drops_total{reason="tx_full"}`:    1,
		`rocetor_dcp_ho_drops_total{reason="unrouted"}`:   0,
	} {
		if v, ok := ms[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
}
