package perf

import "testing"

// TestClassEndpoint: --tclass and --cnp-dscp reach the endpoint as
// ConnectX reads them: DSCP = tclass/4 (the ECN bits are the
// congestion control's), cnp_dscp as it is; unset, the endpoint's
// defaults (nic.Config: 26 and 48). nic/cc's TestDSCPOnWire checks
// the frames an endpoint so configured sends.
func TestClassEndpoint(t *testing.T) {
	for _, c := range []struct {
		o          ClassOptions
		dscp, cnps uint8
	}{
		{ClassOptions{}, 0, 0}, // the endpoint's defaults
		{ClassOptions{TClass: 106, CNPDSCP: 48}, 26, 48},
		{ClassOptions{TClass: 138, CNPDSCP: 46}, 34, 46},
		{ClassOptions{TClass: 107}, 26, 0},
		{ClassOptions{BestEffort: true}, 0, 0}, // --tclass 0 to 3: DSCP 0 on the wire
	} {
		ec := sessionConfig{class: c.o}.endpoint()
		if ec.DSCP != c.dscp || ec.CNPDSCP != c.cnps || ec.BestEffort != c.o.BestEffort {
			t.Errorf("%+v: DSCP %d, CNP DSCP %d; want %d, %d", c.o, ec.DSCP, ec.CNPDSCP, c.dscp, c.cnps)
		}
	}
	for _, o := range []ClassOptions{{TClass: 3}, {TClass: 256}, {TClass: 106, BestEffort: true}, {CNPDSCP: 64}, {CNPDSCP: -1}} {
		if o.Check() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
