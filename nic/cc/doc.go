// Package cc holds the congestion controls of the software RNIC (the
// nic.CC interface): Fixed, a fixed-rate pacer, and DCQCN. Both pace
// each QP with a token bucket on top of the port's shaper, as a NIC's
// per-QP rate limiter does, and both run under every transport — gbn,
// irn, fasr, dcp: congestion control decides when a QP may send, loss
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
// Example: DCQCN on a 25 Gb/s port with the paper's timer and alpha
// period:
//
//	c := cc.DefaultDCQCNConfig()
//	c.RPGTimeReset, c.DCETCPRTT = 55, 55
//	d, err := cc.NewDCQCN(25e9, c)
//	...
//	nic.Config{..., CC: d}
package cc
