package fabric

import "rocetor/tor/netrt"

// NetRTOccupancy is NetRT's memory over a run, the seed's Fig. 7
// (seed 000 §IV-A 2) taken over a whole fabric (§IV-C: "pool and buffer
// occupancy"): the duplicate pools of the ToRs' fabric ports and the
// reordering buffers of their host ports. A peak is the largest one
// port reached on any switch; a mean is the time average of one port's
// bytes, over the ports that held anything and the run's simulated
// time. The stages' own counters (Result.Stages) sum every port's
// high-water mark, which says nothing of one port's memory.
type NetRTOccupancy struct {
	PoolPeakBytes    int     `json:"pool_peak_bytes"`
	PoolMeanBytes    float64 `json:"pool_mean_bytes"`
	PoolPorts        int     `json:"pool_ports"`
	ReorderPeakBytes int     `json:"reorder_peak_bytes"`
	ReorderMeanBytes float64 `json:"reorder_mean_bytes"`
	ReorderPorts     int     `json:"reorder_ports"`
}

// add takes one switch's NetRT stages into o.
func (o *NetRTOccupancy) add(src netrt.SrcStats, dst netrt.DstStats) {
	for i := range src.Ports {
		p := &src.Ports[i]
		if p.MaxBytes > 0 {
			o.PoolPeakBytes = max(o.PoolPeakBytes, p.MaxBytes)
			o.PoolMeanBytes += p.ByteSeconds
			o.PoolPorts++
		}
	}
	for i := range dst.Ports {
		p := &dst.Ports[i]
		if p.MaxBytes > 0 {
			o.ReorderPeakBytes = max(o.ReorderPeakBytes, p.MaxBytes)
			o.ReorderMeanBytes += p.ByteSeconds
			o.ReorderPorts++
		}
	}
}

// finish turns the summed byte-seconds into mean bytes per port over
// seconds of simulated time.
func (o *NetRTOccupancy) finish(seconds float64) {
	if seconds <= 0 {
		return
	}
	if o.PoolPorts > 0 {
		o.PoolMeanBytes = round3(o.PoolMeanBytes / seconds / float64(o.PoolPorts))
	}
	if o.ReorderPorts > 0 {
		o.ReorderMeanBytes = round3(o.ReorderMeanBytes / seconds / float64(o.ReorderPorts))
	}
}
