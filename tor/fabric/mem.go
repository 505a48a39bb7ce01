package fabric

import (
	"fmt"
	mbits "math/bits"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
)

// Frame memory. A frame on the wire is copied into a free frame of the
// receiving node's memory as it leaves the sender (dataplane/sim: as a
// NIC needs a buffer to DMA into), so a node's memory holds, besides its
// queues and rings, every frame in flight toward it: a link of delay d
// at rate r carries r × d bits each way, which the node at each end
// holds for the direction toward it. At 100 Gbit/s a link of 1 ms has
// 11,300 frames of an MTU of 1,024 bytes (1,106 on the wire) in flight
// each way; before memory was sized for them, such a link lost frames
// at its far end once they outnumbered what the queues left free.

// dataHeader is the bytes around a full data packet's payload: Ethernet,
// IPv4, UDP, BTH and ICRC (a first packet's RETH is not counted: most
// are middle packets).
const dataHeader = 14 + 20 + 8 + 12 + 4

// inFlight returns the frames that can be in flight toward a node over
// its links ends: per link, its rate × (delay + one frame's
// serialization) in frames of an MTU of payload with their headers and
// the wire's overhead, rounded up. Smaller frames (ACKs, PFC) share a
// link with data in the seeds' workloads; a link filled with small
// frames alone would need more, and a frame that finds the memory full
// is dropped and counted (rx_no_frame), never lost silently.
func (n *Network) inFlight(ends []end) int {
	bits := uint64(n.Opts.MTU+dataHeader+n.Opts.Overhead) * 8
	total := 0
	for _, e := range ends {
		l := n.Topo.Links[e.link]
		// Frames in flight over delay d: d × rate / bits, and the one
		// being serialized, already copied.
		hi, lo := mbits.Mul64(uint64(l.Delay), l.RateBps) // ps × bit/s overflows 64 bits past 184 µs at 100G
		onWire, _ := mbits.Div64(hi, lo, uint64(sim.Second))
		k := (onWire + bits - 1) / bits
		total += int(k) + 1
	}
	return total
}

// hostFrames is a host's frame memory: its receive ring, its egress
// budget in minimum-size frames and the frames in flight toward it, at
// least 4,096 frames, in a power of two (Options.HostFrames overrides
// it). An llr NIC (protected) has a data queue larger by the
// responses' room and a retransmit queue as large as the requests'
// budget (llr's copies; its buffers hold copies outside the memory).
func (n *Network) hostFrames(ends []end, protected bool) int {
	if n.Opts.HostFrames > 0 {
		return n.Opts.HostFrames
	}
	need := n.Opts.RxRing + n.Opts.HostQueue/64 + n.inFlight(ends)
	if protected {
		need += (n.hostResponseRoom() + n.Opts.HostQueue) / 64
	}
	f := 4096
	for f < need {
		f <<= 1
	}
	return f
}

// frameMem returns a node's frame memory of frames frames of size bytes,
// and its free stack, in one anonymous mapping without backing
// (MAP_NORESERVE): a page costs memory only once a frame on it is used,
// and nothing clears it. The budgets that size it (switchConfig,
// hostFrames) are accounting — the frames tord's UMEM would need —, not
// what a run touches: a k = 16 fat tree reserves 94 GB of frames and
// touches a few hundred MB. Made on the Go heap instead, that reservation
// set the collector's goal past anything the run allocates, so garbage
// was never collected, and the heap's metadata for it (a span pointer
// per 8 KiB page) was itself ~100 MB; a process running simulations one
// after the other (torsim run) had every reused reservation cleared,
// most of a small run's time in the kernel. The free list hands out the
// most recently freed frame first, so a run touches the frames its
// queues fill and no more. The mapping goes when the Mem is collected.
func frameMem(frames, size int) (*dataplane.Mem, error) {
	data := frames * size
	area, err := unix.Mmap(-1, 0, data+frames*8, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("fabric: frame memory of %d frames of %d bytes: %w", frames, size, err)
	}
	// Small pages: a node touches the first few hundred frames of its
	// memory, and a kernel that backs anonymous memory with huge pages
	// (transparent_hugepage=always) would make each node's 2 MiB.
	if err := unix.Madvise(area, unix.MADV_NOHUGEPAGE); err != nil {
		unix.Munmap(area)
		return nil, fmt.Errorf("fabric: frame memory: %w", err)
	}
	// The stack's room follows the frames: data is a multiple of the
	// (power of two) frame size, so it is aligned for uint64.
	stack := unsafe.Slice((*uint64)(unsafe.Pointer(&area[data])), frames)
	m, err := dataplane.NewMemStack(area[:data:data], size, stack[:0])
	if err != nil {
		unix.Munmap(area)
		return nil, err
	}
	runtime.AddCleanup(m, func(b []byte) { unix.Munmap(b) }, area)
	return m, nil
}
