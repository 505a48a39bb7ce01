package perf

import (
	"math"
	"slices"
)

// LatStats are the columns of perftest's latency table (ib_write_lat,
// ib_send_lat, ib_read_lat), in microseconds, from one sample per
// iteration. perftest's t_typical is the median; its percentiles here
// are nearest-rank (Percentile), so every figure is one of the samples
// except the median of an even count, the mean and the deviation.
type LatStats struct {
	Min     float64 `json:"t_min"`
	Max     float64 `json:"t_max"`
	Typical float64 `json:"t_typical"` // the median
	Avg     float64 `json:"t_avg"`
	Stdev   float64 `json:"t_stdev"` // population standard deviation, as perftest's
	P99     float64 `json:"p99"`
	P999    float64 `json:"p999"`
}

// LatStatsOf summarises samples in nanoseconds. It sorts a copy, so the
// result depends only on the multiset of samples.
func LatStatsOf(samples []int64) LatStats {
	n := len(samples)
	if n == 0 {
		return LatStats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	mean := sum / float64(n)
	var sq float64
	for _, v := range s {
		d := float64(v) - mean
		sq += d * d
	}
	us := func(ns float64) float64 { return round3(ns / 1e3) }
	return LatStats{
		Min:     us(float64(s[0])),
		Max:     us(float64(s[n-1])),
		Typical: us(median(s)),
		Avg:     us(mean),
		Stdev:   us(math.Sqrt(sq / float64(n))),
		P99:     us(float64(Percentile(s, 0.99))),
		P999:    us(float64(Percentile(s, 0.999))),
	}
}

// median of sorted: the middle value, or the mean of the two middle
// ones for an even count (perftest's get_median).
func median(sorted []int64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return float64(sorted[n/2])
	}
	return (float64(sorted[n/2-1]) + float64(sorted[n/2])) / 2
}
