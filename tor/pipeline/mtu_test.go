package pipeline

import (
	"testing"

	"rocetor/tor/fwd"
	"rocetor/tor/llr"
)

// TestPlanMTU: llr's largest frame comes from the injected lookup, for
// the protected ports only; NewPlan reads no interface, so ports named
// like the machine's ("lo") keep llr's default.
func TestPlanMTU(t *testing.T) {
	c, err := ParseConfig([]byte("ports: [lo, eth0]\nllr: {ports: [lo]}\n"), "test")
	if err != nil {
		t.Fatal(err)
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	pn, err := NewPlan(&c, &fwd.FIB{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pn.llr.MaxFrame != 0 {
		t.Errorf("NewPlan: llr's largest frame %d, want 0 (llr's default, %d): it read the host", pn.llr.MaxFrame, llr.MaxFrameBytes)
	}
	var asked []string
	mtu := func(port string) (int, bool) {
		asked = append(asked, port)
		return map[string]int{"lo": 9000, "eth0": 1500}[port], true
	}
	if pn, err = NewPlanMTU(&c, &fwd.FIB{}, nil, mtu); err != nil {
		t.Fatal(err)
	}
	if pn.llr.MaxFrame != 9014 || len(asked) != 1 || asked[0] != "lo" {
		t.Errorf("NewPlanMTU: largest frame %d after asking %v, want 9014 after asking [lo]", pn.llr.MaxFrame, asked)
	}
}
