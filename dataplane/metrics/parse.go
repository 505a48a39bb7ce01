package metrics

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Parse reads Prometheus text exposition, as tord serves it, and flattens
// the rocetor_ series to values keyed by name and sorted labels, e.g.
// rocetor_drops_total{reason="no_route"}. Histograms and summaries are
// left out. Tests and the testbed read switches' counters through it.
func Parse(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		flatten(out, mf)
	}
	return out, nil
}

// Gather gathers g and flattens its rocetor_ series as Parse does, to the
// same keys and values: what a switch in this process exports (a
// simulated one, tor/telemetry) reads like a tord's /metrics.
func Gather(g prometheus.Gatherer) (map[string]float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		flatten(out, mf)
	}
	return out, nil
}

// flatten adds mf's series to out if it is a rocetor_ family.
func flatten(out map[string]float64, mf *dto.MetricFamily) {
	name := mf.GetName()
	if !strings.HasPrefix(name, "rocetor_") {
		return
	}
	for _, m := range mf.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		sort.Strings(ls)
		key := name
		if len(ls) > 0 {
			key += "{" + strings.Join(ls, ",") + "}"
		}
		switch {
		case m.Counter != nil:
			out[key] = m.GetCounter().GetValue()
		case m.Gauge != nil:
			out[key] = m.GetGauge().GetValue()
		case m.Untyped != nil:
			out[key] = m.GetUntyped().GetValue()
		}
	}
}
