package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"rocetor/cmd/tord/api"
)

// TestQoSTord runs tord with the default QoS profile (qos: {}) and
// pings h2 from h1 with three IP traffic classes: TOS 104 (DSCP 26,
// RoCE's), 192 (DSCP 48, the CNPs') and 0. torctl queues shows each
// kind on its own queue of s2: data (TC 3, lossless on priority 3),
// cnp (TC 6, strict) and lossy (TC 0).
func TestQoSTord(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	torctlBin := filepath.Join(filepath.Dir(bin), "torctl")
	if out, err := exec.Command("go", "build", "-o", torctlBin, "../torctl").CombinedOutput(); err != nil {
		t.Fatalf("go build torctl: %v\n%s", err, out)
	}
	tp := newTopo(t)
	cfg := filepath.Join(t.TempDir(), "tord.yaml")
	if err := os.WriteFile(cfg, []byte("ports: [s1, s2]\nmetrics_addr: 127.0.0.1:9478\nadmin_addr: 127.0.0.1:9479\nqos: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	td := startTord(t, bin, tp.sw, "--config", cfg)
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	tp.warmUp(t, "10.0.2.2")
	queues := func() map[string]api.Queue {
		t.Helper()
		out, err := nsExec(tp.sw, torctlBin, "-o", "json", "queues", "s2")
		if err != nil {
			t.Fatalf("torctl queues s2: %v\n%s", err, out)
		}
		var qs []api.Queue
		if err := json.Unmarshal([]byte(out), &qs); err != nil {
			t.Fatal(err)
		}
		m := map[string]api.Queue{}
		for _, q := range qs {
			m[q.Queue] = q
		}
		return m
	}
	time.Sleep(10 * time.Millisecond) // the worker publishes every millisecond
	before := queues()
	const n = 5
	for _, tos := range []int{104, 192, 0} {
		if out, err := tp.ping(tp.h1, "-c", fmt.Sprint(n), "-i", "0.05", "-W1", "-Q", fmt.Sprint(tos), "10.0.2.2"); err != nil {
			t.Fatalf("ping -Q %d: %v\n%s", tos, err, out)
		}
	}
	time.Sleep(10 * time.Millisecond)
	after := queues()
	for q, want := range map[string]uint64{"data": n, "cnp": n, "lossy": n} {
		// ARP and ND stay with the kernel; the echo requests are all
		// tord forwards to h2.
		if got := after[q].Enqueued - before[q].Enqueued; got != want {
			t.Errorf("queue %s of s2 took %d echo requests, want %d", q, got, want)
		}
	}
	if q := after["data"].QoS; q == nil || q.PFCPriority != 3 || q.Scheduler != "dwrr" {
		t.Errorf("data: %+v, want lossless on priority 3, dwrr", q)
	}
	if q := after["cnp"].QoS; q == nil || q.PFCPriority != -1 || q.Scheduler != "strict" {
		t.Errorf("cnp: %+v, want lossy, strict", q)
	}
	out, err := nsExec(tp.sw, torctlBin, "queues", "s2")
	if err != nil || !regexp.MustCompile(`(?m)^s2\s+cnp\s+6\s+strict\s+lossy\s`).MatchString(out) {
		t.Errorf("torctl queues s2: %v\n%s", err, out)
	}
	t.Logf("torctl queues s2:\n%s", out)
}
