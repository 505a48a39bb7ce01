package telemetry

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/tor/impair"
)

// impairCollector exports the counters of the impaired ports
// (tor/impair), summed over the workers, by port and direction: what
// the rules matched, destroyed (by frame class and cause), trimmed,
// copied and held.
type impairCollector struct {
	ports   []string
	impairs []*impair.Port
}

// NewImpair returns the collector of the rocetor_impair_ series over
// every worker's impaired ports, each of which names its port; ports
// names the switch's ports in order.
func NewImpair(ports []string, impairs []*impair.Port) prometheus.Collector {
	return &impairCollector{ports: ports, impairs: impairs}
}

var (
	pd                = []string{"port", "direction"}
	dImpairMatched    = prometheus.NewDesc("rocetor_impair_matched_total", "Frames an impair rule's filter matched.", pd, nil)
	dImpairDestroyed  = prometheus.NewDesc("rocetor_impair_destroyed_total", "Frames the impairment destroyed on the wire, by class (data: RoCEv2 requests and READ responses, NetRT pool retransmissions among them; retransmission: link-shim retransmitted copies; control: link-shim dummies, ACKs, notices, protect requests, NetRT requests and notices, DCP header-only packets and ACKs, RoCE ACK/NAK/CNP, PFC; other: ARP, ND, LLDP, IP) and cause (loss, burst, corrupt, policed, overflow of impair.hold_bytes).", []string{"port", "direction", "class", "cause"}, nil)
	dImpairTrimmed    = prometheus.NewDesc("rocetor_impair_trimmed_total", "DCP data packets that an impair rule's loss or burst picked and trimmed to header-only packets, sent in their place, instead of destroying them.", pd, nil)
	dImpairDuplicated = prometheus.NewDesc("rocetor_impair_duplicated_total", "Copies an impair rule sent.", pd, nil)
	dImpairDupFailed  = prometheus.NewDesc("rocetor_impair_duplicate_failed_total", "Copies an impair rule did not make for want of a free frame.", pd, nil)
	dImpairReordered  = prometheus.NewDesc("rocetor_impair_reordered_total", "Frames an impair rule held back so that later ones overtake them.", pd, nil)
	dImpairDelayed    = prometheus.NewDesc("rocetor_impair_delayed_total", "Frames an impair rule's delay held.", pd, nil)
	dImpairHeld       = prometheus.NewDesc("rocetor_impair_held_frames", "Frames an impaired port holds now (both directions).", []string{"port"}, nil)
	dImpairHeldBytes  = prometheus.NewDesc("rocetor_impair_held_bytes", "Bytes an impaired port holds now; each worker's share stays within impair.hold_bytes.", []string{"port"}, nil)
	dImpairHeldMax    = prometheus.NewDesc("rocetor_impair_held_bytes_max", "High-water mark of the bytes an impaired port held, summed over the workers' marks.", []string{"port"}, nil)
	dImpairReleased   = prometheus.NewDesc("rocetor_impair_released_total", "Held frames taken out at their deadline to be sent on (egress) or delivered (ingress); one the port's tx ring then refuses waits and counts again.", []string{"port"}, nil)
	dImpairFlushed    = prometheus.NewDesc("rocetor_impair_flushed_total", "Held frames freed when the workers stopped.", []string{"port"}, nil)
	dImpairSets       = prometheus.NewDesc("rocetor_impair_rule_sets_total", "Rule sets an impaired port adopted (start, reloads, stage on/off), summed over the workers.", []string{"port"}, nil)
)

func (c *impairCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{dImpairMatched, dImpairDestroyed, dImpairTrimmed, dImpairDuplicated, dImpairDupFailed,
		dImpairReordered, dImpairDelayed, dImpairHeld, dImpairHeldBytes, dImpairHeldMax, dImpairReleased, dImpairFlushed, dImpairSets} {
		ch <- d
	}
}

func (c *impairCollector) Collect(ch chan<- prometheus.Metric) {
	sum := make(map[string]*impair.Stats, len(c.ports))
	for _, p := range c.ports {
		sum[p] = &impair.Stats{Port: p}
	}
	for _, ip := range c.impairs {
		s, t := sum[ip.Name()], ip.Snapshot()
		if s == nil {
			continue
		}
		for d := range t.Dir {
			a, b := &s.Dir[d], &t.Dir[d]
			a.Matched += b.Matched
			for k := range b.Destroyed {
				for c := range b.Destroyed[k] {
					a.Destroyed[k][c] += b.Destroyed[k][c]
				}
			}
			a.Trimmed += b.Trimmed
			a.Duplicated += b.Duplicated
			a.DupFailed += b.DupFailed
			a.Reordered += b.Reordered
			a.Delayed += b.Delayed
		}
		s.Held += t.Held
		s.HeldBytes += t.HeldBytes
		s.MaxHeldBytes += t.MaxHeldBytes
		s.Released += t.Released
		s.Flushed += t.Flushed
		s.Sets += t.Sets
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, port := range c.ports {
		s := sum[port]
		for _, dir := range []impair.Direction{impair.Ingress, impair.Egress} {
			d, ds := &s.Dir[dir], dir.String()
			counter(dImpairMatched, d.Matched, port, ds)
			for k := impair.Class(0); k < impair.NumClasses; k++ {
				for c := impair.Cause(0); c < impair.NumCauses; c++ {
					counter(dImpairDestroyed, d.Destroyed[k][c], port, ds, k.String(), c.String())
				}
			}
			counter(dImpairTrimmed, d.Trimmed, port, ds)
			counter(dImpairDuplicated, d.Duplicated, port, ds)
			counter(dImpairDupFailed, d.DupFailed, port, ds)
			counter(dImpairReordered, d.Reordered, port, ds)
			counter(dImpairDelayed, d.Delayed, port, ds)
		}
		gauge(dImpairHeld, s.Held, port)
		gauge(dImpairHeldBytes, s.HeldBytes, port)
		gauge(dImpairHeldMax, s.MaxHeldBytes, port)
		counter(dImpairReleased, s.Released, port)
		counter(dImpairFlushed, s.Flushed, port)
		counter(dImpairSets, s.Sets, port)
	}
}
