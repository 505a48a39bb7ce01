package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tord.yaml")
	os.WriteFile(path, []byte(`
ports: [eth0, eth1]
workers: 2
egress:
  rate: 25G
  queue_limit: 512KiB
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
	if c.Workers != 2 || c.Egress.Rate != 25e9 || c.Egress.QueueLimit != 512<<10 ||
		c.Forwarding.AdaptiveBias != 3000 || c.Forwarding.DSCPQueues[48] != "control" || c.Poll != "adaptive" {
		t.Fatalf("parsed %+v", c)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := []struct{ yaml, field string }{
		{"ports: [eth0]", "ports"},
		{"ports: [a, a]", "ports"},
		{"ports: [a, b]\nworkers: 0", "workers"},
		{"ports: [a, b]\npoll: spin", "poll"},
		{"ports: [a, b]\nadmin_addr: 0.0.0.0:9479", "admin_addr"},
		{"ports: [a, b]\nxdp: {ring_size: 100}", "xdp.ring_size"},
		{"ports: [a, b]\nxdp: {frames: 1024}", "xdp.frames"},
		{"ports: [a, b]\nxdp: {frame_size: 1000}", "xdp.frame_size"},
		{"ports: [a, b]\nforwarding: {queue: bulk}", "forwarding.queue"},
		{"ports: [a, b]\nforwarding: {dscp_queues: {70: data}}", "forwarding.dscp_queues"},
		{"ports: [a, b]\nlog_level: loud", "log_level"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(c.yaml), 0o644)
		cfg, err := LoadConfig(path)
		if err == nil {
			err = cfg.Validate()
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%q: err = %v, want an ErrConfig naming %s", c.yaml, err, c.field)
		}
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
