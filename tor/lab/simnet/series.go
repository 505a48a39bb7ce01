package simnet

import (
	"fmt"

	"rocetor/dataplane/sim"
	"rocetor/nic/cc"
	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/pipeline"
	"rocetor/tor/telemetry"
)

// seriesSampler is MeasureSeries's sampler on virtual time: an actor of
// the simulation that reads one switch every interval, by the metric
// names tord exports (lab.Series.Add, the testbed sampler's reading),
// and each flow's sending QP's DCQCN rate. The simulation ends when its
// flows do, whatever the sampler has due.
type seriesSampler struct {
	r     *run
	sw    *fabric.SwitchNode
	every sim.Time
	id    int
	s     *lab.Series
}

func newSeriesSampler(r *run, spec lab.SeriesSpec, flows int) (*seriesSampler, error) {
	sm := &seriesSampler{r: r, s: lab.NewSeries(spec, flows)}
	for _, s := range r.net.Switches {
		if s.Name == spec.Node {
			sm.sw = s
		}
	}
	if sm.sw == nil {
		return nil, fmt.Errorf("%w: series: no switch %q", lab.ErrUsage, spec.Node)
	}
	sm.every = sim.Time(sm.s.Interval*1e9) * sim.Nanosecond
	if sm.every <= 0 {
		return nil, fmt.Errorf("%w: series: interval %v", lab.ErrUsage, spec.Interval)
	}
	sm.id = r.net.Sim.Add(sm)
	r.net.Sim.Wake(sm.id, 0)
	return sm, nil
}

// Fire implements sim.Actor: one sample, and the next due an interval on.
func (sm *seriesSampler) Fire(now sim.Time) {
	sm.take(now)
	sm.r.net.Sim.Wake(sm.id, now+sm.every)
}

// take samples the switch and the senders' rates at now.
func (sm *seriesSampler) take(now sim.Time) {
	ns := int64(now / sim.Nanosecond)
	sm.sw.Pipe.Publish(ns)
	got, err := telemetry.Gather(telemetry.Switch{Config: &sm.sw.Cfg, Pipelines: []*pipeline.Pipeline{sm.sw.Pipe}})
	if err != nil {
		sm.s.ScrapeErrors++ // a metric tord could not export either
		return
	}
	sm.s.Add(float64(ns)/1e9, got)
	for i, src := range sm.r.src {
		d, ok := sm.r.net.Hosts[src].EP.CC().(*cc.DCQCN)
		if !ok {
			continue
		}
		if sm.s.CCRate == nil {
			sm.s.CCRate = make([][]float64, len(sm.r.src))
		}
		sm.s.CCRate[i] = append(sm.s.CCRate[i], d.Summary().Final)
	}
}

// finish takes a last sample as the simulation ended and sets when
// each transfer ended: its last message's completion.
func (sm *seriesSampler) finish(res *fabric.Result) *lab.Series {
	if last := len(sm.s.T) - 1; last < 0 || sm.s.T[last] < float64(sm.r.net.Sim.Now()/sim.Nanosecond)/1e9 {
		sm.take(sm.r.net.Sim.Now())
	}
	for i := range sm.s.Ends {
		var end int64
		for _, fr := range res.Records[sm.r.first[i]:sm.r.first[i+1]] {
			end = max(end, fr.EndNs)
		}
		sm.s.Ends[i] = float64(end) / 1e9
	}
	return sm.s
}
