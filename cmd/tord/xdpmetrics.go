package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"rocetor/bpf"
)

// xdpCollector exports where each port's XDP program sent frames: to the
// workers' sockets or, for the control plane, to the kernel.
type xdpCollector struct {
	ports []string
	progs []*bpf.Program
}

var dXDPFrames = prometheus.NewDesc("rocetor_xdp_frames_total",
	"Frames the port's XDP program handled, by action: redirect (to the workers), no_socket (switch traffic passed for want of a socket), pass_arp, pass_nd, pass_lldp, pass_local, pass_link (to the kernel).",
	[]string{"port", "action"}, nil)

func (c xdpCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dXDPFrames }

func (c xdpCollector) Collect(ch chan<- prometheus.Metric) {
	for i, p := range c.progs {
		k, err := p.Counters()
		if err != nil {
			ch <- prometheus.NewInvalidMetric(dXDPFrames, err)
			continue
		}
		for _, a := range []struct {
			action string
			n      uint64
		}{{"redirect", k.Redirected}, {"no_socket", k.NoSocket}, {"pass_arp", k.PassARP},
			{"pass_nd", k.PassND}, {"pass_lldp", k.PassLLDP}, {"pass_local", k.PassLocal}, {"pass_link", k.PassLink}} {
			ch <- prometheus.MustNewConstMetric(dXDPFrames, prometheus.CounterValue, float64(a.n), c.ports[i], a.action)
		}
	}
}
