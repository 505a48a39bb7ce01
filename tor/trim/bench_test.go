package trim

import (
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// BenchmarkTrim runs the whole worker (receive, classify with DCP and
// ICRC verification, route, trim, queue, transmit) at 64 frames of 1106
// bytes per step, and reports ns per packet. "pass" trims nothing (the
// threshold is never reached: the stage's cost is a depth read),
// "trim" trims every packet (rocev2.Trim rewrites and re-checksums each),
// "off" is the same worker, with the same WRR egress, without the stage:
// the baseline. On the shared 2-core AMD EPYC machine (-benchtime
// 300000x -count 3): off 215–220, pass 196–256, trim 277–331 ns/pkt —
// the stage's own cost is within the noise when it passes, and trimming
// (rewrite, IPv4 checksum, a fresh ICRC over 62 bytes) adds 60–110 ns.
// Classifying 1106-byte frames with ICRC verification is most of the
// rest.
func BenchmarkTrim(b *testing.B) {
	for _, c := range []struct {
		name      string
		threshold dataplane.Bytes
		off       bool
	}{{"off", 1 << 30, true}, {"pass", 1 << 30, false}, {"trim", 1, false}} {
		b.Run(c.name, func(b *testing.B) {
			r := newRig(b, Config{Threshold: c.threshold}, rigOpt{limit: 16 << 20})
			if c.off {
				var err error
				ports := []dataplane.Port{r.ports[0], r.ports[1]}
				eg, _ := Config{}.WRR(dataplane.DefaultEgress(0, 16<<20))
				r.w, err = dataplane.NewWorker(dataplane.WorkerConfig{Mem: r.mem, Ports: ports,
					Egress: []dataplane.EgressConfig{eg, eg}, Stages: []dataplane.Stage{r.route},
					Classifier: rocev2.Classifier{DCP: true, VerifyICRC: true}})
				if err != nil {
					b.Fatal(err)
				}
			}
			r.keep = false
			f := dcpData(b, 1, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := 0; k < dataplane.BatchSize; k++ {
					r.ports[0].Inject(f)
				}
				r.step(1000)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}
