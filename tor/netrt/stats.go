package netrt

// DstStats are the counters of one DstToR. Packets counts the data
// packets it served; every one of them ends in exactly one of InOrder,
// Late, Passed, OutOfWindow, Duplicates, ReorderFull, Held (then
// Released, Flushed or Dropped) or is of a flow the table had no room
// for (TableFull).
type DstStats struct {
	Calls   uint64 // Process calls (batches)
	Packets uint64 // data packets from the fabric to a host

	InOrder     uint64 // PSN == ePSN: forwarded (and the buffer released behind it)
	Late        uint64 // PSN < ePSN: forwarded, the RNIC decides
	Passed      uint64 // PSN > ePSN in Waiting: forwarded unblocked
	OutOfWindow uint64 // PSN beyond ePSN+128: forwarded, the bitmap cannot track it
	Duplicates  uint64 // PSN already held: dropped (netrt_duplicate)
	ReorderFull uint64 // out of order but the buffer budget is spent: forwarded out of order, not dropped

	Held         uint64 // packets taken into the reordering buffer
	HeldBytes    int    // bytes held now; never above BufferBytes
	MaxHeldBytes int    // high-water mark of HeldBytes
	Released     uint64 // held packets released in order (Algorithm 1)
	Flushed      uint64 // held packets forwarded on entering Waiting
	Dropped      uint64 // held packets freed by Close

	Gaps       uint64 // Ordered → ReTx transitions
	Recovered  uint64 // returns to Ordered (from ReTx or Waiting)
	Waits      uint64 // entries into Waiting
	Requests   uint64 // retransmission requests sent
	Resent     uint64 // of which re-sent by the interval timer
	GaveUp     uint64 // flows moved to Waiting after MaxRequests unanswered requests
	SendFailed uint64 // requests not sent for want of a frame or queue room
	TimerFull  uint64 // timers the worker refused

	Notices uint64 // unfulfilled notices consumed (netrt_consumed)
	Unknown uint64 // of which for no flow in the table
	Stale   uint64 // of which not for the flow's current ePSN in ReTx

	Flows     int    // flows in the table now
	Reclaimed uint64 // idle flow entries reused
	TableFull uint64 // packets of new flows forwarded untouched, table full
}

// SrcStats are the counters of one SrcToR.
type SrcStats struct {
	Calls   uint64 // Process calls (batches)
	Packets uint64 // data packets from a host to the fabric

	Pooled     uint64 // duplicates admitted
	PoolBytes  int    // bytes pooled now, all ports
	MaxBytes   int    // high-water mark of the busiest port's pooled bytes
	Evicted    uint64 // duplicates replaced by LFU eviction
	TooBig     uint64 // packets larger than a port's whole budget, not pooled
	NoFrame    uint64 // duplicates not made for want of a free frame
	Acked      uint64 // duplicates retired by an ACK
	Expired    uint64 // duplicates retired after Hold
	Dropped    uint64 // duplicates freed by Close
	TimerFull  uint64 // timers the worker refused
	TableFull  uint64 // packets of new flows not pooled, table full
	Flows      int    // flows in the table now
	Reclaimed  uint64 // flow entries reused
	ACKs       uint64 // RC ACKs seen for pooled flows
	Requests   uint64 // retransmission requests consumed (netrt_consumed)
	Retrans    uint64 // duplicates retransmitted
	RetxFailed uint64 // retransmissions not sent for want of a frame or queue room
	Unfulfill  uint64 // unfulfilled notices sent
	SendFailed uint64 // notices not sent for want of a frame or queue room
}
