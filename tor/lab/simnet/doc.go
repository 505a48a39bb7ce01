// Package simnet is the lab's second backend: it runs an experiment of
// the lab's catalogue (tor/lab) in the fabric simulator (tor/fabric)
// instead of on network namespaces. The experiment is the same value —
// its Setup's Options, its Run, its cells, tables and plots — and so
// is every switch: the plan the testbed lays out (lab.NewPlan), each
// switch built from the tord configuration the testbed would write for
// it (lab.Plan.TordConfigs), its counters read by the metric names
// tord exports (tor/telemetry). What differs is what a simulation has
// in place of processes:
//
//   - a transfer (lab.Perf) is one simulation of the whole fabric, with
//     the transfer's messages as flows on virtual time; a round runs
//     its transfers in one simulation; switches start each empty, as
//     the testbed's do after a restart;
//   - a switch's counters (lab.Fabric.Scrape) add up over the
//     simulations, so the lab's before-and-after deltas give each
//     transfer's own;
//   - links have the plan's rate and the backend's propagation delays
//     (a veth has none; the testbed's round trip is software);
//   - a transfer's summary is what roceperf's client reports, with the
//     receiving endpoint's placed bytes as its verified bytes: the
//     simulator moves no payload to compare; its raw JSON carries the
//     congestion figures roceperf prints (CE marks, CNPs, DCQCN's
//     counters and rates, the server's under "server");
//   - a switch sampled while transfers run (lab.SeriesPerf, the
//     congestion experiments' Env.MeasureSeries) is read by an actor of
//     the simulation every interval of virtual time, by the same metric
//     names, with each sender's DCQCN rate (series.go).
//
// The n-th simulation of an experiment draws every random stream — the
// impairment, ECMP hashes, ECN marking, first PSNs — from the
// experiment's --seed and n: two runs of one cell differ as two testbed
// runs do, and the whole experiment is deterministic.
package simnet
