package pipeline

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
)

// qosConfig parses y over two ports, up and h1, and validates it.
func qosConfig(t *testing.T, y string) Config {
	t.Helper()
	c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "test")
	if err != nil {
		t.Fatal(err)
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

// qosPipeline builds c's worker over in-memory ports, with a route to
// 10.0.1.0/24 through h1 (port 1).
func qosPipeline(t *testing.T, c *Config) (*Pipeline, *dataplane.MemPort, *dataplane.MemPort) {
	t.Helper()
	gw := netip.MustParseAddr("10.0.1.1")
	tb, err := fwd.NewTable(&fwd.TableConfig{
		Routes:     []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.1.0/24"), NextHops: []fwd.NextHop{{Port: 1, Gateway: gw}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: gw, MAC: rocev2.MAC{2, 1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	fib := &fwd.FIB{}
	fib.Store(tb)
	pn, err := NewPlan(c, fib, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	up := dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 1024)
	h1 := dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, 0, 2}, mem, 1024)
	pl, err := pn.Build(0, mem, []dataplane.Port{up, h1}, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	return pl, up, h1
}

// qosFrame is a RoCEv2 WRITE to h1 with the given DSCP and payload.
func qosFrame(t *testing.T, dscp uint8, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.2.2"), DstIP: netip.MustParseAddr("10.0.1.2"),
		DSCP: dscp, Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(1), Payload: make([]byte, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestQoSDefaultProfile: with "qos: {}", frames of DSCP 26 (RoCE), 48
// (CNP) and 0 (everything else) take the data, cnp and lossy queues of
// the port they leave by, and only the RoCE queue is lossless, on
// priority 3.
func TestQoSDefaultProfile(t *testing.T) {
	c := qosConfig(t, "qos: {}\n")
	pl, up, h1 := qosPipeline(t, &c)
	h1.SetTxRoom(0) // keep what is queued where it was queued
	want := map[string]uint64{"data": 3, "cnp": 2, "lossy": 1}
	for dscp, n := range map[uint8]int{26: 3, 48: 2, 0: 1} {
		for range n {
			if !up.Inject(qosFrame(t, dscp, 1024)) {
				t.Fatal("inject")
			}
		}
	}
	pl.Worker.Step(1)
	e := pl.Worker.Egress(1)
	for q, n := range want {
		k := e.QueueIndex(q)
		if k < 0 {
			t.Fatalf("no %s queue", q)
		}
		if got := e.Stats(k).Enqueued; got != n {
			t.Errorf("queue %s: %d frames, want %d", q, got, n)
		}
	}
	eg := c.Layout()
	for q, pfc := range map[string]int{"data": 3, "cnp": -1, "lossy": -1, "control": -1} {
		if got := eg.Queues[eg.QueueIndexByName(q)].PFC; got != pfc {
			t.Errorf("queue %s: PFC priority %d, want %d", q, got, pfc)
		}
	}
	// The switch's own queues keep their indices (tor/netrt sends on
	// 0 and 1, fwd's default is 2).
	for i, q := range []string{"control", "retransmit", "data", "idle", "cnp", "lossy"} {
		if eg.Queues[i].Name != q {
			t.Errorf("queue %d is %s, want %s", i, eg.Queues[i].Name, q)
		}
	}
}

// TestQoSNone: without a qos section the layout, the forwarding table
// and the queues every frame takes are today's: one class.
func TestQoSNone(t *testing.T) {
	c := qosConfig(t, "")
	if !reflect.DeepEqual(c.Layout(), dataplane.DefaultEgress(0, int(c.Egress.QueueLimit))) {
		t.Errorf("layout %+v, want DefaultEgress's", c.Layout())
	}
	fc, err := FwdConfig(&c)
	if err != nil || len(fc.DSCPQueue) != 0 || fc.Queue != 2 {
		t.Errorf("fwd config %+v, %v: want every DSCP on queue 2", fc, err)
	}
	if c.QueueClasses() != nil {
		t.Error("queue classes without a qos section")
	}
}

// TestQoSStrictCNPFirst: a CNP queued behind a backlog of RoCE data and
// lossy traffic leaves first: the strict cnp queue is above them all.
func TestQoSStrictCNPFirst(t *testing.T) {
	c := qosConfig(t, "qos: {}\n")
	egs, err := c.EgressConfigs()
	if err != nil {
		t.Fatal(err)
	}
	e, err := dataplane.NewEgress(egs[1])
	if err != nil {
		t.Fatal(err)
	}
	data, lossy, cnp := e.QueueIndex("data"), e.QueueIndex("lossy"), e.QueueIndex("cnp")
	for i := range 8 {
		e.Enqueue(data, uint64(i), 1100)
		e.Enqueue(lossy, uint64(100+i), 1500)
	}
	e.Enqueue(cnp, 999, 78)
	out := make([]dataplane.Packet, 4)
	if n := e.Dequeue(0, out); n == 0 || out[0].Addr != 999 || int(out[0].Queue) != cnp {
		t.Fatalf("first of %d frames: %+v, want the CNP", n, out[0])
	}
}

// TestQoSDWRR: two DWRR queues kept backlogged share the link's bytes
// by their weights, 75:25, to within a round's quantum, counted on the
// frames the scheduler releases.
func TestQoSDWRR(t *testing.T) {
	c := qosConfig(t, `qos:
  scheduler:
    strict: {type: strict}
    roce: {type: dwrr, weight: 75}
    lossy: {type: dwrr, weight: 25}
`)
	egs, err := c.EgressConfigs()
	if err != nil {
		t.Fatal(err)
	}
	e, err := dataplane.NewEgress(egs[1])
	if err != nil {
		t.Fatal(err)
	}
	data, lossy := e.QueueIndex("data"), e.QueueIndex("lossy")
	sizes := map[int]int{data: 1100, lossy: 1500}
	var sent [16]int
	out := make([]dataplane.Packet, 8)
	for range 2000 {
		for q, n := range sizes {
			for b, _ := e.Depth(q); b < 16*n; b += n {
				e.Enqueue(q, 0, n)
			}
		}
		k := e.Dequeue(0, out)
		for _, p := range out[:k] {
			sent[p.Queue] += int(p.Len)
		}
	}
	total := sent[data] + sent[lossy]
	share := float64(sent[data]) / float64(total)
	// A round is 100 × 1500 bytes; 2000 × 8 frames are about 100 rounds.
	if share < 0.74 || share > 0.76 {
		t.Errorf("data got %.3f of %d bytes, want 0.75 (weights 75:25)", share, total)
	}
}

// TestQoSValidate: Validate names what cannot work.
func TestQoSValidate(t *testing.T) {
	for y, field := range map[string]string{
		"qos: {dscp_to_tc_map: {64: 3}}\n":                        "qos.dscp_to_tc_map",
		"qos: {dscp_to_tc_map: {26: 5}}\n":                        "qos.tc_to_queue_map",
		"qos: {tc_to_queue_map: {3: data, 6: cnp}}\n":             "qos.tc_to_queue_map", // TC 0
		"qos: {tc_to_queue_map: {0: control, 3: data, 6: cnp}}\n": "qos.tc_to_queue_map",
		"qos: {tc_to_queue_map: {0: bulk, 3: data, 6: cnp}}\n":    "qos.tc_to_queue_map",
		"qos: {pfc_enable: [5]}\n":                                "qos.pfc_enable",
		"qos: {pfc_enable: [0, 3], tc_to_queue_map: {0: data, 3: data, 6: cnp}, queue: {data: {scheduler: roce}, cnp: {scheduler: strict}}}\n": "qos.pfc_enable",
		"qos: {scheduler: {strict: {type: fifo}, roce: {type: dwrr, weight: 1}, lossy: {type: dwrr, weight: 1}}}\n":                            "qos.scheduler.strict.type",
		"qos: {scheduler: {strict: {type: strict}, roce: {type: dwrr}, lossy: {type: dwrr, weight: 1}}}\n":                                     "qos.scheduler.roce.weight",
		"qos: {queue: {cnp: {scheduler: strict, limit: 100}, data: {scheduler: roce}, lossy: {scheduler: lossy}}}\n":                           "qos.queue.cnp.limit",
		"qos: {}\nforwarding: {dscp_queues: {48: control}}\n":                                                                                  "qos",
		"qos: {}\necn: {queues: {bulk: default}}\n":                                                                                            "ecn.queues",
	} {
		c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "test")
		if err != nil {
			t.Fatalf("%q: %v", y, err)
		}
		c.AdminAddr, c.MetricsAddr = "", ""
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%q: %v, want an error naming %s", y, err, field)
		}
	}
	// Per-class ECN: the qos queues take ecn profiles by name.
	c := qosConfig(t, "qos: {}\necn: {queues: {data: default, lossy: default}}\n")
	egs, err := c.EgressConfigs()
	if err != nil {
		t.Fatal(err)
	}
	eg := egs[0]
	for q, on := range map[string]bool{"data": true, "lossy": true, "cnp": false} {
		if got := eg.Queues[eg.QueueIndexByName(q)].ECN.On(); got != on {
			t.Errorf("queue %s marks: %v, want %v", q, got, on)
		}
	}
}

// TestQoSClasses: what torctl and /metrics show per queue.
func TestQoSClasses(t *testing.T) {
	c := qosConfig(t, "qos: {}\n")
	got := c.QueueClasses()
	if len(got) != 3 {
		t.Fatalf("%d queues with classes, want 3: %+v", len(got), got)
	}
	want := []QueueClass{
		{Queue: "data", Classes: []int{3}, DSCPs: []int{24, 25, 26, 27}, Scheduler: "dwrr", Weight: 50, PFC: 3},
		{Queue: "cnp", Classes: []int{6}, DSCPs: []int{48}, Scheduler: "strict", PFC: -1},
	}
	for i, w := range want {
		if !reflect.DeepEqual(got[i], w) {
			t.Errorf("queue %d: %+v, want %+v", i, got[i], w)
		}
	}
	if l := got[2]; l.Queue != "lossy" || len(l.DSCPs) != 64-5 || l.PFC != -1 {
		t.Errorf("lossy: %+v", l)
	}
}

// TestQoSTrimShares: on a trimming port, trimming's WRR between the
// control and data queues leaves the data and lossy classes their
// configured shares of the bytes (50:50), not the 75:1 that scaling
// only the lossy queue by the old quantum would give.
func TestQoSTrimShares(t *testing.T) {
	c := qosConfig(t, "qos: {}\ntrim: {}\n")
	egs, err := c.EgressConfigs()
	if err != nil {
		t.Fatal(err)
	}
	eg := egs[1]
	if eg.Queues[eg.QueueIndexByName("control")].Level != eg.Queues[eg.QueueIndexByName("data")].Level {
		t.Fatal("control is not on the data queue's level: trimming's WRR not applied")
	}
	e, err := dataplane.NewEgress(eg)
	if err != nil {
		t.Fatal(err)
	}
	data, lossy := e.QueueIndex("data"), e.QueueIndex("lossy")
	var sent [16]int
	out := make([]dataplane.Packet, 8)
	for range 4000 {
		for _, q := range []int{data, lossy} {
			for b, _ := e.Depth(q); b < 16*1100; b += 1100 {
				e.Enqueue(q, 0, 1100)
			}
		}
		k := e.Dequeue(0, out)
		for _, p := range out[:k] {
			sent[p.Queue] += int(p.Len)
		}
	}
	if share := float64(sent[data]) / float64(sent[data]+sent[lossy]); share < 0.45 || share > 0.55 {
		t.Errorf("data got %.3f of the bytes beside lossy, want 0.5", share)
	}
}

// TestByInput: with egress.by_input every port has a data queue per
// input port at the data queue's level, weight, budget and PFC priority,
// and a frame joins the queue of the port it came in by; the sections
// that name the data queue alone are refused.
func TestByInput(t *testing.T) {
	c := qosConfig(t, "egress: {by_input: true, queue_limit: 240KB}\n")
	eg := c.Layout()
	var names []string
	for _, q := range eg.Queues {
		names = append(names, q.Name)
	}
	if want := []string{"control", "retransmit", "data", "data@1", "idle"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("queues %v, want %v", names, want)
	}
	d, d1 := eg.Queues[2], eg.Queues[3]
	if d1.Level != d.Level || d1.Weight != d.Weight || d1.Limit != 240_000 || d1.PFC != d.PFC {
		t.Fatalf("data@1 %+v, want data's %+v", d1, d)
	}
	pl, up, h1 := qosPipeline(t, &c)
	f := qosFrame(t, 26, 1000)
	for range 3 {
		up.Inject(f)
	}
	h1.Inject(f) // leaves by the port it came in by: the route is h1's
	pl.Worker.Step(0)
	e := pl.Worker.Egress(1)
	if got := [2]uint64{e.Stats(2).Enqueued, e.Stats(3).Enqueued}; got != [2]uint64{3, 1} {
		t.Fatalf("h1's data and data@1 queues took %v frames, want [3 1]", got)
	}
	for _, y := range []string{"qos: {}\n", "ecn: {}\n", "trim: {}\n", "llr: {ports: [up]}\n", "forwarding: {queue: idle}\n"} {
		c, err := ParseConfig([]byte("ports: [up, h1]\negress: {by_input: true}\n"+y), "test")
		if err != nil {
			t.Fatalf("%q: %v", y, err)
		}
		c.AdminAddr, c.MetricsAddr = "", ""
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "egress.by_input:") {
			t.Errorf("%q: %v, want an error naming egress.by_input", y, err)
		}
	}
}
