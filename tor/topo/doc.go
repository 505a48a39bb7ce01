// Package topo describes a network's shape once, for both of the lab's
// backends: nodes (hosts and switches, with their tier and their part
// in the shape) and full-duplex links with a rate and a propagation
// delay, as htsim's topology files list them. The namespace testbed
// (tor/lab, tor/lab/netns) lays its namespaces, veths, addresses and
// routes over a Topology; the fabric simulator (tor/fabric) builds its
// workers and virtual links from the same value.
//
// Shapes:
//
//	Chain(n)                 h1…hn — tor1 — core — tor2 — hn+1…h2n      (NetRT's testbed; the lab's chain is n = 1)
//	Dumbbell(s, r)           h1…hs — tor1 — tor2 — hs+1…hs+r            (one bottleneck)
//	Multipath(s, r, k)       h1…hs — tor1 — core1…corek — tor2 — …      (k parallel paths)
//	Link()                   h1 — tor1 — tor2 — h2                       (Protego's single link)
//	LeafSpine(l, s, h)       leaf0…, spine0…, hosts leafI-hJ
//	FatTree(k)               torP-I, aggP-I, core0…, hosts torP-I-hJ     (k³/4 hosts)
//
// The testbed's shapes (chain, dumbbell, multipath, link) name their
// nodes as the testbed names its namespaces: the senders first, then
// tor1, the cores, tor2 and the receivers, in that node order; their
// links are the senders' host links, the switch links (tor1–tor2, or
// tor1–core k and core k–tor2 for each core in turn), then the
// receivers' host links, each host link with the switch at its A end.
// Hosts are Sender or Receiver (Part), switches ToR or Core, and
// Bottleneck names tor1's first port toward another switch, where the
// senders' flows meet. Leaf-spine and fat tree hosts are Server, their
// switches ToR (leaves, a fat tree's tor), Spine, Agg and Core; their
// host links have the host at the A end.
//
// Parse reads a shape by name with parameters, as torsim's --topo takes
// it ("chain:hosts=2", "dumbbell:senders=4,receivers=1",
// "fattree:k=16"), and "file:PATH" or "ns3:PATH" a topology file
// (ReadFile: rocetor's node/link format, or the ns-3 RDMA simulator's
// topology.txt), whose tiers and parts are derived from each switch's
// distance to the hosts. Tiers set every link's rate and delay by its
// tier (WithTiers): host links, fabric links, a fat tree's core links.
//
// A Topology is a plain value: safe to read from several goroutines,
// not to change while others read it. Its zero value is the empty
// topology.
package topo
