package fabric

import (
	"testing"

	"rocetor/tor/workload"
)

// TestQoSClasses: the simulator's hosts mark their frames as a ConnectX
// does, and switches with the default QoS profile (qos: {}) sort them
// by it. Two DCQCN flows through a marking bottleneck: their data and
// ACKs take the RoCE (data) queue of every switch port, their CNPs the
// strict cnp queue, and nothing the lossy one. With the hosts' traffic
// class moved to DSCP 10 (Options.DSCP, roceperf --tclass 40), the
// same data takes the lossy queue, which "ecn: {}" does not mark (ECN
// profiles are per class: ecn.queues), so no CNP is sent.
func TestQoSClasses(t *testing.T) {
	flows := []workload.Flow{{Src: 0, Dst: 2, Size: 4 << 20, After: -1}, {Src: 1, Dst: 3, Size: 4 << 20, After: -1}}
	sw := "qos: {}\necn: {}\negress: {queue_limit: 224KiB}\n"
	for _, dscp := range []uint8{0, 10} {
		res, p := dumbbellRun(t, 10e9, 2, Options{Seed: 1, CC: "dcqcn", Switch: sw, DSCP: dscp}, flows)
		enq := map[string]uint64{}
		for _, s := range p.n.Switches {
			e := s.Node.W.Egress(fabricPortOf(t, p.n, 0))
			if s != p.n.Switches[0] {
				e = s.Node.W.Egress(fabricPortOf(t, p.n, 1))
			}
			for _, q := range []string{"data", "cnp", "lossy"} {
				enq[q] += e.Stats(e.QueueIndex(q)).Enqueued
			}
		}
		cnps := res.HostCounters["CNPsSent"]
		t.Logf("DSCP %d: fabric ports' queues took %v; hosts sent %d CNPs", dscp, enq, cnps)
		switch {
		case dscp == 0 && (cnps == 0 || enq["cnp"] != uint64(cnps)):
			t.Errorf("default classes: %d CNPs on the cnp queues of the fabric ports, hosts sent %d", enq["cnp"], cnps)
		case dscp == 0 && (enq["data"] == 0 || enq["lossy"] != 0):
			t.Errorf("default classes: %d frames on data, %d on lossy; want all RoCE on data", enq["data"], enq["lossy"])
		case dscp == 10 && (enq["lossy"] == 0 || enq["data"] != 0 || cnps != 0):
			t.Errorf("DSCP 10: %d frames on data, %d on lossy, %d CNPs; want all on lossy, unmarked", enq["data"], enq["lossy"], cnps)
		}
	}
}
