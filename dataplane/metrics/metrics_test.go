package metrics

import (
	"bytes"
	"context"
	"maps"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

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

// Gather flattens a registry to what Parse makes of its /metrics text:
// the same keys and values, so a switch in this process reads like a
// tord scraped over HTTP.
func TestGatherMatchesParse(t *testing.T) {
	var a dataplane.Snapshot
	a.Ports = make([]dataplane.PortCounters, 2)
	a.PortStats = make([]dataplane.PortStats, 2)
	a.Queues = [][]dataplane.QueueSnapshot{{{Name: "data"}}, {{Name: "data", DepthBytes: 1500}}}
	a.Ports[1].TxPackets, a.Ports[0].RxBytes = 7, 1<<40+3
	a.Drops[dataplane.ReasonQueueFull] = 5
	a.Batches[2] = 4
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New([]string{"eth0", "eth1"}, nil, fakeSource{a}), prometheus.NewGauge(prometheus.GaugeOpts{Name: "other_gauge", Help: "Not rocetor's."}))
	got, err := Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	want, err := Parse(&text)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) || len(got) < 20 {
		t.Errorf("Gather: %d series, Parse: %d; differ or too few", len(got), len(want))
	}
	if got[`rocetor_port_rx_bytes_total{port="eth0"}`] != 1<<40+3 || got[`rocetor_drops_total{reason="queue_full"}`] != 5 {
		t.Errorf("values: %v", got)
	}
}

type fakeSource struct{ s dataplane.Snapshot }

func (f fakeSource) Snapshot() dataplane.Snapshot { return f.s }

// staticSource is a fixed snapshot.
type staticSource dataplane.Snapshot

func (s staticSource) Snapshot() dataplane.Snapshot { return dataplane.Snapshot(s) }

func TestCollectorSharedBuffer(t *testing.T) {
	q := func(th int, drops uint64) []dataplane.QueueSnapshot {
		return []dataplane.QueueSnapshot{{Name: "data", ThresholdBytes: th, QueueStats: dataplane.QueueStats{ThresholdDrops: drops}}}
	}
	mk := func(w int) staticSource {
		return staticSource{Worker: w, Ports: make([]dataplane.PortCounters, 1), PortStats: make([]dataplane.PortStats, 1),
			Queues: [][]dataplane.QueueSnapshot{q(1000, 3)}, SharedUsed: 700, SharedSize: 4096,
			Reserves: []dataplane.ReserveSnapshot{{Size: 2048, Held: 100 + w}}}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New([]string{"eth0"}, nil, mk(0), mk(1)))
	want := `
# HELP rocetor_buffer_port_reserve_bytes Shared buffer (buffer:): the port's reserve (buffer.port_reserve), bytes its queues share beyond their own reserves before the pool; only with a shared buffer.
# TYPE rocetor_buffer_port_reserve_bytes gauge
rocetor_buffer_port_reserve_bytes{port="eth0"} 4096
# HELP rocetor_buffer_port_reserve_used_bytes Shared buffer (buffer:): bytes the port's egress queues hold of the port's reserve; only with a shared buffer.
# TYPE rocetor_buffer_port_reserve_used_bytes gauge
rocetor_buffer_port_reserve_used_bytes{port="eth0"} 201
# HELP rocetor_buffer_shared_used_bytes Shared buffer (buffer:): bytes the egress queues hold beyond their reserves, switch-wide; only with a shared buffer.
# TYPE rocetor_buffer_shared_used_bytes gauge
rocetor_buffer_shared_used_bytes 700
# HELP rocetor_queue_threshold_bytes Shared buffer (buffer:): the most bytes the egress queue may hold now, its reserve, the port reserve it holds or could take, and alpha times the pool's free bytes; only with a shared buffer.
# TYPE rocetor_queue_threshold_bytes gauge
rocetor_queue_threshold_bytes{port="eth0",queue="data"} 2000
# HELP rocetor_queue_threshold_drops_total Shared buffer (buffer:): frames the egress queue refused at its dynamic threshold, among rocetor_queue_drops_total; only with a shared buffer.
# TYPE rocetor_queue_threshold_drops_total counter
rocetor_queue_threshold_drops_total{port="eth0",queue="data"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rocetor_buffer_shared_used_bytes",
		"rocetor_queue_threshold_bytes", "rocetor_queue_threshold_drops_total",
		"rocetor_buffer_port_reserve_bytes", "rocetor_buffer_port_reserve_used_bytes"); err != nil {
		t.Fatal(err)
	}
	// Without a pool the families are absent: a switch without buffer:
	// exports what it did before.
	reg = prometheus.NewPedanticRegistry()
	s := mk(0)
	s.SharedSize, s.SharedUsed = 0, 0
	reg.MustRegister(New([]string{"eth0"}, nil, s))
	if n, err := testutil.GatherAndCount(reg, "rocetor_buffer_shared_used_bytes", "rocetor_queue_threshold_bytes",
		"rocetor_buffer_port_reserve_bytes"); err != nil || n != 0 {
		t.Fatalf("%d shared-buffer series without a pool, err %v", n, err)
	}
}

// A running worker's thread is known to the kernel: its time on a CPU
// and waiting for one are exported; a worker not running has neither.
func TestCollectorWorkerSchedstat(t *testing.T) {
	if _, _, ok := schedstat(os.Getpid()); !ok {
		t.Skip("no /proc/self/task/*/schedstat (kernel without schedstats)")
	}
	mem, _ := dataplane.NewMem(make([]byte, 64*2048), 2048)
	ports := []dataplane.Port{dataplane.NewMemPort("eth0", rocev2.MAC{}, mem, 8), dataplane.NewMemPort("eth1", rocev2.MAC{}, mem, 8)}
	eg := dataplane.DefaultEgress(0, 1<<20)
	wk, err := dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: ports, Egress: []dataplane.EgressConfig{eg, eg}, Mode: dataplane.Busy})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New([]string{"eth0", "eth1"}, nil, wk))
	names := []string{"rocetor_worker_cpu_seconds_total", "rocetor_worker_run_delay_seconds_total"}
	if n, err := testutil.GatherAndCount(reg, names...); err != nil || n != 0 {
		t.Fatalf("%d schedstat series before Run, err %v", n, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- wk.Run(ctx) }()
	// A busy worker publishes every millisecond: wait for its thread.
	for wk.Snapshot().TID == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	mfs, err := reg.Gather()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] = m.GetCounter().GetValue()
		}
	}
	if got[names[0]] <= 0 {
		t.Errorf("a busy worker ran %v s on a CPU, want > 0 (%v)", got[names[0]], got)
	}
	if _, ok := got[names[1]]; !ok {
		t.Errorf("no %s (%v)", names[1], got)
	}
}
