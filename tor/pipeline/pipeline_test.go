package pipeline

import (
	"errors"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
)

// TestParseConfig: unknown fields are errors, an empty file is the
// defaults, and Validate names the bad field.
func TestParseConfig(t *testing.T) {
	if _, err := ParseConfig([]byte("portz: [a]\n"), "x"); err == nil || !strings.Contains(err.Error(), "portz") {
		t.Fatalf("unknown field: %v", err)
	}
	c, err := ParseConfig(nil, "empty")
	if err != nil || c.Workers != 1 || c.Forwarding.Multipath != "ecmp" {
		t.Fatalf("empty file: %+v, %v", c, err)
	}
	c.Ports = []string{"a"}
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "ports") {
		t.Fatalf("one port: %v", err)
	}
}

// TestBuildOrder: the stages a configuration asks for, in the order the
// design fixes, over ports wrapped for the wire and the link.
func TestBuildOrder(t *testing.T) {
	c, err := ParseConfig([]byte(`
ports: [up, h1]
netrt: {fabric: [up]}
trim: {ports: [up]}
llr: {ports: [up]}
ecn: {}
impair:
  rules: [{port: up, direction: egress, loss: 0.01}]
forwarding: {hash_seed: 7}
`), "test")
	if err != nil {
		t.Fatal(err)
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	c.XDP.Frames = 1 << 16
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mem, ports := twoPorts(t)
	pn, err := NewPlan(&c, &fwd.FIB{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pn.Fwd.HashSeed != 7 {
		t.Errorf("hash seed %d, want 7", pn.Fwd.HashSeed)
	}
	pl, err := pn.Build(0, mem, ports, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range pl.Stages {
		names = append(names, s.Name())
	}
	if got := strings.Join(names, " "); got != "trust fwd netrt-src netrt-dst trim llr" {
		t.Errorf("stages %q", got)
	}
	if _, ok := pl.Ports[0].(dataplane.Wrapper); !ok || len(pl.Impairs) != 2 {
		t.Errorf("the uplink is not wrapped, or %d impair ports", len(pl.Impairs))
	}
	if e := pl.Worker.Egress(0); !e.ECN(e.QueueIndex("data")).On() {
		t.Error("no ECN marking on the data queue")
	}
}

// TestPFCConfig: the pfc section reaches the worker with its ports, and
// Validate names thresholds that cannot work.
func TestPFCConfig(t *testing.T) {
	parse := func(y string) Config {
		t.Helper()
		c, err := ParseConfig([]byte("ports: [up, h1]\n"+y), "test")
		if err != nil {
			t.Fatal(err)
		}
		c.AdminAddr, c.MetricsAddr = "", ""
		return c
	}
	for y, field := range map[string]string{
		"pfc: {xoff: 32KiB, xon: 32KiB}\n":                                              "pfc",
		"pfc: {xoff: 2MiB, xon: 32KiB}\n":                                               "pfc.xoff",
		"pfc: {xoff: 64KiB, ports: [h2]}\n":                                             "pfc.ports",
		"pfc: {xoff: 64KiB, alpha: 0.5}\n":                                              "pfc.alpha", // no buffer section
		"buffer: {size: 1MiB}\npfc: {xoff: 64KiB, alpha: 300}\n":                        "pfc.alpha", // out of range
		"pfc: {xoff: 64KiB, priorities: [3], priority_groups: {4: {xoff: 32KiB}}}\n":    "pfc.priority_groups.4",
		"pfc: {xoff: 64KiB, priority_groups: {3: {xoff: 32KiB, xon: 32KiB}}}\n":         "pfc.priority_groups.3",
		"pfc: {xoff: 64KiB, priority_groups: {9: {xoff: 32KiB}}}\n":                     "pfc.priority_groups.9",
		"pfc: {xoff: 64KiB, headroom: 100KiB, priority_groups: {3: {xoff: 1000KiB}}}\n": "pfc.priority_groups.3",
	} {
		c := parse(y)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%q: %v, want an error naming %s", y, err, field)
		}
	}
	c := parse("pfc: {xoff: 64KiB, xon: 32KiB, ports: [h1], priorities: [3, 4], priority_groups: {4: {xoff: 128KiB, xon: 16KiB}}}\n")
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mem, ports := twoPorts(t)
	pn, err := NewPlan(&c, &fwd.FIB{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := pn.Build(0, mem, ports, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	got, ok := pl.Worker.IngressPFC()
	if !ok || got.XOff != 64<<10 || got.XOn != 32<<10 || len(got.Ports) != 2 || got.Ports[0] || !got.Ports[1] ||
		got.Groups[4] != (dataplane.Thresholds{XOff: 128 << 10, XOn: 16 << 10}) || got.Groups[3] != (dataplane.Thresholds{}) {
		t.Errorf("worker's PFC %+v, %v: want 64 KiB / 32 KiB on h1 only, priority 4 128 KiB / 16 KiB", got, ok)
	}
}

// twoPorts is frame memory and two in-memory ports on it, "up" and "h1".
func twoPorts(t *testing.T) (*dataplane.Mem, []dataplane.Port) {
	t.Helper()
	mem, err := dataplane.NewMem(make([]byte, 4096*2048), 2048)
	if err != nil {
		t.Fatal(err)
	}
	return mem, []dataplane.Port{dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 64),
		dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, 0, 2}, mem, 64)}
}
