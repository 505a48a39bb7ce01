package main

import (
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"rocetor/cmd/tord/api"
	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
)

func TestConfigECN(t *testing.T) {
	c, err := loadAndValidate(t, `
ports: [h1, up1, up2]
workers: 2
xdp: {frames: 16384}
egress: {rate: 100G, port_rates: {up2: 25G}}
ecn:
  mark: enqueue
  seed: 7
  profiles:
    roce: {ecn: ecn_green, min_threshold: 100KB, max_threshold: 400KB, probability: 10}
    half: {probability: 50}
    none: {ecn: ecn_none}
  queues: {data: roce, retransmit: half, idle: none}
`)
	if err != nil {
		t.Fatal(err)
	}
	egs, err := c.EgressConfigs()
	if err != nil {
		t.Fatal(err)
	}
	m := c.ECN.Marking(&c, egs)
	if m.At != dataplane.MarkEnqueue || m.Seed != 7 {
		t.Fatalf("marking at %v, seed %d", m.At, m.Seed)
	}
	data, re, idle, ctl := egs[0].QueueIndexByName("data"), egs[0].QueueIndexByName("retransmit"), egs[0].QueueIndexByName("idle"), egs[0].QueueIndexByName("control")
	// Two workers: each marks its half of the port at half the thresholds.
	for _, w := range []struct {
		port, queue int
		want        dataplane.ECNProfile
	}{
		{0, data, dataplane.ECNProfile{MinBytes: 50_000, MaxBytes: 200_000, PMax: 0.1}},
		{0, re, dataplane.ECNProfile{MinBytes: 200_000, MaxBytes: 800_000, PMax: 0.5}}, // 100G's 400/1600 KB
		{2, re, dataplane.ECNProfile{MinBytes: 50_000, MaxBytes: 200_000, PMax: 0.5}},  // 25G's 100/400 KB
		{1, idle, dataplane.ECNProfile{}},
		{1, ctl, dataplane.ECNProfile{}},
	} {
		if got := m.Profiles[w.port][w.queue]; got != w.want {
			t.Errorf("port %s queue %s: %+v, want %+v", c.Ports[w.port], egs[0].Queues[w.queue].Name, got, w.want)
		}
		if got := egs[w.port].Queues[w.queue].ECN; got != w.want || egs[w.port].MarkAt != dataplane.MarkEnqueue {
			t.Errorf("egress config of port %d queue %d: %+v at %v", w.port, w.queue, got, egs[w.port].MarkAt)
		}
	}

	// "ecn: {}" marks the data queue at dequeue with the rate's default;
	// no section marks nothing.
	c, err = loadAndValidate(t, "ports: [a, b]\negress: {rate: 10G}\necn: {}")
	if err != nil {
		t.Fatal(err)
	}
	egs, _ = c.EgressConfigs()
	if p := egs[1].Queues[data].ECN; p != dataplane.DefaultECNProfile(10e9) || egs[1].MarkAt != dataplane.MarkDequeue {
		t.Errorf("ecn: {}: data queue %+v at %v", p, egs[1].MarkAt)
	}
	c, _ = loadAndValidate(t, "ports: [a, b]")
	egs, _ = c.EgressConfigs()
	for _, q := range egs[0].Queues {
		if q.ECN.On() {
			t.Errorf("no ecn section, yet queue %s marks: %+v", q.Name, q.ECN)
		}
	}
}

func TestConfigECNErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"ecn: {mark: egress}", "ecn.mark:"},
		{"ecn: {profiles: {p: {ecn: ecn_yes}}}", "ecn.profiles.p.ecn:"},
		{"ecn: {profiles: {p: {probability: 120}}}", "ecn.profiles.p.probability:"},
		{"ecn: {profiles: {p: {min_threshold: 50KB, max_threshold: 40KB}}}", "ecn.profiles.p.min_threshold:"},
		{"ecn: {profiles: {p: {min_threshold: 2MiB, max_threshold: 4MiB}}}", "below egress.queue_limit"},
		// a min beyond the rate-derived max (10 Gbit/s unshaped: 160 KB)
		{"ecn: {profiles: {p: {min_threshold: 200KB}}, queues: {data: p}}", "ecn.profiles.p: on port a"},
		{"ecn: {queues: {bulk: default}}", "ecn.queues:"},
		{"ecn: {queues: {data: roce}}", `no profile "roce"`},
	} {
		wantConfigErr(t, "ports: [a, b]\n"+c.yaml, c.want)
	}
}

// ecnSwitch is tord's pipeline with ECN marking on up1's data queue: h1
// (port 0) sends to 10.0.2.0/24 behind up1 (port 1), shaped to 1 Gbit/s.
func ecnSwitch(t *testing.T, ecn *ECNConfig) (*memSwitch, Config) {
	cfg := DefaultConfig()
	cfg.Ports = []string{"h1", "up1"}
	cfg.Egress.Rate = 1e9
	cfg.ECN = ecn
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sw := newMemSwitch(t, cfg, &fwd.TableConfig{
		Routes: []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{
			{Port: 1, Gateway: netip.MustParseAddr("10.9.1.1")}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: netip.MustParseAddr("10.9.1.1"), MAC: rocev2.MAC{2, 1}}},
	})
	return sw, cfg
}

