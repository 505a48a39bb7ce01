// Package sim is a deterministic discrete-event engine for running
// rocetor's own dataplane — dataplane.Workers with the stages tord
// builds, nic endpoints with their transports — over virtual time and
// virtual links, at the scale of a fabric.
//
// It follows htsim (Broadcom/csg-htsim, sim/eventlist.h, sim/pipe.cpp)
// where htsim is fast: time is an integer count of picoseconds; the
// event list holds one entry per active object (a link direction with
// frames in flight, a node with work due), never one per packet, and an
// object's entry moves when its next time changes (Sim.Wake keeps the
// earlier); a link direction schedules only its head frame, as an htsim
// pipe does; a frame in flight takes a frame of the receiving worker's
// Mem (as a NIC DMAs it into a UMEM frame taken from a free list), so
// the steady state allocates nothing. When the two ends' memories are
// ranges of one area (dataplane.NewMemAt) the frame is not copied: the
// receiver takes it and gives the sender the free frame in exchange,
// each memory counting as if it had been copied. Events at the
// same time fire in the order of their objects' ids, so a run depends
// only on its inputs and seeds.
//
// What it models, and how ns-3's and htsim's conventions map here:
//
//   - A Port is a dataplane.Port whose transmit completes at
//     serialization time: it takes one frame when the wire is free and
//     is busy for (frame + Overhead) × 8 / rate (Overhead 24 B: preamble,
//     start delimiter, FCS and inter-frame gap, as ns-3's
//     PointToPointNetDevice counts none of them and htsim counts the
//     frame only — set Overhead 0 to compare with either). So the
//     queues build where they build in a switch, in the worker's egress
//     (dataplane.Egress: byte limits, strict priority and DRR, PFC,
//     ECN marking), and every stage reads their real depth.
//   - A link direction delivers a frame Delay after its last bit left,
//     into the receiving port's bounded receive ring (a frame that finds
//     it full is lost and counted, as a NIC's rx ring overflows). A
//     frame of the receiver's Mem is taken as the frame leaves, so the
//     frames in flight toward a node take frames of its Mem; a frame
//     that finds none free is lost and counted (PortStats.RxNoFrame).
//   - PFC needs nothing of its own: a worker's PFC frame crosses the
//     link like any frame and the peer worker pauses its egress
//     (dataplane.Worker).
//   - Impairment on the wire is tor/impair's, wrapped on the sending
//     port as tord wraps its sockets (see tor/fabric).
//   - A Node steps its worker (dataplane.Worker.Step) at the times its
//     worker says it has work (dataplane.Worker.Next) and when its ports
//     free up or receive: idle time is skipped, never polled. The
//     worker's clock is the engine's in nanoseconds (picoseconds / 1000);
//     ports serialize in picoseconds.
//
// # Many cores: partitions in windows (Group)
//
// One run can use several cores by conservative parallel discrete-event
// simulation (Chandy and Misra's, in the synchronous form of windows of
// a fixed lookahead; htsim has none, ns-3's MPI simulator is this
// design over processes). What is cut, what is exchanged, and why the
// result is the very one a single simulation gives:
//
//   - Partitions. tor/fabric cuts the topology into as many partitions
//     as threads: the ToRs in runs of equal host counts (a fat tree's
//     pods, a leaf-spine's racks, whole), each host with its ToR, every
//     other switch with the partition most of its neighbours are in (an
//     aggregation switch with its pod), a tie to the one with the fewest
//     ports (the cores, spread). Each partition is a Sim of its own
//     (Sim.Part): its own event list and clock, on its own goroutine,
//     its nodes' memories and ports touched by it alone. The
//     partitions share one id space, so an actor's id is the one a
//     single simulation would give it, and events at one time keep
//     their order within a partition.
//   - Lookahead. A link direction's events are arrivals, so it lives
//     in its receiver's partition. A frame a node sends at t arrives at
//     t + serialization + delay at the earliest, so partitions cannot
//     affect each other sooner than the smallest delay of a link
//     between two: the lookahead L. A window [W, W+L) — W the earliest
//     event anywhere — is run by every partition at once, each firing
//     its events before W+L; then they meet (a barrier: Group.Run
//     returns when all have).
//   - Exchange. A frame put on a link to another partition is copied
//     out of the sender's memory into that link direction's exchange
//     for the window (two buffers, by window parity, so the receiver
//     drains one while the sender fills the other) and the sender's
//     frame is freed at once. At the start of the next window the
//     receiver takes each into a frame of its own memory and puts it in
//     flight, due when it was due: link by link in id order, each
//     link's frames in the order sent, so the order does not depend on
//     the goroutines. No frame is traded across goroutines (the
//     zero-copy trade is for links within a partition). An exchange
//     holds at most what its wire carries in a window, rate × L, and
//     reuses its room, made that large at its first frame (grown from
//     nothing, what it outgrew was garbage the collector left resident).
//   - What differs, and what guards it. One simulation takes the
//     receiver's frame as the frame leaves; a partition takes it at the
//     end of the window, up to L later. The memories' counts agree at
//     every window's end and at the run's (Group.Flush); what could
//     differ is a frame that found the receiver's memory empty,
//     which the budgets tor/fabric sizes the memories by (rings, queues
//     and rate × delay of every link toward the node) leave for rare
//     workloads: tor/fabric refuses the result of a run on several
//     partitions in which a frame between partitions found no free
//     frame (Group.CrossNoFrame), rather than give one that might
//     differ. (A worker's own allocation from a memory toward which
//     frames were crossing, failing in one run and not the other, is
//     not detected: it would take a memory with no free frame at all.)
//   - Global. What reads or writes many nodes at once — tor/fabric's
//     flow posting and its sampler — is a partition of its own, Global,
//     whose actors are added last (their ids are the largest). A window
//     ends just after Global's next event, which then fires between
//     windows, on one goroutine, after every partition's events of its
//     time, as its ids say; the partitions' clocks are set to its time
//     (Group.Advance), so a request it posts to a host reads that time,
//     and the host it wakes fires at that time in the next window.
//   - The end. A run ends at the first event after its limit (fired
//     alone, StepFirst), when the events run out, or after the event
//     that completes its last flow. For the last, once every flow is
//     posted, the partitions that have flows to complete run the window
//     first, each pausing at the event that completes its last; if
//     that completed every flow, the others have not run past it, and
//     Group.Stop fires what one simulation would have fired before it
//     — every event of an earlier time, then those of its time merged
//     by id as one event list would have popped them, the paused
//     partitions' already fired taking their turns — and no more. (The
//     partitions that finished their flows wait for the others then:
//     the tail of a run is less parallel.)
//   - What a parallel run refuses (tor/fabric): a flow that starts
//     when another completes, and SEND (which posts a receive at the
//     destination as a queued flow is submitted): both act on another
//     partition at the same time, with no lookahead.
//
// Group.Parallelism counts, per window, the most events one partition
// fired, and divides every event by their sum: the speed-up the cut
// allows if every event cost alike and a barrier nothing.
//
// Nothing else in the package is safe for concurrent use: one goroutine
// runs a Sim and everything attached to it.
package sim
