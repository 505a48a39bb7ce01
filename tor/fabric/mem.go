package fabric

import (
	"fmt"
	mbits "math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/rocev2"
)

// Frame memory. A frame on the wire takes a free frame of the receiving
// node's memory as it leaves the sender (dataplane/sim: as a NIC needs a
// buffer to DMA into; traded for the sender's frame, not copied, when
// both memories are in one mapping, frameMems), so a node's memory
// holds, besides its
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

// hostFrameSize is a host's frame size as its NIC counts it (nic.Config):
// what bounds the MTU and the room its data queue keeps for one more
// frame. Its memory's frames are smaller (slot).
const hostFrameSize = 2048

// frameRoom is what a frame may hold besides an MTU of payload: the
// NIC's largest headers (Ethernet, VLAN tag, IPv6, UDP, BTH, RETH, pad
// and ICRC, 101 bytes; nic's maxHeaders), the INT tail a request may
// reserve for HPCC (rocev2.INTLen(INTMaxHops), 132) and tor/llr's shim
// (8): 241 bytes.
const frameRoom = rocev2.EthernetLen + rocev2.VLANTagLen + rocev2.IPv6Len + rocev2.UDPLen +
	rocev2.BTHLen + rocev2.RETHLen + 3 + rocev2.ICRCLen +
	rocev2.INTHeaderLen + rocev2.INTRecordLen*rocev2.INTMaxHops + rocev2.ShimLen

// intRoom is the part of frameRoom that only HPCC's frames use: only
// its RNICs (nic/cc.HPCC, an INTSampler) ask for an INT tail, and the
// switches' int: stage stamps only frames that carry one.
const intRoom = rocev2.INTHeaderLen + rocev2.INTRecordLen*rocev2.INTMaxHops

// slot returns the size of the frames of a node's memory whose frames
// are size bytes as tord would cut its UMEM (a power of two): the MTU
// and frameRoom rounded up to 64 bytes (dataplane.Mem), if that is
// smaller, without intRoom when the hosts do not run HPCC. For an MTU of
// 1,024 that is 1,152 bytes of 2,048 (1,280 with HPCC): the frames
// a run touches were most of its resident memory (docs/performance.md,
// the simulator's memory), and a frame's unused tail only spreads them
// over more pages. The count of frames and every byte budget stay as
// tord's; a frame larger than its slot is refused where it enters a
// memory (dataplane.MemPort, counted), and every node has the same
// slot, so frames cross links by trade (frameMems), never by a copy
// that could cut them.
func (n *Network) slot(size int) int {
	room := frameRoom
	if n.Opts.CC != "hpcc" {
		room -= intRoom
	}
	return min(size, (n.Opts.MTU+room+63)&^63)
}

// queueRing is the entries an egress queue's ring starts with, for
// switches and hosts alike (dataplane.EgressConfig.Ring), where tord's
// start with 256: a ring grows with its queue, and a queue walks round
// its ring, touching it all, however shallow it stays. A k = 16 fat
// tree has 6,144 ports with 4 queues each.
const queueRing = 16

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

// frameMems returns the nodes' frame memories, node i's of frames[i]
// frames of sizes[i] bytes: the nodes with one frame size have theirs,
// and their free stacks, in one anonymous mapping without backing
// (MAP_NORESERVE), each its own range of it (dataplane.NewMemAt), so
// that a frame crosses a link between two of them by trading it for the
// receiver's free frame instead of a copy (dataplane/sim; the copy was
// a fifth of a k = 8 fat tree's CPU).
//
// A page costs memory only once a frame on it is used, and nothing
// clears it. The budgets that size the memories (switchConfig,
// hostFrames) are accounting — the frames tord's UMEM would need —, not
// what a run touches: a k = 16 fat tree reserves 94 GB of frames and
// touches a few hundred MB. Made on the Go heap instead, that reservation
// set the collector's goal past anything the run allocates, so garbage
// was never collected, and the heap's metadata for it (a span pointer
// per 8 KiB page) was itself ~100 MB; a process running simulations one
// after the other (torsim run) had every reused reservation cleared,
// most of a small run's time in the kernel. A Mem's free list hands out
// the most recently freed frame first and its never-used frames from
// the start of its range, so a node touches the frames its queues,
// rings and wires hold at their fullest, and no more. A mapping goes
// when the last of its Mems is collected.
func frameMems(frames, sizes, parts []int) ([]*dataplane.Mem, error) {
	mems := make([]*dataplane.Mem, len(frames))
	done := map[int]bool{}
	for _, size := range sizes {
		if done[size] {
			continue
		}
		done[size] = true
		if err := frameArea(frames, sizes, parts, size, mems); err != nil {
			return nil, err
		}
	}
	return mems, nil
}

// area is one mapping of frameMems and how many of its Mems live.
type area struct {
	b    []byte
	live atomic.Int32
}

// frameArea maps the memories of the nodes whose frames are size bytes
// into mems: those of one partition (parts, by node) draw on one pool of
// frames (dataplane.NewPooledMems), so that the frames a run touches are
// the most the partition's nodes hold at once, not the sum of the most
// each one held. A k = 8 fat tree's permutation (BenchmarkPermutationK8's
// at 2 MB a flow) held at most 16,090 frames at once, six µs in, when
// every host's queue and every wire was full; its nodes' high-water marks
// summed to 24,023. A partition is one goroutine's, so each has its own
// pool.
func frameArea(frames, sizes, parts []int, size int, mems []*dataplane.Mem) error {
	total := 0
	for i, f := range frames {
		if sizes[i] == size {
			total += f
		}
	}
	data := total * size
	b, err := unix.Mmap(-1, 0, data+total*8, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("fabric: frame memory of %d frames of %d bytes: %w", total, size, err)
	}
	// Small pages: a node touches the first few hundred frames of its
	// range, and a kernel that backs anonymous memory with huge pages
	// (transparent_hugepage=always) would make each node's 2 MiB.
	if err := unix.Madvise(b, unix.MADV_NOHUGEPAGE); err != nil {
		unix.Munmap(b)
		return fmt.Errorf("fabric: frame memory: %w", err)
	}
	// The stacks' room follows the frames: data is a multiple of the
	// frame size, a multiple of 64 (dataplane.Mem), so it is aligned for uint64.
	stack := unsafe.Slice((*uint64)(unsafe.Pointer(&b[data])), total)
	a := &area{b: b}
	first := 0
	byPart := map[int][]int{}
	var order []int
	for i := range frames {
		if sizes[i] == size {
			if _, ok := byPart[parts[i]]; !ok {
				order = append(order, parts[i])
			}
			byPart[parts[i]] = append(byPart[parts[i]], i)
		}
	}
	for _, p := range order {
		nodes := byPart[p]
		budgets, k := make([]int, len(nodes)), 0
		for j, i := range nodes {
			budgets[j], k = frames[i], k+frames[i]
		}
		ms, err := dataplane.NewPooledMems(b[:data:data], size, first, budgets, stack[first:first+k:first+k])
		if err != nil {
			if a.live.Load() == 0 {
				unix.Munmap(b)
			}
			return err
		}
		for j, m := range ms {
			a.live.Add(1)
			runtime.AddCleanup(m, func(a *area) {
				if a.live.Add(-1) == 0 {
					unix.Munmap(a.b)
				}
			}, a)
			mems[nodes[j]] = m
		}
		first += k
	}
	return nil
}
