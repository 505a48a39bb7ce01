package pipeline

import (
	"testing"

	"rocetor/dataplane"
)

// qosMix is a batch of frames of the classes one port carries: what
// queue (by name) and size each takes. RoCE data at 1,100 bytes, every
// eighth frame a 1,500-byte TCP segment, every sixteenth a CNP.
func qosMix(e *dataplane.Egress, classes bool) (q [dataplane.BatchSize]int, n [dataplane.BatchSize]int) {
	for i := range q {
		q[i], n[i] = e.QueueIndex("data"), 1100
		switch {
		case !classes:
		case i%16 == 15:
			q[i], n[i] = e.QueueIndex("cnp"), 78
		case i%8 == 7:
			q[i], n[i] = e.QueueIndex("lossy"), 1500
		}
	}
	return q, n
}

// qosEgress is port 1's egress of a switch configured by y.
func qosEgress(tb testing.TB, y string) *dataplane.Egress {
	tb.Helper()
	c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "bench")
	if err != nil {
		tb.Fatal(err)
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	if err := c.Validate(); err != nil {
		tb.Fatal(err)
	}
	egs, err := c.EgressConfigs()
	if err != nil {
		tb.Fatal(err)
	}
	e, err := dataplane.NewEgress(egs[1])
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// BenchmarkQoSEgress measures a frame's way through a port's egress,
// enqueued and dequeued in batches of 64, without a qos section (none:
// every frame on data, served alone on its level) and with the default
// profile (roce: the same frames, now on a DWRR level shared with the
// lossy queue; mixed: RoCE, TCP and CNPs on their classes' queues).
//
//	go test -run '^$' -bench BenchmarkQoSEgress -count 10 ./tor/pipeline/
func BenchmarkQoSEgress(b *testing.B) {
	for _, c := range []struct {
		name, yaml string
		classes    bool
	}{{"none", "", false}, {"roce", "qos: {}\n", false}, {"mixed", "qos: {}\n", true}} {
		b.Run(c.name, func(b *testing.B) {
			e := qosEgress(b, c.yaml)
			q, n := qosMix(e, c.classes)
			var out [dataplane.BatchSize]dataplane.Packet
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += dataplane.BatchSize {
				for k := range q {
					e.Enqueue(q[k], uint64(k), n[k])
				}
				for e.Backlog() > 0 {
					e.Dequeue(0, out[:])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/pkt")
		})
	}
}

// TestQoSEgressAllocs: the classes' egress allocates nothing once its
// rings have grown to the batch.
func TestQoSEgressAllocs(t *testing.T) {
	e := qosEgress(t, "qos: {}\n")
	q, n := qosMix(e, true)
	var out [dataplane.BatchSize]dataplane.Packet
	run := func() {
		for k := range q {
			e.Enqueue(q[k], uint64(k), n[k])
		}
		for e.Backlog() > 0 {
			e.Dequeue(0, out[:])
		}
	}
	run()
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Errorf("%v allocations a batch, want 0", a)
	}
}

// TestQoSPipelineAllocs: a switch with the default profile classifies
// and forwards frames of every class without allocating.
func TestQoSPipelineAllocs(t *testing.T) {
	c := qosConfig(t, "qos: {}\n")
	pl, up, _ := qosPipeline(t, &c)
	frames := [][]byte{qosFrame(t, 26, 1024), qosFrame(t, 48, 16), qosFrame(t, 0, 1024)}
	var now int64
	run := func() {
		for _, f := range frames {
			up.Inject(f)
		}
		now += 100_000
		pl.Worker.Step(now)
	}
	run()
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Errorf("%v allocations a step, want 0", a)
	}
	e := pl.Worker.Egress(1)
	for _, q := range []string{"data", "cnp", "lossy"} {
		if e.Stats(e.QueueIndex(q)).Dequeued < 200 {
			t.Errorf("queue %s sent %d frames, want every one of its 201", q, e.Stats(e.QueueIndex(q)).Dequeued)
		}
	}
}
