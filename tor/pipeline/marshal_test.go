package pipeline

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"rocetor/dataplane"
	"rocetor/tor/impair"
	"rocetor/tor/trim"
)

// fullConfig is a configuration with every section on and every field
// away from its default (TestFullConfigIsFull holds it to that).
func fullConfig() Config {
	c := DefaultConfig()
	c.Ports = []string{"h1", "h2", "up"}
	c.Workers, c.Poll, c.LogLevel = 4, "busy", "debug"
	c.CPU = CPUConfig{Policy: "rr", Priority: 20, Nice: 5, CPUs: []int{2, 3}} // not a valid pair (nice is for other): the file only has to carry every field
	c.MetricsAddr, c.AdminAddr, c.AdminTokenFile = "0.0.0.0:9600", "10.0.0.1:9601", "/etc/rocetor/token"
	c.XDP.Mode, c.XDP.Bind, c.XDP.FrameSize, c.XDP.Frames, c.XDP.RingSize = "native", "zerocopy", 2048, 1<<16, 512
	c.XDP.BusyPoll, c.XDP.BusyPollBudget = 50*time.Microsecond, 64
	c.Egress.Rate, c.Egress.QueueLimit = 10e9, 256<<10
	c.Egress.PortRates = map[string]dataplane.Rate{"up": 2.5e9, "h2": 1500}
	c.Egress.OwnedPorts = []string{"h2"}
	c.Egress.Ring = 32
	c.Egress.ByInput = true // not valid beside the stages: the file only has to carry it
	c.Egress.InputLimit = 240 << 10
	c.Forwarding.Multipath, c.Forwarding.AdaptiveBias, c.Forwarding.Queue = "adaptive", 40_000, "retransmit"
	c.Forwarding.DSCPQueues = map[int]string{46: "control", 8: "idle", 26: "data"}
	c.Forwarding.HashSeed = 1 << 63
	c.Forwarding.OwnerECMP = true
	c.VerifyICRC = true
	k, h, dscp := 0.999, 0.25, 0
	c.Impair = impair.Config{Seed: 9, HoldBytes: 512 << 10, Rules: []impair.Rule{{
		Port: "up", Direction: "egress", Match: "roce", Opcodes: []string{"RC_RDMA_WRITE_MIDDLE", "0x07"}, DSCP: &dscp,
		Loss: 0.01, Burst: &impair.Burst{P: 0.001, R: 0.5, K: &k, H: &h, Loss: 0.02, Length: 4}, Corrupt: 1e-5, Duplicate: 0.001,
		Reorder: &impair.Reorder{P: 0.1, Delay: 1500 * time.Microsecond}, Delay: &impair.Delay{Mean: 2 * time.Millisecond, Jitter: 300 * time.Nanosecond},
		Trim: true, Rate: 100e6, RateBurst: 18432,
	}, {Port: "h1", Direction: "ingress", Loss: 1}}}
	c.NetRT = NetRTConfig{Fabric: []string{"up"}, Prefixes: []netip.Prefix{netip.MustParsePrefix("10.2.0.0/16"), netip.MustParsePrefix("fd02::/48")},
		Flows: 4096, PoolBytes: 2 << 20, PoolFrames: 2048, Hold: 20 * time.Millisecond, TailProbe: 4 * time.Millisecond,
		BufferBytes: 3 << 20, BufferFrames: 1024, RequestDelay: 220 * time.Microsecond, RequestInterval: time.Millisecond, MaxRequests: 8, SilentRequests: 6,
		IdleTimeout: 90 * time.Minute, Backoff: 2 * time.Second, KLow: 64 << 10, KHigh: 256 << 10, RateMax: 5e9, RateMin: 100e6,
		Window: 500 * time.Microsecond, PausePriority: -1, PauseQuanta: 0xffff, RetxRate: 2e9, RetxBurst: 128 << 10}
	c.Trim = &trim.Config{Threshold: 32 << 10, IncastDegree: 16, Ratio: 12.5, MinWeight: 0.2, ControlLimit: 256 << 10, Ports: []string{"up"}}
	c.DCP = true
	c.INT = &INTConfig{Ports: []string{"up"}}
	c.LLR = LLRConfig{Ports: []string{"up"}, Mode: "nb", TxBuffer: 2 << 20, TxFrames: 64, RxBuffer: 1 << 20, Pause: 512 << 10, Resume: 256 << 10,
		AckTimeout: 8 * time.Millisecond, NoticeRetry: time.Millisecond, TargetLoss: 1e-9, ActualLoss: 1e-4, Copies: 3, Dormant: true, Watch: true,
		RetxRate: 5e9, RetxBurst: 1 << 20, Monitor: &LLRMonitorConfig{Interval: 100 * time.Millisecond, Window: 1e6, Threshold: 1e-6}}
	pmax := 0.0
	c.ECN = &ECNConfig{Mark: "enqueue", Seed: 3,
		Profiles: map[string]ECNProfileConfig{"roce": {ECN: "ecn_green", MinThreshold: 100_000, MaxThreshold: 400_000, Probability: &pmax}},
		Queues:   map[string]string{"data": "roce", "retransmit": "default"}}
	c.Trust = TrustConfig{Hosts: []string{"h1", "h2"}, PFCPorts: &[]string{}}
	c.PFC = &PFCConfig{XOff: 64 << 10, XOn: 32 << 10, Quanta: 1000, Ports: []string{"h1"}, Alpha: 0.125, Priorities: []int{3},
		Headroom: 24 << 10, CableLength: 100, MTU: 4096, ResponseTime: 3 * time.Microsecond,
		PriorityGroups: map[int]PGThresholds{3: {XOff: 96 << 10, XOn: 48 << 10}},
		Watchdog:       &PFCWatchdogConfig{Detection: 100 * time.Millisecond, Restoration: 300 * time.Millisecond, Action: "forward"}}
	c.Buffer = &BufferConfig{Size: 32 << 20, PortReserve: 64 << 10, QueueReserve: 16 << 10, Alpha: map[string]float64{"data": 1, "control": 8, "idle": 0.0625}}
	c.QoS = &QoSConfig{DSCPToTC: map[int]int{26: 3, 48: 6, 10: 1}, TCToQueue: map[int]string{0: "bulk", 1: "bulk", 3: "data", 6: "cnp"},
		PFCEnable: []int{3}, Scheduler: map[string]SchedulerConfig{"sp": {Type: "strict", Weight: 1}, "heavy": {Type: "dwrr", Weight: 80}},
		Queue: map[string]QoSQueueConfig{"cnp": {Scheduler: "sp", Limit: 32 << 10}, "data": {Scheduler: "heavy", Limit: 2 << 20}, "bulk": {Scheduler: "heavy", Limit: 256 << 10}}}
	return c
}

