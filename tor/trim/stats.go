package trim

// PortStats are the counters of one egress port. The egress queues count
// what the scheduler then serves: rocetor_queue_dequeued_packets_total
// and rocetor_queue_dequeued_bytes_total per queue are the WRR's service,
// and rocetor_queue_drops_total{queue="control"} the header-only packets
// the control queue refused, which a lossless control plane keeps at 0.
type PortStats struct {
	// Passed counts packets left on the data queue, below the threshold.
	Passed uint64
	// Trimmed counts DCP data packets trimmed to header-only packets
	// here; TrimmedBytes the bytes their trimming removed.
	Trimmed, TrimmedBytes uint64
	// HeaderOnly counts header-only packets put on the control queue:
	// those trimmed here and those trimmed upstream.
	HeaderOnly uint64
	// DropNonDCP and DropAck count the drops over the threshold
	// (trim_non_dcp, trim_ack), DropNoFrame the DCP data it found no
	// frame to trim a copy in (trim_no_frame).
	DropNonDCP, DropAck, DropNoFrame uint64
}

// Stats are the counters of one Stage, per egress port index.
type Stats struct {
	Ports [MaxPorts]PortStats
}

// Sum returns the counters of all ports together.
func (st *Stats) Sum() PortStats {
	var t PortStats
	for i := range st.Ports {
		t.Add(&st.Ports[i])
	}
	return t
}

// Add adds p's counters to t's: the collector sums workers with it.
func (t *PortStats) Add(p *PortStats) {
	t.Passed += p.Passed
	t.Trimmed += p.Trimmed
	t.TrimmedBytes += p.TrimmedBytes
	t.HeaderOnly += p.HeaderOnly
	t.DropNonDCP += p.DropNonDCP
	t.DropAck += p.DropAck
	t.DropNoFrame += p.DropNoFrame
}
