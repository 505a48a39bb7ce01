package metrics

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

type toPort1 struct{}

func (toPort1) Name() string { return "fwd" }
func (toPort1) Process(_ *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		b.Pkts[i].Forward(1, 2)
	}
}

func TestCollectorSumsWorkers(t *testing.T) {
	frame := make([]byte, 2048)
	n, err := rocev2.Build(frame, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.0.1"),
		DstIP: netip.MustParseAddr("10.0.0.2"), Opcode: rocev2.RCSendOnly, Payload: make([]byte, 100)})
	if err != nil {
		t.Fatal(err)
	}
	var workers []Source
	for w := 0; w < 2; w++ {
		mem, _ := dataplane.NewMem(make([]byte, 256*2048), 2048)
		p0 := dataplane.NewMemPort("eth0", rocev2.MAC{}, mem, 64)
		p1 := dataplane.NewMemPort("eth1", rocev2.MAC{}, mem, 64)
		eg := dataplane.DefaultEgress(0, 1<<20)
		wk, err := dataplane.NewWorker(dataplane.WorkerConfig{ID: w, Mem: mem, Ports: []dataplane.Port{p0, p1},
			Egress: []dataplane.EgressConfig{eg, eg}, Stages: []dataplane.Stage{toPort1{}}})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 10; i++ {
			p0.Inject(frame[:n])
		}
		wk.Step(0)
		wk.Step(2e6) // transmits and publishes
		workers = append(workers, wk)
	}
	c := New([]string{"eth0", "eth1"}, []string{"fwd"}, workers...)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	want := `
# HELP rocetor_port_tx_packets_total Frames transmitted on the port.
# TYPE rocetor_port_tx_packets_total counter
rocetor_port_tx_packets_total{port="eth0"} 0
rocetor_port_tx_packets_total{port="eth1"} 20
# HELP rocetor_stage_packets_total Frames handed to the stage.
# TYPE rocetor_stage_packets_total counter
rocetor_stage_packets_total{stage="fwd"} 20
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"rocetor_port_tx_packets_total", "rocetor_stage_packets_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n < 40 {
		t.Fatalf("gathered %d metrics, err %v", n, err)
	}
}
