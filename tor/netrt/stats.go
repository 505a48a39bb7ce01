package netrt

// DstStats are the counters of one DstToR. Stage-wide figures are
// fields; what belongs to a host port is in Ports, indexed by that port:
// a packet's figures by the port it leaves by, a flow's transitions and
// requests by its host port (the egress of the packet that opened its
// gap). Nothing is kept per flow; Busiest names the flows that hold the
// most.
//
// Packets counts the data packets from the fabric to a host; every one
// of them is of a flow outside Config.Prefixes (Foreign), bound for a
// port at or above MaxPorts (HighPort), of a new flow the table had no
// room for (TableFull), or ends in exactly one of the per-port outcomes
// InOrder, Late, Passed, Beyond, Full, Duplicates, Held (then Released,
// Flushed or Dropped), WaitBudget, WaitSpan or WaitBackoff.
type DstStats struct {
	Calls   uint64 // Process calls (batches)
	Packets uint64 // data packets from the fabric to a host

	Foreign   uint64 // of flows whose source is outside Config.Prefixes: forwarded untouched
	HighPort  uint64 // bound for a host port ≥ MaxPorts: forwarded untouched (no budget there)
	TableFull uint64 // of new flows forwarded untouched: the table is full and nothing idle

	Bytes   int    // bytes held now, all ports
	Frames  int    // packets held now; with NAKs never above Config.BufferFrames
	Dropped uint64 // held packets freed by Close
	// NAKs are the hosts' sequence NAKs held now (DstToR.holdNAK): each
	// takes an entry of BufferFrames, but no port's Bytes, as it will
	// leave toward the fabric, not by a host port.
	NAKs int

	NAKUnknown uint64 // sequence NAKs from hosts for no flow in the table

	Notices uint64 // unfulfilled notices consumed (netrt_consumed)
	Unknown uint64 // of which for no flow in the table
	Stale   uint64 // of which not for the flow's current ePSN in ReTx

	Flows        int    // entries in the table now, served or not
	FlowsOrdered int    // served flows in Ordered now
	FlowsReTx    int    // served flows in ReTx now (each holds packets, or a host's NAK)
	FlowsWaiting int    // served flows in Waiting now
	Reclaimed    uint64 // idle entries reused for a new flow
	TimerFull    uint64 // request timers the worker refused (each armed again once there is room)

	Ports [MaxPorts]DstPortStats
}

