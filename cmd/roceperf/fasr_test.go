package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"rocetor/nic/fasr"
)

// TestParseFaSR: fasr is a transport for every op, with --rto as its RTO.
func TestParseFaSR(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "10"}
	for _, op := range []string{"write", "send", "read"} {
		o, err := parseClient(op, append(base, "--transport", "fasr", "--rto", "2ms"), &bytes.Buffer{})
		if err != nil || o.transport != "fasr" || o.rto != 2*time.Millisecond {
			t.Errorf("%s over fasr: %+v, %v", op, o, err)
		}
	}
	tr, err := newTransport("fasr", 3*time.Millisecond, 0)
	if err != nil || tr.(*fasr.Transport).Config().RTO != 3e6 || !orderTolerant("fasr") {
		t.Errorf("fasr: %v, %v", tr, err)
	}
}

// TestExchangeFaSR runs WRITE, SEND and READ with --transport fasr
// through the exchange (the fake fabric has no transport: nic/fasr's
// tests run the real one in memory).
func TestExchangeFaSR(t *testing.T) {
	for _, op := range []string{"write", "send", "read"} {
		n := newFakeNet()
		addr, _, _ := fakeServer(t, n, serverOpts{})
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
		if r.SRStateBytes != 2*8+232 || r.SRBDPPackets != srBDP || r.Server == nil || r.Server.SRStateBytes != r.SRStateBytes ||
			r.Server.SRSharedBytes != 232 {
			t.Errorf("SR state: %s", out)
		}
	}
}

// TestReportFaSR pins the FaSR names of the JSON report and the table.
func TestReportFaSR(t *testing.T) {
	tr, _ := fasr.New(fasr.Config{})
	d := fasrCountersOf(tr)
	d.Recoveries, d.FastEntries, d.SlowEntries, d.FNACKsSent, d.SACKs, d.LostGaps, d.SACKLossGaps = 1, 2, 3, 4, 5, 6, 7
	d.FastOps, d.SlowOps, d.FastPathRatio, d.PeakUnits, d.Timeouts1 = 9, 1, 0.9, 8, 10
	r := &report{Transport: "fasr", counters: counters{QPContextBytes: 412, QPQueueBytes: 5632, FaSR: d},
		Server: &counters{FaSR: d}}
	var js, table bytes.Buffer
	r.writeJSON(&js)
	r.writeTable(&table)
	for _, k := range []string{`"fasr":{`, `"recoveries":1`, `"fast_entries":2`, `"slow_entries":3`, `"fnacks_sent":4`,
		`"sacks":5`, `"lost_gaps":6`, `"sack_loss_gaps":7`, `"fast_ops":9`, `"slow_ops":1`, `"fast_path_ratio":0.9`,
		`"peak_units":8`, `"timeouts_lost1":10`, `"units":20`, `"blocks":70`, `"state_bytes_per_qp":36`,
		`"shared_pool_bytes":784`, `"gbn_fallbacks":0`, `"lost_overflows":0`, `"compressions":0`} {
		if !strings.Contains(js.String(), k) {
			t.Errorf("JSON lacks %s: %s", k, js.String())
		}
	}
	for _, k := range []string{"SACKs 5 (gaps lost 6, SACK loss 7)", "timeouts by lost-cnt 0/1/>1 0/10/0",
		"recoveries 1 (fast 2, slow 3; fast-path ratio 0.90)", "FNACKs 4", "pool peak 8/20 units",
		"FaSR 36 B; shared pool 784 B"} {
		if !strings.Contains(table.String(), k) {
			t.Errorf("table lacks %q:\n%s", k, table.String())
		}
	}
	t.Log(table.String())
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
	}, func(r *report) bool { return r.FaSR != nil && r.Server.FaSR != nil && r.FaSR.SharedBytes != 0 })
}