// unset returns the paths of the fields of v (through pointers, lists
// and maps) that are at def's value.
func unset(v, def reflect.Value, path string) []string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return []string{path}
		}
		v = v.Elem()
		def = reflect.Zero(v.Type())
	}
	var out []string
	switch {
	case v.Type() == reflect.TypeFor[netip.Prefix]():
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Tag.Get("yaml") == "-" {
				continue
			}
			p := path + "." + f.Name
			if reflect.DeepEqual(v.Field(i).Interface(), def.Field(i).Interface()) {
				out = append(out, p)
				continue
			}
			out = append(out, unset(v.Field(i), def.Field(i), p)...)
		}
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			if e := v.Index(i); e.Kind() == reflect.Struct && i == 0 {
				out = append(out, unset(e, reflect.Zero(e.Type()), path+"[0]")...)
			}
		}
	case v.Kind() == reflect.Map:
		for _, k := range v.MapKeys() {
			if e := v.MapIndex(k); e.Kind() == reflect.Struct {
				out = append(out, unset(e, reflect.Zero(e.Type()), path+"["+k.String()+"]")...)
			}
		}
	}
	return out
}

// A field added to Config, or to a section, must be added to
// fullConfig, so that the round trip covers it.
func TestFullConfigIsFull(t *testing.T) {
	c := fullConfig()
	for _, p := range unset(reflect.ValueOf(c), reflect.ValueOf(DefaultConfig()), "Config") {
		t.Errorf("%s is at its default in fullConfig: set it, so that TestMarshalRoundTrip covers it", p)
	}
}

