// Package nic is rocetor's software RNIC: RoCEv2 reliable-connected
// endpoints that run as a dataplane stage, for hosts that have no RDMA
// NIC. The reliability logic is pluggable (Transport): nic/gbn is the
// commodity Go-Back-N baseline, nic/dcp is DCP's RNIC (seed 002),
// nic/irn is IRN (seed 004), nic/fasr is FaSR (seed 001). Congestion
// control is a separate plug (CC); nic/cc holds the fixed-rate pacer,
// DCQCN and TIMELY.
// nic/nictest runs endpoints in memory for tests.
//
// # Endpoint
//
// An Endpoint is the single stage of a dataplane.Worker with one port —
// an AF_XDP socket on a host's interface, or a dataplane.MemPort in
// tests. It implements dataplane.Stage, Timed and Source:
//
//   - Process consumes every RoCEv2 frame addressed to one of its open
//     QPs (dataplane.Ctx.Consume: verdict Taken, frame freed, counted
//     among the worker's consumed frames) and hands it to the transport as
//     a request (WRITE, SEND, READ request) or a response (ACK, NAK, read
//     response); CNPs and ECN marks go to the CC. ACKs a batch asks for
//     are coalesced into one per QP at the end of the batch.
//   - Poll takes new work from the command ring and lets QPs with work
//     send, round robin, Burst packets per turn: read responses first,
//     then the transport's next request. A QP that heard of a loss (a
//     NAK, a SACK), that was idle and got a response, or whose timer
//     expired goes ahead of the round, first come first served, and a
//     turn the full queue cut short is finished first: with thousands
//     of QPs a round outlasts any retransmission timeout (TestManyQPsPaced).
//     It stops while the egress
//     "data" queue is within a frame of its byte budget — the NIC's
//     transmit backpressure — so a PFC pause of the data priority (3 in
//     dataplane.DefaultEgress), which the worker applies on receipt,
//     holds the endpoint's data without a drop. The egress token bucket
//     at the port's configured rate is the port pacer; the CC paces each
//     QP on top. ACKs and NAKs use the "control" queue.
//   - Timer runs each QP's one retransmission timer (Ctx.SetTimer),
//     using a generation number in the timer argument to ignore stale
//     expiries and at most one heap entry per QP in the common case, and
//     wakes QPs the CC parked.
//
// Drops, counted by the worker under these reasons: nic_not_roce,
// nic_unknown_qp, nic_bad_opcode, nic_qp_error (the QP failed), and,
// from transports, nic_out_of_order, nic_duplicate, nic_stale,
// nic_invalid_request, nic_access_error, nic_rnr; nic_build when a frame
// cannot hold the MTU. Stats has one counter per event besides (packets
// and bytes each way, retransmissions, timeouts, NAKs, duplicates,
// out-of-order drops, completions, bytes), published about once a
// millisecond for other goroutines as dataplane.Worker.Snapshot is.
//
// # Verbs
//
// Setup happens before the worker runs: RegisterMR, CreateQP, Connect.
// Then one goroutine — the worker's own, or another, such as roceperf's
// main goroutine — posts work with Post and drains completions with
// PollCQ. Post checks the request synchronously and sends it to the
// worker through a lock-free single-producer ring (the doorbell); PollCQ
// reads a fixed completion ring the worker fills. Both rings carry the
// happens-before edges for the data: a buffer written before Post is
// what the worker sends, and data placed before a completion is what the
// poster sees. Post refuses work that could overflow a queue: at most
// SQDepth send and RQDepth receive requests per QP and CQDepth in all
// are outstanding.
//
// Memory regions are byte slices with an rkey and synthetic virtual
// addresses (MR.VA is byte 0). A responder places WRITE payloads at
// their VA after checking the rkey, the range and the permission; a
// violation is NAKed as a remote access error and counted. Payload
// content is the tool's to check; nictest.Fill and Check do it in tests.
//
// A roceperf-like tool, per host:
//
//	clock := func() int64 { return int64(time.Since(start)) }
//	ep, _ := nic.NewEndpoint(nic.Config{MAC: mac, IP: ip, Egress: eg,
//		Transport: must(gbn.New(gbn.Config{})), CC: cc.NewFixed(rate, 0), Clock: clock})
//	w, _ := dataplane.NewWorker(dataplane.WorkerConfig{Mem: mem, Ports: []dataplane.Port{port},
//		Egress: []dataplane.EgressConfig{eg}, Stages: []dataplane.Stage{ep},
//		Classifier: ep.Classifier(rocev2.Classifier{VerifyICRC: true}), Mode: dataplane.Adaptive,
//		Clock: clock, TimerCap: 4 * maxQPs})
//	mr, _ := ep.RegisterMR(buf, nic.AccessRemote)
//	local, _ := ep.CreateQP(nic.QPOptions{PSN: randomPSN})
//	// exchange {local, mr} for the peer's {remote QPInfo, remote MR} over TCP
//	// (roceperf's exchange: docs/roceperf.md; nic/host runs an endpoint on
//	// a host interface)
//	_ = ep.Connect(local.QPN, remote)
//	go w.Run(ctx)
//	_ = ep.Post(nic.WR{ID: 1, Op: nic.OpWrite, QP: local.QPN, LKey: mr.Key, LocalVA: mr.VA,
//		Len: n, RKey: remoteMR.Key, RemoteVA: remoteMR.VA})
//	k := ep.PollCQ(cqes) // cqes[i].Latency is the message's completion time
//
// The endpoint and the worker must share one clock (Config.Clock) for
// the completion latencies to mean flow completion times.
//
// # Queue pairs
//
// A QP is reliable connected: QPN, remote QPN, first PSN, path MTU (the
// smaller of both ends', 256–4096, default 1024), local and remote MAC
// and IP, and a UDP source port chosen per QP (from both QPNs unless
// given) for ECMP entropy. QPs live in a slice indexed by QPN minus the
// endpoint's base QPN, so the packet path finds one with a subtraction;
// thousands per endpoint are fine (TestManyQPs runs 2048).
//
// The framework keeps, per QP, what every RC transport needs: the send
// queue with each work request's PSN range (assigned when the requester
// first reaches it), Una (oldest unacknowledged PSN), SndMax, the
// responder's expected PSN and MSN, the in-order placement state of the
// message in progress, the receive queue, and ReadDepth read resources.
// Any unacknowledged packet can be rebuilt from its work request and
// memory region, so nothing is copied per packet to be able to resend it.
//
// Per-QP memory: the QP struct is 376 bytes (160 of them the read
// resources), gbn adds 12 and the fixed pacer 16 — the "SRAM" context;
// the send and receive queues take SQDepth×56 + RQDepth×24 bytes (2.5 KB
// at the defaults) — the "host memory"; a send queue starts at 8 requests
// and grows to SQDepth as it is posted deeper. Endpoint.QPBytes reports both;
// TestQPBytes checks them against the heap growth per QP.
//
// Config.QPCache, off by default, models an RNIC whose QP contexts live
// in an on-chip cache of a byte budget (QPCache): each context the
// seed's 256 B plus the transport's SR state per QP (SRState), least
// recently used out first, a miss holding the NIC's pipeline for a fetch
// over PCIe — FaSR's explanation of IRN's and CX6's loss at thousands of
// QPs (seed 001 §V-C 1). The endpoint counts the time (StalledUntil,
// Stats.QPCMisses); the simulator takes the host off its CPU for it.
//
// # Transports
//
// A Transport owns the reliability logic of every QP of one endpoint and
// keeps its per-QP state in a slice indexed by QP.Index (Init sizes it;
// StateBytes reports it; SRState reports, the same way for every
// transport, the part of it and of any state shared by all QPs that
// selective repeat adds over Go-Back-N). The framework calls:
//
//	Open(q)              when q is connected
//	Next(c, q) bool      to send q's next request: the transport picks the
//	                     PSN and calls c.SendRequest(q, psn)
//	Request(c, q, p)     for each request packet to q's responder
//	Response(c, q, p)    for each ACK, NAK or read response to q's requester
//	Timeout(c, q)        when the timer set with c.SetTimer expires
//
// and offers, through Ctx, the mechanisms all RC transports share:
// SendRequest (any PSN from Una on: selective repeat needs no more),
// SendAck and ScheduleAck, Deliver (in-order placement with the opcode
// sequence, length and access checks), Place (placement of a packet
// carrying its own RETH, in any order), PlaceRecv and CompleteRecv (a
// SEND placed in any order into the receive it names, completed in
// order), RepeatRead (restart a read from a re-issued request), Ack
// (cumulative acknowledgement and in-order completion), ReadResponse,
// Refuse (an RNR or fatal NAK under selective repeat: it acknowledges
// only the cumulative ACK it carries, and the refused request fails once
// what precedes it is acknowledged or, after a fatal NAK, flushed),
// Fail (error completion and flush), SetTimer/StopTimer, Wake, Drop, and
// Header/Send for frames of the transport's own (a DCP header-only
// packet returned to its sender, an IRN NACK with SACK information).
// Optional interfaces let a transport change what the framework builds
// and how it is set up: Decorator adds headers to requests (the DCP
// extension, a RETH in every WRITE packet), AckDecorator to ACKs and
// NAKs (DCP's tag and eMSN), Classifying asks for other classifier
// settings (Endpoint.Classifier gives them to whoever builds the worker;
// DCP's Classifier.DCP), HostMemory reports per-QP queues kept
// outside the QP context (DCP's RetransQ). A new transport is a package
// of its own under nic that implements the interface; nothing in nic
// changes.
//
// # Congestion control
//
// A CC decides when each QP may send its next data packet (Ready, Sent)
// and hears congestion signals: CNP at the reaction point, ECN CE at the
// notification point, where Marked may ask for a CNP that the framework
// sends back to the peer QP: BTH opcode 0x81 with BECN, the peer's QPN,
// 16 reserved bytes, on the control queue in its own class
// (Config.CNPDSCP, 48 by default as ConnectX's cnp_dscp). A CE-marked CNP
// is not shown to Marked: a CNP never answers a CNP. CNP and Marked get
// the frame's own time, not the worker loop's: the loop reads its clock
// once per receive batch, and the frames of a batch are spread over the
// interval since the previous loop (dataplane.Ctx.RxTime), so a CC that
// paces its answers by time sees the marks as they arrived. Now in Ready
// and Sent is never earlier than a time CNP or Marked got. Every frame leaves
// ECN-capable (ECT(0)). The endpoint asks Ready before every data frame
// — request or read response, first transmission or retransmission —
// and charges it with Sent, so loss recovery and congestion control stay
// apart and any transport runs with any CC. Stats counts ECNMarked,
// CNPsSent and CNPsRecv. nic/cc.Fixed is a per-QP token bucket,
// nic/cc.DCQCN the DCQCN of ConnectX, with its parameters.
//
// A CC that takes round-trip times (RTTSampler, nic/cc.Timely) also sees
// each request packet the endpoint sends — and before it is built may
// ask for it to carry AckReq, so that its ACK is not coalesced — and
// each advance of the requester's cumulative acknowledgement (an ACK or
// a read response), both on the worker's clock: the RNIC's send and ACK
// timestamps. A CC without it costs nothing more.
//
// # Performance
//
// Nothing on the packet path allocates: TestAllocs drives a WRITE stream
// through two endpoints, both workers, the link, Post and PollCQ with
// testing.AllocsPerRun == 0. BenchmarkWriteStream reports ns/pkt and
// pkt/s for one 1 KiB packet through requester and responder.
package nic
