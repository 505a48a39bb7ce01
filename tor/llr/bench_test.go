package llr

import (
	"testing"

	"rocetor/dataplane"
)

// BenchmarkLink runs both switches of the rig on the lossless path: a's
// worker receives 64 frames of 1024-byte payload from its host, protects
// them (shim, sequence, Tx copy) and sends them; b's worker receives
// them through the wrapper (Algorithm 1, strip) and forwards them to its
// host, and ACKs flow back. "off" is the same two workers without llr.
// ns/pkt covers both workers.
func BenchmarkLink(b *testing.B) {
	for _, c := range []struct {
		name string
		off  bool
		mode Mode
	}{{"off", true, Blocking}, {"blocking", false, Blocking}, {"nb", false, NonBlocking}} {
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b, testCfg(c.mode))
			if c.off {
				for _, s := range []*side{&r.a, &r.b} {
					eg := dataplane.DefaultEgress(0, 4<<20)
					w, err := dataplane.NewWorker(dataplane.WorkerConfig{Mem: s.mem, Ports: []dataplane.Port{s.host, s.link},
						Egress: []dataplane.EgressConfig{eg, eg}, Stages: []dataplane.Stage{cross{}}})
					if err != nil {
						b.Fatal(err)
					}
					s.w = w
				}
			}
			r.keep = false
			f := frame(b, 1, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := 0; k < dataplane.BatchSize; k++ {
					r.a.host.Inject(f)
				}
				r.step(1000)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
			if !c.off {
				p := r.stats(&r.b)
				if p.Duplicates != 0 || p.LossesDetected != 0 {
					b.Fatalf("lossless path saw %d duplicates, %d losses", p.Duplicates, p.LossesDetected)
				}
				b.Logf("held %d, unprotected %d", p.Held, r.stats(&r.a).UnprotectedTxFull)
			}
		})
	}
}
