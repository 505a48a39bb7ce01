package pipeline

import (
	"errors"
	"strings"
	"testing"

	"rocetor/tor/fwd"
)

// TestINTConfig: an int: section puts the INT stage after trim and
// before llr's sender, asks for a handoff with several workers (one
// worker owns each port's egress, whose queue and bytes sent it
// reports), and Validate names a port that is not there.
func TestINTConfig(t *testing.T) {
	c, err := ParseConfig([]byte("ports: [up, h1]\ntrim: {ports: [up]}\nllr: {ports: [up]}\nint: {ports: [up]}\n"), "test")
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
	pl, err := pn.Build(0, mem, ports, func() int64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range pl.Stages {
		names = append(names, s.Name())
	}
	if got := strings.Join(names, " "); got != "trust fwd trim int llr" || pl.INT == nil {
		t.Errorf("stages %q, INT %v", got, pl.INT)
	}
	c2 := Config{Workers: 2, INT: &INTConfig{}}
	if !c2.Handoff() {
		t.Error("int: with two workers hands nothing off")
	}
	c.INT.Ports = []string{"down"}
	if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "int.ports") {
		t.Errorf("a port that is not there: %v", err)
	}
}
