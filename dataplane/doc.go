// Package dataplane is rocetor's packet engine: frame memory (Mem), ports
// (the AF_XDP XDPPort and the in-memory MemPort), poll-mode workers, the
// stage interface the switch stages implement, per-port egress queues that
// model a switch MMU, PFC pause and resume, and a timer facility.
//
// A Worker runs on one locked OS thread and owns everything it touches: its
// Mem (the UMEM of its sockets), one socket per port, its stage instances,
// its egress queues and its timers. Each loop it receives a batch of up to
// BatchSize frames per port, classifies them with rocev2, consumes MAC
// control frames (802.1Qbb PFC and 802.3x PAUSE pause this port's egress;
// on the ports WorkerConfig.RefusePFC names they are dropped as
// trust_pfc instead, a trust boundary), runs the stages in order, queues what they forward, fires due timers, and
// hands each port what its scheduler releases. Step runs one loop at a
// given time, so tests and simulators drive a worker with a clock of their
// own; Run loops in Busy, Adaptive or Interrupt mode.
//
// Egress queues have byte budgets; the scheduler serves strict-priority
// levels, deficit round robin within a level, under a token bucket at the
// link rate, and skips queues whose PFC priority is paused. DefaultEgress
// is the layout the stages expect: control, retransmit, data, idle.
//
// PFC (pfc.go, pfcwd.go): with WorkerConfig.PFC a worker pauses a port's
// peer on buffer thresholds per ingress port and lossless priority (the
// enable vector IngressPFC.Priorities), and with WorkerConfig.PFCWatchdog
// it ends pause storms and deadlocks as SONiC's pfcwd does: a priority
// paused with frames waiting and none sent for the detection time is
// stormed, its pauses ignored and its frames dropped (pfc_watchdog) or
// forwarded until no pause came for the restoration time.
//
// A queue may mark ECN (ECNProfile, DCQCN's Kmin/Kmax/Pmax as SONiC's
// WRED_PROFILE writes them): ECN-capable frames are marked CE with a
// probability that rises with the queue's instantaneous depth, decided
// at dequeue (MarkDequeue, the default, as ns-3's RDMA model) or at
// enqueue, from a PCG stream per port seeded by WorkerConfig.Seed.
// Not-ECT frames are left alone; nothing is dropped for ECN.
// Worker.SetMarking changes the profiles of a running worker. See ecn.go.
//
// With more than one worker, a Handoff connects the workers of a switch
// (VPP's handoff): frame memory is one area cut among them (SharedMems),
// a frame another worker owns — its flow (WorkerConfig.Owner), its
// egress port (PortOwner, from EgressStage on) or its link (LinkOwner,
// received through the owner's Inbox) — goes to that worker over a
// bounded single-producer ring without a copy, and a frame freed away
// from home goes back to its worker over another. A worker drains its
// rings before it polls its ports; a sleeping worker is woken by an
// eventfd. Frames already on their owner touch no ring. See handoff.go.
//
// Drops are counted by Reason; stages register their own with NewReason.
// Among them, the worker counts apart (Snapshot.HODrops) the DCP
// header-only packets (rocev2.Meta.HeaderOnly, seed 002 §4.2) it frees,
// wherever they die: no egress, a full queue, a tx ring that refused
// them (parsed again on that path, since queues keep no Meta), a stage's
// drop verdict or Discard — a software RNIC's stage included. A lost
// header-only packet costs its sender the coarse timeout (§4.5).
// Counters are plain fields the worker publishes about once a millisecond
// (Snapshot), which dataplane/metrics exports to Prometheus. Besides
// frames received, sent and dropped, the worker counts the frames it
// and its stages built (Snapshot.Built) and those that ended here as
// intended (Snapshot.Consumed: MAC control frames, Ctx.Consume), so
// that a simulator can check that every frame is accounted.
//
// Nothing here allocates, locks or logs per packet; the tests assert zero
// allocations per worker step, and BenchmarkWorkerForward reports ns/pkt.
package dataplane
