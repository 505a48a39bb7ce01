package fabric

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// sharedBufferYAML is the switches' configuration of the shared-buffer
// incast: a buffer far below the queues' static limits, so that the
// dynamic thresholds alone drop (tor/pipeline's TestSharedBufferIncast
// runs the same section).
const sharedBufferYAML = "egress: {queue_limit: 1MiB}\nbuffer: {size: 512KiB, queue_reserve: 8KiB, alpha: {data: 1}}\n"

// TestSharedBufferIncast: four senders write into one receiver (4:1 at
// tor2's port toward it) while two more write into a second receiver
// (2:1 at the port next to it). In the shared buffer the incast's data
// queue meets its dynamic threshold first; both congested queues then
// hold at most reserve + α × the free pool, every drop is a threshold
// drop, none is at the static limit, and the pool is never exceeded.
func TestSharedBufferIncast(t *testing.T) {
	const senders = 6
	ti := topo.Tiers{HostRate: 1e9, FabricRate: 10e9, HostDelay: 2 * sim.Microsecond, FabricDelay: 2 * sim.Microsecond}
	tp := topo.Dumbbell(senders, 2, ti)
	var flows []workload.Flow
	for s := 0; s < senders; s++ {
		dst := senders // the incast's receiver
		if s >= 4 {
			dst = senders + 1 // the neighbour's
		}
		for k := 0; k < 8; k++ {
			flows = append(flows, workload.Flow{Src: s, Dst: dst, Size: 64 << 10, After: -1})
		}
	}
	n, err := Build(tp, Options{Seed: 1, Switch: sharedBufferYAML, MaxQPs: QPsNeeded(flows, 1)})
	if err != nil {
		t.Fatal(err)
	}
	var tor2 *SwitchNode
	for _, s := range n.Switches {
		if s.Name == "tor2" {
			tor2 = s
		}
	}
	w := tor2.Pipe.Worker
	data := w.Egress(0).QueueIndex("data")
	port := func(host int) int {
		for i, p := range tor2.Cfg.Ports {
			if p == n.Hosts[host].Name {
				return i
			}
		}
		t.Fatalf("tor2 has no port toward host %d (%v)", host, tor2.Cfg.Ports)
		return -1
	}
	incast, neighbour := port(senders), port(senders+1)
	// The order in which tor2's queues first drop, as the switch runs.
	var order []string
	dropped := map[[2]int]bool{}
	pool := n.Switches[0].Pipe.Worker.Egress(0).Shared()
	var maxUsed int64
	tor2.Node.Stall = func(now sim.Time) sim.Time {
		maxUsed = max(maxUsed, w.Egress(0).Shared().Used(), pool.Used())
		for p := range tor2.Cfg.Ports {
			for q := 0; q < w.Egress(p).NumQueues(); q++ {
				if k := [2]int{p, q}; !dropped[k] && w.Egress(p).Stats(q).ThresholdDrops > 0 {
					dropped[k] = true
					order = append(order, tor2.Cfg.Ports[p]+"/"+w.Egress(p).QueueName(q))
				}
			}
		}
		return now
	}
	res, err := n.Run(flows, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	balanced(t, res)
	want := tor2.Cfg.Ports[incast] + "/data"
	if len(order) == 0 || order[0] != want {
		t.Fatalf("tor2's queues dropped in the order %v, want %s first", order, want)
	}
	t.Logf("tor2's queues first dropped in the order %v", order)
	size := tor2.Pipe.Worker.Egress(0).Shared().Size()
	if maxUsed > size {
		t.Fatalf("pool reached %d of %d bytes", maxUsed, size)
	}
	for _, p := range []int{incast, neighbour} {
		s := w.Egress(p).Stats(data)
		if s.MaxDepthBytes > 8<<10+int(size)/2 {
			t.Errorf("%s: data queue reached %d bytes, past reserve + α × a pool alone", tor2.Cfg.Ports[p], s.MaxDepthBytes)
		}
	}
	w.Publish(res.SimTimeNs)
	snap := w.Snapshot()
	if snap.Drops[dataplane.ReasonQueueFull] != 0 || snap.Drops[dataplane.ReasonBufferThreshold] == 0 {
		t.Fatalf("tor2 dropped %d at the static limit and %d at the threshold, want 0 and some",
			snap.Drops[dataplane.ReasonQueueFull], snap.Drops[dataplane.ReasonBufferThreshold])
	}
}
