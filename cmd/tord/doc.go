// Command tord is rocetor's switch daemon: it attaches to the given
// interfaces with an XDP program and AF_XDP sockets, forwards frames in
// poll-mode workers by the routes and neighbours of the kernel it runs
// beside, queues them per egress port like a switch MMU, and exports its
// counters to Prometheus (the switch's families are tor/telemetry's).
//
//	tord --ports eth1,eth2 [--config tord.yaml] [--workers N] [--poll adaptive]
//
// Flags win over the file. SIGINT and SIGTERM stop it cleanly: workers
// stop, XDP programs are detached, sockets and UMEMs freed.
package main
