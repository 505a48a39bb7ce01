package pipeline

import "testing"

// llr's Tx buffer holds frames of the UMEM only as far as xdp.frames has
// them beyond the rings and NetRT: by default tx_buffer's worth, or what
// is left; an explicit tx_frames that does not fit is an error.
func TestLLRTxFrames(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want int
	}{
		{"ports: [a, b]\nllr: {ports: [b]}", 0},                                                                                  // the rings take all 8192
		{"ports: [a, b]\nxdp: {frames: 16384}\nllr: {ports: [b]}", 512},                                                          // 2 MiB / 4 KiB
		{"ports: [a, b]\nxdp: {frames: 16384}\nllr: {ports: [a, b]}", 512},                                                       // 4096 each to spare
		{"ports: [a, b]\nxdp: {frames: 8192, ring_size: 512}\nllr: {ports: [a, b], tx_buffer: 8MiB}\nnetrt: {fabric: [b]}", 512}, // wants 2048 each; 8192 − 2048 (rings) − 5120 (NetRT) left, shared
		{"ports: [a, b]\nxdp: {frames: 16384}\nllr: {ports: [b], tx_frames: -1}", 0},                                             // copies only
		{"ports: [a, b]\nxdp: {frames: 16384}\nllr: {ports: [b], tx_frames: 100}", 100},
		{"ports: [a, b]\nxdp: {frames: 16384}\nllr: {ports: [b]}\nnetrt: {fabric: [b]}", 512},
	} {
		cfg, err := ParseConfig([]byte(c.yaml), "test")
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := cfg.llrTxFrames(); got != c.want {
			t.Errorf("%q: tx_frames %d, want %d", c.yaml, got, c.want)
		}
	}
}