// roundTrip writes c and reads it back as tord does.
func roundTrip(t *testing.T, c Config, name string) ([]byte, Config) {
	t.Helper()
	b, err := c.Marshal("")
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	back, err := ParseConfig(b, name)
	if err != nil {
		t.Fatalf("%s: tord cannot read what Marshal wrote: %v\n%s", name, err, b)
	}
	back.File = c.File
	return b, back
}

// TestMarshalRoundTrip: every field tord reads comes back from the file
// Marshal writes, in the units an operator writes.
func TestMarshalRoundTrip(t *testing.T) {
	c := fullConfig()
	b, back := roundTrip(t, c, "full")
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the configuration:\n%s\nwrote %+v\nread  %+v", b, c, back)
	}
	for _, want := range []string{
		"ports: [h1, h2, up]\n", "  rate: 10G\n", "  queue_limit: 256KiB\n", "    up: 2500M\n", "    h2: 1500\n",
		"  adaptive_bias: 40KB\n", "  busy_poll: 50us\n", "  hold: 20ms\n", "  idle_timeout: 90m\n", "  backoff: 2s\n",
		"      jitter: 300ns\n", "      delay: 1500us\n", "  prefixes: [10.2.0.0/16, 'fd02::/48']\n", "  pfc_ports: []\n",
		"    46: control\n", "  hash_seed: 9223372036854775808\n", "  pause_priority: -1\n", "      probability: 0\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in\n%s", want, b)
		}
	}
	// yaml.Marshal writes the same, only four spaces deep.
	y, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseConfig(y, "yaml.Marshal"); err != nil || !reflect.DeepEqual(back, c) {
		t.Errorf("yaml.Marshal of a Config (%v):\n%s", err, y)
	}
}

// TestMarshalDefaults: a field at its default is left out, but for the
// few every file states; a section that is on but all default stays, as
// "{}".
func TestMarshalDefaults(t *testing.T) {
	c := DefaultConfig()
	c.Ports = []string{"h1", "up"}
	b, err := c.Marshal("tord configuration of switch tor1.\nSecond line.")
	if err != nil {
		t.Fatal(err)
	}
	want := `# tord configuration of switch tor1.
# Second line.
ports: [h1, up]
workers: 1
poll: adaptive
metrics_addr: 127.0.0.1:9478
admin_addr: 127.0.0.1:9479
log_level: info
`
	if string(b) != want {
		t.Errorf("defaults written as\n%s\nwant\n%s", b, want)
	}
	c.Trim, c.ECN, c.LLR.Monitor, c.QoS = &trim.Config{}, &ECNConfig{}, &LLRMonitorConfig{}, &QoSConfig{}
	c.LLR.Ports = []string{"up"}
	c.Egress.QueueLimit = 512 << 10
	c.Trust.Hosts = []string{}
	b, back := roundTrip(t, c, "sections")
	for _, want := range []string{"\ntrim: {}\n", "\necn: {}\n", "\nqos: {}\n", "\n  monitor: {}\n", "\negress:\n  queue_limit: 512KiB\ntrim: {}\nllr:\n  ports: [up]\n  monitor: {}\n", "\ntrust:\n  hosts: []\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %q in\n%s", want, b)
		}
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("round trip changed the configuration:\n%s\nwrote %+v\nread  %+v", b, c, back)
	}
	if strings.Contains(string(b), "xdp") || strings.Contains(string(b), "forwarding") || strings.Contains(string(b), "netrt") {
		t.Errorf("sections at their defaults written:\n%s", b)
	}
}

