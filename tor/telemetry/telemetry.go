package telemetry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"rocetor/dataplane/metrics"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/inband"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
	"rocetor/tor/pipeline"
	"rocetor/tor/trim"
	"rocetor/tor/trust"
)

// Switch is what one switch exports: its configuration and its workers'
// pipelines, and what only some switches have. Its zero value is not
// ready (Config is required). The collectors Register makes from it read
// only what the workers and stages publish, so a registry may be
// gathered from any goroutine while the workers run.
type Switch struct {
	// Config is the switch's configuration: Ports names every series'
	// port label, in the order of every worker's ports; ParsesDCP,
	// Forwarding.Multipath and Trim choose collectors. Required.
	Config *pipeline.Config
	// Pipelines are the switch's workers, one pipeline each, as
	// pipeline.Plan built them.
	Pipelines []*pipeline.Pipeline
	// Workers are the sources of the workers' series; nil: the
	// pipelines' workers.
	Workers []metrics.Source
	// LLRMonitor is llr's corruption monitor over the protected links
	// (tord's llr.monitor); nil: the switch runs none.
	LLRMonitor *llr.Monitor
}

// ErrNoConfig is Register's and Gather's error for a Switch without a
// Config.
var ErrNoConfig = errors.New("telemetry: switch has no configuration")

// Register registers with reg the collectors of every family sw exports.
// It fails if reg refuses one (a family registered twice).
func Register(reg prometheus.Registerer, sw Switch) error {
	cs, err := collectors(sw)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("telemetry: register: %w", err)
		}
	}
	return nil
}

// Gather returns sw's series, each keyed by name and sorted labels as
// dataplane/metrics.Parse keys a tord's /metrics, e.g.
// rocetor_drops_total{reason="no_route"}; histograms are left out. It
// reads what the workers and stages last published
// (pipeline.Pipeline.Publish).
func Gather(sw Switch) (map[string]float64, error) {
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, sw); err != nil {
		return nil, err
	}
	return metrics.Gather(reg)
}

// collectors returns the collectors of sw, each stage's when its
// configuration has the stage.
func collectors(sw Switch) ([]prometheus.Collector, error) {
	cfg := sw.Config
	if cfg == nil {
		return nil, ErrNoConfig
	}
	st := stagesOf(sw.Pipelines)
	workers := sw.Workers
	if workers == nil {
		for _, pl := range sw.Pipelines {
			workers = append(workers, pl.Worker)
		}
	}
	ports := cfg.Ports
	cs := []prometheus.Collector{metrics.New(ports, st.names, workers...), NewTrust(ports, st.trusts)}
	if len(st.srcs) > 0 {
		cs = append(cs, NewNetRT(ports, st.srcs, st.dsts))
	}
	if st.llr != nil {
		cs = append(cs, NewLLR(ports, st.llr, sw.LLRMonitor))
	}
	if len(st.trims) > 0 {
		cs = append(cs, NewTrim(ports, cfg.Trim, st.trims))
	}
	if len(st.ints) > 0 {
		mask, _ := inband.PortMask(cfg.INT.Ports, ports) // validated with the configuration
		cs = append(cs, NewINT(ports, mask, st.ints))
	}
	if cfg.ParsesDCP() {
		cs = append(cs, NewHODrops(workers))
	}
	if cfg.Forwarding.Multipath == "adaptive" {
		cs = append(cs, NewAdaptive(ports, st.fwds))
	}
	if len(st.impairs) > 0 {
		cs = append(cs, NewImpair(ports, st.impairs))
	}
	if qc := cfg.QueueClasses(); qc != nil {
		cs = append(cs, NewQoS(ports, qc))
	}
	return cs, nil
}

// stages are the stages of a switch's pipelines, by kind, every
// worker's.
type stages struct {
	names   []string // of a worker's stages, in order
	trusts  []*trust.Stage
	fwds    []*fwd.Stage
	srcs    []*netrt.SrcToR
	dsts    []*netrt.DstToR
	trims   []*trim.Stage
	ints    []*inband.Stage
	impairs []*impair.Port
	llr     *llr.Links // every worker's, each link by its owner (pipeline.Owners)
}

func stagesOf(pls []*pipeline.Pipeline) stages {
	var s stages
	var llrs []*llr.Stage
	for w, pl := range pls {
		if w == 0 {
			for _, st := range pl.Stages {
				s.names = append(s.names, st.Name())
			}
		}
		if pl.LLR != nil {
			llrs = append(llrs, pl.LLR)
		}
		s.trusts = append(s.trusts, pl.Trust)
		s.fwds = append(s.fwds, pl.Fwd)
		if pl.Src != nil {
			s.srcs, s.dsts = append(s.srcs, pl.Src), append(s.dsts, pl.Dst)
		}
		if pl.Trim != nil {
			s.trims = append(s.trims, pl.Trim)
		}
		if pl.INT != nil {
			s.ints = append(s.ints, pl.INT)
		}
		s.impairs = append(s.impairs, pl.Impairs...)
	}
	if llrs != nil {
		s.llr = llr.NewLinks(llrs...)
	}
	return s
}
