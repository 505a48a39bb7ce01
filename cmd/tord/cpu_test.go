package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// threadPolicies returns the scheduling policy and real-time priority
// of each of pid's threads (/proc/PID/task/TID/stat fields 41 and 40).
func threadPolicies(t *testing.T, pid int) map[string][2]int {
	t.Helper()
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "stat"))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	out := map[string][2]int{}
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:])) // from field 3, state
		prio, _ := strconv.Atoi(f[40-3])
		policy, _ := strconv.Atoi(f[41-3])
		out[filepath.Base(filepath.Dir(p))] = [2]int{policy, prio}
	}
	return out
}

// TestTordCPU: with cpu: {policy: fifo, priority: 5} the worker's
// thread runs SCHED_FIFO at priority 5 and no other thread does, and
// its time on and waiting for a CPU are exported; a CPU the machine
// does not have stops tord with an error that names the key.
func TestTordCPU(t *testing.T) {
	requireNetns(t)
	bin := buildTord(t)
	tp := newTopo(t)
	write := func(cpu string) string {
		cfg := filepath.Join(t.TempDir(), "tord.yaml")
		if err := os.WriteFile(cfg, []byte("ports: [s1, s2]\nmetrics_addr: 127.0.0.1:9478\nadmin_addr: \"\"\npoll: interrupt\n"+cpu), 0o644); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	td := startTord(t, bin, tp.sw, "--config", write("cpu: {policy: fifo, priority: 5}\n"))
	if err := td.waitReady(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	tp.warmUp(t, "10.0.2.2")
	fifo := 0
	for tid, p := range threadPolicies(t, td.cmd.Process.Pid) {
		switch {
		case p == [2]int{1, 5}:
			fifo++
		case p[0] != 0:
			t.Errorf("thread %s has policy %d priority %d: only the worker's may change", tid, p[0], p[1])
		}
	}
	if fifo != 1 {
		t.Errorf("%d threads SCHED_FIFO at priority 5, want the worker's alone", fifo)
	}
	ms, err := td.metrics()
	if err != nil {
		t.Fatal(err)
	}
	if ms[`rocetor_worker_cpu_seconds_total{worker="0"}`] <= 0 {
		t.Errorf("worker 0 ran %v s on a CPU after forwarding pings", ms[`rocetor_worker_cpu_seconds_total{worker="0"}`])
	}
	if _, ok := ms[`rocetor_worker_run_delay_seconds_total{worker="0"}`]; !ok {
		t.Error("no rocetor_worker_run_delay_seconds_total for worker 0")
	}
	td.cmd.Process.Signal(os.Interrupt)
	<-td.done

	td = startTord(t, bin, tp.sw, "--config", write("cpu: {cpus: [1023]}\n"))
	select {
	case <-td.done:
	case <-time.After(15 * time.Second):
		t.Fatal("tord pinned to CPU 1023 still runs")
	}
	if code := exitCode(td.err); code != 1 || !strings.Contains(td.log(), "cpu.cpus") {
		t.Errorf("tord pinned to CPU 1023: exit %d, want 1 with an error naming cpu.cpus:\n%s", code, td.log())
	}
}
