package dataplane

import "math/bits"

// HistBuckets is the number of batch-size histogram buckets: bucket k
// counts batches of 2^k to 2^(k+1)-1 packets, the last one batches of 64.
const HistBuckets = 7

// PortCounters are the worker's counters for one port.
type PortCounters struct {
	RxPackets, RxBytes uint64
	TxPackets, TxBytes uint64
	PFCRx, PauseRx     uint64 // PFC and 802.3x PAUSE frames received
	PFCTx              uint64 // PFC frames sent
	// PFCRefused counts PFC and PAUSE frames received on a port that
	// does not honour them (WorkerConfig.RefusePFC), dropped as
	// ReasonPFCRefused.
	PFCRefused uint64
	// PFCRxPrio and PFCTxPrio count the PFC frames received and sent
	// that name each priority in their enable vector (a pause or a
	// resume), as switches count PFC per priority.
	PFCRxPrio, PFCTxPrio [8]uint64
	// WDStorms and WDRestores count the pause storms the PFC watchdog
	// declared on the port's queues and the queues it restored
	// (PFCWatchdog); their difference is the priorities stormed now.
	// WDDrops counts the frames it dropped (ReasonPFCWatchdog).
	WDStorms, WDRestores, WDDrops uint64
}

// QueueSnapshot is one egress queue at the last publication.
type QueueSnapshot struct {
	Name         string
	DepthBytes   int
	DepthPackets int
	LimitBytes   int
	// ThresholdBytes is the most the queue could hold at publication:
	// LimitBytes without a shared buffer, else its reserve, the
	// port-reserve bytes it holds or could take, and α × the pool's
	// free bytes (SharedBuffer), at most LimitBytes.
	ThresholdBytes int
	Paused         bool
	ECN            ECNProfile // the marking profile in force
	MarkAt         MarkPoint
	QueueStats
}

// ReserveSnapshot is a port's reserve in the shared buffer: Size
// bytes, of which the port's queues hold Held.
type ReserveSnapshot struct {
	Size, Held int
}

// StageCounters count one stage's calls and the packets it was handed,
// so the mean batch size per stage is visible.
type StageCounters struct {
	Calls, Packets uint64
}

// Snapshot is a copy of a worker's counters, published about once a
// millisecond so that scrapes never touch the packet path.
type Snapshot struct {
	Worker int
	// TID is the OS thread the worker runs on, 0 before Run: the
	// kernel's accounting of that thread (/proc/self/task/TID/schedstat:
	// time on a CPU, time waiting for one) is the worker's.
	TID       int
	Ports     []PortCounters
	PortStats []PortStats
	Queues    [][]QueueSnapshot
	Stages    []StageCounters
	Drops     [MaxReasons]uint64
	// HODrops counts, by the same reasons and among Drops, the DCP
	// header-only packets (rocev2.Meta.HeaderOnly) that died here: each
	// costs its sender the coarse timeout instead of a retransmission
	// within a round trip (seed 002 §4.3, §4.5), wherever it died.
	HODrops   [MaxReasons]uint64
	BusyPolls uint64 // loops that moved at least one packet or timer
	IdlePolls uint64 // loops that found nothing to do
	Sleeps    uint64 // times the worker slept in poll
	Yields    uint64 // idle loops that yielded the CPU (Busy)
	Batches   [HistBuckets]uint64
	Timers    int    // armed timers
	TimerFull uint64 // timers refused at capacity
	FramesUse int    // frames of Mem in use
	// FramesShared is the holders they have besides their owners
	// (Mem.Hold: llr's Tx buffer or NetRT's pool keeping a frame that is
	// still queued or on its way out), all frames together.
	FramesShared int
	Frames       int // frames of Mem in all
	// SharedUsed and SharedSize are the switch's shared buffer
	// (EgressConfig.Shared) at publication: the bytes its queues hold
	// beyond their queues' and ports' reserves, of a pool of SharedSize; both 0 without
	// one. Every worker of a switch reports the same pool.
	SharedUsed, SharedSize int64
	// Reserves are each port's reserve in the shared buffer
	// (EgressConfig.PortReserve) at publication, by port: this
	// worker's share of it and the bytes its queues hold of it; zero
	// without a shared buffer, and for a port another worker owns.
	Reserves []ReserveSnapshot
	// Handed counts, by receiving worker, the frames this worker
	// handed to their owner (Handoff); nil without a handoff. Frames
	// a full ring refused are ReasonHandoffFull drops.
	Handed []uint64
	// Built counts the frames the worker and its stages built in its
	// Mem (Ctx.Alloc, PFC frames); an allocation that found Mem empty
	// built nothing and is a ReasonNoFrame drop. Consumed counts the
	// frames that ended here as intended rather than being lost: MAC
	// control frames acted on, and what stages consumed (Ctx.Consume,
	// a software RNIC's received packets). With the frames received,
	// sent, dropped and still held they are a worker's books (a
	// simulator checks that they balance).
	Built, Consumed uint64
}

// workerStats are the plain counters the worker thread updates.
type workerStats struct {
	Ports     []PortCounters
	Stages    []StageCounters
	Drops     [MaxReasons]uint64
	HODrops   [MaxReasons]uint64
	BusyPolls uint64
	IdlePolls uint64
	Sleeps    uint64
	Yields    uint64
	Batches   [HistBuckets]uint64
	Handed    []uint64
	Built     uint64
	Consumed  uint64
}

func (s *workerStats) batch(n int) {
	k := bits.Len(uint(n)) - 1
	if k >= HistBuckets {
		k = HistBuckets - 1
	}
	s.Batches[k]++
}
