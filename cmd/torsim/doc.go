// Command torsim runs a fabric simulation on rocetor's own code: every
// switch a dataplane.Worker with the pipeline tord builds from the same
// YAML, every host a nic endpoint with its transport and congestion
// control, over virtual links and time (tor/fabric, dataplane/sim).
//
//	torsim --topo fattree:k=4 --rate 100G --transport irn --cc dcqcn \
//	       --switch switch.yaml --workload poisson --cdf websearch --load 0.5 \
//	       --duration 2ms --seed 1 --out results/
//
// It writes result.json (same seed, same bytes) with FCT and slowdown
// statistics per size bin (--bins, --short-below, --warmup,
// --measure), result.md, PNG plots (slowdown.png, buffers.png), with
// --flows a flow file in the ns-3 RDMA simulator's fct.txt columns,
// and a progress line on stderr (simulated time, events/s, ETA) while
// it runs. --threads N runs the simulation on N cores, with the same
// results (dataplane/sim, "Many cores").
// It exits with status 1, naming the node, the account and the
// difference, when the run's frame books (fabric.Books) do not balance:
// a frame lost without a counter.
//
// --topo file:PATH reads a topology file (tor/topo: rocetor's node/link
// format or the ns-3 RDMA simulator's topology.txt). A sweep file runs
// many cells (--sweep); "torsim sweep-pack SWEEP OUT" makes it
// self-contained for a Kubernetes Job (with the files its workload
// files name), and "torsim merge OUT DIR..."
// gathers the cells' results with cross-cell plots (tor/sweep).
// "torsim run NAME" runs an experiment of the catalogue; a fabric-scale
// one splits into shards (--shard K/N --cells DIR, one process or
// Kubernetes pod each) that "torsim merge-run NAME … --cells DIR"
// gathers into the record one run writes (shard.go).
// docs/simulator.md describes the model, the flags and what is measured.
package main
