// Package netns is the lab's namespace backend: rocetor testbeds built
// out of network namespaces and veth pairs on this machine, with a live
// tord per switch and roceperf in the hosts' namespaces. Needs root.
//
// Up builds a lab.Plan (SetupCommands, MgmtCommands), writes every
// switch's tord configuration, starts the tords and warms the paths up;
// Open finds a testbed that is up by its state file (under
// DefaultStateDir); Down removes one, also after a crash, by its
// namespaces' prefix. A Testbed is a lab.Fabric: it scrapes the switches'
// metrics over HTTP inside their namespaces and changes the impairment
// or the options by rewriting configurations and restarting tord. Its
// Env adds roceperf, built from the source tree (Binaries) or found in
// a folder, as the lab.Perf. Backend is the lab.Backend that
// cmd/testbed's run uses: a testbed per run, or one that is up.
//
// Besides: the management network (a veth and a /30 from the host to each
// switch), ReadStatus and Describe (testbed status), ScrapeSwitch
// (testbed metrics) and Blast, which forges malformed and hostile frames
// from a host (testbed blast).
//
// Namespaces are named PREFIX+NODE (rtb-chain-tor1); nothing here touches
// the host's own interfaces but the management network's host ends, and
// no process outside a testbed's namespaces is ever signalled.
package netns
