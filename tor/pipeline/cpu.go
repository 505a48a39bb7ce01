package pipeline

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// CPUConfig is how the workers' threads are scheduled: the policy, its
// priority or nice value, and the CPUs they are pinned to, in VPP's
// terms (startup.conf cpu { scheduler-policy, scheduler-priority,
// corelist-workers }). The zero value leaves the threads as the kernel
// starts them.
//
// A software switch that shares its CPUs with other processes, as on
// the namespace testbed, waits for a CPU after a wake-up, and a queue
// that fills while its worker waits is neither served nor marked: on
// the 2-CPU testbed tord's worker threads waited up to 13 ms
// (docs/results/dcqcn-incast-sched.txt). A real-time policy lets a
// woken worker take a CPU from other processes at once; where those are
// the hosts on the same two CPUs, they stall instead (measured:
// docs/experiments.md, "The wait measured by tord itself"), so it is
// for CPUs the workers have to themselves.
//
//	cpu:
//	  policy: fifo     # other (the kernel's default), fifo or rr
//	  priority: 10     # 1–99, fifo and rr only
//	  nice: 0          # −20…19, other only
//	  cpus: [2, 3]     # worker i on cpus[i mod len]; empty: any
type CPUConfig struct {
	Policy   string `yaml:"policy"`   // other (the kernel's default), fifo or rr; fifo and rr need poll: interrupt or cpus
	Priority int    `yaml:"priority"` // real-time priority 1–99, fifo and rr only
	Nice     int    `yaml:"nice"`     // nice value −20…19, other only
	CPUs     []int  `yaml:"cpus"`     // CPUs to pin the workers to, worker i on cpus[i mod len]; empty: any
}

// maxCPUs is the most CPUs a unix.CPUSet names (glibc's CPU_SETSIZE).
const maxCPUs = 1024

// policies are the scheduling policies by their names in the config.
var policies = map[string]uint32{"": unix.SCHED_NORMAL, "other": unix.SCHED_NORMAL, "fifo": unix.SCHED_FIFO, "rr": unix.SCHED_RR}

func (c *CPUConfig) validate(cfg *Config) error {
	p, ok := policies[c.Policy]
	switch {
	case !ok:
		return bad("cpu.policy", "%q, want other, fifo or rr", c.Policy)
	case p == unix.SCHED_NORMAL && c.Priority != 0:
		return bad("cpu.priority", "%d with policy %s: a priority is for fifo and rr (other takes nice)", c.Priority, c.policy())
	case p != unix.SCHED_NORMAL && (c.Priority < 1 || c.Priority > 99):
		return bad("cpu.priority", "%d with policy %s, want 1 to 99", c.Priority, c.Policy)
	case p != unix.SCHED_NORMAL && c.Nice != 0:
		return bad("cpu.nice", "%d with policy %s: nice is for other", c.Nice, c.Policy)
	case c.Nice < -20 || c.Nice > 19:
		return bad("cpu.nice", "%d, want −20 to 19", c.Nice)
	case p != unix.SCHED_NORMAL && cfg.Poll != "interrupt" && len(c.CPUs) == 0:
		// A real-time thread that never sleeps keeps its CPU from
		// every other thread but for the kernel's throttling.
		return bad("cpu.policy", "%s with poll %s and no cpus: a worker that polls would take a CPU from every other thread; pin it (cpu.cpus) or poll: interrupt", c.Policy, cfg.Poll)
	}
	for _, n := range c.CPUs {
		if n < 0 || n >= maxCPUs {
			return bad("cpu.cpus", "%d, want 0 to %d", n, maxCPUs-1)
		}
	}
	return nil
}

func (c *CPUConfig) policy() string {
	if c.Policy == "" {
		return "other"
	}
	return c.Policy
}

// Thread returns what worker w runs on its locked OS thread before its
// first step (dataplane.WorkerConfig.Thread), or nil when the config
// asks for nothing.
func (c *CPUConfig) Thread(w int) func() error {
	if c.Policy == "" && c.Nice == 0 && len(c.CPUs) == 0 {
		return nil
	}
	return func() error {
		if len(c.CPUs) > 0 {
			var set unix.CPUSet
			set.Set(c.CPUs[w%len(c.CPUs)])
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				return fmt.Errorf("cpu.cpus: pin worker %d to CPU %d: %w", w, c.CPUs[w%len(c.CPUs)], err)
			}
		}
		a := unix.SchedAttr{Policy: policies[c.Policy], Priority: uint32(c.Priority), Nice: int32(c.Nice)}
		if err := unix.SchedSetAttr(0, &a, 0); err != nil {
			return fmt.Errorf("cpu: worker %d: policy %s priority %d nice %d: %w", w, c.policy(), c.Priority, c.Nice, err)
		}
		return nil
	}
}
