package fabric

import (
	"testing"

	"rocetor/tor/netrt"
)

// TestNetRTOccupancy: the peak is the largest port's on any switch,
// the mean one port's over the ports that held anything, not sums over
// ports as the stages' counters are.
func TestNetRTOccupancy(t *testing.T) {
	var o NetRTOccupancy
	var src1, src2 netrt.SrcStats
	var dst netrt.DstStats
	src1.Ports[1] = netrt.SrcPortStats{MaxBytes: 4000, ByteSeconds: 2}
	src1.Ports[2] = netrt.SrcPortStats{MaxBytes: 1000, ByteSeconds: 1}
	src2.Ports[1] = netrt.SrcPortStats{MaxBytes: 9000, ByteSeconds: 3}
	dst.Ports[5] = netrt.DstPortStats{MaxBytes: 500, ByteSeconds: 0.5}
	o.add(src1, netrt.DstStats{})
	o.add(src2, dst)
	o.finish(0.001) // 1 ms of simulated time
	want := NetRTOccupancy{PoolPeakBytes: 9000, PoolMeanBytes: 2000, PoolPorts: 3, ReorderPeakBytes: 500, ReorderMeanBytes: 500, ReorderPorts: 1}
	if o != want {
		t.Errorf("occupancy %+v, want %+v", o, want)
	}
}
