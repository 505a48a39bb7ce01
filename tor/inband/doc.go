// Package inband is the switch side of HPCC (Li et al., "HPCC: High
// Precision Congestion Control", SIGCOMM 2019): a stage that
// stamps in-band network telemetry (INT) into the RoCEv2 frames that ask
// for it, one record per hop, so the sender's RNIC (nic/cc.HPCC) learns
// each link's queue, bytes sent and rate on its path from the ACKs that
// echo them.
//
// # Stage
//
// Stage runs after fwd and every stage that picks a packet's egress port
// and queue, and before llr's sender. For every packet still marked
// Forward whose egress port stamps (Config.Ports, or every port) and
// that carries an INT request tail (rocev2.FindINT; the wire format is
// in rocev2/int.go and docs/wire-formats.md), it fills the tail's next
// record with
//
//   - ts: the worker's clock, ns;
//   - qlen: the bytes queued on the packet's egress queue ahead of it —
//     the queue's depth plus what this batch already left on it, since
//     the worker enqueues a batch only after its last stage;
//   - tx: the bytes the port's queues have sent (dequeued);
//   - rate: the port's shaper rate.
//
// HPCC's switches stamp when the packet leaves the queue (the paper; the ns-3
// model's SwitchNotifyDequeue); this stage stamps when it is queued,
// because stages run before the egress queue. The record then says what
// the packet will wait behind rather than what is left behind it when
// it goes, and ts is earlier by that wait. HPCC reads qlen through
// min(qlen, previous qlen) and tx as a rate between two records of one
// hop, both of which the enqueue point reports as well over a round
// trip; the queue-empty case, which HPCC's additive increase relies on,
// reads 0 either way.
//
// Frames without a tail, with an echo tail (a receiver's ACK) and
// non-RoCE frames pass untouched. A tail whose records are all filled
// passes unstamped (int_full: a path longer than the sender's budget,
// which HPCC's ns-3 model caps at 5 hops); a tail with the magic but a
// bad header or too short a frame passes unstamped too (int_malformed):
// INT is advice, and dropping a data packet for it would cost more than
// the advice is worth. The stage drops nothing, holds no packet, arms no
// timer and allocates nothing per packet.
//
// A port's records are right only where the worker that stamps owns the
// port's whole egress: tor/pipeline hands every port's egress to one
// worker (Config.Handoff) when int: is on and there are several.
//
// # Counters
//
// Per egress port: Stamped (records written), Full (int_full), Malformed
// (int_malformed), Echoes (echo tails seen, not stamped); exported as
// rocetor_int_stamped_total, rocetor_int_skipped_total{reason="full"|
// "malformed"} and rocetor_int_echoes_total.
//
// # Configuration
//
//	int:
//	  ports: [s1, s2]   # stamp at these egress ports; empty = all
package inband
