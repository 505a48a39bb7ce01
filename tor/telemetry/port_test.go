package telemetry

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// The per-port families' types follow their names: counters end in
// _total, nothing else does. docs/operations.md's metrics reference
// (cmd/tord TestOperationsDoc) types the families it cannot gather by
// their names, llr's among them.
func TestPortMetricKinds(t *testing.T) {
	nameRE := regexp.MustCompile(`fqName: "([^"]+)"`)
	check := func(d *prometheus.Desc, kind prometheus.ValueType) {
		t.Helper()
		m := nameRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		if counter := strings.HasSuffix(m[1], "_total"); counter != (kind == prometheus.CounterValue) {
			t.Errorf("%s: counter %v, but its name says %v", m[1], kind == prometheus.CounterValue, counter)
		}
	}
	for _, m := range llrMetrics {
		check(m.desc, m.kind)
	}
	for _, m := range srcMetrics {
		check(m.desc, m.kind)
	}
	for _, m := range dstMetrics {
		check(m.desc, m.kind)
	}
}
