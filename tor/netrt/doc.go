// Package netrt implements NetRT's in-network retransmission between the
// two top-of-rack switches of a flow (seed 000, §III-B to §III-D): the
// source ToR keeps duplicates of the data packets its hosts send, the
// destination ToR detects a loss from a PSN gap, holds the packets behind
// it and asks the source ToR for the missing ones, so that the receiving
// RNIC sees its flow in order and the end-to-end go-back-N never starts.
//
// # Stages
//
// SrcToR (seed 000 §III-B, §III-C-1, §III-C-3) serves RoCEv2 data
// packets (RC requests carrying payload) that arrive on a host port and
// leave by a fabric port, of flows whose destination lies in
// Config.Prefixes (decided once per flow). It keeps each in a
// duplicate pool keyed by flow (source IP, destination IP, destination
// QP) and PSN, with a byte budget per egress port. The paper's pool
// holds copies; with Config.InPlace (tord without INT, for the frames a
// worker sends by a port it owns) the duplicate is the host's frame itself, held in the worker's memory
// (dataplane.Mem.Hold) while it goes on, which spares a 1 KB copy a
// packet (docs/performance.md). The stages after SrcToR then leave it
// whole or copy it first — trim and llr's shim without headroom copy a
// held frame, llr's shim with headroom moves only its Ethernet header,
// the egress marks only its ECN field — and a resend puts back the
// header and ECN field the duplicate was pooled with. A full pool replaces
// the oldest duplicate of the flow with the fewest retransmission
// requests (LFU over a per-flow request count; ties to the oldest),
// chosen among the flows of the port's 32 oldest duplicates, so that
// eviction costs the same at any number of flows (Redis samples its
// approximated LFU the same way; exact up to 32 pooled flows). A
// duplicate leaves the pool after Hold (counted from when its original
// left the port, below), or as soon as an RC ACK passing
// back through the switch acknowledges its PSN. A retransmission request
// arriving from the fabric for one of its hosts is consumed: every
// missing PSN it names (ePSN, and ePSN+1+i for each clear bit i below
// the highest set one) that the pool holds is sent again, a fresh copy,
// on the "retransmit" queue of the original egress port; for the first
// one it lacks, an unfulfilled notice goes back to the destination ToR.
// Going beyond the paper, with TailProbe set, a flow's newest duplicate
// that is still unacknowledged TailProbe after it left the port, with
// nothing sent after it, is sent again, and again every TailProbe while
// its Hold lasts: a lost last packet of a message leaves the destination
// ToR no later packet to see the gap by, and a lost probe, or a lost ACK
// of the last packet, must not leave the sender to its RTO either.
//
// When a copy leaves is estimated on a shaped port (the bytes queued
// ahead of it at the port's rate), and neither a probe nor a request
// sends a copy of a duplicate whose last copy has not left yet: the
// retransmit queue has strict priority over the data queue, so such a
// copy would overtake the flow's own queued packets, and the
// destination ToR would take the gap this makes for a loss and ask for
// every packet in it, all still queued. On a port that is itself the
// bottleneck each would then cross it twice (SrcPortStats.ProbesDeferred,
// InQueue; docs/experiments.md, DCQCN).
//
// SrcToR's congestion avoidance (§III-C-3) counts, per fabric port, N:
// the bytes of retransmission requested on it within the last Window,
// each duplicate counted the first time it is asked for (a request
// repeated because an answer was lost sends the holes again but asks
// for no new data). While N < KLow duplicates are sent at once. From
// KLow on they wait in the port's pacing FIFO (a list through the pool,
// so they stay within its budget; a request's ePSN, which the
// destination ToR is blocked on, goes in front) and leave one every
// len·8/R_r, with R_r falling linearly from RateMax at KLow to RateMin
// at KHigh; the host ports whose flows were asked for get 802.1Qbb PFC
// pause frames for PausePriority, refreshed at half their length, and a
// resume once N < KLow, when whatever still waits is sent at once. A
// duplicate waiting for its turn gets a fresh Hold when it joins the
// FIFO; if it is retired before its turn anyway (ACKed, evicted,
// expired) it is skipped and counted.
//
// DstToR (seed 000 §III-C-2, §III-D, Algorithms 1 and 2) serves data
// packets that arrive on a fabric port and leave by a host port, of flows
// whose source lies in Config.Prefixes (decided once, when the flow's
// entry is made; the others pass untouched). Per flow it keeps the ePSN,
// a 128-bit bitmap (bit i: PSN ePSN+1+i is held) and a state, Ordered,
// ReTx or Waiting:
//
//   - PSN == ePSN: forwarded; ePSN advances and, in ReTx, the buffer is
//     released in order while the next PSN is held (Algorithm 1). Back
//     to Ordered when the bitmap empties, or from Waiting at once.
//   - PSN > ePSN (up to ePSN+128) in Ordered or ReTx: held in the
//     reordering buffer. The first gap moves the flow to ReTx and sends a
//     retransmission request (ePSN and bitmap) to the source ToR,
//     re-sent every RequestInterval while in ReTx. A copy of a held PSN
//     is dropped.
//   - PSN < ePSN, or PSN > ePSN in Waiting: forwarded, for the RNIC to
//     sort out.
//   - In Ordered, a gap DstToR cannot hold (beyond ePSN+128, or the
//     budget spent) is forwarded and the flow stays Ordered: nothing is
//     held that it could overtake, and the RNIC's go-back-N repairs it.
//   - In ReTx, a packet beyond ePSN+128 or one the budget has no room
//     for moves the flow to Waiting: forwarding it alone would put it
//     ahead of the held packets. The buffer is flushed as below, that
//     packet among the flushed ones by PSN.
//   - An unfulfilled notice for the flow's ePSN, in ReTx, is consumed and
//     moves the flow to Waiting: the lowest held packet is forwarded,
//     which makes the RNIC NAK and the sender go back N, and the rest of
//     the buffer is flushed by forwarding it in PSN order. Algorithm 2's
//     buffer.clear() could also mean dropping them; forwarding was chosen
//     because the text says the buffer is "released" to trigger end
//     retransmission, the RNIC discards what it cannot use anyway, and a
//     drop would turn a packet the switch already has into a loss.
//   - After MaxRequests unanswered requests the flow acts as if told
//     "unfulfilled". If the peer never answered this flow (no hole
//     filled after a request, no notice), it may not run NetRT, and the
//     flow backs off (best effort, §III-A): for Backoff (1 s) its gaps
//     move it to Waiting instead of ReTx, holding and requesting
//     nothing; then it tries again. A peer that did answer only lost
//     this hole's retransmissions, and the next gap is held as usual.
//   - A request after which nothing came from the fabric does not count
//     against MaxRequests, up to SilentRequests of them: a source ToR
//     (or a switch between) off its CPU answers the queued requests when
//     it is back, and giving up in its silence only sent the hosts back
//     N (a tord worker descheduled for 9 ms on a shared CPU;
//     docs/experiments.md "Why tor2 gave up").
//   - A sequence NAK the host sends for a PSN before the flow's ePSN
//     (going beyond the paper, whose DstToR knows of no loss after it)
//     means the RNIC missed packets this switch forwarded (lost after
//     it) or never saw (the flow's entry began after a loss, as when its
//     first packet was lost). The source ToR pools them until the host
//     acknowledges them, so, within the bitmap's span, the flow moves
//     to ReTx with that PSN as its ePSN, requests the run up to the old
//     ePSN, and holds the NAK: dropped (netrt_nak_answered) when that
//     PSN arrives, sent on when the flow falls back to Waiting, so the
//     sender goes back N only if the network could not help. Otherwise
//     the NAK passes and the flow adopts its PSN (a resync), so that the
//     sender's resend is put in order again.
//
// DstStats counts per host port; Busiest names the flows holding the
// most, for the admin API.
//
// Released and flushed packets keep the egress port and queue the
// pipeline chose for them, so both stages run after fwd. What they emit
// later (retransmissions, released and flushed packets, messages) passes
// the stages after them (trim, llr) as a batch would (dataplane.Ctx.Emit).
//
// NetRT messages are RoCEv2 packets with opcode 0xc0 and the NetRT header
// of rocev2.NetRT, sent on queue "control". A request travels on the
// served flow's reversed addresses (source IP = the flow's destination)
// with the flow's destination QP; an unfulfilled notice, answering it,
// travels on the flow's own addresses. Both are routed like any packet
// to those addresses (Config.Route: tord asks its FIB), so they cross
// whatever fabric lies between the two ToRs; without a route they leave
// by the port the prompting frame came in on, to its source MAC. The
// far ToR consumes them: they never reach a host.
//
// Only RC requests with payload are numbered: RDMA Read requests and
// atomics advance the PSN by other amounts and pass untouched, so a flow
// that mixes them with writes confuses the ePSN (its first gap then ends
// in Waiting, which is safe). Retransmissions go on the retransmit
// queue, paced by SrcToR itself while N ≥ KLow (above).
//
// # READ responses
//
// RDMA READ responses carry payload too, but neither stage serves them:
// they pass both untouched, gaps and all (TestChainReadResponses), and a
// lost one is the requester's to re-read (nic/gbn re-issues the READ from
// the lost PSN). Seed 000's DstToR tells a loss from a PSN gap in the
// flow (§III-C-2: the ePSN is "the expected PSN for a flow"; Algorithm 2
// takes any PSN above it as out of order), which holds for the
// requests a sender numbers one after another. A READ's responses take
// the PSNs of its request in the requester's sequence, which the
// requester's WRITEs and SENDs share: between two READs the responses
// jump over those, a gap no loss made, which the DstToR would hold and
// request, the responder's SrcToR could only answer "unfulfilled", and
// the flow would stay in Waiting for a PSN that never comes its way.
// Telling a jump from a loss needs the READ requests, which the
// requester's ToR sees going the other way; nor does anything
// acknowledge a response for SrcToR to retire its duplicate before Hold
// (§III-C-1 keeps one "for about one RTT to ensure that the original
// packet is delivered"). The paper evaluates WRITEs only (§IV).
//
// # Ports
//
// Config.Fabric names the fabric ports (a bit mask of port indices);
// every other port faces hosts.
//
// # Drops
//
//	netrt_consumed      a NetRT message ended at this ToR (not a loss)
//	netrt_duplicate     DstToR already holds a packet with that PSN
//	netrt_nak_answered  a host's NAK DstToR held, whose PSN then arrived (not a loss)
//	netrt_build         a message did not fit its frame (frames too small for it)
//
// A packet DstToR cannot hold because the buffer budget is spent is
// forwarded, not dropped (DstPortStats.Full or WaitBudget). Messages,
// retransmissions and duplicates take free frames; none free shows as the
// worker's no_frame. An RC ACK's early matching to the wrong QP is
// discussed on SrcToR.ack.
//
// # Budgets
//
// DstToR holds at most BufferBytes (default 1 MiB) per host port,
// counted on the port the held packets will leave by, and BufferFrames
// (1024) frames in all; SrcToR pools at most PoolBytes (256 KiB) per
// egress port and PoolFrames (4096) in all. Each keeps state for Flows
// (16384) flows; a new flow finding the table full reclaims an idle
// entry (IdleTimeout, 1 ms; SrcToR's with nothing pooled) among the
// next 32 of a clock hand, or passes untouched, counted (TableFull): a
// full table costs a bounded amount per packet. Held and pooled frames
// are freed by Close once the worker has stopped.
//
// The paper's budgets are a port's: "the optimal size for the duplicate
// pool associated with each port is one BDP" (seed 000, §III-C-1), and
// §III-D-1 sizes the pool and the reordering buffer at about 100 KB
// each for a 100 Gbit/s port (Table II); N (§III-C-3) is the data
// requested of a port, and R_r the rate its retransmissions are paced
// at. A switch of several workers (tord's workers: N) has one SrcToR
// and one DstToR per worker, each serving the flows its worker owns
// (tor/pipeline.Owners), and a port's flows are spread over them. So
// that the budgets stay the port's, tor/pipeline gives every worker's
// stages one Budgets (Config.Budgets): PoolBytes and BufferBytes bound
// the bytes every worker pools or holds for the port together, N counts
// what was requested of the port from any worker, the k workers that
// pace on a port at once each pace at R_r/k (R_r together, not each),
// and the amplification bound's bucket is the port's. Each is a word
// updated by compare-and-swap, no lock on the packet path. The frames
// stay their owner's: a worker finding a port's pool full evicts its
// own oldest duplicates there (LFU among its own flows, which may not
// be the switch's least used) if they can make the room, and otherwise
// pools nothing, counted (SrcPortStats.Crowded); a DstToR finding the
// buffer full forwards as with its own budget spent (Full, WaitBudget).
// Each worker paces its own FIFO and pauses the hosts of its own flows.
// PoolFrames, BufferFrames and Flows stay per worker: they size each
// worker's tables and bound the frames it holds of its own share of the
// memory. Without Budgets (one worker) each stage counts for itself, as
// before.
//
// # Amplification bounds
//
// Whatever arrives, going beyond the paper, whose congestion avoidance
// (§III-C-3) limits what is asked for the first time but is no bound on
// a sender that asks again:
//
//   - one retransmission request makes SrcToR send at most
//     MaxRequestFrames (128) frames: it names at most 128 PSNs, each
//     answered once at most (a retransmission, or the unfulfilled notice
//     for the first one the pool lacks), however often the pool holds
//     it; plus, with congestion avoidance on, one PFC frame per host
//     port (TestSrcRequestBound);
//   - per fabric port, the retransmissions requests draw from the pool
//     stay within RetxBurst + RetxRate·t bytes over any t (a token
//     bucket; defaults PoolBytes and RateMax: half the port's shaped
//     rate, 5 Gbit/s unshaped); a duplicate beyond it is treated as
//     missing and counted (SrcPortStats.Limited), so a stream of
//     requests, forged or repeated because answers were lost, costs
//     the port at most that (TestSrcRequestRate);
//   - an unfulfilled notice makes DstToR send no frame of its own: it
//     forwards, in PSN order, what it holds of the flow (at most 128
//     packets and the held NAK, all of which came in);
//   - a data packet makes DstToR send at most one request, and a gap
//     holds at most MaxRequests+SilentRequests requests before the flow
//     gives up.
//
// Who may send the messages at all is tor/trust's: NetRT messages from
// host ports, and from fabric sources outside Config.Prefixes, never
// reach these stages in tord.
//
// # Counters
//
// DstStats and SrcStats, one documented field per outcome, kept per port
// (never per flow); Stats from the worker's goroutine, Snapshot from any
// (published at most every millisecond of worker time, and once more a
// millisecond after the last activity). Occupancy is also integrated
// over time (ByteSeconds), for mean occupancies. DstPortStats' Miss
// counters and GoBacks tell how the fabric's losses came to light at the
// destination ToR — as gaps it could ask for, beyond the bitmap, in
// Waiting, as a flow's first packets a host's NAK names, or not at all —
// for one prev PSN and one flag a flow (docs/experiments.md,
// netrt-incast).
//
// # Configuration
//
//	cfg := netrt.Config{
//		Fabric:          1<<2 | 1<<3, // ports 2 and 3 face the spines
//		Hold:            100_000,     // ns, about one RTT
//		PoolBytes:       256 << 10,   // per fabric port, about one BDP
//		BufferBytes:     1 << 20,     // per host port
//		RequestInterval: 20_000,      // ns
//		Route:           fib.NextHop, // where messages to an address go
//		Budgets:         budgets,     // one per switch, every worker's (nil: one worker)
//	}
//	src, err := netrt.NewSrcToR(cfg)
//	dst, err := netrt.NewDstToR(cfg)
//	... Stages: []dataplane.Stage{fwdStage, src, dst} ...
//	defer src.Close(); defer dst.Close() // after the worker stopped
package netrt