// DstPortStats are one host port's part of DstStats. Gauges say "now";
// the rest count since the stage was made.
type DstPortStats struct {
	// The port's reordering buffer (Config.BufferBytes).
	Bytes    int // bytes held now; never above Config.BufferBytes (summed over the workers, with Config.Budgets)
	Frames   int // packets held now
	MaxBytes int // high-water mark of Bytes
	// ByteSeconds is the integral of Bytes over worker time, up to its
	// last change, for the mean occupancy.
	ByteSeconds float64
	Held        uint64 // packets taken into the buffer
	Released    uint64 // held packets released in order behind ePSN (Algorithm 1)
	Flushed     uint64 // held packets forwarded on entering Waiting, lowest PSN first

	// Data packets not held, by outcome.
	InOrder    uint64 // PSN == ePSN: forwarded (and the buffer released behind it)
	Late       uint64 // PSN < ePSN: forwarded, the RNIC decides
	Passed     uint64 // PSN > ePSN in Waiting: forwarded unblocked
	Beyond     uint64 // PSN > ePSN+128 in Ordered: forwarded, the flow stays Ordered
	Full       uint64 // PSN > ePSN in Ordered, budget spent: forwarded, the flow stays Ordered
	Duplicates uint64 // PSN already held: dropped (netrt_duplicate)

	// Missing PSNs, by the data packet that showed them missing: the
	// PSNs between the last packet of the sender's pass (the highest
	// PSN since it last went back) and this one. On one path through
	// FIFO queues each is a packet lost on the way. A loss no later
	// packet of its pass showed is in none of them (the pass ended
	// first: GoBacks), nor are a resend's losses before its first
	// packet arrives and before it passes the last pass's highest PSN;
	// so the fabric's drops less their sum are, within those, the
	// losses the destination ToR never saw (docs/experiments.md,
	// netrt-incast). With spraying, a packet on a slower path counts.
	MissRequested uint64 // shown by a packet held: a gap requested, or a hole in ReTx the next request names
	MissBeyond    uint64 // shown by a packet beyond ePSN+128 in Ordered (Beyond): left to the hosts
	MissWaited    uint64 // shown by a packet that sent the flow from ReTx to Waiting (WaitSpan, WaitBudget)
	MissPassed    uint64 // shown by a packet forwarded in Waiting, or that moved the flow there in Backoff
	MissFull      uint64 // shown by a packet the budget could not hold in Ordered (Full)
	MissDelivered uint64 // below ePSN: copies of packets already forwarded in order, a resend's
	// MissNAKed counts the PSNs from a host's sequence NAK up to the
	// ePSN, each NAK that names one below it: what the host lacks of
	// what this stage took for delivered, lost before the flow's entry
	// began (its first packets) or on the way to the host. No data
	// packet showed them; Missing leaves them out.
	MissNAKed uint64
	// GoBacks counts data packets at or below both the flow's ePSN and
	// the highest PSN of its pass (at ePSN only outside ReTx, where it
	// is the source ToR's retransmission): its sender went back N, a NAK
	// or a timeout. GoBacksNAK are those after a host's sequence NAK for
	// the flow passed this stage; the rest followed the sender's
	// timeout, the only recovery of a loss whose later packets were all
	// lost too (a tail).
	GoBacks    uint64
	GoBacksNAK uint64

	// Flow transitions. The Wait* counters partition the entries into
	// Waiting by cause; those a packet triggers count that packet too,
	// which is forwarded after (or among, by PSN) the flushed ones.
	Gaps            uint64 // Ordered → ReTx: a gap held, a request sent
	Recovered       uint64 // ReTx → Ordered: the buffer emptied in order
	Resumed         uint64 // Waiting → Ordered: the end hosts' go-back-N brought ePSN
	WaitUnfulfilled uint64 // ReTx → Waiting: the source ToR lacked ePSN (Algorithm 2)
	WaitGaveUp      uint64 // ReTx → Waiting after MaxRequests unanswered requests; each starts a Backoff
	WaitBudget      uint64 // ReTx → Waiting: a packet found the port's budget or the frames spent
	WaitSpan        uint64 // ReTx → Waiting: a packet beyond ePSN+128, which the bitmap cannot hold
	WaitBackoff     uint64 // Ordered → Waiting: a gap during Backoff, forwarded, nothing held
	Retries         uint64 // gaps held again once a Backoff ran out
	Resyncs         uint64 // ePSN moved to the PSN a host's sequence NAK named, the NAK passed on
	// ResyncsEarly are the Resyncs whose NAK named a PSN before the
	// first the flow's entry saw: the host lacks the flow's first
	// packets, which this stage never saw (overtaken by a later one on
	// another path, or lost before this ToR).
	ResyncsEarly uint64
	NAKHeld      uint64 // host NAKs held while the network recovers what they name (ReTx from that PSN)
	NAKAnswered  uint64 // of which dropped: the PSN they named arrived (netrt_nak_answered)
	NAKReleased  uint64 // of which sent on: the flow fell back to Waiting

	// Retransmission requests.
	Requests   uint64 // sent
	Resent     uint64 // of which re-sent by the interval timer
	Silent     uint64 // of which re-sent while nothing came from the fabric: not counted against MaxRequests
	SendFailed uint64 // not sent for want of a frame or queue room
}

// Sum returns the port figures added up over all ports, for tests and
// logs (metrics export per port); MaxBytes is the largest port's.
func (st *DstStats) Sum() DstPortStats {
	var t DstPortStats
	for i := range st.Ports {
		peak := max(t.MaxBytes, st.Ports[i].MaxBytes)
		t.Add(&st.Ports[i])
		t.MaxBytes = peak
	}
	return t
}

// Add adds p's figures to t's, every one, the high-water mark too: one
// port's figures from several workers add up to the port's (each
// worker's buffer peaks on its own, so the sum bounds the port's peak).
func (t *DstPortStats) Add(p *DstPortStats) {
	t.Bytes += p.Bytes
	t.Frames += p.Frames
	t.MaxBytes += p.MaxBytes
	t.ByteSeconds += p.ByteSeconds
	t.Held += p.Held
	t.Released += p.Released
	t.Flushed += p.Flushed
	t.InOrder += p.InOrder
	t.Late += p.Late
	t.Passed += p.Passed
	t.Beyond += p.Beyond
	t.Full += p.Full
	t.Duplicates += p.Duplicates
	t.MissRequested += p.MissRequested
	t.MissBeyond += p.MissBeyond
	t.MissWaited += p.MissWaited
	t.MissPassed += p.MissPassed
	t.MissFull += p.MissFull
	t.MissDelivered += p.MissDelivered
	t.MissNAKed += p.MissNAKed
	t.GoBacks += p.GoBacks
	t.GoBacksNAK += p.GoBacksNAK
	t.Gaps += p.Gaps
	t.Recovered += p.Recovered
	t.Resumed += p.Resumed
	t.WaitUnfulfilled += p.WaitUnfulfilled
	t.WaitGaveUp += p.WaitGaveUp
	t.WaitBudget += p.WaitBudget
	t.WaitSpan += p.WaitSpan
	t.WaitBackoff += p.WaitBackoff
	t.Retries += p.Retries
	t.Resyncs += p.Resyncs
	t.ResyncsEarly += p.ResyncsEarly
	t.NAKHeld += p.NAKHeld
	t.NAKAnswered += p.NAKAnswered
	t.NAKReleased += p.NAKReleased
	t.Requests += p.Requests
	t.Resent += p.Resent
	t.Silent += p.Silent
	t.SendFailed += p.SendFailed
}

