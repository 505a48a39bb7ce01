package perf

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
)

// TestMemoryPerQP measures the Go heap one QP costs a roceperf endpoint,
// configured as a run configures it (send queue of the run's depth,
// completion queue of QPs × depth, the worker's timer heap), message
// buffers aside (they are the run's: QPs × depth × size on the client).
// It logs the figure docs/roceperf.md quotes and fails if it grows past
// 16 KiB per QP.
func TestMemoryPerQP(t *testing.T) {
	const qps = 1000
	for _, c := range []struct {
		name      string
		transport string
		sq, rq    int
	}{
		{"client 4KiB, --depth 0 (4)", "gbn", AutoDepth(4096, qps), 1},
		{"client 4KiB, --depth 64", "gbn", 64, 1},
		{"client 1MiB, --depth 0 (1)", "gbn", AutoDepth(1<<20, qps), 1},
		{"server write/read", "gbn", 1, 1},
		{"client 4KiB, --depth 0 (4), dcp", "dcp", AutoDepth(4096, qps), 1},
		{"server write, dcp", "dcp", 1, 1},
	} {
		heap := func(n int) uint64 {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			tr, err := NewTransport(c.transport, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			sc := sessionConfig{ip: netip.MustParseAddr("192.0.2.1"), transport: tr, qps: n, sq: c.sq, rq: c.rq,
				cq: n * max(c.sq, c.rq), mtu: 1024, baseQPN: 0x100}
			ec := sc.endpoint()
			eg := dataplane.DefaultEgress(0, 64<<10)
			ec.Egress, ec.FrameSize = eg, 4096
			e, err := nic.NewEndpoint(ec)
			if err != nil {
				t.Fatal(err)
			}
			mem, _ := dataplane.NewMem(make([]byte, 64*4096), 4096)
			w, err := dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: []dataplane.Port{dataplane.NewMemPort("m", rocev2.MAC{}, mem, 64)},
				Egress: []dataplane.EgressConfig{eg}, Stages: []dataplane.Stage{e}, TimerCap: 4*n + 1024})
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				q, err := e.CreateQP(nic.QPOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Connect(q.QPN, nic.QPInfo{QPN: 7, MTU: 1024, IP: netip.MustParseAddr("192.0.2.2")}); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			runtime.KeepAlive(e)
			runtime.KeepAlive(w)
			return m1.HeapAlloc - m0.HeapAlloc
		}
		one, many := heap(1), heap(qps)
		per := float64(many-one) / (qps - 1)
		t.Logf("%s: %d QPs take %.2f MiB of heap, %.0f bytes per QP", c.name, qps, float64(many)/(1<<20), per)
		if per > 16<<10 {
			t.Errorf("%s: %.0f bytes per QP", c.name, per)
		}
	}
}

// TestSRState: every transport's SR state (nic.SRState), per QP and
// shared, from a real endpoint sized for 5,000 QPs as a run builds it,
// as the report gives it — IRN's bitmaps and FaSR's pool sized for the
// same BDP (srBDP), FaSR's pool once whatever the QPs, gbn nothing.
func TestSRState(t *testing.T) {
	const qps = 5000
	want := map[string]struct{ perQP, shared, bdp int }{"gbn": {0, 0, 0}, "irn": {80, 0, srBDP}, "fasr": {8, 232, srBDP}, "dcp": {197, 0, 0}}
	for name, w := range want {
		tr, err := NewTransport(name, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		sc := sessionConfig{ip: netip.MustParseAddr("192.0.2.1"), transport: tr, qps: qps, sq: 1, rq: 1, cq: qps, mtu: 1024, baseQPN: 0x100}
		ec := sc.endpoint()
		ec.Egress = dataplane.DefaultEgress(0, 64<<10)
		e, err := nic.NewEndpoint(ec)
		if err != nil {
			t.Fatal(err)
		}
		var c Counters
		c.setSR(e.SRState())
		t.Logf("%s: %d B per QP × %d + %d B shared = %d B (BDP %d)", name, c.SRStateBytesPerQP, qps, c.SRSharedBytes, c.SRStateBytes, c.SRBDPPackets)
		if c.SRStateBytesPerQP != w.perQP || c.SRSharedBytes != w.shared || c.SRStateBytes != w.perQP*qps+w.shared || c.SRBDPPackets != w.bdp {
			t.Errorf("%s: %+v; want %d per QP, %d shared, BDP %d (TestSRMemoryTable's figures)", name, c, w.perQP, w.shared, w.bdp)
		}
		r := &Report{Transport: name, QPs: qps, Counters: c, Server: &c}
		var js, table bytes.Buffer
		r.writeJSON(&js)
		r.writeTable(&table)
		for _, k := range []string{fmt.Sprintf(`"sr_state_bytes_per_qp":%d`, w.perQP), fmt.Sprintf(`"sr_shared_bytes":%d`, w.shared),
			fmt.Sprintf(`"sr_state_bytes":%d`, c.SRStateBytes), fmt.Sprintf(`"sr_bdp_packets":%d`, w.bdp)} {
			if strings.Count(js.String(), k) != 2 {
				t.Errorf("%s: JSON lacks %s for client and server: %s", name, k, js.String())
			}
		}
		if c.SRStateBytes == 0 {
			if strings.Contains(table.String(), "SR state") {
				t.Errorf("%s: table shows SR state:\n%s", name, table.String())
			}
			continue
		}
		line := fmt.Sprintf("SR state  %d B (%d B per QP × %d QPs + %d B shared", c.SRStateBytes, w.perQP, qps, w.shared)
		if w.bdp > 0 {
			line += fmt.Sprintf(", for a BDP of %d packets", w.bdp)
		}
		if !strings.Contains(table.String(), line+"); server") {
			t.Errorf("%s: table lacks %q:\n%s", name, line, table.String())
		}
	}
}
