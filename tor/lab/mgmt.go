package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"strings"
	"time"
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

// mgmtHostIface names the host end of a namespace's management veth:
// unique per namespace, at most 15 bytes, and found again by down from
// the namespace's name alone.
func mgmtHostIface(netns string) string {
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
		out = append(out, MgmtLink{Node: n.Name, Iface: MgmtIface, Addr: at(k, 2), HostIface: mgmtHostIface(n.Netns), HostAddr: at(k, 1)})
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

// MgmtCommands returns the commands that build the management network.
// They are the only commands testbed runs in its own namespace (the
// host's): each creates, addresses or raises one of the plan's host-end
// interfaces, and the veth's other end goes straight into the switch's
// namespace.
func (p *Plan) MgmtCommands() []Command {
	var cmds []Command
	for _, m := range p.Mgmt {
		ns := p.Node(m.Node).Netns
		cmds = append(cmds,
			Command{"ip", "link", "add", m.HostIface, "type", "veth", "peer", "name", m.Iface, "netns", ns},
			// No IPv6 link-local address on either end: the host's
			// namespace gets one IPv4 /30 per switch and nothing else.
			Command{"ip", "link", "set", "dev", m.HostIface, "addrgenmode", "none"},
			Command{"ip", "addr", "add", m.HostAddr.String(), "dev", m.HostIface},
			Command{"ip", "link", "set", "dev", m.HostIface, "up"},
			Command{"ip", "-n", ns, "link", "set", "dev", m.Iface, "addrgenmode", "none"},
			Command{"ip", "-n", ns, "addr", "add", m.Addr.String(), "dev", m.Iface},
			Command{"ip", "-n", ns, "link", "set", "dev", m.Iface, "up"},
		)
	}
	return cmds
}

// checkMgmtFree refuses a management network that overlaps another
// testbed's or any address or route of the host's namespace (other than
// its default route): testbed must not shadow the host's own networks.
func checkMgmtFree(ctx context.Context, plan *Plan, others []*State) error {
	if plan.Options.Mgmt == "" {
		return nil
	}
	mine := netip.MustParsePrefix(plan.Options.Mgmt)
	for _, st := range others {
		if st.Plan == nil || st.Plan.Options.Mgmt == "" {
			continue
		}
		if o, err := netip.ParsePrefix(st.Plan.Options.Mgmt); err == nil && o.Overlaps(mine) {
			return Usagef("--mgmt %s overlaps testbed %s's management network %s: choose another, e.g. --mgmt=%s",
				mine, st.Name, o, nextMgmtNet(mine))
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Masked().Overlaps(mine) {
			return Usagef("--mgmt %s overlaps the host's address %s: choose another, e.g. --mgmt=%s", mine, a, nextMgmtNet(mine))
		}
	}
	out, err := runCommand(ctx, Command{"ip", "-4", "-j", "route", "show", "table", "all"})
	if err != nil {
		return err
	}
	var routes []struct {
		Dst string `json:"dst"`
		Dev string `json:"dev"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		return fmt.Errorf("ip -j route: %w", err)
	}
	for _, r := range routes {
		if r.Dst == "default" {
			continue
		}
		dst, err := netip.ParsePrefix(r.Dst)
		if err != nil {
			a, aerr := netip.ParseAddr(r.Dst)
			if aerr != nil {
				continue
			}
			dst = netip.PrefixFrom(a, 32)
		}
		if dst.Bits() > 0 && dst.Overlaps(mine) {
			return Usagef("--mgmt %s overlaps the host's route to %s (dev %s): choose another, e.g. --mgmt=%s", mine, r.Dst, r.Dev, nextMgmtNet(mine))
		}
	}
	return nil
}

// nextMgmtNet is the network after p, of p's size: a suggestion.
func nextMgmtNet(p netip.Prefix) netip.Prefix {
	a := p.Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += 1 << (32 - p.Bits())
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), p.Bits())
}

// removeMgmtLinks deletes the host ends of the named namespaces'
// management veths that are still there once the namespaces are gone:
// the kernel destroys a namespace's devices, and with them their veth
// peers, asynchronously after the last reference goes, so wait a little
// first. It touches only interfaces named as mgmtHostIface names them.
func removeMgmtLinks(names []string) []error {
	var left []string
	for _, n := range names {
		if _, err := net.InterfaceByName(mgmtHostIface(n)); err == nil {
			left = append(left, mgmtHostIface(n))
		}
	}
	for deadline := time.Now().Add(2 * time.Second); len(left) > 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var still []string
		for _, ifc := range left {
			if _, err := net.InterfaceByName(ifc); err == nil {
				still = append(still, ifc)
			}
		}
		left = still
	}
	var errs []error
	for _, ifc := range left {
		if out, err := runCommand(context.Background(), Command{"ip", "link", "del", "dev", ifc}); err != nil && !strings.Contains(out, "Cannot find device") {
			errs = append(errs, err)
		}
	}
	return errs
}
