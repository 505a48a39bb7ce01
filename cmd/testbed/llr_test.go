package main

import (
	"slices"
	"testing"
)

// Every switch-to-switch link is protected on both ends, in the mode
// the options say; hosts' links never are.
func TestLLRSections(t *testing.T) {
	p := mustPlan(t, "chain", func(o *Options) { o.LLR = "blocking" })
	for node, want := range map[string][]string{"tor1": {"core"}, "core": {"tor1", "tor2"}, "tor2": {"core"}} {
		s := p.TordConfigs()[node].LLR
		if s == nil || s.Mode != "blocking" || !slices.Equal(s.Ports, want) {
			t.Errorf("%s: llr %+v, want blocking on %v", node, s, want)
		}
	}
	if s := mustPlan(t, "link", func(o *Options) { o.LLR = "off" }).TordConfigs()["tor1"].LLR; s != nil {
		t.Errorf("mode off: %+v", s)
	}
}

func TestLLRLossWithFakes(t *testing.T) {
	fab, _, res := runFake(t, newLLRLoss(), "--losses", "1e-3", "--modes", "off,blocking", "--count", "3")
	var got []string
	for _, r := range fab.reconfigs {
		got = append(got, r.LLR)
	}
	if !slices.Equal(got, []string{"off", "off", "blocking"}) {
		t.Errorf("link modes %v: want the clean reference, then off and blocking", got)
	}
	if n := len(fab.sets); n < 3 || fab.sets[n-1].Corrupt != 1e-3 || fab.sets[n-1].Loss != 0 {
		t.Errorf("impairments %+v", fab.sets)
	}
	cells := cellsOf(t, res)
	if len(cells) != 2 {
		t.Fatalf("%d cells", len(cells))
	}
	hasKeys(t, cells[1], "loss", "mode", "packets", "unrecovered", "effective_loss", "goodput_ratio", "copies",
		"tx_buffer_peak_bytes", "rx_buffer_peak_bytes")
}

func TestLLRTailWithFakes(t *testing.T) {
	_, perf, res := runFake(t, newLLRTail(), "--count", "10")
	cells := cellsOf(t, res)
	if len(cells) != 8 || perf.transfers[0].Size != 143 || perf.transfers[1].Size != 24387 {
		t.Fatalf("%d cells, sizes %d %d", len(cells), perf.transfers[0].Size, perf.transfers[1].Size)
	}
	hasKeys(t, cells[0], "size", "mode", "fct_us")
	fct := cells[7]["fct_us"].(map[string]any)
	for _, k := range []string{"p50", "p99", "p999", "p9999"} {
		if _, ok := fct[k]; !ok {
			t.Errorf("fct_us lacks %s: %v", k, fct)
		}
	}
	if cells[0]["mode"] != "noloss" || cells[7]["mode"] != "blocking" {
		t.Errorf("modes %v … %v", cells[0]["mode"], cells[7]["mode"])
	}
}
