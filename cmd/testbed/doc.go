// Command testbed builds rocetor testbeds out of network namespaces and
// veth pairs, with a tord on every switch, and runs experiments on them.
//
//	testbed up chain|dumbbell|multipath|link [flags]   build a topology and leave it up
//	testbed status [--json]                            what is up: namespaces, tord pids, metrics
//	testbed metrics [--prefix P] NODE [FILTER]          a switch's nonzero rocetor_ metrics
//	testbed down [--prefix P]                           remove testbeds, also after a crash
//	testbed run EXPERIMENT [flags]                      bring up, measure, write results, remove
//	testbed list                                        the experiments
//
// Namespaces are named PREFIX+NODE (rtb-chain-tor1); every testbed's state
// is a JSON file under /run/rocetor-testbed. docs/testbed.md describes the
// topologies, their addresses and the experiments. Needs root.
//
// The command parses flags; the experiments, their results and the
// testbeds themselves are package tor/lab's.
package main
