package lab

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
		if s.Mode != "blocking" || !slices.Equal(s.Ports, want) {
			t.Errorf("%s: llr %+v, want blocking on %v", node, s, want)
		}
	}
	if s := mustPlan(t, "link", func(o *Options) { o.LLR = "off" }).TordConfigs()["tor1"].LLR; s.On() {
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
		"tx_buffer_peak_bytes", "rx_buffer_peak_bytes", "protected", "ack_timeouts", "destroyed")
}

// TestLLRLinkLoss: what the link lost is what tor1's pipeline sent toward
// tor2 (its data queue) less what tor2's pipeline received from tor1,
// not counting PFC frames, which end at the port; whichever frames the
// impairment destroyed and llr recovered or not.
func TestLLRLinkLoss(t *testing.T) {
	p := mustPlan(t, "link", nil)
	if len(p.Sites) == 0 || p.Sites[0] != (Site{Node: "tor1", Port: "tor2"}) {
		t.Fatalf("impair sites %+v", p.Sites)
	}
	r := &Run{Switches: map[string]Sample{
		"tor1": {`rocetor_queue_dequeued_packets_total{port="tor2",queue="data"}`: 1000,
			`rocetor_queue_dequeued_packets_total{port="tor2",queue="retransmit"}`: 40,
			`rocetor_queue_dequeued_packets_total{port="h1",queue="data"}`:         500},
		"tor2": {`rocetor_port_rx_packets_total{port="tor1"}`: 995, `rocetor_port_pfc_rx_frames_total{port="tor1"}`: 2,
			`rocetor_port_rx_packets_total{port="h2"}`: 500},
	}}
	if sent, lost := linkLoss(p, r); sent != 1000 || lost != 7 {
		t.Errorf("sent %v, lost %v; want 1000 and 7", sent, lost)
	}
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
