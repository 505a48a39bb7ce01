package lab

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"rocetor/dataplane/metrics"
)

// Sample is one scrape of a switch's rocetor_ series, keyed by name and
// sorted labels: rocetor_drops_total{reason="queue_full"}.
type Sample map[string]float64

// ParseSample flattens Prometheus text to a Sample of the rocetor_
// series.
func ParseSample(r io.Reader) (Sample, error) { return metrics.Parse(r) }

// Delta returns what the counters (names ending in _total) counted from
// before to after, and the gauges' values after; zeros are left out. A
// counter lower after than before (its tord restarted) counts from zero.
func Delta(before, after Sample) Sample {
	out := Sample{}
	for k, v := range after {
		if IsCounter(k) {
			if b := before[k]; b <= v {
				v -= b
			}
		}
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// IsCounter reports whether a Sample key is a counter's: its name ends
// in _total.
func IsCounter(key string) bool {
	name, _, _ := strings.Cut(key, "{")
	return strings.HasSuffix(name, "_total")
}

// Sum adds the series of one metric whose labels contain all of match
// (label="value" strings).
func (s Sample) Sum(metric string, match ...string) float64 {
	var t float64
	for k, v := range s {
		name, labels, _ := strings.Cut(k, "{")
		if name != metric {
			continue
		}
		ok := true
		for _, m := range match {
			if !strings.Contains(labels, m) {
				ok = false
				break
			}
		}
		if ok {
			t += v
		}
	}
	return t
}

// Drops returns the drops by reason.
func (s Sample) Drops() map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		if r, ok := strings.CutPrefix(k, `rocetor_drops_total{reason="`); ok {
			out[strings.TrimSuffix(r, `"}`)] += v
		}
	}
	return out
}

// Destroyed returns the frames of a class (data, retransmission,
// control, other; "" for all) that the switch's impaired ports destroyed
// on the wire, for any cause (tor/impair).
func (s Sample) Destroyed(class string) float64 {
	if class == "" {
		return s.Sum("rocetor_impair_destroyed_total")
	}
	return s.Sum("rocetor_impair_destroyed_total", `class="`+class+`"`)
}

// ImpairDrops returns every frame the impaired ports destroyed.
func (s Sample) ImpairDrops() float64 { return s.Destroyed("") }

// OtherDrops returns the drops the workers counted (by reason): what the
// fabric lost on its own (queue_full, no_neighbour, ...). The impairment
// is the wire's and counts apart.
func (s Sample) OtherDrops() float64 {
	var t float64
	for _, v := range s.Drops() {
		t += v
	}
	return t
}

// Nonzero returns the sample's nonzero series as sorted "key value"
// lines, optionally only those whose key contains filter.
func (s Sample) Nonzero(filter string) []string {
	var lines []string
	for k, v := range s {
		if v != 0 && strings.Contains(k, filter) {
			lines = append(lines, fmt.Sprintf("%s %g", k, v))
		}
	}
	sort.Strings(lines)
	return lines
}
