package trust

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// BenchmarkStage measures the stage alone over a batch of 64 classified
// packets: "data" is what it sees almost always (RoCEv2 data from a
// host, passed after two compares), "netrt" NetRT messages from the
// fabric checked against two peer prefixes, "refuse" NetRT messages
// from a host, dropped; "fill" refills the batch alone, which the
// others do too. It reports ns per packet. On the shared 2-core AMD
// EPYC machine (-benchtime 300000x -count 3): fill 10–14, data 11–15,
// refuse 11–15, netrt 17–18 ns/pkt: the stage costs about 1 ns a packet
// on data, and 7 ns on a NetRT message checked against the peers.
func BenchmarkStage(b *testing.B) {
	for _, c := range []struct {
		name string
		in   uint16
		f    []byte
	}{
		{"data", 0, write(b, local, remote)},
		{"netrt", 1, request(b, remote, local)},
		{"refuse", 0, request(b, remote, local)},
		{"fill", 0, nil}, // refilling the batch alone: the baseline
	} {
		b.Run(c.name, func(b *testing.B) {
			st := NewStage(Config{Hosts: 1, NetRT: true, Peers: append(peers, peers[0])})
			var batch dataplane.Batch
			batch.N = dataplane.BatchSize
			var m rocev2.Meta
			if c.f != nil {
				rocev2.Classifier{DCP: true}.Classify(c.f, &m)
			}
			ctx := &dataplane.Ctx{}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := range batch.Pkts {
					batch.Pkts[k] = dataplane.Packet{In: c.in, Out: dataplane.NoPort, Meta: m}
				}
				if c.f != nil {
					st.Process(ctx, &batch)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}
