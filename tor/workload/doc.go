// Package workload makes the flow lists a fabric simulation runs: flow
// sizes drawn from the published datacenter distributions (cdf/: the
// WebSearch workload of DCTCP, the DataMining workload of VL2, Facebook's
// Hadoop, each file naming its public source) with Poisson arrivals at a
// target load, as HPCC's and DCP's ns-3 simulations generate them
// (traffic_gen.py: per host, exponential gaps of mean size / (load ×
// rate)); N:1 incast, its senders from the receiver's rack, other racks
// or any host, once, periodic or at a load; NetRT's sequential incast
// (seed 000 §IV-B); permutation; all-to-all; and ring all-reduce,
// whose 2(N−1) steps each start when the chunk a host forwards has
// arrived — over every host, or in groups of hosts all at once
// (collective.go: DCP's AI workload, seed 002 §6.2, 16 groups of 16
// each running one AllReduce or AllToAll). A Spec composes generators ("poisson+incast", DCP's mixed
// workload) or lists them with start times (ReadSpecs, a JSON workload
// file). A plain text format (Write, Read) replays a given flow list.
//
// Every generator draws from the rand it is given, so a seed gives the
// same flows on every machine.
package workload
