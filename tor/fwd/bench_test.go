package fwd

import (
	"fmt"
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// toPort1 is the baseline stage: every packet to port 1, queue 2, no
// lookup and no rewrite. Its ns/pkt is the worker's own cost (receive,
// classify, queue, schedule, transmit), to subtract from the others.
type toPort1 struct{}

func (toPort1) Name() string { return "baseline" }
func (toPort1) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			p.Forward(1, 2)
		}
	}
}

// benchTable has n /24 routes under 10.0.0.0/8, each a group of four
// next hops through gateways on ports 1–4, plus a default route.
func benchTable(n int, mode Mode) *TableConfig {
	tc := &TableConfig{Multipath: Multipath{Mode: mode, Bias: 1500}}
	var nhs []NextHop
	for p := uint16(1); p <= 4; p++ {
		gw := netip.AddrFrom4([4]byte{192, 168, byte(p), 1})
		nhs = append(nhs, NextHop{Port: p, Gateway: gw})
		tc.Neighbours = append(tc.Neighbours, Neighbour{Port: p, Addr: gw, MAC: rocev2.MAC{2, 0xbb, 0, 0, 0, byte(p)}})
	}
	for i := 0; i < n; i++ {
		tc.Routes = append(tc.Routes, Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24), NextHops: nhs})
	}
	tc.Routes = append(tc.Routes, Route{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHops: nhs[:1]})
	return tc
}

// BenchmarkForward runs whole batches of 64 RoCE packets (one per flow,
// destinations spread over all routes) through a worker with five
// in-memory ports and reports ns/pkt for the worker plus the stage.
func BenchmarkForward(b *testing.B) {
	for _, mode := range []Mode{ECMP, Spray, Adaptive} {
		for _, n := range []int{1, 10, 1000} {
			b.Run(fmt.Sprintf("%v/routes=%d", mode, n), func(b *testing.B) {
				benchForward(b, benchTable(n, mode), n, nil)
			})
		}
	}
	b.Run("baseline", func(b *testing.B) { benchForward(b, benchTable(1, ECMP), 1, toPort1{}) })
}

func benchForward(b *testing.B, tc *TableConfig, routes int, stage dataplane.Stage) {
	r := newRig(b, 5, DefaultConfig(), tc)
	st := stage
	if st == nil {
		st = r.stage
	}
	// A worker of our own, whose classifier does not verify ICRCs: the
	// benchmark measures forwarding, not the CRC.
	ports := make([]dataplane.Port, len(r.ports))
	eg := make([]dataplane.EgressConfig, len(r.ports))
	for i, p := range r.ports {
		ports[i], eg[i] = p, dataplane.DefaultEgress(0, 4<<20)
	}
	var err error
	r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: r.mem, Ports: ports, Egress: eg, Stages: []dataplane.Stage{st}})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range r.ports {
		p.OnTransmit = nil
	}
	frames := make([][]byte, dataplane.BatchSize)
	for i := range frames {
		k := i * 7919 % max(routes, 1)
		dst := netip.AddrFrom4([4]byte{10, byte(k >> 8), byte(k), byte(1 + i)})
		frames[i] = build(b, frame{dst: dst.String(), qp: uint32(i), sport: 0xc000 + uint16(i)})
	}
	now := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += dataplane.BatchSize {
		for _, f := range frames {
			r.ports[0].Inject(f)
		}
		now += 1000
		r.w.Step(now)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
	b.StopTimer()
	if stage == nil && r.stage.Stats().Forwarded == 0 {
		b.Fatal("nothing forwarded")
	}
}
