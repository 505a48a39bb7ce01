// Package lab is rocetor's experiment framework: the experiments that
// measure the switch stages end to end (netrt-loss, dcp-*, llr-*, sr-*,
// dcqcn-*, loss-sweep, demo), what they run on and what they write.
//
// An Experiment names the fabric it needs as Options (a topology and
// what every switch's tord is told), runs on an Env (a Fabric whose
// switches it scrapes and impairs, a Perf that runs roceperf transfers
// between its hosts) and appends every measurement to Results, which
// write themselves as JSON cells, a full record, Markdown and PNG plots.
// The Catalogue lists the experiments by name. Plan lays a topology out
// as data (nodes, links, addresses, routes, impair sites) and
// TordConfigs derives every switch's configuration from it.
//
// The namespace testbed (Testbed: network namespaces and veths with a
// live tord per switch, roceperf in the hosts' namespaces) is the Fabric
// and Perf that cmd/testbed runs experiments on.
//
// lab sits above the switch stages (tor/...) and the NIC (nic/...): it
// runs them as processes and reads their counters, and they never import
// it.
package lab
