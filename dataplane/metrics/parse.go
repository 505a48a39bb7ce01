package metrics

import (
	"fmt"
	"io"
	"sort"
	"strings"

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
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "rocetor_") {
			continue
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
	return out, nil
}
