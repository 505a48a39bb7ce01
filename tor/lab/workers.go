package lab

import (
	"strconv"
	"strings"
)

// Several workers per tord (--workers N). tord runs a worker per rx
// queue and opens a socket on queue w of every port for worker w, so
// the switch end of every link gets N rx queues. A veth delivers a
// frame on the peer's rx queue of the tx queue it left by, and a veth's
// XDP program attaches only while it has as many rx queues as its peer
// has tx queues. Hence (netns.SetupCommands sizes the veths so):
//
//   - between switches both ends get N queues each way: worker w's
//     frames reach the peer's worker w;
//   - on a host link the switch end gets N rx queues but one tx queue,
//     and the host end one of each, where roceperf's endpoint has its
//     only socket (nic/host refuses more rx queues). A worker w > 0
//     must then never transmit toward a host: its frames would leave
//     by a queue the host has no XDP for. With a handoff (netrt, trim,
//     llr) a host port's egress belongs to worker i mod N, i its index
//     in tord's ports (tor/pipeline.Owners, which deals the links to
//     other switches round the workers apart), so tordPorts puts every
//     host port at an index that is a multiple of N. Without a handoff a worker transmits what it received, and
//     worker w > 0 receives no RoCEv2: hosts send by queue 0 and the
//     switches' workers w > 0 send nothing.
//
// Hosts sending by queue 0, the other workers see RoCEv2 only where a
// flow's owner (the hash of its pair of addresses,
// tor/pipeline.PairOwner) or a link's (pipeline.Owners) is theirs: the
// frames are handed to it and back.

// NumWorkers is the number of workers every tord runs: 1 unless set, as in
// a state file written before the option.
func (o *Options) NumWorkers() int { return max(o.Workers, 1) }

// maxWorkers bounds --workers: tord takes up to 64, but a testbed's
// switches share a few CPUs, and each worker is a polling thread.
const maxWorkers = 8

// validateWorkers checks --workers alone; checkWorkers checks it
// against the topology.
func (o *Options) validateWorkers() error {
	if o.Workers < 0 || o.Workers > maxWorkers {
		return Usagef("--workers %d: want 1 to %d", o.Workers, maxWorkers)
	}
	return nil
}

// tordPorts returns a switch's tord ports: its interfaces in link
// order, except that with more than one worker its host ports take the
// indexes 0, N, 2N, …, so that worker 0 owns their egress, and its
// switch ports fill the rest in order. ok is false when the switch has
// too many host ports for that.
func (p *Plan) tordPorts(node string) (ports []string, ok bool) {
	all := p.Ports(node)
	n := p.Options.NumWorkers()
	if n == 1 {
		return all, true
	}
	sw := map[string]bool{}
	for _, s := range p.switchPorts(node) {
		sw[s] = true
	}
	var hosts, others []string
	for _, port := range all {
		if sw[port] {
			others = append(others, port)
		} else {
			hosts = append(hosts, port)
		}
	}
	for i := range all {
		if i%n == 0 && len(hosts) > 0 {
			ports, hosts = append(ports, hosts[0]), hosts[1:]
		} else if len(others) > 0 {
			ports, others = append(ports, others[0]), others[1:]
		} else {
			return nil, false
		}
	}
	return ports, len(hosts) == 0
}

// checkWorkers refuses --workers N on a plan where some switch's host
// port could not belong to worker 0.
func (p *Plan) checkWorkers() error {
	n := p.Options.NumWorkers()
	for _, sw := range p.Switches() {
		if _, ok := p.tordPorts(sw.Name); !ok {
			return Usagef("--workers %d: %s has %d ports, %d toward hosts; each host port needs its own worker-0 index (0, %d, …) so that worker 0 sends to it by the one queue the host's endpoint reads: fewer senders or receivers, or fewer workers",
				n, sw.Name, len(p.Ports(sw.Name)), len(p.Ports(sw.Name))-len(p.switchPorts(sw.Name)), n)
		}
	}
	return nil
}

// DescribeWorkers is the testbed description's note on workers.
func (p *Plan) DescribeWorkers() string {
	n := p.Options.NumWorkers()
	if n == 1 {
		return ""
	}
	var parts []string
	for _, sw := range p.Switches() {
		ports, _ := p.tordPorts(sw.Name)
		parts = append(parts, sw.Name+" ["+strings.Join(ports, ",")+"]")
	}
	return strconv.Itoa(n) + " workers; tord ports " + strings.Join(parts, " ")
}
