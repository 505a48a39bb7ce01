package lab

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// Time series of one switch during a run (Env.MeasureSeries): the depth
// of one egress queue and the bytes each flow brought in, scraped every
// interval, for the congestion experiments' "queue depth over time" and
// "per-flow rate over time" (NetRT Fig. 8, DCP Fig. 16).

// SeriesSpec says what MeasureSeries samples.
type SeriesSpec struct {
	Node  string // the switch scraped
	Port  string // its port whose egress queue is watched (the bottleneck)
	Queue string // that queue: data
	// Flows are, one per transfer in order, the port of Node each
	// transfer's data arrives on: on the dumbbell every sender has a
	// port of its own on tor1, so what a port received is its flow's
	// rate.
	Flows    []string
	Interval time.Duration
}

// Series is what the sampler read. Times are seconds from its first
// scrape, taken just before the transfers started; counters count from
// that scrape.
type Series struct {
	Node      string   `json:"node"`
	Port      string   `json:"port"`
	Queue     string   `json:"queue"`
	FlowPorts []string `json:"flow_ports"`
	Interval  float64  `json:"interval_s"` // the sampling interval
	// T is each sample's time: the middle of its scrape.
	T []float64 `json:"t_s"`
	// Depth is the queue's depth at each sample (a gauge: the moment of
	// the scrape, not an average).
	Depth []float64 `json:"depth_bytes"`
	// RxBytes is, per flow port, the bytes it received by each sample.
	RxBytes [][]float64 `json:"rx_bytes"`
	// Drops and Marked are the queue's drops at its byte budget and its
	// CE marks by each sample.
	Drops  []float64 `json:"drops"`
	Marked []float64 `json:"ce_marked"`
	// Kmin, Kmax and Limit are the queue's ECN thresholds (0 without
	// marking) and byte budget, as the switch reports them.
	Kmin  float64 `json:"kmin_bytes"`
	Kmax  float64 `json:"kmax_bytes"`
	Limit float64 `json:"limit_bytes"`
	// Ends is when each transfer ended, in the order of Flows.
	Ends []float64 `json:"flow_ends_s"`
	// ScrapeErrors counts the scrapes that failed (left out).
	ScrapeErrors int `json:"scrape_errors,omitempty"`
	// CCRate is, per flow, its sending QP's congestion control rate in
	// bit/s at each sample (DCQCN's current rate as of the QP's last
	// send or signal): the rate trace. Only the simulator reads it; a
	// testbed's roceperf reports its rates when it ends.
	CCRate [][]float64 `json:"cc_rate_bps,omitempty"`

	base Sample // the first sample, which the counters count from
}

// sampler scrapes a switch every interval until stopped.
type sampler struct {
	fab   Fabric
	spec  SeriesSpec
	start time.Time
	mu    sync.Mutex // s, between the loop, ended and stop
	s     *Series
	quit  chan struct{}
	done  chan struct{}
}

// NewSeries returns an empty series of spec for flows transfers, for a
// sampler to Add to: MeasureSeries's on the wall clock, the simulator's
// on virtual time.
func NewSeries(spec SeriesSpec, flows int) *Series {
	interval := spec.Interval
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	return &Series{Node: spec.Node, Port: spec.Port, Queue: spec.Queue, FlowPorts: spec.Flows, Interval: interval.Seconds(),
		RxBytes: make([][]float64, len(spec.Flows)), Ends: make([]float64, flows)}
}

// startSampler takes a first sample, then one every spec.Interval in a
// goroutine of its own until stop.
func startSampler(ctx context.Context, fab Fabric, spec SeriesSpec, flows int) *sampler {
	sm := &sampler{fab: fab, spec: spec, start: time.Now(), quit: make(chan struct{}), done: make(chan struct{}),
		s: NewSeries(spec, flows)}
	sm.take(ctx)
	interval := time.Duration(sm.s.Interval * float64(time.Second))
	go func() {
		defer close(sm.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-sm.quit:
				return
			case <-tick.C:
				sm.take(ctx)
			}
		}
	}()
	return sm
}

// take scrapes once and appends the sample.
func (sm *sampler) take(ctx context.Context) {
	t0 := time.Now()
	smp, err := sm.fab.ScrapeNode(ctx, sm.spec.Node)
	t := (t0.Sub(sm.start) + time.Since(t0)/2).Seconds()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if err != nil {
		sm.s.ScrapeErrors++
		return
	}
	sm.s.Add(t, smp)
}

// Add appends a sample of the switch taken at t seconds: the first
// sets the thresholds and the base the counters count from.
func (s *Series) Add(t float64, smp Sample) {
	q := fmt.Sprintf(`{port="%s",queue="%s"}`, s.Port, s.Queue)
	if s.base == nil {
		s.base = smp
		s.Kmin, s.Kmax = smp["rocetor_queue_ecn_min_threshold_bytes"+q], smp["rocetor_queue_ecn_max_threshold_bytes"+q]
		s.Limit = smp["rocetor_queue_limit_bytes"+q]
	}
	since := func(key string) float64 { return max(smp[key]-s.base[key], 0) }
	s.T = append(s.T, t)
	s.Depth = append(s.Depth, smp["rocetor_queue_depth_bytes"+q])
	s.Drops = append(s.Drops, since("rocetor_queue_drops_total"+q))
	s.Marked = append(s.Marked, since("rocetor_queue_ce_marked_total"+q))
	for i, p := range s.FlowPorts {
		s.RxBytes[i] = append(s.RxBytes[i], since(fmt.Sprintf(`rocetor_port_rx_bytes_total{port="%s"}`, p)))
	}
}

// ended notes that transfer i ended.
func (sm *sampler) ended(i int) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.s.Ends[i] = time.Since(sm.start).Seconds()
}

