// Package lab is rocetor's experiment framework: the experiments that
// measure the switch stages end to end (netrt-loss, netrt-multipath,
// dcp-*, llr-*, sr-*, dcqcn-*, roce-tcp, loss-sweep, demo), what they
// run on and what they write. One framework, two backends: the same Experiment
// value runs on the namespace testbed (package netns below this one:
// live tord and roceperf processes, cmd/testbed) or on the fabric
// simulator.
//
// An Experiment names the fabric it needs as Options (a topology and
// what every switch's tord is told), runs on an Env (a Fabric whose
// switches it scrapes and impairs, a Perf that runs transfers between
// its hosts) and appends every measurement to Results, which write
// themselves as JSON cells, a full record, Markdown and PNG plots. A
// Backend brings up the fabric Options describe and returns the Env;
// RunExperiment runs an experiment on a backend and writes what Output
// asks. The Catalogue lists the experiments by name.
//
// Plan lays a topology out as data (nodes, links, addresses, routes,
// impair sites, the management network) and TordConfigs derives every
// switch's configuration from it, as tord's own pipeline.Config, which
// the testbed writes to the switch's file (MarshalTordConfig) and the
// simulator builds the switch from: both are pure functions of Options,
// tested without root. The nodes and links are tor/topo's shape
// (Options.Topo), kept in the plan as Plan.Topo: the one description
// of the topology both backends build, the simulator with its own
// rates and delays on the links. Transfer, Summary and PerfResult are a transfer
// and what its endpoints report, whoever runs it; Sample is one scrape
// of a switch's rocetor_ metrics.
//
// A FabricScale experiment (irn-fabric, netrt-incast, netrt-fabric,
// netrt-multipath-fabric; issue 29) is a seed's own
// fabric-scale evaluation — tens of hosts at 40 Gbit/s and more, which
// namespaces on one machine do not carry — and the simulator's alone
// (Entry.NoTestbed, the reverse of NoSim). Its cells are not transfers
// on an Env: each (scheme, parameter point, seed) is one simulation of
// tor/fabric that the experiment describes whole (topology, switch
// YAML, hosts' transport and congestion control, flows) and a backend
// that implements Simulator runs (simnet.Backend); RunExperiment hands
// such an experiment the backend instead of opening a plan. One
// description of each experiment serves its --scale paper and --scale
// ci forms; a Run keeps the simulation's summary in Run.Fabric. lab
// imports tor/fabric for these types and options, never its backends.
// A Cells backend (cells.go) splits such an experiment's cells over
// processes (torsim run --shard K/N) and replays them into the one
// record (torsim merge-run): each cell must depend on its own inputs
// alone, its Run on its own fabric.Result.
//
// lab sits above the switch stages (tor/...) and the NIC (nic/...): it
// runs them, through a backend, and reads their counters, and they never
// import it. lab does not import its backends.
package lab
