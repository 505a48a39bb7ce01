// Package fabric builds a simulated RoCEv2 fabric out of rocetor's own
// code and runs workloads over it: every switch is a dataplane.Worker
// with the pipeline tord builds from the same YAML (tor/pipeline: trust,
// fwd, netrt, trim, llr, impair on the wire, ECN marking, the egress
// queues, DRR and PFC), every host a nic.Endpoint with its transport
// (gbn, irn, fasr, dcp) and congestion control (fixed, DCQCN) posting
// the verbs roceperf posts, all stepped by dataplane/sim over virtual
// links.
//
// Topologies are tor/topo's, the lab's one description of a shape: the
// testbed's chain, dumbbell, multipath and link with the testbed's node
// names (h1…, tor1, core or core1…, tor2), leaf-spine with any
// oversubscription, and k-ary fat trees up to k = 16 (1,024 hosts),
// with link rates and delays per tier. Addresses
// follow the topology: the hosts of the i-th ToR are 10.i/24 (.1, .2, …),
// each switch has an address of its own (11.0.0.0/8) that its neighbours
// route to. Routes go into tor/fwd's FIB directly, with no netlink: a /32
// per attached host, and for every other ToR's /24 all the equal-cost
// next hops of the shortest paths, so the multipath mode of the switch
// configuration (ecmp, spray, adaptive) spreads over them. Each switch
// hashes with a seed of its own, as operators seed each tier.
//
// The switch YAML is tord's configuration file without ports; in port
// lists "fabric", "hosts" and "all" stand for the switch's ports of each
// kind, so one file configures every switch:
//
//	ecn: {}
//	netrt: {fabric: [fabric]}
//	impair:
//	  rules: [{port: fabric, direction: egress, loss: 0.001}]
//
// A host port in llr.ports protects the host's link at both ends: the
// host's NIC runs tor/llr's Stage and Port at its end, taking its ToR's
// llr section, as an llr-capable NIC or a shim on its port would
// (hostllr.go, beyond Protego, whose ends are switches: seed 003 §3,
// §5). Its counters are Result.HostStages.
//
// The simulator sets what has no meaning without a kernel (one worker,
// a small XDP ring, no listeners), derives each switch's impairment and
// ECN seeds from the run's seed and the switch's index, and sizes its
// frame memory as tord's UMEM would be for full queues.
//
// A run's Result keeps a record of every flow (FlowRecord: its post,
// FCT, ideal FCT, addresses and ports, the retransmissions and timeouts
// its sender attributed to it, its path); its statistics are computed
// from the records (Summarize: mean and nearest-rank percentiles of FCT
// and slowdown per size bin, short and long, after a warm-up), and
// WriteFlows writes them as the ns-3 RDMA simulator's fct.txt columns
// and rocetor's, which ReadFlows reads back.
//
// Stalls (ParseStalls, Stalls.Apply) take switches or hosts off their
// CPU for pauses drawn at a rate from the run's seed, as a software
// switch on shared CPUs is: "tor2:1ms/50ms" (torsim --stall).
// Options.QPCache stalls a host the same way for the QP contexts its
// NIC fetches (nic.QPCache: fasr-scale's --qpc-cache).
//
// Options.Threads cuts the network into partitions (parts.go: the ToRs
// in runs of equal host counts, the rest with their neighbours), each
// simulated on a goroutine of its own in windows of the smallest delay
// between two (dataplane/sim, "Many cores"); the flow posting and the
// sampler run between windows (Network.Global). The result is the same
// for any Threads; what could make it differ is refused (Run).
//
// A Network is not safe for concurrent use; one goroutine builds and
// runs it (and, with Threads, the goroutines Run starts).
package fabric
