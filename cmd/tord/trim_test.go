package main

import (
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/pipeline"
	"rocetor/tor/telemetry"
	"rocetor/tor/trim"
)

// scrape serves reg's metrics as /metrics does and parses them.
func scrape(t *testing.T, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	ms, err := metrics.Parse(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// memSwitch is tord's pipeline, built by the plan OpenSwitch builds
// from, over in-memory ports and a clock the test steps.
type memSwitch struct {
	*pipeline.Pipeline
	w     *dataplane.Worker
	mem   *dataplane.Mem
	ports []*dataplane.MemPort
	now   int64 // the worker's and the ports' clock
}

// newMemSwitch builds worker 0 of the validated cfg over in-memory ports,
// tab in its FIB.
func newMemSwitch(t *testing.T, cfg Config, tab *fwd.TableConfig) *memSwitch {
	t.Helper()
	return newMemSwitchFrames(t, cfg, tab, 4096)
}

// newMemSwitchFrames is newMemSwitch with a frame memory of frames
// 2 KiB frames.
func newMemSwitchFrames(t *testing.T, cfg Config, tab *fwd.TableConfig, frames int) *memSwitch {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, frames*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	sw := &memSwitch{mem: mem}
	var ports []dataplane.Port
	for i, name := range cfg.Ports {
		p := dataplane.NewMemPort(name, rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mem, 1024)
		ports, sw.ports = append(ports, p), append(sw.ports, p)
	}
	pn, err := pipeline.NewPlan(&cfg, fibOf(t, tab), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Pipeline, err = pn.Build(0, mem, ports, func() int64 { return sw.now }); err != nil {
		t.Fatal(err)
	}
	sw.w = sw.Worker
	return sw
}

// dcpFrame is a DCP WRITE middle (tag 10) of payload bytes to dst.
func dcpFrame(t *testing.T, dst string, dscp uint8, seq uint32, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr(dst),
		DCP: dscp&3 != 0, DSCP: dscp, Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(seq), MSN: 1,
		Payload: make([]byte, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// TestTrimMetrics runs tord's pipeline — fwd with an adaptive group over
// up1 and up2, trim on both, impair trimming on up2 — over in-memory
// ports (newMemSwitch), and checks the series the collectors export:
// rocetor_trim_*, rocetor_fwd_adaptive_choices_total and rocetor_impair_*.
func TestTrimMetrics(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Egress.Rate = 1e9
	cfg.Ports = []string{"h1", "up1", "up2"}
	cfg.XDP.Frames = 16384
	cfg.Forwarding.Multipath = "adaptive"
	cfg.Trim = &trim.Config{Threshold: 8 << 10, Ports: []string{"up1", "up2"}}
	cfg.Impair = impair.Config{Seed: 1, Rules: []impair.Rule{{Port: "up2", Direction: "egress", Loss: 0.2, Trim: true}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sw := newMemSwitch(t, cfg, &fwd.TableConfig{
		Routes: []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{
			{Port: 1, Gateway: netip.MustParseAddr("10.9.1.1")}, {Port: 2, Gateway: netip.MustParseAddr("10.9.2.1")}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: netip.MustParseAddr("10.9.1.1"), MAC: rocev2.MAC{2, 1}},
			{Port: 2, Addr: netip.MustParseAddr("10.9.2.1"), MAC: rocev2.MAC{2, 2}}},
		Multipath: fwd.Multipath{Mode: fwd.Adaptive},
	})
	w, mps, fs, ts, ips, now := sw.w, sw.ports, sw.Fwd, sw.Trim, sw.Impairs, &sw.now
	// 600 DCP data packets and 100 non-DCP, in batches of 70 at once:
	// 1 Gb/s drains 8.6 KB per 70 µs step, so the queues pass 8 KiB.
	for i := 0; i < 10; i++ {
		for k := 0; k < 60; k++ {
			mps[0].Inject(dcpFrame(t, "10.0.2.2", 26, uint32(i*60+k), 1024))
		}
		for k := 0; k < 10; k++ {
			mps[0].Inject(dcpFrame(t, "10.0.2.2", 24, uint32(k), 1024))
		}
		for mps[0].Pending() > 0 {
			*now += 1000
			w.Step(*now)
		}
		*now += 70_000
		w.Step(*now)
	}
	for k := 0; k < 100; k++ {
		*now += 1_000_000
		w.Step(*now)
	}
	ms := scrape(t, telemetry.NewTrim(cfg.Ports, cfg.Trim, []*trim.Stage{ts}), telemetry.NewAdaptive(cfg.Ports, []*fwd.Stage{fs}),
		telemetry.NewImpair(cfg.Ports, ips))
	t.Logf("%s", pick(ms, "rocetor_trim_trimmed_packets_total", "rocetor_trim_ho_packets_total", "rocetor_trim_dropped_total",
		"rocetor_fwd_adaptive_choices_total", "rocetor_impair_trimmed_total", "rocetor_impair_destroyed_total"))
	st := ts.Snapshot()
	ist := ips[2].Snapshot().Dir[impair.Egress]
	for _, c := range []struct {
		series string
		want   uint64
	}{
		{`rocetor_trim_trimmed_packets_total{port="up1"}`, st.Ports[1].Trimmed},
		{`rocetor_trim_trimmed_bytes_total{port="up2"}`, st.Ports[2].TrimmedBytes},
		{`rocetor_trim_ho_packets_total{port="up1"}`, st.Ports[1].HeaderOnly},
		{`rocetor_trim_dropped_total{class="non_dcp",port="up2"}`, st.Ports[2].DropNonDCP},
		{`rocetor_trim_dropped_total{class="ack",port="up1"}`, 0},
		{`rocetor_fwd_adaptive_choices_total{port="up1"}`, fs.Snapshot().AdaptiveChoices[1]},
		{`rocetor_fwd_adaptive_choices_total{port="h1"}`, 0},
		{`rocetor_impair_trimmed_total{direction="egress",port="up2"}`, ist.Trimmed},
		{`rocetor_impair_trimmed_total{direction="egress",port="up1"}`, 0},
		{`rocetor_impair_destroyed_total{cause="loss",class="data",direction="egress",port="up2"}`, ist.Destroyed[impair.ClassData][impair.CauseLoss]},
		{`rocetor_impair_destroyed_total{cause="loss",class="control",direction="egress",port="up2"}`, ist.Destroyed[impair.ClassControl][impair.CauseLoss]},
		{`rocetor_impair_matched_total{direction="egress",port="up2"}`, ist.Matched},
	} {
		v, ok := ms[c.series]
		if !ok || v != float64(c.want) {
			t.Errorf("%s = %v (present %v), want %d", c.series, v, ok, c.want)
		}
	}
	if _, ok := ms[`rocetor_trim_trimmed_packets_total{port="h1"}`]; ok {
		t.Error("h1 does not trim, yet has trim series")
	}
	a1, a2 := fs.Snapshot().AdaptiveChoices[1], fs.Snapshot().AdaptiveChoices[2]
	t1, t2 := st.Ports[1].Trimmed, st.Ports[2].Trimmed
	if a1+a2 != 700 || a1 < 300 || a2 < 300 || t1 == 0 || t2 == 0 || ist.Trimmed == 0 || st.Ports[1].DropNonDCP+st.Ports[2].DropNonDCP == 0 {
		t.Errorf("adaptive choices %d/%d, trimmed %d/%d, impair trimmed %d, non-DCP drops %d/%d: some path did not run",
			a1, a2, t1, t2, ist.Trimmed, st.Ports[1].DropNonDCP, st.Ports[2].DropNonDCP)
	}
}

// fibOf is a FIB holding the table tab.
func fibOf(t testing.TB, tab *fwd.TableConfig) *fwd.FIB {
	t.Helper()
	tb, err := fwd.NewTable(tab)
	if err != nil {
		t.Fatal(err)
	}
	fib := &fwd.FIB{}
	fib.Store(tb)
	return fib
}
