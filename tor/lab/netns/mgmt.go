package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"rocetor/tor/lab"
)

// MgmtCommands returns the commands that build the management network.
// They are the only commands testbed runs in its own namespace (the
// host's): each creates, addresses or raises one of the plan's host-end
// interfaces, and the veth's other end goes straight into the switch's
// namespace.
func MgmtCommands(p *lab.Plan) []Command {
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
func checkMgmtFree(ctx context.Context, plan *lab.Plan, others []*lab.State) error {
	if plan.Options.Mgmt == "" {
		return nil
	}
	mine := netip.MustParsePrefix(plan.Options.Mgmt)
	for _, st := range others {
		if st.Plan == nil || st.Plan.Options.Mgmt == "" {
			continue
		}
		if o, err := netip.ParsePrefix(st.Plan.Options.Mgmt); err == nil && o.Overlaps(mine) {
			return lab.Usagef("--mgmt %s overlaps testbed %s's management network %s: choose another, e.g. --mgmt=%s",
				mine, st.Name, o, nextMgmtNet(mine))
		}
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Masked().Overlaps(mine) {
			return lab.Usagef("--mgmt %s overlaps the host's address %s: choose another, e.g. --mgmt=%s", mine, a, nextMgmtNet(mine))
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
			return lab.Usagef("--mgmt %s overlaps the host's route to %s (dev %s): choose another, e.g. --mgmt=%s", mine, r.Dst, r.Dev, nextMgmtNet(mine))
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
// first. It touches only interfaces named as MgmtHostIface names them.
func removeMgmtLinks(names []string) []error {
	var left []string
	for _, n := range names {
		if _, err := net.InterfaceByName(lab.MgmtHostIface(n)); err == nil {
			left = append(left, lab.MgmtHostIface(n))
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
