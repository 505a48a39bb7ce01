// Package cc holds the congestion controls of the software RNIC (the
// nic.CC interface): Fixed, a fixed-rate pacer, DCQCN and TIMELY. All
// pace each QP with a token bucket on top of the port's shaper, as a
// NIC's per-QP rate limiter does, and run under every transport — gbn,
// irn, fasr, dcp (TIMELY but dcp, below): congestion control decides when a QP may send, loss
// recovery what it sends (IRN §3 and §4.2.4 pair IRN with DCQCN or
// Timely; DCP §6 and §7 with DCQCN, "leaving rate control to the CC
// modules"). The endpoint asks Ready before every data frame a transport
// builds and charges it with Sent, retransmissions included, so resent
// packets take their share of the rate (TestRetransmissionsCharged).
//
// # Fixed
//
// Every QP at one rate; it ignores CE marks and CNPs.
//
//	nic.Config{..., CC: cc.NewFixed(2e9, 16<<10)} // 2 Gb/s, 16 KB bursts
//
// # DCQCN
//
// DCQCN is Zhu et al., "Congestion Control for Large-Scale RDMA
// Deployments" (SIGCOMM 2015), the congestion control the seeds evaluate
// under: NetRT's large-scale simulations (seed 000 §IV, Fig. 10), DCP's
// (seed 002 §6, Fig. 16d) and IRN's (seed 004 §4.2.4, DCQCN "as
// implemented in the Mellanox ConnectX-4"). The switch is the congestion
// point (ECN marking on its egress queues); the endpoint is the
// notification point and the reaction point:
//
//   - Notification point (Marked): a QP that receives a CE-marked packet
//     (any opcode but a CNP, which never answers a CNP) asks for a CNP to
//     its peer QP — BTH opcode 0x81, BECN set, the peer's QPN, 16
//     reserved bytes, DSCP nic.Config.CNPDSCP (48, ConnectX's cnp_dscp)
//     on the control queue — at most once per min_time_between_cnps
//     (4 µs), measured between the marked frames' arrivals: the
//     endpoint passes each frame's time (dataplane.Ctx.RxTime, a
//     receive batch spread over the interval it arrived in), not the
//     worker loop's, which answered a whole batch with one CNP
//     (nic.Endpoint, TestCNPsPerFrame). The paper's NP (§3.1) likewise
//     times each marked packet against its flow's last CNP. The limit
//     is ConnectX's NP parameter, so it lives here with
//     the other parameters rather than in the framework: another CC may
//     want every mark. ConnectX also sets cnp_802p_prio (6); the
//     endpoint's frames carry no 802.1Q tag, so there is no priority to
//     set.
//   - Reaction point (CNP, Ready, Sent): per QP, a current rate RC and a
//     target rate RT, both at the line rate until the QP's first CNP,
//     which starts its rate limiter at rate_to_set_on_first_cnp (0: the
//     line rate) with alpha at initial_alpha_value. A CNP cuts: RT ← RC
//     (see the clamps), RC ← RC·(1 − alpha·2^(10−rpg_gd)) — alpha/2 at
//     rpg_gd 11 —, bounded below by rpg_min_dec_fac % of RC and by
//     rpg_min_rate; the increase stages and timer restart. At most one
//     cut per rate_reduce_monitor_period: a CNP within one of the last
//     cut cuts at the period's end. Every dce_tcp_rtt alpha ←
//     (1−g)·alpha + g if a CNP arrived in the period, else (1−g)·alpha,
//     with g = (1024 − dce_tcp_g)/1024. Increase events come from a
//     timer (every rpg_time_reset without a cut) and a byte counter
//     (every rpg_byte_reset bytes sent); with T and BC the events of
//     each since the last cut and F = rpg_threshold: fast recovery
//     (RC ← (RT+RC)/2) while neither passed F, hyper increase (RT +=
//     i·rpg_hai_rate, i = min(T,BC) − F, then RC ← (RT+RC)/2) once both
//     did, additive increase (RT += rpg_ai_rate, RC ← (RT+RC)/2) in
//     between. RT never passes the line rate.
//
// Config fields carry ConnectX's names, units and defaults
// (DefaultDCQCNConfig; NVIDIA's "DCQCN parameters" table, the sysfs
// roce_rp and roce_np files, the NVConfig names mlxconfig shows with the
// same defaults), so a tuning carries over. An older Mellanox PRM gives
// min_time_between_cnps a default of 0 (a CNP per mark); current
// firmware lists 4 µs:
//
//	parameter                       unit     default
//	rpg_time_reset                  µs       300
//	rpg_byte_reset                  bytes    32767 (0: off)
//	rpg_threshold                   events   1
//	rpg_ai_rate, rpg_hai_rate       Mb/s     5, 50
//	rpg_gd                          log2     11 (alpha/2)
//	rpg_min_dec_fac                 %        50
//	rpg_min_rate                    Mb/s     1
//	rate_to_set_on_first_cnp        Mb/s     0 (line rate)
//	rate_reduce_monitor_period      µs       4
//	dce_tcp_g                       1/1024   1019 (g = 5/1024)
//	dce_tcp_rtt                     µs       1
//	initial_alpha_value             1/1024   1023
//	clamp_tgt_rate                  bool     false
//	clamp_tgt_rate_after_time_inc   bool     true
//	min_time_between_cnps           µs       4
//
// Where the paper, ConnectX and the ns-3 model of the HPCC code
// (simulation/src/point-to-point/model/rdma-hw.cc, the "mlx" DCQCN)
// differ, and what this package does:
//
//   - Alpha and the cut. The paper raises alpha on each CNP, after the
//     cut that CNP causes (the cut uses the alpha from before), and
//     decays it after each K = 55 µs without a CNP. ConnectX and ns-3
//     update alpha once per period (dce_tcp_rtt), up if a CNP arrived in
//     it; ns-3 schedules its rate check 1 ns after the alpha update, so
//     its cut uses the raised alpha. We update alpha per period, as
//     ConnectX, and at an instant where both fall due the cut goes first,
//     with the alpha from before: the paper's order.
//   - The first CNP. ns-3 sets alpha to 1 and does not raise it for that
//     CNP; ConnectX sets initial_alpha_value. We do as ConnectX, and, as
//     both, the first CNP does not also count as a raise.
//   - When a cut happens. ns-3 checks for a CNP on a fixed grid every
//     rate_reduce_monitor_period from the first CNP (the first check
//     1 ns after it), so a CNP after a quiet spell waits up to a period;
//     ConnectX describes the cut as taking effect "at the beginning of
//     the next" period. We cut on the CNP when the last cut is at least
//     a period old and defer it to the period's end otherwise: at most
//     one cut per period, as both, and no wait after a quiet spell, as
//     the paper.
//   - Increase stages. ns-3 has no byte counter: its timer events go
//     fast recovery while the time stage is below F, one additive step
//     at F, then hyper increase by a fixed rpg_hai_rate. The paper (as
//     QCN) needs both the timer and the byte counter past F for hyper
//     increase, and multiplies the step by the hyper stage. We follow
//     the paper: with the byte counter off (rpg_byte_reset 0), or a QP
//     that sends nothing, the timer alone leads to additive increase and
//     never to hyper increase.
//   - The target clamp. The paper sets RT ← RC on every cut (ConnectX's
//     clamp_tgt_rate true); ns-3 clamps only when the timer stage is not
//     0 unless told to always, which is ConnectX's default
//     clamp_tgt_rate_after_time_inc. We take both flags with ConnectX's
//     defaults. rpg_min_dec_fac, rpg_gd and rate_to_set_on_first_cnp
//     (a rate here, a fraction of the rate in ns-3) are ConnectX's; ns-3
//     has no rpg_min_dec_fac and cuts by alpha/2.
//   - The notification point. ns-3 echoes ECN in ACKs; ConnectX, and
//     this package, send CNPs, at most one per QP per
//     min_time_between_cnps.
//
// Timers without timers: nic.CC has no timer hook, and none is needed.
// The alpha period, the increase timer and a deferred cut are evaluated
// from the time of each call (Ready, Sent, CNP, Marked): the events due
// since the last call are applied in time order first — a run of alpha
// periods without a CNP in one step (pow), timer events at the line rate
// in one step, the rest one by one — so the state is the one a
// timer-driven implementation reaches, whatever the clock, and runs are
// deterministic. TestDCQCNDifferential checks it against an
// event-by-event float64 model of the algorithm above on random CNP
// sequences, frame sizes, idle spells and configurations.
//
// Counters (DCQCNStats): marks seen, CNPs asked and held back (NP);
// CNPs, first CNPs, cuts and deferred cuts, increase events by stage and
// by source, alpha updates (RP). The endpoint counts CE-marked packets,
// CNPs sent and received (nic.Stats ECNMarked, CNPsSent, CNPsRecv).
// Summary gives each QP's lowest rate, time-weighted mean rate and final
// rate, kept without allocation on the packet path.
//
// Cost: Ready and Sent together take about 13 ns per packet with 0
// allocations (BenchmarkDCQCN, 2-CPU test machine, a CNP every 500
// packets).
//
// # TIMELY
//
// TIMELY is Mittal et al., "TIMELY: RTT-based Congestion Control for the
// Datacenter" (SIGCOMM 2015), the delay-based congestion control the IRN
// seed evaluates beside DCQCN (seed 004 §4.1, "a NIC-based Timely
// implementation", and §4.2.4, Fig. 4–6), "with the same congestion
// control parameters as specified in" the TIMELY paper, every flow
// starting at the line rate. The signal is the round-trip time: no
// switch support, no CNPs (CNP and Marked do nothing).
//
// RTT samples (nic.RTTSampler). TIMELY takes one RTT per completion
// event, a segment of 16 to 64 KB of a message. The endpoint shows the
// CC every request packet and every advance of the cumulative ACK, on
// the worker's clock: the RNIC's send and ACK timestamps. A new packet
// that completes SegmentBytes of data since the last timed one asks for
// an ACK (BTH AckReq, so the responder's ACK coalescing adds nothing);
// it, and each message's last packet, is timed with its send time. The
// ACK that covers it is the completion, and now − send time the sample.
// The paper times a segment from its first byte and subtracts its
// serialization at the line rate (its NIC sends a segment as one
// burst); here the QP's bucket paces packet by packet, so the segment's
// last packet is timed instead — from its own send, which leaves one
// packet's serialization in, not the segment's pacing. One ACK covering
// several timed packets (coalesced) yields one sample, the latest's: the
// earlier ones' would count the wait. A packet sent again voids the
// timed packets at or after its PSN (Karn's rule: the ACK could answer
// either copy, and later PSNs' ACKs wait for it), so losses give no
// samples rather than inflated ones. A QP waits for at most 8 timed
// packets; a segment end with none free is not timed (counted).
//
// Algorithm 1, per sample new_rtt:
//
//	new_rtt_diff = new_rtt − prev_rtt; prev_rtt = new_rtt
//	rtt_diff = (1 − α)·rtt_diff + α·new_rtt_diff
//	g = rtt_diff / minRTT
//	new_rtt < T_low:  rate += δ
//	new_rtt > T_high: rate ×= 1 − β·(1 − T_high/new_rtt)
//	g ≤ 0:            rate += N·δ, N = HAIFactor after HAIThreshold
//	                  negative gradients in a row, else 1
//	g > 0:            rate ×= 1 − β·g
//
// bounded by MinRate and the line rate. The first sample's difference is
// 0 (prev_rtt starts at it, as the authors' published code snippet
// does). The HAI count is of completions whose g, the smoothed and
// normalised gradient the algorithm tests, was negative, the current one
// included, as the paper words it ("gradient<0 for five completion
// events"); the authors' snippet counts raw differences, ns-3's model
// (HPCC's rdma-hw.cc) counts increase events of any kind. ns-3 also
// updates the rate once per round trip and steps by its DCQCN rates (5
// and 50 Mb/s); we update on every completion event with δ, as the paper.
//
//	parameter       default   source
//	T_low           50 µs     paper; ns-3 TimelyTLow; the authors'
//	                          snippet for 64 KB segments
//	T_high          500 µs    paper; ns-3 TimelyTHigh
//	δ               10 Mb/s   paper; the snippet (for 10 Gb/s)
//	β               0.8       paper; ns-3 TimelyBeta; the snippet
//	α               0.875     paper; ns-3 TimelyAlpha
//	HAI             5 after 5 paper (N = 5 after five completions);
//	                          the snippet's HAI_Thresh
//	minRTT          20 µs     ns-3 TimelyMinRtt (the paper and the
//	                          snippet: the network's fixed minimum RTT)
//	segment         16 KiB    the paper's 16–64 KB, low end: more
//	                          samples at software rates
//	min rate        100 Mb/s  ns-3 MinRate (the paper names none)
//
// "ns-3" is the HPCC repository's model (simulation/src/point-to-point/
// model/rdma-hw.cc), "the snippet" the code the TIMELY authors published
// (timely-code-snippet.cc).
// The IRN seed states no value of its own (§4.1 defers to the papers);
// what it does state — flows start at the line rate — NewTimely does.
// The authors' later code snippet recommends α 0.02 and T_high 1 ms and
// scales each step by the time since the last update over minRTT; those
// are not the paper's Algorithm 1 and are not used.
//
// TIMELY does not pair with dcp: DCP's responder acknowledges whole
// messages (seed 002 §4.5), so a segment's ACK waits for the rest of its
// message. nic/stack refuses the pair (stack.ErrPairing). READs are
// timed by their requests and the first response that moves Una; READ
// responses, which nothing acknowledges, are paced at the responder's
// rate, which no sample moves.
//
// Counters (TimelyStats): samples by region (below T_low, above T_high,
// gradient increase, HAI, gradient cut), timed packets, and those not
// sampled (no free slot, Karn, coalesced), the lowest and highest RTT.
// Summary is DCQCN's RateSummary. TestTimelyDifferential checks Timely
// against an event-by-event reference written from the algorithm above
// (a slice of timed packets, float64 µs) on random send, resend and ACK
// sequences; TestTimelyAlgorithm walks a hand-computed sequence.
//
//	t, err := cc.NewTimely(25e9, cc.DefaultTimelyConfig())
//	...
//	nic.Config{..., CC: t}
//
// # HPCC
//
// HPCC is Li et al., "HPCC: High Precision Congestion Control" (SIGCOMM
// 2019), Algorithm 1, in the rate form of its authors' ns-3 model
// (alibaba-edu/High-Precision-Congestion-Control, simulation/src/point-
// to-point/model/rdma-hw.cc, UpdateRateHp and FastReactHp). The signal is
// in-band telemetry (INT) that the switches on the path stamp into the
// requests (tor/inband, tord's int: section; the tail format is in
// rocev2/int.go): per hop, its clock ts, the bytes queued qlen, the
// bytes sent tx and the line rate B. The receiver echoes the records in
// its ACK (every endpoint does, nic.INTSampler); HPCC reads them there.
// No CNPs, no ECN (CNP and Marked do nothing).
//
// Per ACK with INT (NewAck), with T the base RTT and the last records of
// each hop kept per QP:
//
//	for each hop i:  τ_i = ts − ts'; txRate = (tx − tx')/τ_i
//	                 u_i = min(qlen, qlen')/(B·T) + txRate/B
//	u, τ = the largest u_i and its τ_i;  τ = min(τ, T)
//	U = (1 − τ/T)·U + (τ/T)·u                        (MeasureInflight)
//	U ≥ η or stage ≥ maxStage:  R = Rc/(U/η) + W_AI/T; stage' = 0
//	otherwise:                  R = Rc + W_AI/T;       stage' = stage+1
//	if the ACK passes lastUpdateSeq (a new round trip):
//	    Rc = R; stage = stage'; lastUpdateSeq = snd_nxt
//
// bounded by MinRate and the line rate. That is the paper's window
// update (W = Wc/(U/η) + W_AI, R = W/T) divided by T; TestHPCCDifferential
// checks it against a reference written in windows. As in ns-3, every
// ACK updates the rate ("fast react", FastReact) but only the first ACK
// of a round trip moves the reference Rc; U and the kept records move
// on every ACK; the first ACK only keeps its records. An ACK whose hop
// count differs from the last (a new path) restarts the records
// (PathChange); one in which no hop's clock moved changes nothing
// (Stale). A hop whose τ is longer than T counts as T, so an idle spell
// does not let one sample replace U.
//
// The window. The paper limits each QP's bytes in flight to W as well
// as pacing at W/T, and so do the ns-3 runs (has_win, var_win: the base
// BDP scaled by R/line). With Window HPCC does too: a QP whose
// unacknowledged packets reach R·T bytes (at least one packet) waits,
// looking again every T/8 (the endpoint wakes a QP the CC parked by
// timer, not by ACK), and the packets of the window's second half ask
// for an ACK (Probe), since the responder coalesces ACKs. T must then
// be the fabric's largest base round trip, as ns-3 takes it, or the
// window holds every flow below its rate. Off by default: rocetor's T
// default (10 µs) is not derived from a topology, and without the
// window only the rate paces, so a QP's first round trip at the line
// rate is bounded only by the transport's window (TestHPCCWindow,
// tor/fabric: an 8-to-1 incast into 256 KiB drops 1,895 packets that
// way, none with the window). The records
// come from switches that stamp as a packet is queued, not as it leaves
// (tor/inband's package doc). ns-3 acknowledges every packet; gbn
// acknowledges every 16th (and the last of each message), so HPCC sees
// one echo per ACK, the records of the latest request it covers.
//
//	parameter      default            source
//	η              0.95               paper; ns-3 run.py utgt 95
//	maxStage       5                  paper (ns-3 run.py's default
//	                                  mi is 0: every update multiplicative)
//	W_AI/T         line ÷ 2500        ns-3 run.py hp: 10 Mb/s per 25 Gb/s
//	                                  (4 Mb/s at 10 Gb/s, 40 at 100)
//	T              10 µs              set it to the fabric's base RTT
//	INT records    5                  ns-3 IntHeader::maxHop
//	fast react     on                 ns-3 run.py hp (FAST_REACT 1)
//	min rate       100 Mb/s           ns-3 config.txt MIN_RATE
//	window         off                ns-3 run.py has_win 1, var_win 1
//
// Every request carries an INT request tail of Hops records (INTHops);
// it costs 4 + 16·Hops bytes per frame. Counters (HPCCStats): echoes,
// full and fast updates, multiplicative and additive ones, path changes
// and stale echoes. Summary is DCQCN's RateSummary. TestHPCCAlgorithm
// walks a hand-computed INT sequence; TestHPCCEndpoint and the
// simulator's TestHPCCIncast run it end to end.
//
//	h, err := cc.NewHPCC(100e9, cc.DefaultHPCCConfig())
//	...
//	nic.Config{..., CC: h}
//
// Example: DCQCN on a 25 Gb/s port with the paper's timer and alpha
// period:
//
//	c := cc.DefaultDCQCNConfig()
//	c.RPGTimeReset, c.DCETCPRTT = 55, 55
//	d, err := cc.NewDCQCN(25e9, c)
//	...
//	nic.Config{..., CC: d}
package cc
