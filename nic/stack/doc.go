// Package stack builds a host's transport and congestion control by
// name: the one place that knows what "gbn", "irn", "fasr", "dcp",
// "none", "fixed", "dcqcn" and "timely" mean, for every program that runs a
// software RNIC — roceperf on a real port (nic/perf) and the simulated
// fabric's hosts (tor/fabric).
//
// A Config names the transport and the congestion control and carries
// their few parameters; NewTransport and NewCC return a fresh instance
// for one endpoint each time (a transport belongs to its endpoint's
// worker). Both ends of a run build their own from the same Config.
//
//	c := stack.Config{Transport: "irn", RTO: 4 * time.Millisecond, BDP: 256, CC: "dcqcn"}
//	t, err := c.NewTransport()
//	ctl, err := c.NewCC(10e9) // this host's line rate
//
// # Transports
//
//   - gbn: Go-Back-N (nic/gbn), RTO its first timeout; its window is
//     GBNWindow packets, 0 for gbn's own 128.
//   - irn: IRN (nic/irn), RTO its RTO_high, the timeout with a window in
//     flight; RTO_low stays at its default unless that is longer than
//     RTO, and MaxRTO is its default or 16×RTO, whichever is longer.
//     Its BDP-FC window and bitmaps span BDP packets of 1 KiB (irn.Config.BDP
//     is BDP KiB), so ceil(BDP KiB / MTU) packets at another MTU.
//     IRNGoBackN and IRNNoBDPFC select the seed's two ablations (seed
//     004 §4.3): go-back-N recovery, and BDP-FC off; IRNAckEvery the
//     receiver's ACK coalescing (irn.Config.AckEvery).
//   - fasr: FaSR (nic/fasr), window BDP packets and a shared SR pool
//     sized for BDP (6 units and 18 blocks at 128).
//   - dcp: DCP's RNIC (nic/dcp); BDP does not apply. DCPRetransQ sizes
//     each QP's RetransQ (0: dcp's 256 entries); DCPWindow caps each
//     QP's packets in flight (0: no window, dcp's default).
//
// RTO 0 is each transport's default; BDP 0 is DefaultBDP.
//
// # Congestion controls
//
//   - none: no pacing beyond the port's (NewCC returns nil).
//   - fixed: every QP paced at the line rate (nic/cc.Fixed).
//   - dcqcn: DCQCN (nic/cc.DCQCN) starting each QP at the line rate,
//     with DCQCN's parameters or ConnectX's defaults when nil.
//   - timely: TIMELY (nic/cc.Timely) starting each QP at the line rate,
//     with Timely's parameters or the paper's defaults when nil. It
//     takes one RTT per 16 KiB segment from the ACK the requester asks
//     for at the segment's end, so it pairs with gbn, irn and fasr;
//     Validate refuses it with dcp (ErrPairing), whose responder
//     acknowledges whole messages only.
//   - hpcc: HPCC (nic/cc.HPCC) starting each QP at the line rate, with
//     HPCC's parameters or the paper's and its ns-3 runs' defaults when
//     nil. Every request carries an INT request tail; the switches on
//     the path must stamp it (tord's int: section, tor/inband), or HPCC
//     sees no hop and keeps the line rate.
//
// # Where the callers differ
//
// roceperf's --bdp sizes the selective transports' SR state only and
// leaves Go-Back-N's window at 128 (GBNWindow 0); the fabric's
// Options.BDP spans every window, Go-Back-N's too (GBNWindow = BDP).
// Everything else is built the same for both.
package stack
