package main

import (
	"bytes"
	"strings"
	"testing"

	"rocetor/nic/cc"
	"rocetor/nic/perf"
)

// TestParseCC checks --cc, --line-rate and the DCQCN flags: one per
// ConnectX parameter, ConnectX's defaults, the line rate from --rate
// unless given, and usage errors for a DCQCN flag without --cc dcqcn and
// a rate-based CC without a rate.
func TestParseCC(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "200"}
	o, err := parseClient("write", base, &bytes.Buffer{})
	if err != nil || o.CC.Name != "none" || o.CC.DCQCN != nil {
		t.Fatalf("default: %+v, %v", o.CC, err)
	}
	o, err = parseClient("write", append(base, "--cc", "dcqcn", "--rate", "10G", "--dcqcn-rpg-time-reset", "55",
		"--dcqcn-dce-tcp-rtt", "55", "--dcqcn-clamp-tgt-rate", "--dcqcn-rpg-ai-rate", "40",
		"--dcqcn-min-time-between-cnps", "50"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := cc.DefaultDCQCNConfig()
	want.RPGTimeReset, want.DCETCPRTT, want.ClampTgtRate, want.RPGAIRate, want.MinTimeBetweenCNPs = 55, 55, true, 40, 50
	if o.CC.Name != "dcqcn" || o.CC.LineBps != 10e9 || o.CC.DCQCN == nil || *o.CC.DCQCN != want {
		t.Fatalf("parsed %+v %+v, want %+v", o.CC, o.CC.DCQCN, want)
	}
	o, err = parseClient("write", append(base, "--cc", "dcqcn", "--rate", "10G", "--line-rate", "25G"), &bytes.Buffer{})
	if err != nil || o.CC.LineBps != 25e9 || *o.CC.DCQCN != cc.DefaultDCQCNConfig() {
		t.Fatalf("--line-rate: %+v, %v", o.CC, err)
	}
	// Every ConnectX parameter has its flag.
	var help bytes.Buffer
	parseClient("write", []string{"-h"}, &help)
	for _, p := range []string{"rpg_time_reset", "rpg_byte_reset", "rpg_threshold", "rpg_ai_rate", "rpg_hai_rate",
		"rpg_gd", "rpg_min_dec_fac", "rpg_min_rate", "rate_to_set_on_first_cnp", "dce_tcp_g", "dce_tcp_rtt",
		"rate_reduce_monitor_period", "initial_alpha_value", "clamp_tgt_rate", "clamp_tgt_rate_after_time_inc",
		"min_time_between_cnps"} {
		if !strings.Contains(help.String(), "-"+dcqcnFlagName(p)+" ") && !strings.Contains(help.String(), "-"+dcqcnFlagName(p)+"\n") {
			t.Errorf("no flag for %s", p)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dcqcn-rpg-gd", "10"}, "without --cc dcqcn"},
		{[]string{"--cc", "dcqcn"}, "needs --line-rate"},
		{[]string{"--cc", "fixed"}, "needs --line-rate"},
		{[]string{"--cc", "cubic", "--rate", "1G"}, `--cc "cubic"`},
		{[]string{"--timely-t-low", "20"}, "without --cc timely"},
		{[]string{"--cc", "dcqcn", "--rate", "1G", "--timely-beta", "0.5"}, "without --cc timely"},
		{[]string{"--cc", "timely"}, "needs --line-rate"},
		{[]string{"--cc", "timely", "--rate", "1G", "--timely-t-high", "40"}, "t_high 40"},
		{[]string{"--cc", "timely", "--rate", "1G", "--transport", "dcp"}, "dcp acknowledges whole messages"},
		{[]string{"--cc", "dcqcn", "--rate", "1G", "--dcqcn-rpg-gd", "12"}, "rpg_gd 12"},
	} {
		if _, err := parseClient("write", append(base, tc.args...), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestExchangeDCQCN runs a WRITE with --cc dcqcn through the exchange:
// the server builds the same congestion control from the hello, and both
// reports carry its figures.
func TestExchangeDCQCN(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "4KiB", "--count", "20",
		"--cc", "dcqcn", "--line-rate", "25G", "--dcqcn-rpg-threshold", "5", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	r := decode(t, out)
	if r.CC == nil || r.Server == nil || r.Server.CC == nil || r.CC.Name != "dcqcn" || r.Server.CC.Name != "dcqcn" ||
		r.Server.CC.LineBps != 25e9 || r.CC.Rate == nil {
		t.Fatalf("report %s", out)
	}
	for _, k := range []string{`"ce_received":0`, `"cnps_sent":0`, `"cnps_received":0`, `"cc":{"name":"dcqcn"`,
		`"rate_cuts":0`, `"rate":{"qps":0,"min_bps":0,"mean_bps":0,"final_bps":0}`} {
		if !strings.Contains(out, k) {
			t.Errorf("JSON lacks %s: %s", k, out)
		}
	}
}

// TestParseTimely checks --cc timely and its flags: the paper's
// parameters unless given, one flag per parameter, the line rate from
// --rate.
func TestParseTimely(t *testing.T) {
	base := []string{"--dev", "eth0", "--to", "10.0.0.2", "--size", "4KiB", "--count", "200", "--transport", "irn"}
	o, err := parseClient("write", append(base, "--cc", "timely", "--rate", "10G"), &bytes.Buffer{})
	if err != nil || o.CC.Name != "timely" || o.CC.LineBps != 10e9 || o.CC.DCQCN != nil || o.CC.Timely == nil ||
		*o.CC.Timely != cc.DefaultTimelyConfig() {
		t.Fatalf("--cc timely: %+v, %v", o.CC, err)
	}
	o, err = parseClient("write", append(base, "--cc", "timely", "--rate", "10G", "--timely-t-low", "20",
		"--timely-beta", "0.5", "--timely-segment", "65536", "--timely-min-rtt", "10"), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := cc.DefaultTimelyConfig()
	want.TLow, want.Beta, want.SegmentBytes, want.MinRTT = 20, 0.5, 64<<10, 10
	if *o.CC.Timely != want {
		t.Fatalf("parsed %+v, want %+v", *o.CC.Timely, want)
	}
	var help bytes.Buffer
	parseClient("write", []string{"-h"}, &help)
	for _, p := range []string{"t_low", "t_high", "min_rtt", "delta", "beta", "alpha", "hai_threshold", "hai_factor",
		"segment", "min_rate"} {
		if !strings.Contains(help.String(), "-"+timelyFlagName(p)+" ") && !strings.Contains(help.String(), "-"+timelyFlagName(p)+"\n") {
			t.Errorf("no flag for %s", p)
		}
	}
}

// TestExchangeTimely runs a WRITE with --cc timely through the exchange:
// the server builds TIMELY from the hello, both reports name it (the
// fake device runs no endpoint, so there are no samples to see), and
// timely with dcp does not pair.
func TestExchangeTimely(t *testing.T) {
	n := perf.NewFakeNet()
	addr, _, _ := fakeServer(t, n, perf.ServerOptions{})
	code, out, errs := fakeClient(t, n, "write", "--dev", "f", "--to", addr, "--size", "64KiB", "--count", "20",
		"--transport", "irn", "--cc", "timely", "--line-rate", "25G", "--timely-t-low", "40", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	r := decode(t, out)
	if r.CC == nil || r.Server == nil || r.Server.CC == nil || r.CC.Name != "timely" || r.Server.CC.Name != "timely" ||
		r.Server.CC.LineBps != 25e9 || r.CC.Rate == nil {
		t.Fatalf("report %s", out)
	}
	h := perf.CCOptions{Name: "timely", LineBps: 1e9}
	if err := h.Pairs("dcp"); err == nil || !strings.Contains(err.Error(), "dcp acknowledges whole messages") {
		t.Errorf("timely with dcp: %v", err)
	}
}