// stop ends the loop, takes a last sample and returns the series.
func (sm *sampler) stop() *Series {
	close(sm.quit)
	<-sm.done
	sm.take(context.Background())
	return sm.s
}

// Together is when the first transfer ended: up to then every flow
// competed for the queue. With no transfer, the last sample's time.
func (s *Series) Together() float64 {
	if len(s.Ends) == 0 {
		if len(s.T) == 0 {
			return 0
		}
		return s.T[len(s.T)-1]
	}
	t := s.Ends[0]
	for _, e := range s.Ends[1:] {
		t = min(t, e)
	}
	return t
}

// Started is the first sample by which every flow's port had received
// something: from then on every flow competed for the queue (each
// transfer starts its own server and client, tens of milliseconds
// apart on a loaded machine). 0 with no flow port or a flow that never
// started.
func (s *Series) Started() float64 {
	var start float64
	for _, rx := range s.RxBytes {
		k := slices.IndexFunc(rx, func(v float64) bool { return v > 0 })
		if k < 0 || k >= len(s.T) {
			return 0
		}
		start = max(start, s.T[k])
	}
	return start
}

// window returns the first and last sample within [from, to], ok when
// they are two different samples.
func (s *Series) window(from, to float64) (a, b int, ok bool) {
	a, b = -1, -1
	for i, t := range s.T {
		if t >= from && t <= to {
			if a < 0 {
				a = i
			}
			b = i
		}
	}
	return a, b, a >= 0 && b > a
}

// FlowRates returns each flow's mean rate in Mbit/s over the samples in
// [from, to]; nil when fewer than two samples fall there.
func (s *Series) FlowRates(from, to float64) []float64 {
	a, b, ok := s.window(from, to)
	if !ok {
		return nil
	}
	out := make([]float64, len(s.RxBytes))
	for i, rx := range s.RxBytes {
		out[i] = (rx[b] - rx[a]) * 8 / (s.T[b] - s.T[a]) / 1e6
	}
	return out
}

// LastHalf returns the span over which the congestion experiments judge
// fairness: the last half of the time every flow was running, from
// Started to Together.
func (s *Series) LastHalf() (from, to float64) {
	a, b := s.Started(), s.Together()
	return a + (b-a)/2, b
}

// Jain is Jain's fairness index of rates, (Σx)² / (n·Σx²): 1 when all
// are equal, 1/n when one flow has everything; NaN with no rate or
// none above zero.
func Jain(rates []float64) float64 {
	var sum, sq float64
	for _, x := range rates {
		sum += x
		sq += x * x
	}
	if len(rates) == 0 || sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(rates)) * sq)
}

// DepthStats summarises the queue's depth over the samples taken while
// every flow ran.
type DepthStats struct {
	Samples  int     `json:"samples"`
	Mean     float64 `json:"mean_bytes"`
	Max      float64 `json:"max_bytes"`
	BelowMin float64 `json:"below_kmin"` // share of samples with depth < Kmin
	InBand   float64 `json:"in_band"`    // share with Kmin ≤ depth ≤ Kmax
	AboveMax float64 `json:"above_kmax"` // share with depth > Kmax
	// AtLimit is the share within 10 % of the queue's byte budget:
	// a queue that drops.
	AtLimit float64 `json:"at_limit"`
	Kmin    float64 `json:"kmin_bytes"`
	Kmax    float64 `json:"kmax_bytes"`
	Limit   float64 `json:"limit_bytes"`
}

// DepthStats returns the depth statistics of the samples in
// [Started, Together] (never the first, taken before the transfers
// began); with none, the zero DepthStats but for the thresholds.
func (s *Series) DepthStats() DepthStats {
	d := DepthStats{Kmin: s.Kmin, Kmax: s.Kmax, Limit: s.Limit}
	start, end := s.Started(), s.Together()
	var below, in, above, full int
	for i, t := range s.T {
		if i == 0 || t < start || t > end {
			continue
		}
		v := s.Depth[i]
		d.Samples++
		d.Mean += v
		d.Max = max(d.Max, v)
		switch {
		case v < s.Kmin:
			below++
		case v <= s.Kmax:
			in++
		default:
			above++
		}
		if s.Limit > 0 && v >= 0.9*s.Limit {
			full++
		}
	}
	if d.Samples == 0 {
		return d
	}
	n := float64(d.Samples)
	d.Mean /= n
	d.BelowMin, d.InBand, d.AboveMax, d.AtLimit = float64(below)/n, float64(in)/n, float64(above)/n, float64(full)/n
	return d
}

// Rates returns, per flow, its rate in Mbit/s between samples, at the
// later sample's time: the per-flow rate over time. A sample less than
// half an interval after the one before is left out, but for the last
// (taken as the transfers end), which replaces the one before: bytes
// over a few microseconds are noise.
func (s *Series) Rates() [][]XY {
	out := make([][]XY, len(s.RxBytes))
	n := len(s.T)
	for i, rx := range s.RxBytes {
		used := []int{0} // the samples the points are measured at
		for k := 1; k < n && k < len(rx); k++ {
			from := used[len(used)-1]
			if s.T[k]-s.T[from] < s.Interval/2 {
				if k != n-1 || len(used) < 2 {
					continue
				}
				used, out[i] = used[:len(used)-1], out[i][:len(out[i])-1]
				from = used[len(used)-1]
			}
			if dt := s.T[k] - s.T[from]; dt > 0 {
				out[i] = append(out[i], XY{s.T[k], (rx[k] - rx[from]) * 8 / dt / 1e6})
				used = append(used, k)
			}
		}
	}
	return out
}

// XY is one point of a time series.
type XY struct{ X, Y float64 }
