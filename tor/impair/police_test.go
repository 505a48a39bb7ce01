package impair

import (
	"testing"

	"rocetor/rocev2"
)

// TestPolicer offers twice the policed rate for 100 ms: what passes is
// the bucket plus the rate times the elapsed time, to within a frame.
func TestPolicer(t *testing.T) {
	const rate = 100e6
	f := roce(t, rocev2.RCWriteMiddle, 0, 1000)
	gap := int64(len(f)) * 8 * 1e9 / (2 * rate)
	for _, dir := range []string{"ingress", "egress"} {
		port := map[string]string{"ingress": "p0", "egress": "p1"}[dir]
		r := newRig(t, single(Rule{Port: port, Direction: dir, Rate: rate}), rigOpt{})
		n := int(100e6 / gap)
		r.stream(f, n, 1, gap)
		elapsed := int64(n-1) * gap // from the first frame's batch to the last's
		passed := float64(len(r.seq[1]) * len(f))
		bucket := 2 * 9216.0 // the default: 1 ms at 100 Mb/s is less
		want := bucket + rate*float64(elapsed)/8e9
		if passed > want || passed < want-float64(len(f)) {
			t.Fatalf("%s: %.0f bytes passed in %d ns, want %.0f less at most one frame", dir, passed, elapsed, want)
		}
		tput := (passed - bucket) * 8e9 / float64(elapsed)
		within(t, dir+" throughput (b/s)", tput, rate, rate/100)
		i, d := 1, Egress
		if dir == "ingress" {
			i, d = 0, Ingress
		}
		if rs := r.dir(i, d); rs.Caused(CausePoliced) != uint64(n-len(r.seq[1])) {
			t.Fatalf("%s: policed %d, lost %d", dir, rs.Caused(CausePoliced), n-len(r.seq[1]))
		}
		r.noLeak()
	}
}