// TestMarshalDocExamples: the configuration examples of the docs
// (docs/*.md, the yaml blocks tord reads) come back unchanged; the
// deploy files are cmd/tord's TestDeployConfigs'.
func TestMarshalDocExamples(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	n := 0
	for _, path := range docs {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range block.FindAllSubmatch(text, -1) {
			name := filepath.Base(path) + " block " + string(rune('1'+i))
			c, err := ParseConfig(m[1], name)
			if err != nil {
				continue // not a tord configuration (Prometheus's, …)
			}
			n++
			b, back := roundTrip(t, c, name)
			if !reflect.DeepEqual(back, c) {
				t.Errorf("%s: round trip changed the configuration:\n%s\nwrote %+v\nread  %+v", name, b, c, back)
			}
		}
	}
	if n < 5 {
		t.Errorf("%d configuration examples in docs/, want at least 5", n)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 100 * time.Microsecond: "100us", 1500 * time.Microsecond: "1500us",
		20 * time.Millisecond: "20ms", time.Second: "1s", 90 * time.Second: "90s", time.Hour: "1h", 7: "7ns", -time.Millisecond: "-1ms"} {
		got := formatDuration(d)
		back, err := time.ParseDuration(got)
		if got != want || err != nil || back != d {
			t.Errorf("%v spelt %q (read back %v, %v), want %q", int64(d), got, back, err, want)
		}
	}
}

// A clone is equal and shares nothing: changing every list, map and
// section of it leaves the original as it was.
func TestClone(t *testing.T) {
	c := fullConfig()
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("clone differs:\n%+v\n%+v", c, d)
	}
	d.Ports[0] = "x"
	d.Egress.PortRates["up"] = 1
	d.Forwarding.DSCPQueues[46] = "x"
	d.Impair.Rules[0].Opcodes[0] = "x"
	*d.Impair.Rules[0].DSCP = 9
	d.Impair.Rules[0].Burst.Loss = 0.5
	*d.Impair.Rules[0].Burst.K = 0.5
	d.Impair.Rules[0].Reorder.P = 0.5
	d.Impair.Rules[0].Delay.Mean = 1
	d.NetRT.Fabric[0] = "x"
	d.NetRT.Prefixes[0] = netip.MustParsePrefix("10.9.0.0/16")
	d.Trim.Ports[0] = "x"
	d.LLR.Ports[0] = "x"
	d.LLR.Monitor.Interval = 1
	d.ECN.Seed = 99
	d.ECN.Profiles["roce"] = ECNProfileConfig{}
	d.ECN.Queues["data"] = "x"
	d.Trust.Hosts[0] = "x"
	*d.Trust.PFCPorts = append(*d.Trust.PFCPorts, "x")
	d.PFC.Ports[0] = "x"
	if !reflect.DeepEqual(c, fullConfig()) {
		t.Errorf("changing the clone changed the original:\n%+v", c)
	}
}

// FuzzMarshalRoundTrip: whatever configuration ParseConfig returns,
// ParseConfig reads back equal from what Marshal writes of it.
func FuzzMarshalRoundTrip(f *testing.F) {
	full, err := func() ([]byte, error) { c := fullConfig(); return c.Marshal("") }()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full)
	f.Add([]byte("ports: [a, b]\ntrim: {}\necn: {}\n"))
	f.Add([]byte("trust: {hosts: [], pfc_ports: []}\nforwarding: {dscp_queues: {3: data}}\n"))
	f.Add([]byte("impair: {rules: [{port: '1', delay: {mean: 1.5ms}, opcodes: ['7', 'null']}]}\nnetrt: {prefixes: [10.0.0.0/8]}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b, "fuzz")
		if err != nil {
			return
		}
		y, err := c.Marshal("")
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := ParseConfig(y, "marshalled")
		if err != nil {
			t.Fatalf("cannot read what Marshal wrote: %v\n%s\nfrom\n%s", err, y, b)
		}
		if !reflect.DeepEqual(back, c) && !hasNaN(c) {
			t.Fatalf("round trip changed the configuration:\n%s\nfrom\n%s\nwant %+v\ngot  %+v", y, b, c, back)
		}
	})
}

// hasNaN reports whether a number of c is NaN, which equals nothing,
// itself included.
func hasNaN(c Config) bool {
	y, _ := c.Marshal("")
	return strings.Contains(string(y), ".nan") || strings.Contains(string(y), ".NaN")
}
