package dataplane

import "rocetor/rocev2"

// Port is one interface of the switch as a worker sees it. A port moves
// frames of the worker's Mem: Receive hands frames to the worker,
// Transmit takes them back. All methods are called from the worker's
// thread only.
type Port interface {
	// Name is the interface name, used as the metrics label.
	Name() string
	// MAC is the port's Ethernet address, the source of frames the switch
	// itself sends (PFC, rewritten forwarded frames).
	MAC() rocev2.MAC
	// Receive appends received frames to b, up to its capacity, and
	// returns how many it added. The worker owns their frames. It sets
	// Addr and Len (In, Out, Queue, Verdict and Reason zero) and may
	// leave Meta as b had it: the worker classifies every frame it
	// receives.
	Receive(b *Batch) int
	// TxRoom returns how many frames Transmit would take now.
	TxRoom() int
	// Transmit takes pkts in order and returns how many it took; it owns
	// those frames until it gives them back to Mem after sending.
	Transmit(pkts []Packet) int
	// Service reclaims sent frames, refills receive buffers and issues
	// the wakeups a batch of Transmit calls needs. The worker calls it
	// once per loop.
	Service()
	// Fd returns a file descriptor that polls readable when frames
	// arrive, or -1 if the port cannot wake a sleeping worker.
	Fd() int
	// Stats returns the port's own counters.
	Stats() PortStats
	// Close releases the port's resources.
	Close() error
}

// Holder is implemented by ports that hold frames until a time of the
// worker's clock, as an impairing port (tor/impair) delays them: a worker
// about to sleep wakes by the earliest Deadline. The worker looks for it
// through Wrapper, so an outer wrapper need not pass it on.
type Holder interface {
	// Deadline returns the earliest time a held frame is due, if any.
	Deadline() (at int64, ok bool)
}

// Wrapper is implemented by ports built on another port (tor/llr's
// receiver, tor/impair's impairment).
type Wrapper interface {
	Inner() Port
}

// PortStats are counters a port keeps itself (the worker counts rx/tx
// packets and bytes). Fields a port cannot know stay zero.
type PortStats struct {
	RxDropped      uint64 // the kernel dropped frames for want of rx ring room
	RxInvalid      uint64 // invalid rx descriptors
	TxInvalid      uint64 // invalid tx descriptors
	RxRingFull     uint64 // rx ring full events
	FillEmpty      uint64 // fill ring empty events
	TxRingEmpty    uint64 // tx ring empty events
	Wakeups        uint64 // wakeup syscalls issued
	TxRefused      uint64 // frames refused by Transmit (ring full)
	RxQueueDepth   int    // frames waiting to be received, if known
	ZeroCopy       bool   // bound in zero-copy mode
	NativeXDP      bool   // XDP program attached in driver mode
	TxInFlight     int    // frames handed to the kernel, not yet completed
	RxFramesPosted int    // frames posted for receive
	InjectRefused  uint64 // in-memory port: injects refused for want of room or frames
}
