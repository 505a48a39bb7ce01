package fabric

import "rocetor/tor/topo"

// Racks returns each host's rack, by host index as Build numbers hosts
// (switch by switch, each switch's hosts in link order): the index of
// its ToR among the switches that have hosts. Workloads place incast
// senders by it (workload.Spec.Racks).
func Racks(t topo.Topology) []int {
	ports := make([][]int, len(t.Nodes)) // peers of each node, in link order
	for _, l := range t.Links {
		ports[l.A] = append(ports[l.A], l.B)
		ports[l.B] = append(ports[l.B], l.A)
	}
	var out []int
	tor := 0
	for i, nd := range t.Nodes {
		if nd.Role != topo.Switch {
			continue
		}
		hosts := 0
		for _, p := range ports[i] {
			if t.Nodes[p].Role == topo.Host {
				out = append(out, tor)
				hosts++
			}
		}
		if hosts > 0 {
			tor++
		}
	}
	return out
}
