// Package pipeline turns a switch configuration into the pipelines its
// workers run: the one place that does, shared by tord (over AF_XDP
// ports) and the fabric simulator and tests (over in-memory ports).
//
// Config is tord's YAML configuration (docs/operations.md lists every
// field, its unit and default), with its validation; Config.Marshal
// writes one as an operator would (units spelt out, defaults left out),
// which ParseConfig reads back equal, so a program that makes switch
// configurations (the lab's testbed and simulator) makes Configs, not a
// YAML of its own. NewPlan derives
// what the workers of one switch share from a validated Config (the
// stage configurations, the impairment control, the FIB the forwarding
// stages read); Plan.Build assembles one worker: the stages in the order
// the design fixes,
//
//	trust → fwd → netrt (SrcToR, DstToR) → trim → llr
//
// the egress queues of every port (the qos section's traffic classes,
// queue limits, the shaper's share of the link rate, trimming's WRR, ECN
// marking), and the ports wrapped for
// the wire (impair, outermost on the socket) and the link (llr's
// receiver, above impair). Whatever the ports are, AF_XDP sockets or
// dataplane.MemPorts, the worker and its stages are the same code built
// the same way.
//
// With more than one worker and netrt, trim or llr on (Config.Handoff),
// Owners divides flows, port egresses and llr links among the workers and
// Plan.BuildHanded wires each worker to the others through a
// dataplane.Handoff: the flow's owner runs trust, fwd and NetRT, the
// egress port's owner trimming, llr and the queues, and every port keeps
// its rate, queue limit, threshold and marking whole — but for the
// shared ports (Config.SharedPorts: no egress state of any stage), on
// which every worker queues and sends its own share, as without a
// handoff. Plain forwarding hands nothing: each worker shapes its share
// of every port.
//
// Traffic classes (qos.go) are a layout and a table, nothing on the
// packet path of their own: Config.Layout is DefaultEgress with the
// classes' queues (strict or DWRR levels, byte budgets, the lossless
// classes as PFC priorities), and fwd's DSCP → queue table is the
// composition of DSCP_TO_TC_MAP and TC_TO_QUEUE_MAP, one array index a
// packet as before.
//
// A Config is not safe for concurrent mutation; a Plan is read-only
// once built and may build many workers, each owned by one goroutine.
package pipeline
