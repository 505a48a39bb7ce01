package main

import (
	"slices"
	"testing"
)

// TestTrustConfig checks how the trust: section reads: the host ports
// derived from netrt.fabric or named, PFC honoured on every port unless
// pfc_ports says otherwise, and NetRT's peers taken from netrt.prefixes.
func TestTrustConfig(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		hosts      uint64
		refuse     []bool // nil: every port honours PFC
		netrt      bool
	}{
		{"nothing said", "ports: [h1, s1]", 0, nil, false},
		{"from netrt.fabric", "ports: [h1, h2, s1]\nxdp: {frames: 32768}\nnetrt: {fabric: [s1], prefixes: [10.0.2.0/24]}", 0b011, nil, true},
		{"named", "ports: [h1, s1, s2]\nxdp: {frames: 16384}\ntrust: {hosts: [h1]}", 0b001, nil, false},
		{"pfc on the fabric only", "ports: [h1, s1]\ntrust: {hosts: [h1], pfc_ports: [s1]}", 0b01, []bool{true, false}, false},
		{"pfc nowhere", "ports: [h1, s1]\ntrust: {pfc_ports: []}", 0, []bool{true, true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := loadAndValidate(t, c.yaml)
			if err != nil {
				t.Fatal(err)
			}
			tc := cfg.Trust.StageConfig(&cfg)
			if tc.Hosts != c.hosts || tc.NetRT != c.netrt {
				t.Errorf("hosts %b netrt %v, want %b %v", tc.Hosts, tc.NetRT, c.hosts, c.netrt)
			}
			if got := cfg.Trust.RefusePFC(cfg.Ports); !slices.Equal(got, c.refuse) || (got == nil) != (c.refuse == nil) {
				t.Errorf("refuse PFC %v, want %v", got, c.refuse)
			}
			if c.netrt && !slices.Equal(tc.Peers, cfg.NetRT.Prefixes) {
				t.Errorf("peers %v, want netrt.prefixes %v", tc.Peers, cfg.NetRT.Prefixes)
			}
		})
	}
}

func TestTrustConfigErrors(t *testing.T) {
	for _, y := range []string{
		"ports: [a, b]\ntrust: {hosts: [c]}",
		"ports: [a, b]\ntrust: {hosts: [a, a]}",
		"ports: [a, b]\nnetrt: {fabric: [b]}\ntrust: {hosts: [b]}",
		"ports: [a, b, c]\nxdp: {frames: 32768}\nnetrt: {fabric: [c]}\ntrust: {hosts: [a]}",
		"ports: [a, b]\nllr: {ports: [b]}\ntrust: {hosts: [b]}",
	} {
		wantConfigErr(t, y, "trust.hosts:")
	}
	wantConfigErr(t, "ports: [a, b]\ntrust: {pfc_ports: [c]}", "trust.pfc_ports:")
	wantConfigErr(t, "ports: [a, b]\ntrust: {pfc_ports: [a, a]}", "trust.pfc_ports:")
}
