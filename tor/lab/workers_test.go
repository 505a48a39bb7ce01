package lab

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestWorkersDefault: without --workers every tord runs one worker, its
// ports in link order, as before the option.
func TestWorkersDefault(t *testing.T) {
	for _, topo := range Topologies {
		p := mustPlan(t, topo, nil)
		for node, c := range p.TordConfigs() {
			if c.Workers != 1 || !slices.Equal(c.Ports, p.Ports(node)) {
				t.Errorf("%s %s: workers %d, ports %v; want 1 and %v", topo, node, c.Workers, c.Ports, p.Ports(node))
			}
		}
		if p.DescribeWorkers() != "" {
			t.Errorf("%s: described %q", topo, p.DescribeWorkers())
		}
	}
}

// TestWorkersHostPortsOwned: unshaped, with netrt, the workers would
// share a switch's host ports (pipeline.Config.SharedPorts), each
// sending on its own tx queue of them; a host link has one, so the
// testbed keeps them worker 0's (egress.owned_ports), and only them.
func TestWorkersHostPortsOwned(t *testing.T) {
	p := mustPlan(t, "dumbbell", func(o *Options) { o.Workers, o.Senders, o.Rate, o.NetRT = 2, 2, "0", true })
	cs := p.TordConfigs()
	if got, want := cs["tor1"].Egress.OwnedPorts, []string{"h1", "h2"}; !slices.Equal(got, want) {
		t.Errorf("tor1 owns %v, want %v", got, want)
	}
	for node, c := range cs {
		if shared := c.SharedPorts(); shared != nil && slices.Contains(shared, true) {
			t.Errorf("%s: ports %v shared %v", node, c.Ports, shared)
		}
	}
	p = mustPlan(t, "dumbbell", func(o *Options) { o.Workers, o.Senders, o.NetRT = 2, 2, true })
	if got := p.TordConfigs()["tor1"].Egress.OwnedPorts; got != nil {
		t.Errorf("shaped: tor1 owns %v, want none named", got)
	}
}

// TestWorkersHostPortsOnWorkerZero: every host port takes an index that
// worker 0 owns (a multiple of N), switch ports fill the rest in link
// order, and a switch with too many host ports is refused.
func TestWorkersHostPortsOnWorkerZero(t *testing.T) {
	for _, c := range []struct {
		topo             string
		senders, workers int
		tor1, tor2       []string
	}{
		{"link", 1, 2, []string{"h1", "tor2"}, []string{"h2", "tor1"}},
		{"link", 1, 4, []string{"h1", "tor2"}, []string{"h2", "tor1"}},
		{"dumbbell", 2, 2, []string{"h1", "tor2", "h2"}, []string{"h3", "tor1"}},
		{"multipath", 1, 2, []string{"h1", "core1", "core2"}, []string{"h2", "core1", "core2"}},
	} {
		p := mustPlan(t, c.topo, func(o *Options) { o.Workers, o.Senders = c.workers, c.senders })
		cs := p.TordConfigs()
		if !slices.Equal(cs["tor1"].Ports, c.tor1) || !slices.Equal(cs["tor2"].Ports, c.tor2) {
			t.Errorf("%s, %d senders, %d workers: tor1 %v, tor2 %v; want %v, %v", c.topo, c.senders, c.workers,
				cs["tor1"].Ports, cs["tor2"].Ports, c.tor1, c.tor2)
		}
		if !strings.Contains(p.DescribeWorkers(), "tor2 ["+strings.Join(c.tor2, ",")+"]") {
			t.Errorf("described %q", p.DescribeWorkers())
		}
	}
	o := DefaultOptions("dumbbell")
	o.Prefix, o.Senders, o.Workers = "rtb-x-", 3, 2
	if _, err := NewPlan(o); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--workers 2: tor1") {
		t.Errorf("3 senders behind tor1, 2 workers: %v; want a usage error naming tor1", err)
	}
	for _, w := range []int{-1, maxWorkers + 1} {
		o := DefaultOptions("link")
		o.Prefix, o.Workers = "rtb-x-", w
		if err := o.Validate(); !errors.Is(err, ErrUsage) {
			t.Errorf("--workers %d: %v; want a usage error", w, err)
		}
	}
}
