package main

import (
	"testing"

	"rocetor/dataplane/metrics"
	"rocetor/tor/fwd"
	"rocetor/tor/pipeline"
)

// TestSharedBufferMetrics: a tord of two workers with a buffer section
// serves the pool and each queue's dynamic threshold on /metrics, the
// workers' shares summed.
func TestSharedBufferMetrics(t *testing.T) {
	cfg := handoffConfigs(t)["plain"]
	cfg.Workers = 2
	cfg.Egress.QueueLimit = 4 << 20
	cfg.Buffer = &pipeline.BufferConfig{Size: 1 << 20, PortReserve: 16 << 10, QueueReserve: 8 << 10, Alpha: map[string]float64{"control": 8, "idle": 0.5}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ms := newMemSwitches(t, cfg, &fwd.TableConfig{}, 1024)
	sw := &Switch{cfg: cfg}
	for w, pl := range ms.pls {
		sw.adopt(w, pl)
	}
	ms.settle()
	reg, err := registry(cfg, sw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := metrics.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	pool := float64(1<<20 - 4*(16<<10+4*8<<10)) // 4 ports × (16 KiB + 4 queues × 8 KiB) reserved
	own := float64(8<<10 + 16<<10)              // the queue's reserve and the port's, both workers' halves
	for k, want := range map[string]float64{
		`rocetor_buffer_shared_size_bytes`:                            pool,
		`rocetor_buffer_shared_used_bytes`:                            0,
		`rocetor_queue_threshold_bytes{port="s1",queue="data"}`:       own + 2*pool, // each worker: 4 + 8 KiB + α × free
		`rocetor_queue_threshold_bytes{port="h2",queue="idle"}`:       own + pool,
		`rocetor_buffer_port_reserve_bytes{port="h1"}`:                16 << 10,
		`rocetor_buffer_port_reserve_used_bytes{port="h1"}`:           0,
		`rocetor_queue_threshold_bytes{port="h1",queue="control"}`:    2 * 4 << 20, // egress.queue_limit caps α 8
		`rocetor_queue_threshold_drops_total{port="h1",queue="data"}`: 0,
		`rocetor_drops_total{reason="buffer_threshold"}`:              0,
	} {
		if v, ok := got[k]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", k, v, ok, want)
		}
	}
}
