package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadAndValidate writes yaml to a file, loads it and validates it, as
// tord does at start.
func loadAndValidate(t *testing.T, yaml string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(path)
	if err == nil {
		err = c.Validate()
	}
	return c, err
}

// wantConfigErr checks that yaml is refused with an ErrConfig naming want.
func wantConfigErr(t *testing.T, yaml, want string) {
	t.Helper()
	if _, err := loadAndValidate(t, yaml); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
		t.Errorf("%q: err = %v, want an ErrConfig naming %s", yaml, err, want)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tord.yaml")
	os.WriteFile(path, []byte(`
ports: [eth0, eth1]
workers: 2
egress:
  rate: 25G
  queue_limit: 512KiB
  port_rates: {eth1: 10G}
forwarding:
  multipath: adaptive
  adaptive_bias: 3000
  dscp_queues: {48: control}
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Workers != 2 || c.Egress.Rate != 25e9 || c.Egress.PortRates["eth1"] != 10e9 || c.Egress.QueueLimit != 512<<10 ||
		c.Forwarding.AdaptiveBias != 3000 || c.Forwarding.DSCPQueues[48] != "control" || c.Poll != "adaptive" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ yaml, field string }{
		{"ports: [eth0]", "ports"},
		{"ports: [a, a]", "ports"},
		{"ports: [a, b]\nworkers: 0", "workers"},
		{"ports: [a, b]\npoll: spinning", "poll"},
		{"ports: [a, b]\nadmin_addr: 0.0.0.0:9479", "admin_addr"},
		{"ports: [a, b]\nxdp: {ring_size: 100}", "xdp.ring_size"},
		{"ports: [a, b]\nxdp: {frames: 1024}", "xdp.frames"},
		{"ports: [a, b]\nxdp: {frame_size: 1000}", "xdp.frame_size"},
		{"ports: [a, b]\nxdp: {busy_poll: 50us}", "xdp.busy_poll"}, // poll: adaptive
		{"ports: [a, b]\npoll: busy\nxdp: {busy_poll: 2s}", "xdp.busy_poll"},
		{"ports: [a, b]\nworkers: 2\nxdp: {frames: 16384}\ntrim: {}\npfc: {xoff: 64KiB, xon: 32KiB}", "pfc"},
		{"ports: [a, b]\nforwarding: {queue: bulk}", "forwarding.queue"},
		{"ports: [a, b]\nforwarding: {dscp_queues: {70: data}}", "forwarding.dscp_queues"},
		{"ports: [a, b]\nlog_level: loud", "log_level"},
		{"ports: [a, b]\negress: {port_rates: {c: 1G}}", "egress.port_rates"},
		{"ports: [a, b]\nllr: {ports: [b], tx_frames: 100}", "llr.tx_frames"}, // the rings take xdp.frames
		{"ports: [a, b]\nllr: {ports: [b], tx_frames: -2}", "llr.tx_frames"},
	}
	for _, c := range cases {
		wantConfigErr(t, c.yaml, c.field+":")
	}
}

func TestConfigRejectsUnknownFieldsAndBadUnits(t *testing.T) {
	for _, y := range []string{"portz: [a, b]", "egress: {rate: fast}", "egress: {queue_limit: 1MiBB}"} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(y), 0o644)
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("%q: accepted", y)
		}
	}
}

func TestConfigImpair(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(`
ports: [s1, s2]
impair:
  seed: 7
  rules:
    - {port: s2, direction: egress, match: roce, loss: 0.01}
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Impair.Rules) != 1 || c.Impair.Rules[0].Loss != 0.01 {
		t.Fatalf("impair rules %+v", c.Impair.Rules)
	}
	c.Impair.Rules[0].Port = "s9"
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "s9") {
		t.Fatalf("a rule on an unknown port: err = %v, want ErrConfig naming s9", err)
	}
}

func TestNetRTConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tord.yaml")
	os.WriteFile(path, []byte(`
ports: [h1, h2, up1, up2]
xdp: {frames: 32768}
netrt:
  fabric: [up1, up2]
  prefixes: [10.2.0.0/16, "fd02::/16"]
  pool_bytes: 512KiB
  hold: 2ms
  buffer_bytes: 1MiB
  request_interval: 300us
  k_low: 32KiB
  k_high: 128KiB
  rate_max: 5G
  rate_min: 100M
  window: 500us
  pause_priority: -1
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	nc, err := c.NetRT.StageConfig(c.Ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Fabric != 1<<2|1<<3 || len(nc.Prefixes) != 2 || nc.PoolBytes != 512<<10 || nc.Hold != 2e6 ||
		nc.RequestInterval != 300e3 || nc.KLow != 32<<10 || nc.KHigh != 128<<10 || nc.RateMax != 5e9 ||
		nc.RateMin != 100e6 || nc.Window != 500e3 || nc.PausePriority != -1 {
		t.Errorf("stage config %+v", nc)
	}
	if (&NetRTConfig{}).On() || !c.NetRT.On() {
		t.Error("On() is not len(fabric) > 0")
	}
}

func TestNetRTConfigErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"netrt: {fabric: [c]}", "netrt.fabric"},
		{"netrt: {fabric: [a, a]}", "netrt.fabric"},
		{"netrt: {fabric: [a, b]}", "netrt.fabric"},
		{"netrt: {fabric: [b], k_low: 100KiB, k_high: 20KiB}", "netrt:"},
		{"netrt: {fabric: [b], hold: -1ms}", "netrt:"},
		{"netrt: {fabric: [b], max_requests: 1000}", "netrt:"},
		{"netrt: {fabric: [b]}\nxdp: {frames: 8192}", "xdp.frames"},
	} {
		wantConfigErr(t, "ports: [a, b]\n"+c.yaml, c.want)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("ports: [a, b]\nnetrt: {fabric: [b], prefixes: [10.0.0.0/33]}"), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "10.0.0.0/33") {
		t.Errorf("a bad prefix: %v", err)
	}
}

func TestConfigTrim(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte(`
ports: [s1, s2]
trim:
  threshold: 32KiB
  incast_degree: 16
  ratio: 20
  min_weight: 0.05
  ports: [s2]
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	tc := c.Trim
	if tc == nil || tc.Threshold != 32<<10 || tc.IncastDegree != 16 || tc.Ratio != 20 || tc.MinWeight != 0.05 ||
		len(tc.Ports) != 1 || !tc.Trims("s2") || tc.Trims("s1") || !c.ParsesDCP() {
		t.Fatalf("trim %+v", tc)
	}
	if w := tc.Weight(); w != 3 {
		t.Errorf("w = %v, want (16−1)/(20−16+1) = 3", w)
	}
	// "trim: {}" turns trimming on with the defaults; no section, off.
	for _, y := range []struct {
		yaml string
		on   bool
	}{{"ports: [a, b]\ntrim: {}", true}, {"ports: [a, b]", false}, {"ports: [a, b]\nimpair: {rules: [{port: a, direction: egress, loss: 0.1, trim: true}]}", false}} {
		c, err := loadAndValidate(t, y.yaml)
		if err != nil || (c.Trim != nil) != y.on {
			t.Errorf("%q: trim %+v, %v; want on=%v", y.yaml, c.Trim, err, y.on)
		}
		if strings.Contains(y.yaml, "trim") != c.ParsesDCP() {
			t.Errorf("%q: dcp() = %v", y.yaml, c.ParsesDCP())
		}
	}
}

func TestConfigTrimErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"trim: {incast_degree: 1}", "incast_degree:"},
		{"trim: {ratio: 0.5}", "ratio:"},
		{"trim: {min_weight: -0.1}", "min_weight:"},
		{"trim: {ports: [c]}", "ports[0]:"},
		{"trim: {ports: [a, a]}", "ports[1]:"},
		{"trim: {threshold: 2MiB}", "trim.threshold:"},
		{"trim: {}\negress: {queue_limit: 64KiB}", "trim.threshold:"},
		{"trim: {}\nforwarding: {queue: retransmit}", "trim:"},
	} {
		wantConfigErr(t, "ports: [a, b]\n"+c.yaml, c.want)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("ports: [a, b]\ntrim: {treshold: 1000}"), 0o644)
	if _, err := LoadConfig(path); err == nil {
		t.Error("a misspelt trim key was accepted")
	}
}

func TestLLRConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tord.yaml")
	os.WriteFile(path, []byte(`
ports: [h1, up]
llr: {ports: [up], mode: nb, tx_buffer: 128KiB, ack_timeout: 2ms, target_loss: 1e-8, dormant: true, watch: true,
  monitor: {interval: 200ms, threshold: 1e-6}}
`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	lc, err := c.LLR.StageConfig(c.Ports)
	if err != nil {
		t.Fatal(err)
	}
	if lc.Ports != 2 || lc.TxBuffer != 128<<10 || lc.AckTimeout != 2e6 || lc.TargetLoss != 1e-8 || !lc.Dormant || !lc.Watch {
		t.Errorf("stage config %+v", lc)
	}
	if m := c.LLR.Monitor.Config(); m.Interval != 200*time.Millisecond || m.Threshold != 1e-6 || m.Window != 0 {
		t.Errorf("monitor config %+v", m)
	}
	for _, bad := range []struct{ yaml, field string }{
		{"llr: {ports: [c]}", "llr.ports"},
		{"llr: {ports: [b], mode: eager}", "llr.mode"},
		{"llr: {ports: [b], pause: 1KiB, resume: 2KiB}", "llr"},
		{"llr: {ports: [b], monitor: {threshold: 2}}", "llr.monitor"},
		{"llr: {ports: [b], monitor: {interval: -1s}}", "llr.monitor"},
	} {
		wantConfigErr(t, "ports: [a, b]\n"+bad.yaml, bad.field)
	}
}

// NetRT and trimming accept any number of workers: frames are handed to
// the worker that owns their flow or port (tor/pipeline.Owners).
func TestConfigManyWorkers(t *testing.T) {
	for _, ok := range []string{"netrt: {fabric: [b]}\nxdp: {frames: 16384}\nworkers: 2", "trim: {}\nworkers: 4",
		"netrt: {fabric: [b]}\nxdp: {frames: 16384}\nworkers: 1", "trim: {}\nworkers: 1", "workers: 2"} {
		if _, err := loadAndValidate(t, "ports: [a, b]\n"+ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
