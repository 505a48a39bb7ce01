// Package telemetry is the Prometheus view of a switch: the collectors
// of every stage a pipeline holds, the same for tord and the simulator.
//
// A switch is its configuration and its workers' pipelines
// (tor/pipeline), whichever ports they run on: AF_XDP sockets in tord,
// in-memory ports in tests, simulated links in tor/fabric. Register
// gives a registry every rocetor_ family such a switch exports, under
// the same names, help strings and labels wherever it runs, so that an
// experiment reads the same counters from a tord's /metrics and from a
// simulated switch:
//
//   - the workers' ports, queues, drops and stages (dataplane/metrics);
//   - rocetor_trust_* (tor/trust), always;
//   - rocetor_netrt_* (tor/netrt) with a netrt: section;
//   - rocetor_llr_* (tor/llr) with an llr: section, and
//     rocetor_llr_monitor_* when the switch runs llr's corruption monitor;
//   - rocetor_trim_* (tor/trim) with a trim: section;
//   - rocetor_dcp_ho_drops_total whenever the switch parses DCP;
//   - rocetor_fwd_adaptive_choices_total with adaptive multipath;
//   - rocetor_impair_* (tor/impair) with impair rules;
//   - rocetor_qos_queue_info with a qos: section: each traffic class
//     and the queue that carries it, which makes the queue series the
//     classes'.
//
// Every series is summed over the workers and labelled by port, queue,
// reason, stage or worker, never by flow. What a process has besides a
// switch — its XDP programs, the Go runtime — is its own to register
// (cmd/tord does). docs/operations.md lists every family.
//
// # Publishing
//
// Workers and stages count in plain fields and publish a copy about once
// a millisecond of worker time; the collectors read the published copies
// at scrape time, so a scrape costs the packet path nothing. A live
// switch needs nothing more. A simulated one stops at an arbitrary
// instant: call pipeline.Pipeline.Publish on every pipeline at the end of
// the run, from the goroutine that stepped it, before gathering:
//
//	for _, pl := range pls {
//		pl.Publish(now)
//	}
//	counters, err := telemetry.Gather(telemetry.Switch{Config: &cfg, Pipelines: pls})
//	// counters[`rocetor_port_rx_packets_total{port="h1"}`]
//
// Gather's keys are those of dataplane/metrics.Parse, which reads a
// tord's /metrics: name and sorted labels.
package telemetry
