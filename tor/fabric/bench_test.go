package fabric

import (
	"math/rand/v2"
	"testing"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// BenchmarkPermutationK8 is the simulator's cost per packet-hop on a
// fixed workload: htsim's permutation (docs/simulator.md, "Against
// htsim") shrunk to a k = 8 fat tree, its 128 hosts at 100 Gbit/s each
// sending 256 KiB to another, MTU 1024, no wire overhead. It reports
// ns/hop (the runs' wall time, not the builds', over the frames all
// ports put on the wire) and events; ns/op and allocs/op count the build
// as well as the run. Run it alone:
//
//	go test ./tor/fabric -run '^$' -bench PermutationK8 -benchtime 3x -cpuprofile cpu.prof
func BenchmarkPermutationK8(b *testing.B) {
	ti := topo.DefaultTiers()
	ti.HostRate, ti.FabricRate = 100e9, 100e9
	tp, err := topo.Parse("fattree:k=8", ti)
	if err != nil {
		b.Fatal(err)
	}
	const size = 256 << 10
	flows := workload.Permutation(len(tp.Hosts()), size, rand.New(rand.NewPCG(1, sim.Seed(1, 6))))
	var hops, events uint64
	var ran time.Duration
	b.ReportAllocs()
	for b.Loop() {
		n, err := Build(tp, Options{Seed: 1, MTU: 1024, Overhead: -1, MaxMessage: size, MaxQPs: QPsNeeded(flows, 1)})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		res, err := n.Run(flows, RunOptions{QPs: 1})
		ran += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if res.Completed != len(flows) {
			b.Fatalf("completed %d of %d flows", res.Completed, len(flows))
		}
		hops, events = hops+res.PacketHops, events+res.Events
	}
	b.ReportMetric(float64(ran.Nanoseconds())/float64(hops), "ns/hop")
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
}
