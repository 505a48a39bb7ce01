package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"rocetor/afxdp/xdptest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// TestTordPFCWatchdog: h2 is a host that never stops pausing — it sends
// tord a real 802.1Qbb PFC frame for priority 3 every 2 ms — while h1
// sends RoCEv2 frames to it, which wait in s2's data queue. tord's PFC
// watchdog (detection 100 ms) declares the storm, drops what waits and
// what comes (drop reason pfc_watchdog), counts it on /metrics and logs
// the alert; it keeps ignoring the pauses while they come, restores the
// queue once they have stopped for the restoration time (300 ms), and
// frames reach h2 again.
func TestTordPFCWatchdog(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	tp := newTopo(t)
	cfg := filepath.Join(t.TempDir(), "tord.yaml")
	if err := os.WriteFile(cfg, []byte(`
ports: [s1, s2]
metrics_addr: 127.0.0.1:9478
admin_addr: ""
egress: {rate: 1G}
pfc:
  xoff: 64KiB
  xon: 32KiB
  priorities: [3]
  watchdog: {detection: 100ms, restoration: 300ms, action: drop}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	td := startTord(t, bin, tp.sw, "--config", cfg)
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	tp.warmUp(t, "10.0.2.2")

	const (
		storms   = `rocetor_port_pfc_watchdog_storms_total{port="s2"}`
		restores = `rocetor_port_pfc_watchdog_restores_total{port="s2"}`
		stormed  = `rocetor_port_pfc_watchdog_stormed{port="s2"}`
		drops    = `rocetor_drops_total{reason="pfc_watchdog"}`
		pfcRx3   = `rocetor_port_pfc_rx_priority_frames_total{port="s2",priority="3"}`
	)
	metric := func(name string) float64 {
		t.Helper()
		ms, err := td.metrics()
		if err != nil {
			t.Fatal(err)
		}
		return ms[name]
	}
	waitFor := func(what string, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for deadline := start.Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s after 10 s:\n%s", what, td.log())
			}
		}
		return time.Since(start)
	}
	rx := xdptest.OpenPacket(t, tp.h2, "eth0")
	tx := xdptest.OpenPacket(t, tp.h1, "eth0")
	send := func(qp uint32, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if err := tx.Send(tp.roceFrame(t, qp, psn.New(uint32(i)), "10.0.2.2", payloadOf(i))); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The pausing host.
	pause := make([]byte, rocev2.MinFrameLen)
	if _, err := rocev2.BuildPFC(pause, tp.h2MAC, 1<<3, [8]uint16{3: 0xffff}); err != nil {
		t.Fatal(err)
	}
	ptx := xdptest.OpenPacket(t, tp.h2, "eth0")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = ptx.Send(pause)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	stopPausing := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopPausing()
	waitFor("pause from h2", func() bool { return metric(pfcRx3) > 0 })
	began := time.Now()
	const n = 50
	send(0x5151, n)
	waitFor("storm", func() bool { return metric(storms) >= 1 })
	t.Logf("storm declared %v after h1's frames met the pause (detection 100ms)", time.Since(began).Round(time.Millisecond))
	if d := metric(drops); d < n {
		t.Errorf("%s = %v after the storm, want the %d frames that waited", drops, d, n)
	}
	if metric(stormed) != 1 {
		t.Errorf("%s = %v during the storm, want 1", stormed, metric(stormed))
	}
	// During the storm, frames for h2 die at once, counted.
	before := metric(drops)
	send(0x5252, 20)
	waitFor("drops of frames sent during the storm", func() bool { return metric(drops) >= before+20 })
	if _, err := rx.Recv(make([]byte, 9000), 200*time.Millisecond, func(f []byte) bool {
		return matchQP(0x5151)(f) || matchQP(0x5252)(f)
	}); err == nil {
		t.Error("h2 received a frame its own pauses held, during the storm")
	}
	if r := metric(restores); r != 0 {
		t.Fatalf("%s = %v while h2 still pauses, want 0", restores, r)
	}
	// tord reads the counters for its alerts every 100 ms.
	waitFor("storm alert in tord's log", func() bool { return strings.Contains(td.log(), "pfc watchdog: pause storm detected") })

	// h2 stops pausing: after the restoration time the queue is
	// restored and frames reach h2 again.
	stopPausing()
	waitFor("restoration", func() bool { return metric(restores) >= 1 })
	const m, qp = 20, 0x5353
	send(qp, m)
	buf := make([]byte, 9000)
	for got, deadline := 0, time.Now().Add(5*time.Second); got < m; got++ {
		if _, err := rx.Recv(buf, time.Until(deadline), matchQP(qp)); err != nil {
			t.Fatalf("after restoration h2 received %d of %d frames: %v", got, m, err)
		}
	}
	waitFor("restoration in tord's log", func() bool { return strings.Contains(td.log(), "pfc watchdog: stormed queue restored") })
}
