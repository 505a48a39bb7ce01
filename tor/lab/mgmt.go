package lab

import (
	"fmt"
	"hash/fnv"
	"net/netip"
)

// The management network (testbed up … --mgmt): what a real deployment
// scrapes tord over, a link into every switch that carries no switched
// traffic. Each switch gets a veth pair of its own between testbed's
// namespace (the host's, where Prometheus runs) and the switch's
// namespace, with a /30 out of one /24:
//
//	switch k (0, 1, … in plan order)   host end .4k+1/30   switch end .4k+2/30
//
// The switch end is named mgmt and is not one of tord's ports, so tord
// attaches no XDP program to it and mirrors no route through it (tor/fwd
// ignores routes off its ports); tord's metrics_addr is the switch end's
// address, its admin_addr stays on loopback. The only routes either side
// gets are the kernel's own for the /30: nothing sends testbed traffic
// into it, and the switch namespaces forward nothing in the kernel.
// Neither end has an IPv6 address (addrgenmode none), so the host's
// namespace gains one interface and one IPv4 /30 per switch, no more.
// Deleting the switch's namespace deletes both ends; down also removes
// a host end left behind (it is named after the namespace).

// DefaultMgmtNet is the management network's default /24: from the
// benchmarking range 198.18.0.0/15 (RFC 2544), which no real network
// routes, in its upper half, since tools that borrow the range for
// fake addresses (Clash's fake-ip) default to 198.18.0.0/16.
var DefaultMgmtNet = netip.MustParsePrefix("198.19.78.0/24")

// MgmtIface is the name of the management interface in a switch's
// namespace.
const MgmtIface = "mgmt"

// MgmtLink is one switch's management veth pair.
type MgmtLink struct {
	Node      string       `json:"node"`
	Iface     string       `json:"iface"`      // in the switch's namespace: mgmt
	Addr      netip.Prefix `json:"addr"`       // the switch end, e.g. 198.19.78.2/30
	HostIface string       `json:"host_iface"` // in testbed's namespace: rtbm + hash of the switch's namespace
	HostAddr  netip.Prefix `json:"host_addr"`  // the host end, e.g. 198.19.78.1/30
}

// MgmtHostIface names the host end of a namespace's management veth:
// unique per namespace, at most 15 bytes, and found again by down from
// the namespace's name alone.
func MgmtHostIface(netns string) string {
	h := fnv.New32a()
	h.Write([]byte(netns))
	return fmt.Sprintf("rtbm%08x", h.Sum32())
}

// mgmtFlag is --mgmt: a boolean flag (--mgmt alone: DefaultMgmtNet) that
// also takes a /24 (--mgmt=198.19.79.0/24) for a second testbed.
type mgmtFlag struct{ s *string }

func (f mgmtFlag) String() string {
	if f.s == nil {
		return ""
	}
	return *f.s
}

func (f mgmtFlag) IsBoolFlag() bool { return true }

func (f mgmtFlag) Set(v string) error {
	switch v {
	case "true":
		*f.s = DefaultMgmtNet.String()
	case "false", "":
		*f.s = ""
	default:
		p, err := netip.ParsePrefix(v)
		if err != nil || !p.Addr().Is4() || p.Bits() > 30 || p.Masked() != p {
			return fmt.Errorf("want an IPv4 network such as %s", DefaultMgmtNet)
		}
		*f.s = p.String()
	}
	return nil
}

// mgmtLinks lays out the management network over the plan's switches.
func (p *Plan) mgmtLinks() ([]MgmtLink, error) {
	if p.Options.Mgmt == "" {
		return nil, nil
	}
	mn, err := netip.ParsePrefix(p.Options.Mgmt)
	if err != nil || !mn.Addr().Is4() || mn.Bits() > 30 || mn.Masked() != mn {
		return nil, Usagef("--mgmt %q: want an IPv4 network such as %s", p.Options.Mgmt, DefaultMgmtNet)
	}
	sw := p.Switches()
	if room := (1 << (32 - mn.Bits())) / 4; len(sw) > room {
		return nil, Usagef("--mgmt %s: room for %d switches' /30s, the topology has %d", mn, room, len(sw))
	}
	base := mn.Addr().As4()
	at := func(k, n int) netip.Prefix {
		a := base
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		v += uint32(4*k + n)
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), 30)
	}
	var out []MgmtLink
	for k, n := range sw {
		out = append(out, MgmtLink{Node: n.Name, Iface: MgmtIface, Addr: at(k, 2), HostIface: MgmtHostIface(n.Netns), HostAddr: at(k, 1)})
	}
	return out, nil
}

// MgmtOf returns a switch's management link, or nil without --mgmt.
func (p *Plan) MgmtOf(node string) *MgmtLink {
	for i := range p.Mgmt {
		if p.Mgmt[i].Node == node {
			return &p.Mgmt[i]
		}
	}
	return nil
}
