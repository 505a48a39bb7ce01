package telemetry

import (
	"bytes"
	"errors"
	"flag"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"rocetor/dataplane"
	"rocetor/dataplane/metrics"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/llr"
	"rocetor/tor/pipeline"
	"rocetor/tor/trim"
)

var update = flag.Bool("update", false, "rewrite testdata/families.golden")

// families is every rocetor_ family the switch of goldenConfig exports,
// as /metrics writes it, without the values. It was written by tord's
// collectors before they moved here (cmd/tord TestMetricsGolden reads
// it too).
const families = "testdata/families.golden"

// memSwitch is a switch of cfg.Workers workers over in-memory ports on a
// clock the test steps, built as tord and the simulator build theirs
// (pipeline.Plan); the workers share frame memory through a handoff
// when the configuration needs one (Config.Handoff).
type memSwitch struct {
	cfg   pipeline.Config
	pls   []*pipeline.Pipeline
	ports [][]*dataplane.MemPort // [worker][port]
	now   int64
}

func newMemSwitch(t *testing.T, cfg pipeline.Config, tab *fwd.TableConfig, frames int) *memSwitch {
	t.Helper()
	n := cfg.Workers
	sw := &memSwitch{cfg: cfg}
	var mems []*dataplane.Mem
	var h *dataplane.Handoff
	var err error
	if cfg.Handoff() {
		if h, err = dataplane.NewHandoff(n, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		if mems, err = dataplane.SharedMems(make([]byte, n*frames*2048), 2048, h); err != nil {
			t.Fatal(err)
		}
	} else {
		for range n {
			m, err := dataplane.NewMem(make([]byte, frames*2048), 2048)
			if err != nil {
				t.Fatal(err)
			}
			mems = append(mems, m)
		}
	}
	tb, err := fwd.NewTable(tab)
	if err != nil {
		t.Fatal(err)
	}
	fib := &fwd.FIB{}
	fib.Store(tb)
	pn, err := pipeline.NewPlan(&sw.cfg, fib, nil)
	if err != nil {
		t.Fatal(err)
	}
	for w := range n {
		var ports []dataplane.Port
		var mps []*dataplane.MemPort
		for i, name := range cfg.Ports {
			p := dataplane.NewMemPort(name, rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, mems[w], 1024)
			ports, mps = append(ports, p), append(mps, p)
		}
		pl, err := pn.BuildHanded(w, mems[w], ports, func() int64 { return sw.now }, h)
		if err != nil {
			t.Fatal(err)
		}
		sw.pls, sw.ports = append(sw.pls, pl), append(sw.ports, mps)
	}
	return sw
}

// step steps every worker at now until none has work left.
func (sw *memSwitch) step(now int64) {
	sw.now = now
	for range 1000 {
		work := 0
		for _, pl := range sw.pls {
			work += pl.Worker.Step(now)
		}
		if work == 0 {
			return
		}
	}
	panic("workers never settle")
}

// goldenConfig is a switch of two workers with every stage and every
// collector on: NetRT on the fabric ports s1 and s2, trimming on both,
// llr with its monitor on s2, DCP, adaptive multipath and an impair
// rule (cmd/tord's handoffConfigs "all", and the rest).
func goldenConfig(t *testing.T) pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Ports = []string{"h1", "h2", "s1", "s2"}
	cfg.Workers = 2
	cfg.XDP.RingSize = 64
	cfg.XDP.Frames = 8192
	cfg.Egress.QueueLimit = 64 << 10
	cfg.Egress.PortRates = map[string]dataplane.Rate{"s1": 1e9, "s2": 1e9}
	cfg.NetRT.Fabric = []string{"s1", "s2"}
	cfg.NetRT.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
	cfg.Trim = &trim.Config{Threshold: 16 << 10, Ports: []string{"s1", "s2"}}
	cfg.LLR.Ports = []string{"s2"}
	cfg.LLR.TxBuffer = 64 << 10
	cfg.LLR.Monitor = &pipeline.LLRMonitorConfig{}
	cfg.DCP = true
	cfg.Forwarding.Multipath = "adaptive"
	cfg.Impair = impair.Config{Seed: 1, Rules: []impair.Rule{{Port: "s1", Direction: "egress", Loss: 0.01}}}
	cfg.QoS = &pipeline.QoSConfig{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFamiliesGolden holds Register to the families, help strings, types
// and label sets tord served when these collectors lived in cmd/tord
// (-update rewrites the file, for a family changed on purpose).
func TestFamiliesGolden(t *testing.T) {
	sw := newMemSwitch(t, goldenConfig(t), &fwd.TableConfig{}, 1024)
	var stages []*llr.Stage
	for _, pl := range sw.pls {
		stages = append(stages, pl.LLR)
	}
	// The links are dealt round the workers (pipeline.Owners).
	mon, err := llr.NewMonitor(sw.cfg.LLR.Monitor.Config(), llr.NewLinks(stages...), sw.cfg.Ports, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg, Switch{Config: &sw.cfg, Pipelines: sw.pls, LLRMonitor: mon}); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	enc := expfmt.NewEncoder(&text, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "rocetor_") {
			t.Errorf("%s: not a rocetor_ family", mf.GetName())
		}
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(text.String(), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && !strings.HasPrefix(line, "#") {
			line = line[:i] + "\n" // the value
		}
		b.WriteString(line)
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(families, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(families)
	if err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		if at(gl, i) != at(wl, i) {
			t.Fatalf("Register's families differ from %s at line %d:\ngot:  %s\nwant: %s", families, i+1, at(gl, i), at(wl, i))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}

// TestGatherAfterRun runs a one-worker switch with NetRT as the
// simulator runs one: frames in, the worker stepped on a virtual clock
// for less than the millisecond after which it publishes by itself.
// Until Publish, Gather sees what was published at the start; after
// it, the run's counters, by the names tord serves.
func TestGatherAfterRun(t *testing.T) {
	cfg := pipeline.DefaultConfig()
	cfg.Ports = []string{"h1", "s1"}
	cfg.XDP.Frames = 16384
	cfg.NetRT.Fabric = []string{"s1"}
	cfg.NetRT.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	gw := netip.MustParseAddr("10.9.1.1")
	sw := newMemSwitch(t, cfg, &fwd.TableConfig{
		Routes:     []fwd.Route{{Prefix: netip.MustParsePrefix("10.0.2.0/24"), NextHops: []fwd.NextHop{{Port: 1, Gateway: gw}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: gw, MAC: rocev2.MAC{2, 9, 1}}},
	}, 1024)
	const n = 10
	for i := range n {
		b := make([]byte, 2048)
		k, err := rocev2.Build(b, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.1.2"), DstIP: netip.MustParseAddr("10.0.2.2"),
			Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(uint32(i)), Payload: make([]byte, 512)})
		if err != nil {
			t.Fatal(err)
		}
		sw.ports[0][0].Inject(b[:k])
	}
	sw.step(10_000)
	sw.step(20_000)
	s := Switch{Config: &sw.cfg, Pipelines: sw.pls}
	series := []string{
		`rocetor_port_rx_packets_total{port="h1"}`,
		`rocetor_port_tx_packets_total{port="s1"}`,
		`rocetor_stage_packets_total{stage="netrt-src"}`,
		`rocetor_netrt_pool_admitted_total{port="s1"}`,
		`rocetor_netrt_pool_entries{port="s1"}`,
	}
	before, err := Gather(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range series {
		if v, ok := before[k]; !ok || v != 0 {
			t.Errorf("before Publish: %s = %v (present %v), want 0: published before the millisecond was up?", k, v, ok)
		}
	}
	for _, pl := range sw.pls {
		pl.Publish(sw.now)
	}
	after, err := Gather(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range series {
		if after[k] != n {
			t.Errorf("after Publish: %s = %v, want %d", k, after[k], n)
		}
	}
	if len(after) < 100 {
		t.Errorf("%d series, want every family of the switch", len(after))
	}
}

// Register refuses a switch without a configuration, and a registry that
// already holds the switch's families.
func TestRegisterErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, Switch{}); !errors.Is(err, ErrNoConfig) {
		t.Errorf("no config: %v, want ErrNoConfig", err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Ports = []string{"a", "b"}
	if err := Register(reg, Switch{Config: &cfg}); err != nil {
		t.Fatal(err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := Register(reg, Switch{Config: &cfg}); !errors.As(err, &are) {
		t.Errorf("twice: %v, want AlreadyRegisteredError", err)
	}
}

// gather registers cs and returns their series as metrics.Gather keys
// them.
func gather(t *testing.T, cs ...prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	ms, err := metrics.Gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
