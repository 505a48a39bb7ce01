package fabric

import (
	"slices"
	"testing"

	"rocetor/nic/cc"
	"rocetor/tor/workload"
)

// TestHPCCWindow: eight senders start 2 MiB each toward one receiver at
// 10 Gbit/s into a 256 KiB queue, every switch stamping INT. Paced
// alone, every QP's first round trip goes at the line rate and the
// queue overflows before the first echoes come back; with HPCC's window
// (W = R·T, T = 10 µs: 12.5 KB at the line rate) the eight have at most
// eight windows in flight, the queue peaks below that and nothing
// drops.
func TestHPCCWindow(t *testing.T) {
	senders := []int{0, 1, 2, 3, 4, 5, 6, 7}
	flows := workload.Incast(senders, 8, 2<<20)
	for _, window := range []bool{false, true} {
		h := cc.DefaultHPCCConfig()
		h.Window = window
		o := Options{Seed: 1, CC: "hpcc", HPCC: &h, Switch: "int: {}\negress: {queue_limit: 256KiB}\n", MaxMessage: 2 << 20, BDP: 1024}
		res, p := dumbbellRun(t, 10e9, 8, o, flows)
		peak, drops := slices.Max(p.depth), res.Drops["queue_full"]
		t.Logf("window %v: queue peak %d B, %d drops, goodput %.2f Gbit/s", window, peak, drops, res.GoodputGbps)
		const eight = 8 * 10e9 * 10e-6 / 8 // eight windows at the line rate, bytes
		switch {
		case !window && drops == 0:
			t.Error("without the window the first round trip dropped nothing: the test shows nothing")
		case window && (drops != 0 || float64(peak) > eight+8*1100):
			t.Errorf("with the window: %d drops, queue peak %d B; want none, at most eight windows (%.0f B) and a frame each", drops, peak, eight)
		}
	}
}