// Missing returns the PSNs data packets showed missing, all outcomes.
func (p *DstPortStats) Missing() uint64 {
	return p.MissRequested + p.MissBeyond + p.MissWaited + p.MissPassed + p.MissFull + p.MissDelivered
}

// Waits returns the entries into Waiting, all causes.
func (p *DstPortStats) Waits() uint64 {
	return p.WaitUnfulfilled + p.WaitGaveUp + p.WaitBudget + p.WaitSpan + p.WaitBackoff
}

// MaxPorts bounds the ports whose figures the stages keep apart: per-port
// counters are arrays indexed by port, so that reading them never
// allocates and no figure is ever kept per flow. Fabric ports are below
// it by Config.Fabric's definition; a host port at or above it is served
// but not counted per port, and never paused.
const MaxPorts = 64

// SrcStats are the counters of one SrcToR. Stage-wide figures are
// fields; what belongs to a port is in Ports, indexed by that port: a
// duplicate's figures by the fabric port its original left by, a
// request's by the fabric port it came in on, a pause frame's by the
// host port it was sent to. Packets counts the data packets from a host
// to the fabric; each is pooled (Ports[out].Pooled), too big
// (Ports[out].TooBig), crowded out by other workers
// (Ports[out].Crowded), of a flow outside Config.Prefixes (Local), of a
// flow the table had no room for (TableFull), or found no free frame
// (NoFrame). All are forwarded.
type SrcStats struct {
	Calls   uint64 // Process calls (batches)
	Packets uint64 // data packets from a host to the fabric

	Local     uint64 // packets of flows whose destination is outside Config.Prefixes: not pooled
	NoFrame   uint64 // duplicates not made for want of a free frame
	Dropped   uint64 // duplicates freed by Close
	TimerFull uint64 // timers the worker refused
	ACKs      uint64 // RC ACKs seen for pooled flows
	Flows     int    // flows in the table now
	Reclaimed uint64 // flow entries reused
	TableFull uint64 // packets of new flows not pooled, table full

	Ports [MaxPorts]SrcPortStats
}