func ectFrame(t *testing.T, ecn uint8, seq uint32) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.2"),
		DSCP: 26, ECN: ecn, Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(seq), Payload: make([]byte, 1024)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// burst sends n ECT(0) and n Not-ECT frames at once from h1, lets up1
// drain, and returns how many of each left up1 marked CE.
func (sw *memSwitch) burst(t *testing.T, n int) (ectCE, notECTCE, sent int) {
	var out [][]byte
	sw.ports[1].OnTransmit = func(f []byte) { out = append(out, append([]byte(nil), f...)) }
	for i := 0; i < n; i++ {
		sw.ports[0].Inject(ectFrame(t, 2, uint32(i)))
		sw.ports[0].Inject(ectFrame(t, 0, uint32(i)))
		if sw.ports[0].Pending() >= 64 {
			sw.now += 1000
			sw.w.Step(sw.now)
		}
	}
	for k := 0; k < 200 && (sw.ports[0].Pending() > 0 || sw.w.Egress(1).Backlog() > 0); k++ {
		sw.now += 100_000
		sw.w.Step(sw.now)
	}
	for _, f := range out {
		var m rocev2.Meta
		rocev2.Classifier{VerifyICRC: true}.Classify(f, &m)
		if m.Reason != rocev2.ReasonNone {
			t.Fatalf("up1 sent a malformed frame: %v", m.Reason)
		}
		switch {
		case m.ECN == 3 && m.DSCP == 26:
			ectCE++
		case m.ECN != 0 && m.ECN != 2:
			notECTCE++
		}
	}
	return ectCE, notECTCE, len(out)
}

// TestECNPipeline runs tord's pipeline with marking on over in-memory
// ports: a burst beyond max_threshold gets ECT frames marked and leaves
// Not-ECT ones alone; the counters reach Prometheus and the admin API;
// a reload switches marking off on the running worker.
func TestECNPipeline(t *testing.T) {
	p50 := 50.0
	on := &ECNConfig{Seed: 1, Profiles: map[string]ECNProfileConfig{"roce": {MinThreshold: 8 << 10, MaxThreshold: 32 << 10, Probability: &p50}},
		Queues: map[string]string{"data": "roce"}}
	sw, cfg := ecnSwitch(t, on)
	ce, bad, sent := sw.burst(t, 200)
	if sent != 400 || ce == 0 || ce == 200 || bad != 0 {
		t.Fatalf("sent %d, %d of 200 ECT frames marked, %d Not-ECT ones changed", sent, ce, bad)
	}
	t.Logf("%d of 200 ECT frames marked", ce)
	sw.now += 2e6
	sw.w.Step(sw.now) // publishes
	ms := scrape(t, metrics.New(cfg.Ports, []string{"fwd"}, sw.w))
	for series, want := range map[string]float64{
		`rocetor_queue_ect_packets_total{port="up1",queue="data"}`:          200,
		`rocetor_queue_ce_marked_total{port="up1",queue="data"}`:            float64(ce),
		`rocetor_queue_ce_marked_total{port="h1",queue="data"}`:             0,
		`rocetor_queue_ecn_min_threshold_bytes{port="up1",queue="data"}`:    8 << 10,
		`rocetor_queue_ecn_max_threshold_bytes{port="up1",queue="data"}`:    32 << 10,
		`rocetor_queue_ecn_max_probability_ratio{port="up1",queue="data"}`:  0.5,
		`rocetor_queue_ecn_max_threshold_bytes{port="up1",queue="control"}`: 0,
	} {
		if got, ok := ms[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}

	off := cfg
	off.ECN = nil
	a, err := newAdmin(cfg, &Switch{workers: []*dataplane.Worker{sw.w}}, zap.NewAtomicLevel(), zaptest.NewLogger(t),
		func() (Config, error) { return off, nil })
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/queues?port=up1", nil))
	var qs []api.Queue
	if err := json.Unmarshal(rec.Body.Bytes(), &qs); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		e := q.ECN
		switch {
		case q.Queue == "data" && (e == nil || e.Mark != "dequeue" || e.MinThresholdBytes != 8<<10 || e.MaxThresholdBytes != 32<<10 ||
			e.ProbabilityPercent != 50 || q.ECT != 200 || q.Marked != uint64(ce)):
			t.Errorf("GET /api/v1/queues, data: %+v, ecn %+v", q, e)
		case q.Queue != "data" && e != nil:
			t.Errorf("GET /api/v1/queues, %s marks: %+v", q.Queue, e)
		}
	}

	res, err := a.doReload()
	if err != nil || strings.Join(res.Applied, ",") != "ecn" {
		t.Fatalf("reload: %+v, %v", res, err)
	}
	if ce, _, _ := sw.burst(t, 200); ce != 0 {
		t.Fatalf("%d frames marked after a reload switched marking off", ce)
	}
	// and back on
	back := off
	back.ECN = on
	a.reload = func() (Config, error) { return back, nil }
	if _, err := a.doReload(); err != nil {
		t.Fatal(err)
	}
	if again, _, _ := sw.burst(t, 200); again == 0 {
		t.Errorf("nothing marked after a reload switched marking back on (%d the first time)", ce)
	}
}
