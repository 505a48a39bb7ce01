package dataplane

import "rocetor/rocev2"

// BatchSize is the number of packets a worker moves per poll of a port. 64
// matches the AF_XDP ring batch that amortises one wakeup syscall in the
// kernel's own xdpsock sample and DPDK's default burst.
const BatchSize = 64

// Verdict is what the pipeline decided for one packet.
type Verdict uint8

// Verdicts.
const (
	// Forward sends the packet to egress port Out, queue Queue, once the
	// last stage has run. It is the verdict a packet enters with.
	Forward Verdict = iota
	// Drop frees the frame and counts Reason.
	Drop
	// Taken means a stage now owns the frame (a reordering buffer, a
	// duplicate pool): it must emit or drop it later.
	Taken
)

// NoPort is the Out of a packet no stage has routed yet.
const NoPort = 0xffff

// Packet is one frame in flight: a small value that names a frame in the
// worker's memory, never a heap object. Meta is filled by the classifier
// when the frame is received and kept current by stages that rewrite
// headers.
type Packet struct {
	Addr    uint64 // frame address in the worker's Mem
	Len     uint16 // frame length in bytes
	In      uint16 // ingress port index
	Out     uint16 // egress port index, NoPort until routed
	Queue   uint8  // egress queue index on Out
	Verdict Verdict
	Reason  Reason // why it was dropped, when Verdict == Drop
	Meta    rocev2.Meta
}

// Forward sets the packet's egress.
func (p *Packet) Forward(port uint16, queue uint8) {
	p.Verdict, p.Out, p.Queue = Forward, port, queue
}

// Drop marks the packet dropped with reason r.
func (p *Packet) Drop(r Reason) { p.Verdict, p.Reason = Drop, r }

// set fills the fields of a dequeued packet one by one and leaves Meta
// alone: Egress.Dequeue wrote a whole Packet literal, zeroing its 60-odd
// bytes of Meta for every frame sent, which nothing after Dequeue reads.
// That store was 6% of the CPU profile of
// BenchmarkWorkerForwardParts/unverified (pprof -list, 2026-11-29, on
// the shared machine at load 12, where A/B timings moved ±30% and
// could not show the gain; to be measured on a quiet one).
func (p *Packet) set(addr uint64, n, in uint16, q uint8) {
	p.Addr, p.Len, p.In, p.Out, p.Queue, p.Verdict, p.Reason = addr, n, in, NoPort, q, Forward, 0
}

// Batch is a fixed array of packets owned by one worker and reused for
// every poll. It is not safe for concurrent use.
type Batch struct {
	N    int
	Pkts [BatchSize]Packet
}

// Reset empties the batch.
func (b *Batch) Reset() { b.N = 0 }

// Full reports whether the batch has no room left.
func (b *Batch) Full() bool { return b.N == BatchSize }