// SrcPortStats are one port's part of SrcStats. Gauges say "now"; the
// rest count since the stage was made.
type SrcPortStats struct {
	// The duplicate pool of a fabric port (by the original's egress).
	Bytes    int // bytes pooled now; never above Config.PoolBytes (summed over the workers, with Config.Budgets)
	Frames   int // duplicates pooled now
	MaxBytes int // high-water mark of Bytes
	// ByteSeconds is the integral of Bytes over worker time, up to its
	// last change: its increase over an interval divided by the
	// interval's length is the mean occupancy (the paper's Fig. 7).
	ByteSeconds float64
	Pooled      uint64 // duplicates admitted
	InPlace     uint64 // of which the host's frame itself, held (Config.InPlace), not a copy
	TooBig      uint64 // packets larger than the port's whole budget, not pooled
	Evicted     uint64 // duplicates replaced by LFU eviction (§III-C-1)
	// Crowded counts duplicates not pooled because the port's budget,
	// shared by the workers (Config.Budgets), was spent by the other
	// workers' duplicates, and this worker's own on the port were too
	// few to make room by evicting them.
	Crowded uint64
	Expired uint64 // duplicates retired after Hold
	// HoldsExtended counts Holds run out before their duplicate's
	// original had left the port Hold before: kept another Hold.
	HoldsExtended uint64
	Acked         uint64 // duplicates retired by an ACK before their Hold ran out

	// HoldOnlyPeak is the high-water mark of Bytes plus the bytes ACKs
	// retired whose Hold had not yet run out: what the port's pool would
	// have peaked at had only the hold time retired duplicates. The
	// difference to MaxBytes is what ACK retirement saves. HoldOnlyLower
	// says it is a lower bound: the record of ACK-retired bytes (one
	// entry per pool frame) overflowed.
	HoldOnlyPeak  int
	HoldOnlyLower bool

	// Retransmission (§III-C-3), by the duplicate's egress port.
	Retrans    uint64 // duplicates retransmitted at once (N < KLow)
	Paced      uint64 // duplicates retransmitted paced at R_r (N ≥ KLow)
	TailProbes uint64 // of Retrans, tail probes: a flow's newest duplicate resent every TailProbe after its last copy left the port, while unACKed
	// ProbesDeferred counts tail probes put off because the duplicate's
	// last copy had not left the port TailProbe before: on a congested
	// port, probes that would have overtaken their originals.
	ProbesDeferred uint64
	PaceQueued     int    // duplicates waiting to be paced now
	PacedSkips     uint64 // paced duplicates retired (evicted, expired, ACKed) before their turn
	RetxFailed     uint64 // retransmissions not sent for want of a frame or queue room
	Limited        uint64 // requested duplicates not sent: the port's retransmission budget (RetxRate, RetxBurst) was spent
	InQueue        uint64 // requested duplicates not sent: the original, or the last copy, had not yet left the port
	RateBps        uint64 // R_r of the last paced retransmission (the port's, which with Config.Budgets k workers pacing at once share)

	// Requests, by the fabric port they came in on.
	Requests   uint64 // retransmission requests consumed (netrt_consumed)
	Unfulfill  uint64 // unfulfilled notices sent
	SendFailed uint64 // notices not sent for want of a frame or queue room

	// PFC toward a host port.
	Pauses    uint64 // pause frames sent (first and refreshes)
	Resumes   uint64 // resume frames (quanta 0) sent
	PFCFailed uint64 // pause or resume frames the port refused (retried)
	PausedNow bool   // a pause is in force
}

// Sum returns the port figures added up over all ports, for tests and
// logs (metrics export per port): counters and gauges are summed, the
// high-water marks (MaxBytes, HoldOnlyPeak, RateBps) are the largest
// port's, the flags are or-ed.
func (st SrcStats) Sum() SrcPortStats {
	var t SrcPortStats
	for i := range st.Ports {
		p := &st.Ports[i]
		peak, hold := max(t.MaxBytes, p.MaxBytes), max(t.HoldOnlyPeak, p.HoldOnlyPeak)
		t.Add(p)
		t.MaxBytes, t.HoldOnlyPeak = peak, hold
	}
	return t
}

// Add adds p's figures to t's, every one: the high-water marks of bytes
// too (one port's figures from several workers add up to the port's;
// each worker's pool peaks on its own, so the sum bounds the port's),
// RateBps the larger, the flags or-ed.
func (t *SrcPortStats) Add(p *SrcPortStats) {
	t.Bytes += p.Bytes
	t.Frames += p.Frames
	t.MaxBytes += p.MaxBytes
	t.ByteSeconds += p.ByteSeconds
	t.Pooled += p.Pooled
	t.InPlace += p.InPlace
	t.TooBig += p.TooBig
	t.Evicted += p.Evicted
	t.Crowded += p.Crowded
	t.Expired += p.Expired
	t.HoldsExtended += p.HoldsExtended
	t.Acked += p.Acked
	t.HoldOnlyPeak += p.HoldOnlyPeak
	t.HoldOnlyLower = t.HoldOnlyLower || p.HoldOnlyLower
	t.Retrans += p.Retrans
	t.Paced += p.Paced
	t.TailProbes += p.TailProbes
	t.ProbesDeferred += p.ProbesDeferred
	t.PaceQueued += p.PaceQueued
	t.PacedSkips += p.PacedSkips
	t.RetxFailed += p.RetxFailed
	t.Limited += p.Limited
	t.InQueue += p.InQueue
	t.RateBps = max(t.RateBps, p.RateBps)
	t.Requests += p.Requests
	t.Unfulfill += p.Unfulfill
	t.SendFailed += p.SendFailed
	t.Pauses += p.Pauses
	t.Resumes += p.Resumes
	t.PFCFailed += p.PFCFailed
	t.PausedNow = t.PausedNow || p.PausedNow
}

// occupancy integrates a port's held bytes over time: call add before
// every change of the bytes, with the worker time of the change.
type occupancy [MaxPorts]int64 // worker time of each port's last change

func (o *occupancy) add(port uint16, now int64, bytes int, integral *float64) {
	if bytes > 0 && now > o[port] {
		*integral += float64(bytes) * float64(now-o[port]) * 1e-9
	}
	o[port] = now
}
