package cc_test

import (
	"testing"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
)

// TestDSCPOnWire: an endpoint sets the DSCP a switch classifies by as
// ConnectX does: its traffic class (nic.Config.DSCP, roceperf
// --tclass) on every request, ACK and NAK, and cnp_dscp
// (nic.Config.CNPDSCP, roceperf --cnp-dscp) on its CNPs, read from the
// IP header's bytes as they cross the wire. A lost request makes B
// NAK; CE marks make it send CNPs.
func TestDSCPOnWire(t *testing.T) {
	t.Run("dscp=34", func(t *testing.T) { dscpOnWire(t, 34, false) }) // neither DSCP is a default
	// perftest's --tclass 0: DSCP 0, the class of unmarked frames.
	t.Run("best-effort", func(t *testing.T) { dscpOnWire(t, 0, true) })
}

func dscpOnWire(t *testing.T, dscp uint8, bestEffort bool) {
	const cnpDSCP = 46
	p := nictest.New(t, nictest.Options{Transport: gbnT,
		CC: func() nic.CC {
			d, err := cc.NewDCQCN(10e9, cc.DefaultDCQCNConfig())
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		Endpoint: func(_ int, c *nic.Config) { c.DSCP, c.BestEffort, c.CNPDSCP = dscp, bestEffort, cnpDSCP }})
	onWire := func(f []byte, m *rocev2.Meta) uint8 { return f[m.L3Off+1] >> 2 } // IPv4 TOS: DSCP, ECN
	count := map[string]int{}
	bad := map[string]int{}
	check := func(kind string, got, want uint8) {
		count[kind]++
		if got != want {
			bad[kind]++
		}
	}
	dropped := false
	p.AB.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		if m.Opcode.IsRequest() {
			check("request", onWire(f, m), dscp)
			if m.PSN == 5 && !dropped {
				dropped = true
				return nictest.Drop // B NAKs the next one
			}
			rocev2.IPv4(f[m.L3Off:]).SetECN(3) // CE: B answers with CNPs (the ICRC masks the TOS byte)
		}
		return nictest.Pass
	}
	p.BA.Filter = func(f []byte, m *rocev2.Meta) nictest.Action {
		switch {
		case m.Opcode == rocev2.CNP:
			check("cnp", onWire(f, m), cnpDSCP)
		case m.Opcode == rocev2.RCAck && rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).Syndrome().IsNAK():
			check("nak", onWire(f, m), dscp)
		case m.Opcode == rocev2.RCAck:
			check("ack", onWire(f, m), dscp)
		}
		return nictest.Pass
	}
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, 256<<10); err != nil {
		t.Fatal(err)
	}
	p.MustComplete(t, 1, 1e9)
	nictest.WantOK(t, p.A.CQ)
	for _, k := range []string{"request", "ack", "nak", "cnp"} {
		if count[k] == 0 || bad[k] != 0 {
			t.Errorf("%s: %d frames, %d with the wrong DSCP", k, count[k], bad[k])
		}
	}
	t.Logf("frames seen: %v", count)
}
