package netns

import (
	"strconv"
	"strings"

	"rocetor/tor/lab"
)

// Command is one command line the plan runs.
type Command []string

func (c Command) String() string { return strings.Join(c, " ") }

// SetupCommands returns, in order, the commands that build the plan's
// namespaces, links, addresses and routes (not tord). Every one names
// its namespace: none touches the host's own interfaces.
func SetupCommands(p *lab.Plan) []Command {
	var cmds []Command
	for _, n := range p.Nodes {
		cmds = append(cmds, Command{"ip", "netns", "add", n.Netns})
	}
	for _, n := range p.Nodes {
		cmds = append(cmds, Command{"ip", "-n", n.Netns, "link", "set", "lo", "up"})
		// No duplicate address detection on the interfaces to come:
		// while a link-local address is tentative the kernel sends no
		// neighbour solicitation for tord's managed entries. Switches
		// leave forwarding to tord.
		s := Command{"ip", "netns", "exec", n.Netns, "sysctl", "-qw",
			"net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0"}
		if n.Kind == lab.SwitchNode {
			s = append(s, "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0")
		}
		cmds = append(cmds, s)
	}
	ns := func(node string) string { return p.Node(node).Netns }
	for _, l := range p.Links {
		// One queue each way on both ends by default: tord runs one
		// worker, which owns queue 0 of every port, and roceperf's
		// endpoint wants a single-queue interface (the kernel's
		// default for a veth is a queue per CPU). With --workers a
		// switch's end has an rx queue per worker (tor/lab/workers.go).
		rxa, txa := queues(p, l, l.A)
		rxb, txb := queues(p, l, l.B)
		cmds = append(cmds, Command{"ip", "-n", ns(l.A.Node), "link", "add", l.A.Iface, "numtxqueues", txa, "numrxqueues", rxa,
			"type", "veth", "peer", "name", l.B.Iface, "numtxqueues", txb, "numrxqueues", rxb, "netns", ns(l.B.Node)})
		for _, e := range []lab.End{l.A, l.B} {
			cmds = append(cmds, Command{"ip", "-n", ns(e.Node), "addr", "add", e.V4.String(), "dev", e.Iface})
			if e.V6.IsValid() {
				cmds = append(cmds, Command{"ip", "-n", ns(e.Node), "addr", "add", e.V6.String(), "dev", e.Iface, "nodad"})
			}
			cmds = append(cmds, Command{"ip", "-n", ns(e.Node), "link", "set", e.Iface, "up"})
			if p.Node(e.Node).Kind == lab.HostNode {
				// The host's TCP/UDP checksums would otherwise be left
				// to a device (CHECKSUM_PARTIAL) that tord, forwarding
				// from userspace, is not.
				cmds = append(cmds, Command{"ip", "netns", "exec", ns(e.Node), "ethtool", "-K", e.Iface, "tx", "off"})
			}
		}
	}
	for _, r := range p.Routes {
		c := Command{"ip", "-n", ns(r.Node)}
		if r.Dst.Addr().Is6() {
			c = append(c, "-6")
		}
		dst := r.Dst.String()
		if r.Dst.Bits() == 0 {
			dst = "default"
		}
		c = append(c, "route", "add", dst)
		if len(r.NextHops) == 1 {
			c = append(c, "via", r.NextHops[0].Via.String(), "dev", r.NextHops[0].Dev)
		} else {
			for _, h := range r.NextHops {
				c = append(c, "nexthop", "via", h.Via.String(), "dev", h.Dev)
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// queues returns the rx and tx queues of end e of link l: with N
// workers N each way between switches, N rx and one tx at a switch's end
// of a host link, one each at a host's (tor/lab/workers.go says why).
func queues(p *lab.Plan, l lab.Link, e lab.End) (rx, tx string) {
	if p.Node(e.Node).Kind != lab.SwitchNode {
		return "1", "1"
	}
	n := strconv.Itoa(p.Options.NumWorkers())
	if p.Node(l.A.Node).Kind != lab.SwitchNode || p.Node(l.B.Node).Kind != lab.SwitchNode {
		return n, "1"
	}
	return n, n
}
