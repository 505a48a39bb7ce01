package telemetry

import "github.com/prometheus/client_golang/prometheus"

// The per-port series of the stages (netrt, llr): each family has a
// port label and reads one figure of the stage's per-port counters.

// portMetric is one per-port series family and how to read it.
type portMetric[T any] struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(*T) float64
}

func newDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("rocetor_"+name, help, append([]string{"port"}, labels...), nil)
}

func gaugeOf[T any](name, help string, get func(*T) float64) portMetric[T] {
	return portMetric[T]{newDesc(name, help), prometheus.GaugeValue, get}
}

func counterOf[T any](name, help string, get func(*T) float64) portMetric[T] {
	return portMetric[T]{newDesc(name, help), prometheus.CounterValue, get}
}
