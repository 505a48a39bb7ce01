// Package perf is roceperf's library: a perftest-style client and
// server of RoCEv2 runs over rocetor's software RNIC, with everything
// but the command line — the control protocol, the runs, the reports
// and the devices they run on. cmd/roceperf parses its flags into
// ClientOptions or ServerOptions and calls RunClient or Serve; another
// program (a testbed, a test) can do the same without a command line.
//
// # Runs
//
// A run is one TCP connection over which the client and the server
// exchange their QPs and memory regions (proto.go: hello, accept,
// progress, done, result, one JSON object a line; docs/roceperf.md
// spells it byte by byte), then the client moves its messages with RDMA
// WRITE, SEND or READ, spread round robin over its QPs with up to Depth
// in flight each (client.go, post.go, sender.go), or ping-pongs one at a
// time in a latency test (lat.go, serverlat.go). Every message's payload
// is a pattern of its number (pattern.go), checked end to end: the
// server checks what WRITE and SEND placed (serverrun.go), the client
// what READ returned. A bidirectional run (bidir.go) sends the same
// messages back at once. The server serves clients in rounds (round.go):
// up to ServerOptions.Clients at once on one endpoint, each with its own
// QPs and region.
//
// Both ends build the run's transport and congestion control by name
// through nic/stack, from the client's hello: they run the same ones.
//
// # Reports
//
// A client run's result is a Report (report.go): perftest's table
// (perftest.go) or one JSON object whose names testbed automation
// parses; the server prints a ServerReport per run. Both carry the
// endpoint's Counters: packets, recovery, congestion (cc.go), SR state,
// and the transport's own (DCP, IRN, FaSR). With PcapOptions a run
// captures what its endpoint sent and received (pcap.go); with
// ServerOptions.Metrics the server serves Prometheus metrics (metrics.go).
//
// # Devices
//
// A run opens its endpoint on a Device: OpenHost attaches to an
// interface through nic/host (XDP and AF_XDP; it needs root); FakeNet is
// an in-memory fabric on which whole runs — exchange, post loop,
// verification — go through in a test without root. An Opener picks one
// by interface name.
//
// RunClient and Serve keep no state between calls (several clients may
// run at once, as the tests run them on one FakeNet); a Server belongs
// to the goroutine that runs its Serve.
package perf
