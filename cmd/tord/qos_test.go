package main

import (
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"rocetor/cmd/tord/api"
	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
)

// TestQoSQueues: a tord with the default QoS profile (qos: {}) puts
// frames of DSCP 26, 48 and 0 on separate queues of the port they
// leave by, and GET /api/v1/queues (torctl queues) shows each queue's
// traffic classes, DSCPs, scheduler and PFC priority beside its
// counters.
func TestQoSQueues(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Ports = []string{"h1", "up1"}
	cfg.QoS = &QoSConfig{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sw := newMemSwitch(t, cfg, &fwd.TableConfig{
		Routes:     []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{{Port: 1, Gateway: netip.MustParseAddr("10.9.1.1")}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: netip.MustParseAddr("10.9.1.1"), MAC: rocev2.MAC{2, 1}}},
	})
	sw.ports[1].SetTxRoom(0)
	for dscp, n := range map[uint8]int{26: 3, 48: 2, 0: 1} {
		for range n {
			b := ectFrame(t, 2, 1)
			rocev2.IPv4(b[14:]).SetDSCP(dscp)
			sw.ports[0].Inject(b)
		}
	}
	sw.now += 2e6
	sw.w.Step(sw.now) // forwards and publishes
	a, err := newAdmin(cfg, &Switch{workers: []*dataplane.Worker{sw.w}}, zap.NewAtomicLevel(), zaptest.NewLogger(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/queues?port=up1", nil))
	var qs []api.Queue
	if err := json.Unmarshal(rec.Body.Bytes(), &qs); err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		enq uint64
		qos *api.QueueQoS
	}{
		"data":    {3, &api.QueueQoS{TrafficClasses: []int{3}, DSCPs: []int{24, 25, 26, 27}, Scheduler: "dwrr", Weight: 50, PFCPriority: 3}},
		"cnp":     {2, &api.QueueQoS{TrafficClasses: []int{6}, DSCPs: []int{48}, Scheduler: "strict", PFCPriority: -1}},
		"lossy":   {1, nil}, // its 59 DSCPs checked apart
		"control": {0, nil},
	}
	seen := 0
	for _, q := range qs {
		w, ok := want[q.Queue]
		if !ok {
			continue
		}
		seen++
		if q.Enqueued != w.enq {
			t.Errorf("queue %s: %d frames, want %d", q.Queue, q.Enqueued, w.enq)
		}
		switch q.Queue {
		case "lossy":
			if q.QoS == nil || q.QoS.PFCPriority != -1 || !reflect.DeepEqual(q.QoS.TrafficClasses, []int{0}) || len(q.QoS.DSCPs) != 59 {
				t.Errorf("lossy: %+v", q.QoS)
			}
		default:
			if !reflect.DeepEqual(q.QoS, w.qos) {
				t.Errorf("queue %s: qos %+v, want %+v", q.Queue, q.QoS, w.qos)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("GET /api/v1/queues: %d of the %d queues: %+v", seen, len(want), qs)
	}
}
