package main

import (
	"bytes"
	"testing"
	"time"

	"rocetor/nic/fasr"
	"rocetor/nic/perf"
	"rocetor/nic/stack"
)

// TestParseFaSR: fasr is a transport for every op, with --rto as its RTO.
func TestParseFaSR(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "10"}
	for _, op := range []string{"write", "send", "read"} {
		o, err := parseClient(op, append(base, "--transport", "fasr", "--rto", "2ms"), &bytes.Buffer{})
		if err != nil || o.Transport != "fasr" || o.RTO != 2*time.Millisecond {
			t.Errorf("%s over fasr: %+v, %v", op, o, err)
		}
	}
	tr, err := perf.NewTransport("fasr", 3*time.Millisecond, 0)
	if err != nil || tr.(*fasr.Transport).Config().RTO != 3e6 {
		t.Errorf("fasr: %v, %v", tr, err)
	}
}

// TestExchangeFaSR runs WRITE, SEND and READ with --transport fasr
// through the exchange (the fake fabric has no transport: nic/fasr's
// tests run the real one in memory).
func TestExchangeFaSR(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		n := perf.NewFakeNet()
		addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
		code, out, errs := fakeClient(t, n, op, "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "100",
			"--qps", "2", "--transport", "fasr", "--json")
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s%s", op, code, out, errs)
		}
		r := decode(t, out)
		if r.Transport != "fasr" || r.Messages != 100 || r.Corrupt != 0 {
			t.Errorf("report %s", out)
		}
		// The SR state of both ends, the server's through the result
		// line: 2 QPs × 8 B and the pool sized for 128 packets.
		if r.SRStateBytes != 2*8+232 || r.SRBDPPackets != stack.DefaultBDP || r.Server == nil || r.Server.SRStateBytes != r.SRStateBytes ||
			r.Server.SRSharedBytes != 232 {
			t.Errorf("SR state: %s", out)
		}
	}
}

// TestDirectFaSR runs WRITE, SEND and READ with --transport fasr between
// two namespaces on one veth: the OOO layout and SACK ACKs on both real
// endpoints, every byte checked, and FaSR's counters in both reports.
// (Nothing is lost here: nic/fasr's tests lose in memory.)
func TestDirectFaSR(t *testing.T) {
	runDirect(t, "fasr", []directCase{
		{"write", "1MiB", 20, 1, "198.18.7.2"},
		{"send", "64KiB", 50, 2, "[2001:db8:7::2]:18515"},
		{"read", "256KiB", 20, 2, "198.18.7.2"},
	}, func(r *perf.Report) bool { return r.FaSR != nil && r.Server.FaSR != nil && r.FaSR.SharedBytes != 0 })
}
