package fabric

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// lockoutRun is netrt-incast in small: senders of 500 KB, one a ToR,
// 10 µs apart, at 50 Gbit/s into one host through one core whose port
// toward the receiver's ToR holds 128 KiB, go-back-N over a 489-packet
// window with a 200 µs timeout, without congestion control. It returns
// the run's result, its drop log and the longest run of one sender's
// drops at consecutive PSNs.
func lockoutRun(t *testing.T, senders int, jitter int64) (*Result, string, int) {
	t.Helper()
	ti := topo.Tiers{HostRate: 50e9, FabricRate: 50e9, HostDelay: 500 * sim.Nanosecond, FabricDelay: 500 * sim.Nanosecond}
	tp := topo.LeafSpine(senders+1, 1, 1, ti)
	var flows []workload.Flow
	for s := 1; s <= senders; s++ {
		flows = append(flows, workload.Flow{Src: s, Dst: 0, Size: 500_000, Start: int64(s-1) * 10_000, After: -1})
	}
	var log bytes.Buffer
	o := Options{Seed: 1, Switch: "egress: {queue_limit: 128KiB}\n", GBNWindow: 489, RTO: 200 * time.Microsecond, Jitter: jitter, Drops: &log, MaxQPs: QPsNeeded(flows, 1)}
	res := runOnce(t, tp, o, flows)
	longest := 0
	last, run := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(log.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if f[0] == "#" {
			continue
		}
		if len(f) != 11 {
			t.Fatalf("drop log line %q: %d fields, want 11", sc.Text(), len(f))
		}
		p, err := strconv.Atoi(f[8])
		if err != nil {
			t.Fatalf("drop log line %q: PSN: %v", sc.Text(), err)
		}
		if q, ok := last[f[5]]; ok && (p-q)&0xffffff == 1 { // PSNs are 24 bits
			run[f[5]]++
		} else {
			run[f[5]] = 1
		}
		last[f[5]] = p
		longest = max(longest, run[f[5]])
	}
	return res, log.String(), longest
}

// TestDropLog: the drop log has a line for every frame the switches
// drop, under the reason it is counted by, naming the flow and PSN;
// and it needs one thread.
func TestDropLog(t *testing.T) {
	res, log, _ := lockoutRun(t, 4, 0)
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if lines[0] != dropHeader {
		t.Fatalf("first line %q, want the header", lines[0])
	}
	var drops uint64
	for _, v := range res.Drops {
		drops += v
	}
	full := strings.Count(log, " queue_full 10.0.")
	if drops == 0 || uint64(len(lines)-1) != drops || uint64(full) != res.Drops["queue_full"] {
		t.Fatalf("%d lines, %d of them queue_full data; the switches counted %v", len(lines)-1, full, res.Drops)
	}
	tp := topo.LeafSpine(2, 1, 1, topo.DefaultTiers())
	if _, err := Build(tp, Options{Threads: 2, Drops: &bytes.Buffer{}}); err == nil {
		t.Fatal("a drop log on two threads was accepted")
	}
	if _, err := Build(tp, Options{Jitter: -1}); err == nil {
		t.Fatal("a negative jitter was accepted")
	}
}

// TestJitterEndsLockout: senders at line rate reach the core's full
// queue at fixed phases, every hop re-serializing them, and drop-tail
// drops one sender's whole window of 489 packets while others pass;
// a frame time of jitter on every port (--jitter) spreads the drops
// over the senders as independent drops would (docs/experiments.md,
// netrt-incast: the lock-out). The recovery completes either way.
func TestJitterEndsLockout(t *testing.T) {
	_, _, locked := lockoutRun(t, 8, 0)
	res, _, spread := lockoutRun(t, 8, 177)
	t.Logf("longest run of drops: %d without jitter, %d with", locked, spread)
	if locked < 489 || spread > 100 || res.Completed != res.Flows {
		t.Fatalf("longest run of drops %d without jitter (want the window, 489), %d with (want under 100); %d of %d flows done",
			locked, spread, res.Completed, res.Flows)
	}
}
