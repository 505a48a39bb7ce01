package fabric

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"rocetor/dataplane"
	"rocetor/nic/perf"
)

// StatsOptions say which flows a Result's statistics count and how they
// are grouped. The zero value gives the defaults.
type StatsOptions struct {
	// Bins are the exclusive upper bounds, in bytes and ascending, of the
	// size bins FCTs are reported in; one more bin holds the flows at or
	// above the last bound. nil: DefaultBins.
	Bins []int
	// ShortBelow is the size short flows are smaller than; the others
	// are long (0: DefaultShortBelow).
	ShortBelow int
	// WarmupNs leaves the flows posted before it (simulated ns) out of
	// every statistic: FCTs, slowdowns and goodput. They still run.
	WarmupNs int64
	// MeasureNs ends the measurement window: the flows posted at or
	// after WarmupNs + MeasureNs count in no statistic either, so the
	// last arrivals, which finish as the fabric drains, weigh nothing
	// against the steady state. They still run (and load the fabric
	// while the measured flows finish). 0: no end.
	MeasureNs int64
}

// ErrWindow reports a negative warm-up or measurement window.
var ErrWindow = fmt.Errorf("fabric: measurement window")

// measured reports whether a flow posted at start (ns) is in the
// measurement window.
func (o StatsOptions) measured(start int64) bool {
	return start >= o.WarmupNs && (o.MeasureNs == 0 || start < o.WarmupNs+o.MeasureNs)
}

// DefaultBins are the seeds' flow sizes: NetRT's 10 KB, 100 KB and 1 MB
// (seed 000 §IV-A Fig. 6; the short flows of §IV-C Fig. 10 are 10 KB)
// and DCP's 10 MB, above which WebSearch's large flows lie (seed 002
// §6.2). Decimal, as the WebSearch distribution's sizes are.
var DefaultBins = []int{10_000, 100_000, 1_000_000, 10_000_000}

// DefaultShortBelow is where the seeds split short flows from long:
// DCP's small flows are those below 200 KB (60 % of WebSearch's, seed
// 002 §6.2), IRN's background flows those from 200 KB (seed 004 §4.1).
const DefaultShortBelow = 200_000

// ErrBins reports bin bounds that are not positive and ascending.
var ErrBins = fmt.Errorf("fabric: size bins")

// ParseBins parses a comma-separated list of sizes ("10KB,100KB,1MB";
// dataplane.Bytes's units) into bin bounds.
func ParseBins(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var b dataplane.Bytes
		if err := b.UnmarshalText([]byte(f)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBins, err)
		}
		out = append(out, int(b))
	}
	if err := checkBins(out); err != nil {
		return nil, err
	}
	return out, nil
}

func checkBins(bins []int) error {
	for i, b := range bins {
		if b <= 0 || i > 0 && b <= bins[i-1] {
			return fmt.Errorf("%w: %v: want positive sizes in ascending order", ErrBins, bins)
		}
	}
	return nil
}

func (o StatsOptions) withDefaults() StatsOptions {
	if o.Bins == nil {
		o.Bins = DefaultBins
	}
	if o.ShortBelow == 0 {
		o.ShortBelow = DefaultShortBelow
	}
	return o
}

// Bucket is the FCTs and slowdowns of the flows of one size range
// [Lo, Hi) (Hi 0: no upper bound). Percentiles are nearest-rank
// (perf.Percentile): each is one flow's figure. Slowdown is a flow's FCT
// over its ideal FCT on an empty fabric, at least 1 (as the ns-3 RDMA
// simulator's analysis takes it).
type Bucket struct {
	Range        string  `json:"range"`
	Lo           int     `json:"lo_bytes"`
	Hi           int     `json:"hi_bytes,omitempty"`
	Flows        int     `json:"flows"`
	MeanFCTNs    float64 `json:"mean_fct_ns"`
	P50FCTNs     int64   `json:"p50_fct_ns"`
	P90FCTNs     int64   `json:"p90_fct_ns"`
	P95FCTNs     int64   `json:"p95_fct_ns"`
	P99FCTNs     int64   `json:"p99_fct_ns"`
	P999FCTNs    int64   `json:"p999_fct_ns"`
	MeanSlowdown float64 `json:"mean_slowdown"`
	P50Slowdown  float64 `json:"p50_slowdown"`
	P90Slowdown  float64 `json:"p90_slowdown"`
	P95Slowdown  float64 `json:"p95_slowdown"`
	P99Slowdown  float64 `json:"p99_slowdown"`
	P999Slowdown float64 `json:"p999_slowdown"`
}

