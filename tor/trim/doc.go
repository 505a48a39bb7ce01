// Package trim is DCP's trimming switch (seed 002, §4.2 and §5): when a
// port's data queue is over a threshold, a DCP data packet loses its
// payload and goes on as a header-only (HO) packet on the port's control
// queue, which a weighted round robin keeps lossless, so the sender
// learns of the loss within an RTT and retransmits exactly that packet
// (§4.1, §4.3; nic/dcp is the endpoint side).
//
// # Stage
//
// Stage runs after fwd (and after NetRT's stages), so each packet's
// egress port and queue are chosen. For every packet still marked
// Forward whose egress port trims (Config.Ports, or every port), by its
// DCP tag (the two low DSCP bits, docs/wire-formats.md; the classifier
// must run with Classifier.DCP so that DCP headers are parsed):
//
//  1. an HO packet (tag 11, RoCEv2) goes to the control queue, always:
//     it was trimmed upstream (fwd, with fwd.Config.DCP, has put it there
//     already; the stage counts it);
//  2. a packet fwd put on another queue than "data" (a dscp_queues
//     override) passes untouched;
//  3. if the data queue's depth plus the packet stays within Threshold,
//     the packet passes on the data queue; "depth" is
//     dataplane.Egress.Depth plus what this batch already left on that
//     queue, since the worker enqueues a batch only after its last stage;
//  4. otherwise a DCP data packet (tag 10, RoCEv2) is trimmed in place by
//     rocev2.Trim — headers up to the DCP extension header kept, tag set
//     to 11, lengths, pad count and ICRC rewritten: 66 bytes over IPv4 —
//     and goes to the control queue; a DCP ACK (tag 01) is dropped
//     (trim_ack); anything else (tag 00, or not RoCEv2 whatever its DSCP)
//     is dropped (trim_non_dcp).
//
// An HO packet keeps the ECN bits of the data packet it was (rocev2.Trim
// rewrites only the DSCP's tag bits), so a CE mark from upstream still
// reaches the receiver; the switch's own ECN marking
// (dataplane.ECNProfile) never marks an HO packet, whatever its bits:
// the trim already tells the sender of the congestion, and DCQCN would
// count it twice.
//
// A packet exactly filling the data queue to Threshold passes; one byte
// more is trimmed. Ports: any ingress; the egress fwd chose (the first
// MaxPorts, 64, ports), queue "control" or "data" of
// dataplane.DefaultEgress; a port lacking either queue does not trim.
// The stage holds no packet, arms no timer and allocates nothing per
// packet; it publishes its counters from Poll (a dataplane.Source that
// originates nothing), so they are current also when traffic stops.
//
// # The lossless control plane
//
// The control and data queues of a trimming port share one
// strict-priority level (the data queue's) under deficit round robin,
// weighted w:1 in bytes (Config.WRR, applied by tord to the trimming
// ports' egress). With N the incast degree to survive (incast_degree)
// and r the data:HO size ratio (ratio), an N−1 to 1 incast whose
// packets are all trimmed sends B·(N−1)/r into the control queue, which
// drains at B·w/(1+w), so
//
//	w = (N−1) / (r−N+1)        (seed 002 §4.2)
//
// keeps it lossless. That needs r > N−1; otherwise w is min_weight, a
// small weight §6.3 found enough in practice. r defaults to 1106/66 ≈
// 16.76: a 1024-byte DCP WRITE packet (with its DCP extension header
// and RETH, 82 bytes of headers and ICRC) over a 66-byte HO packet, so
// the default N = 8 gives w = 7/9.76 ≈ 0.72. For another MTU set
// ratio: (MTU + 82)/66 over IPv4.
//
// The weight is all §4.2 sizes: the seed gives the control queue no
// byte budget of its own. By default it has what every queue has,
// egress.queue_limit and, with a buffer section, the shared buffer's
// dynamic threshold. control_limit bounds it on the trimming ports
// (WRR sets the control queue's limit); a header-only packet past the
// bound is dropped as queue_full and counted among the header-only
// drops (rocetor_dcp_ho_drops_total), so the room at which an incast
// loses header-only packets can be found (docs/experiments.md,
// dcp-fabric's Table 5).
//
// The retransmit queue stays above both (NetRT's recovered packets are
// few and paced) and idle below; NetRT's messages, which also use the
// control queue, then share the control queue's weight.
//
// Ports that do not trim — not in Config.Ports, or switched off at run
// time (SetPort, the admin API) — and every port of a switch that only
// forwards DCP (tord's dcp: true) keep a control plane too: fwd puts HO
// packets on their control queue (fwd.Config.DCP, see tor/fwd), a
// strict-priority level above the data queue on a port without this
// WRR; a port switched off keeps its WRR, so its HO packets still share
// the data queue's level by weight rather than join its tail. The paper
// trims on every port (§4.2, §5), so it needs no such rule; here an HO
// packet trimmed upstream would otherwise meet a full data queue on a
// plain port and cost its sender the 64 ms coarse timeout (nic/dcp).
//
// # Drops
//
// Counted by the worker, labelled by reason:
//
//	trim_non_dcp  over the threshold, not DCP (tag 00, or not RoCEv2),
//	              or tagged data the classifier did not parse as DCP
//	trim_ack      over the threshold, a DCP ACK (tag 01)
//
// An HO packet the control queue has no room for is dropped by the
// queue (queue_full), and counted per queue by
// rocetor_queue_drops_total{queue="control"}: the signal that the control
// plane was not lossless (the sender then recovers by timeout, §4.5).
// The worker counts every HO packet it drops apart, wherever it dies —
// a control or data queue, the tx ring, any stage — by reason
// (dataplane.Snapshot.HODrops, exported as
// rocetor_dcp_ho_drops_total{reason}); the endpoints count theirs the
// same way (nic/dcp).
//
// # Counters
//
// Stats, per egress port, summed across workers by tord's collector:
// packets passed on the data queue; DCP data packets trimmed and the
// bytes trimming removed; HO packets put on the control queue (trimmed
// here or upstream); non-DCP and ACK drops. The egress queues count the
// WRR's service per queue (packets and bytes dequeued, drops). Snapshot
// is safe from any goroutine and refreshed every millisecond of worker
// time. tord exports, per trimming port:
//
//	rocetor_trim_trimmed_packets_total{port}
//	rocetor_trim_trimmed_bytes_total{port}
//	rocetor_trim_ho_packets_total{port}
//	rocetor_trim_dropped_total{port, class="non_dcp"|"ack"}
//	rocetor_queue_dequeued_packets_total{port, queue}   (WRR service)
//	rocetor_queue_dequeued_bytes_total{port, queue}
//	rocetor_queue_drops_total{port, queue="control"}    (lossless-control-plane failures)
//	rocetor_dcp_ho_drops_total{reason}                  (every HO packet dropped, any port, any cause)
//
// # Configuration
//
// In tord's YAML (every key optional; trim: {} trims on every port with
// the defaults):
//
//	trim:
//	  threshold: 64KiB     # data queue depth beyond which packets are trimmed
//	  incast_degree: 8     # N: an N−1 to 1 incast keeps the control queue lossless
//	  ratio: 0             # r, data:HO size; 0 = 1106/66 (1024-byte MTU, IPv4)
//	  min_weight: 0.1      # w when r ≤ N−1
//	  ports: [s2]          # trimming ports; empty = all
//
// tord turns the classifier's DCP parsing on and applies Config.WRR to
// the egress of the trimming ports. In Go:
//
//	eg, err := cfg.WRR(dataplane.DefaultEgress(rate, limit)) // the trimming ports' egress
//	st, err := trim.NewStage(cfg)                            // one per worker, after fwd
//	... Classifier: rocev2.Classifier{DCP: true}, Stages: []dataplane.Stage{fwdStage, st} ...
package trim
