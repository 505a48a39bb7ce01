// Package fwd is the switch's IP forwarding stage and the control plane
// that feeds it: routes and neighbours mirrored from the kernel of the
// switch's network namespace, longest-prefix match, and three multipath
// modes (ECMP, per-packet spraying, and the queue-depth adaptive routing
// of DCP, seed 002 §5, whose packet-level load balancing the trimming
// and DCP stages assume).
//
// # Stage
//
// For every packet still marked Forward, Stage:
//
//  1. drops frames that are not IPv4 or IPv6 (not_ip);
//  2. looks the destination up in the current Table: one of the
//     switch's own addresses is dropped (local), no route or a blackhole
//     route is dropped (no_route);
//  3. picks one next hop of the route's group by its multipath mode;
//  4. resolves the next hop's neighbour — the gateway, or for a
//     connected route the destination itself — and when it is unknown
//     drops the packet (no_neighbour) and reports the address to the
//     Mirror, which asks the kernel to resolve it;
//  5. drops packets whose TTL or hop limit is 1 or less (ttl_expired);
//  6. rewrites the Ethernet source (the egress port's MAC) and
//     destination (the neighbour's), decrements the TTL with an
//     incremental IPv4 checksum update or the hop limit — both masked
//     out of the RoCE ICRC, so the ICRC stays valid — and forwards the
//     packet to the next hop's port, on the configured queue (or the
//     queue its DSCP maps to: tord's qos section fills that table with
//     its traffic classes, DSCP → class → queue; with DCP, a header-only
//     packet on the control queue, below).
//
// Ports: any ingress; egress is the port of the chosen next hop. The
// stage never holds a packet, never arms a timer and allocates nothing.
//
// Drops (counted by the worker, labelled by reason):
//
//	not_ip        not IPv4/IPv6 (ARP, LLDP: the XDP program passes those
//	              to the kernel, so one reaching a worker is misdirected)
//	local         addressed to the switch itself (likewise the kernel's)
//	no_route      no route, or a blackhole/unreachable/prohibit route,
//	              or no table published yet
//	no_neighbour  next hop not resolved yet; resolution is requested
//	ttl_expired   TTL or hop limit ≤ 1 (no ICMP time-exceeded is sent:
//	              the worker has no path back into the kernel's stack)
//
// Counters (Stats, per stage instance, summed across workers): packets
// forwarded; forwarded through multi-hop groups by mode (ECMP, Spray,
// Adaptive); adaptive packets diverted from their ECMP choice and, per
// egress port, the packets adaptive routing sent there
// (AdaptiveChoices; tord exports rocetor_fwd_adaptive_choices_total);
// neighbour misses reported and lost; table snapshots picked up.
//
// # Multipath
//
// A route with several next hops is a group. Its mode comes from the
// most specific Policy whose prefix contains the route's, else from the
// default:
//
//   - ecmp hashes source and destination address, the UDP (or TCP)
//     ports and, for RoCE, the destination QP: every packet of a flow
//     takes one path. Give each switch tier its own hash_seed. With
//     several workers that hand frames to their owners
//     (pipeline.Owners), each worker's stage hashes among the members
//     on ports it owns, where the group has some (Config.Owned): the
//     flow's owner then sends it itself, with no handoff to another
//     worker. All QPs between two hosts have one owner, so with W
//     workers they spread over that worker's share of the group, about
//     1/W of its members; flows of many host pairs still spread over
//     all of them.
//   - spray sends successive packets of the group round robin.
//   - adaptive reads the depth in bytes of the packet's egress queue on
//     each member's port (dataplane.Egress.Depth) and takes the
//     shallowest, staying on the ECMP choice unless another member's
//     queue is shorter by more than bias_bytes; ties go to the ECMP
//     choice, then to the members after it. Depths are those of the
//     worker's own egress queues plus the bytes the current batch has
//     already forwarded to them: the worker queues a batch only after
//     its last stage, and without that count a batch of one flow would
//     all go to the member that was shortest when the batch began
//     (TestAdaptiveBatch). It is decided per packet, as DCP's switch
//     does (seed 002 §5).
//
// Weighted kernel next hops (ip route … nexthop … weight w) take w slots
// of the group, so all three modes honour weights.
//
// # DCP's control plane on every port
//
// With Config.DCP (tord sets it on every switch that parses DCP: with
// trim: or dcp: true), a DCP header-only packet (tag 11, seed 002 §4.2)
// goes to Config.HOQueue, "control", on whatever port it leaves by and
// whatever queue its DSCP maps to. DCP's sender learns of a trimmed
// packet only from its HO packet (§4.1, §4.3), so losing one costs the
// coarse timeout (64 ms, nic/dcp); the paper's switches trim on every
// port, and their control queue is what keeps HO packets (§4.2). Here a
// switch may trim on some ports, switch trimming off at run time, or only
// forward DCP: on such ports the control queue is a strict-priority level
// above the data queue, so HO packets (66 bytes per trimmed packet
// upstream) pass a full, tail-dropping data queue; on a trimming port
// tor/trim shares the level with the data queue by WRR as §4.2 says.
//
// The choice is made here rather than in tor/trim because fwd runs on
// every switch and already picks the queue (dscp_queue): a DCP switch
// that does not trim needs no trimming stage for it, a port switched off
// in tor/trim keeps its control plane, and adaptive routing weighs the
// members of a group by the queue the packet will join. HO packets on
// the control queue cross a tor/llr protected port unprotected, as they
// do from a trimming port. The test is one branch on the classifier's
// Meta (rocev2.Meta.HeaderOnly); nothing allocates.
//
// # Tables and the FIB
//
// A Table is an immutable snapshot: two multibit tries (stride 8, leaf
// pushed; one load per address byte, at most 4 for IPv4), the groups,
// the neighbours (gateways resolved when the table is built; connected
// destinations looked up per packet in a map), and the local addresses.
// The control plane builds a new table for each change and publishes it
// in a FIB, an atomic pointer; each worker loads it once per batch, with
// no lock on the packet path.
//
// The trie replaced per-prefix-length hash maps after measurement
// (BenchmarkLookup on the shared 2-core AMD EPYC machine, ranges over
// several runs): 5–11 ns against 13–23 ns for a typical ToR table of 4
// prefix lengths, 5–14 ns against 200–520 ns for 1000 random prefixes of
// 25 lengths, 14–28 ns against 230–650 ns for 100 000. It costs 1 KiB
// per trie node: 4 MiB for 5000 random IPv4 prefixes. Through a whole
// worker (BenchmarkForward, best of five), the stage adds 10–40 ns per
// packet to the 85 ns of receive, classify, queue and transmit.
//
// # Kernel mirror
//
// Mirror dumps the main routing table (IPv4 and IPv6), the neighbour
// tables and the addresses of the switch's namespace, then follows
// route, neighbour, address and link notifications; changes within
// Coalesce (20 ms) make one new table. Routes are re-dumped on each
// change rather than patched, because the kernel withdraws IPv4 routes
// with their link or address without notifying. Only next hops through
// the switch's ports count (Ports maps kernel interface names to
// dataplane port indices); multipath routes become groups; routes with
// no gateway are connected. Missing neighbours are resolved with managed
// neighbour entries (ip neigh add ADDR dev PORT managed, Linux ≥ 5.16),
// which the kernel then keeps reachable on its own although no
// forwarded packet ever passes through it; on older kernels, or when
// that fails, an empty UDP datagram to the address makes the kernel
// resolve it once. Stages report misses through Misses, a lock-free
// ring that never blocks a worker.
//
// # Configuration
//
// In tord's YAML:
//
//	fwd:
//	  queue: 2                 # egress queue index ("data" in DefaultEgress)
//	  dscp_queue: {48: 0}      # DSCP 48 (CS6) to the "control" queue
//	  dcp: true                # DCP header-only packets to ho_queue (needs the classifier's DCP parsing)
//	  ho_queue: 0              # the "control" queue
//	  hash_seed: 0x5eed0001    # differs per switch tier
//	  miss_interval: 100ms     # per-address report interval to the mirror
//	  multipath:
//	    mode: ecmp             # default for groups no policy covers
//	    groups:
//	      - prefix: 10.1.0.0/16
//	        mode: adaptive
//	        bias_bytes: 3000   # stay on the ECMP path unless 3 KB worse
//	      - prefix: 10.2.0.0/16
//	        mode: spray
//
// and in Go:
//
//	fib, misses := &fwd.FIB{}, fwd.NewMisses(1024)
//	m, err := fwd.NewMirror(fwd.MirrorConfig{Ports: names, FIB: fib, Misses: misses,
//		Multipath: cfg.Multipath, Logger: log})
//	err = m.Start(ctx) // returns once the first table is published
//	st, err := fwd.NewStage(cfg, fib, misses) // one per worker
package fwd
