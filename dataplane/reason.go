package dataplane

import (
	"fmt"
	"sync"

	"rocetor/rocev2"
)

// Reason names why the dataplane dropped a packet. Stages declare theirs
// once, at package initialisation, with NewReason; workers count drops in
// a plain array indexed by Reason, and the metrics collector labels them
// with the name.
type Reason uint16

// MaxReasons bounds the reason table so counters stay fixed arrays.
const MaxReasons = 128

var reasons struct {
	sync.Mutex
	names [MaxReasons]string
	n     int
}

// NewReason registers a drop reason with a metric-label name such as
// "no_route". It is meant for package-level var declarations and panics on
// a duplicate name or a full table, which are programming errors.
func NewReason(name string) Reason {
	reasons.Lock()
	defer reasons.Unlock()
	for i := 0; i < reasons.n; i++ {
		if reasons.names[i] == name {
			panic(fmt.Sprintf("dataplane: drop reason %q registered twice", name))
		}
	}
	if reasons.n == MaxReasons {
		panic("dataplane: too many drop reasons")
	}
	reasons.names[reasons.n] = name
	reasons.n++
	return Reason(reasons.n - 1)
}

// String returns the reason's name.
func (r Reason) String() string {
	reasons.Lock()
	defer reasons.Unlock()
	if int(r) < reasons.n {
		return reasons.names[r]
	}
	return fmt.Sprintf("reason%d", int(r))
}

// NumReasons returns how many reasons are registered.
func NumReasons() int {
	reasons.Lock()
	defer reasons.Unlock()
	return reasons.n
}

// Drop reasons of the engine itself.
var (
	ReasonUnrouted  = NewReason("unrouted")   // no stage chose an egress port
	ReasonQueueFull = NewReason("queue_full") // egress queue at its byte limit
	ReasonInputFull = NewReason("input_full") // the frames of its ingress port at WorkerConfig.InputLimit
	ReasonNoFrame   = NewReason("no_frame")   // frame memory exhausted
	ReasonBadPort   = NewReason("bad_port")   // egress port index out of range
	ReasonTxFull    = NewReason("tx_full")    // a port refused a frame it was handed
	// ReasonPFCRefused: a PFC or PAUSE frame arrived on a port that does
	// not honour them (WorkerConfig.RefusePFC): a trust boundary, so it
	// paused nothing.
	ReasonPFCRefused = NewReason("trust_pfc")
	// ReasonPFCWatchdog: the frame's queue was stormed, paused by its
	// peer for longer than the PFC watchdog's detection time, and the
	// watchdog's action is drop (PFCWatchdog).
	ReasonPFCWatchdog = NewReason("pfc_watchdog")
	// ReasonHandoffFull: the ring to the worker that owns the frame
	// (Handoff) was full; that worker is more than a ring behind.
	ReasonHandoffFull = NewReason("handoff_full")
	// ReasonShutdown: the frame was handed to a worker (Handoff) that
	// stopped before it took it off its ring or Inbox (DrainHandoff).
	ReasonShutdown = NewReason("shutdown")
	// ReasonBufferThreshold: the egress queue was at its dynamic
	// threshold in the switch's shared buffer (SharedBuffer).
	ReasonBufferThreshold = NewReason("buffer_threshold")
	// classifier reasons, one per rocev2.Reason
	malformed [rocev2.NumReasons]Reason
)

func init() {
	for r := rocev2.Reason(1); r < rocev2.NumReasons; r++ {
		malformed[r] = NewReason("malformed_" + r.String())
	}
}

// Malformed returns the drop reason for a classifier verdict.
func Malformed(r rocev2.Reason) Reason { return malformed[r] }
