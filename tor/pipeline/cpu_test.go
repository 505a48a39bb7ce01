package pipeline

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCPUConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		yaml, field string // field "" for a valid config
	}{
		{"poll: interrupt\ncpu: {policy: fifo, priority: 10}", ""},
		{"cpu: {policy: rr, priority: 99, cpus: [0]}", ""},
		{"cpu: {nice: -10}", ""},
		{"cpu: {policy: other, nice: 19, cpus: [0, 1]}", ""},
		{"cpu: {policy: deadline}", "cpu.policy"},
		{"poll: interrupt\ncpu: {policy: fifo}", "cpu.priority"},
		{"poll: interrupt\ncpu: {policy: fifo, priority: 100}", "cpu.priority"},
		{"cpu: {priority: 5}", "cpu.priority"},
		{"poll: interrupt\ncpu: {policy: fifo, priority: 5, nice: -1}", "cpu.nice"},
		{"cpu: {nice: 20}", "cpu.nice"},
		// A real-time worker that polls would keep a CPU for good.
		{"cpu: {policy: fifo, priority: 10}", "cpu.policy"},
		{"poll: busy\ncpu: {policy: rr, priority: 10}", "cpu.policy"},
		{"cpu: {cpus: [-1]}", "cpu.cpus"},
		{"cpu: {cpus: [1024]}", "cpu.cpus"},
	} {
		c, err := ParseConfig([]byte("ports: [a, b]\n"+tc.yaml), "test")
		if err != nil {
			t.Fatal(err)
		}
		err = c.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.field != "" && (!errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.field+":")):
			t.Errorf("%q: got %v, want an error naming %s", tc.yaml, err, tc.field)
		}
	}
	var none CPUConfig
	if none.Thread(0) != nil {
		t.Error("an empty cpu section changes the workers' threads")
	}
}

// onThread runs f on a locked OS thread of its own, which ends with it
// (the goroutine exits locked), so the test's threads keep their
// scheduling.
func onThread(f func()) {
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		f()
	}()
	<-done
}

func TestCPUConfigThread(t *testing.T) {
	onThread(func() {
		c := CPUConfig{Nice: 7, CPUs: []int{5, 0}}
		if err := c.Thread(1)(); err != nil { // worker 1 takes CPU 0
			t.Error(err)
			return
		}
		a, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			t.Error(err)
			return
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			t.Error(err)
			return
		}
		if a.Policy != unix.SCHED_NORMAL || a.Nice != 7 || set.Count() != 1 || !set.IsSet(0) {
			t.Errorf("thread has policy %d nice %d on %d CPUs (0: %v), want SCHED_OTHER, nice 7, CPU 0 alone", a.Policy, a.Nice, set.Count(), set.IsSet(0))
		}
	})
	if unix.Geteuid() == 0 {
		onThread(func() {
			c := CPUConfig{Policy: "fifo", Priority: 3}
			if err := c.Thread(0)(); err != nil {
				t.Error(err)
				return
			}
			if a, err := unix.SchedGetAttr(0, 0); err != nil || a.Policy != unix.SCHED_FIFO || a.Priority != 3 {
				t.Errorf("thread has %+v (%v), want SCHED_FIFO priority 3", a, err)
			}
		})
	}
	// A CPU the machine does not have is an error that names it.
	onThread(func() {
		c := CPUConfig{CPUs: []int{maxCPUs - 1}}
		if err := c.Thread(0)(); err == nil || !strings.Contains(err.Error(), "cpu.cpus") {
			t.Errorf("pinning to CPU %d: got %v, want an error naming cpu.cpus", maxCPUs-1, err)
		}
	})
}