// Slowdown returns the record's FCT over its ideal FCT, at least 1.
func (f *FlowRecord) Slowdown() float64 {
	if f.IdealNs <= 0 {
		return 1
	}
	return max(1, float64(f.FCTNs)/float64(f.IdealNs))
}

// Summarize sets res's statistics from res.Records as o says: FCT per
// size bin, All, Short and Long over the completed flows posted in the
// measurement window (from the warm-up, for MeasureNs when not 0),
// Measured their count and GoodputGbps their bytes
// over the time from the first one's post to the last one's completion.
// A Result read back from a flow file (ReadFlows) recomputes the run's
// figures exactly.
func (res *Result) Summarize(o StatsOptions) error {
	o = o.withDefaults()
	if err := checkBins(o.Bins); err != nil {
		return err
	}
	if o.WarmupNs < 0 || o.MeasureNs < 0 {
		return fmt.Errorf("%w: warm-up %d ns, window %d ns: want ≥ 0", ErrWindow, o.WarmupNs, o.MeasureNs)
	}
	res.WarmupNs, res.MeasureNs, res.Bins, res.ShortBelow = o.WarmupNs, o.MeasureNs, slices.Clone(o.Bins), o.ShortBelow
	var in []*FlowRecord
	first, last := int64(math.MaxInt64), int64(0)
	var bytes int64
	for i := range res.Records {
		f := &res.Records[i]
		if !f.OK || !o.measured(f.StartNs) {
			continue
		}
		in = append(in, f)
		first, last = min(first, f.StartNs), max(last, f.StartNs+f.FCTNs)
		bytes += int64(f.Size)
	}
	res.Measured, res.GoodputGbps = len(in), 0
	if last > first {
		res.GoodputGbps = round3(float64(bytes) * 8 / float64(last-first))
	}
	res.FCT = res.FCT[:0]
	lo := 0
	for _, hi := range append(slices.Clone(o.Bins), 0) {
		res.FCT = append(res.FCT, summarize(bucketName(lo, hi), lo, hi, in))
		lo = hi
	}
	res.Short = summarize("short <"+sizeName(o.ShortBelow), 0, o.ShortBelow, in)
	res.Long = summarize("long ≥"+sizeName(o.ShortBelow), o.ShortBelow, 0, in)
	res.All = summarize("all", 0, 0, in)
	return nil
}

// summarize is the bucket of the flows of in with sizes in [lo, hi).
func summarize(name string, lo, hi int, in []*FlowRecord) Bucket {
	b := Bucket{Range: name, Lo: lo, Hi: hi}
	var fct []int64
	var sd []float64
	var sumF, sumS float64
	for _, f := range in {
		if f.Size < lo || hi > 0 && f.Size >= hi {
			continue
		}
		s := f.Slowdown()
		fct, sd = append(fct, f.FCTNs), append(sd, s)
		sumF += float64(f.FCTNs)
		sumS += s
	}
	b.Flows = len(fct)
	if b.Flows == 0 {
		return b
	}
	slices.Sort(fct)
	slices.Sort(sd)
	b.MeanFCTNs, b.MeanSlowdown = round3(sumF/float64(b.Flows)), round3(sumS/float64(b.Flows))
	b.P50FCTNs, b.P90FCTNs, b.P95FCTNs = perf.Percentile(fct, 0.5), perf.Percentile(fct, 0.9), perf.Percentile(fct, 0.95)
	b.P99FCTNs, b.P999FCTNs = perf.Percentile(fct, 0.99), perf.Percentile(fct, 0.999)
	r := func(q float64) float64 { return round3(perf.Percentile(sd, q)) }
	b.P50Slowdown, b.P90Slowdown, b.P95Slowdown, b.P99Slowdown, b.P999Slowdown = r(0.5), r(0.9), r(0.95), r(0.99), r(0.999)
	return b
}

// sizeName writes b bytes in the largest unit that divides it, decimal
// units first: 10KB, 1MB, 64KiB, 1500B.
func sizeName(b int) string {
	for _, u := range []struct {
		n    int
		name string
	}{{1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if b >= u.n && b%u.n == 0 {
			return fmt.Sprintf("%d%s", b/u.n, u.name)
		}
	}
	return fmt.Sprintf("%dB", b)
}

// bucketName names the size range [lo, hi), hi 0 being no bound.
func bucketName(lo, hi int) string {
	switch {
	case hi == 0:
		return "≥" + sizeName(lo)
	case lo == 0:
		return "<" + sizeName(hi)
	}
	return sizeName(lo) + "–" + sizeName(hi)
}
