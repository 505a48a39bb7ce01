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
// Nothing in the package is safe for concurrent use: one goroutine runs
// a Sim and everything attached to it.
package sim
