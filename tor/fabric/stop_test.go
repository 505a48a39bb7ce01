package fabric

import (
	"errors"
	"testing"

	"rocetor/dataplane/sim"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// TestRunStop: a run whose Stop is closed returns ErrStopped instead of
// simulating to its end (torsim's Ctrl-C or SIGTERM during a cell of an
// hour), and a run with Stop open is the run without one.
func TestRunStop(t *testing.T) {
	tp := topo.LeafSpine(2, 1, 1, topo.Tiers{HostRate: 10e9, FabricRate: 10e9,
		HostDelay: sim.Microsecond, FabricDelay: sim.Microsecond})
	flows := workload.Sequence(0, 1, 64<<10, 8, 1)
	run := func(stop <-chan struct{}) (*Result, error) {
		n, err := Build(tp, Options{Seed: 1, Transport: "gbn", MaxMessage: 64 << 10, MaxQPs: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n.Run(flows, RunOptions{Stop: stop})
	}
	open := make(chan struct{})
	res, err := run(open)
	if err != nil {
		t.Fatal(err)
	}
	if res.Completed != len(flows) {
		t.Fatalf("with Stop open: %d of %d flows completed", res.Completed, len(flows))
	}
	closed := make(chan struct{})
	close(closed)
	if res, err := run(closed); !errors.Is(err, ErrStopped) {
		t.Fatalf("with Stop closed: %v, %v; want ErrStopped", res, err)
	}
}
