package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"

	"rocetor/rocev2"
)

// ErrUnresolved: the next hop's Ethernet address did not resolve in time.
var ErrUnresolved = errors.New("host: next hop did not resolve")

// Usable neighbour states: the kernel would send to these addresses
// (stale, delay and probe entries are still used while being confirmed).
const usableNUD = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY |
	netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP

// NextHop returns the Ethernet address RoCEv2 frames to peer go to: the
// kernel's route to peer must leave through the host's interface, and
// its gateway (or peer itself, on link) must be in the neighbour table.
// If it is not, NextHop makes the kernel resolve it by sending an empty
// UDP datagram to the next hop's discard port (9) — again every 200 ms —
// and polls the table until timeout (default 3 s) or ctx ends.
func (h *Host) NextHop(ctx context.Context, peer netip.Addr, timeout time.Duration) (rocev2.MAC, error) {
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	peer = peer.Unmap()
	routes, err := netlink.RouteGet(peer.AsSlice())
	if err != nil {
		return rocev2.MAC{}, fmt.Errorf("route to %v: %w", peer, err)
	}
	if len(routes) == 0 {
		return rocev2.MAC{}, fmt.Errorf("route to %v: none", peer)
	}
	r := routes[0]
	if r.LinkIndex != h.ifindex {
		name := fmt.Sprintf("ifindex %d", r.LinkIndex)
		if l, err := netlink.LinkByIndex(r.LinkIndex); err == nil {
			name = l.Attrs().Name
		}
		return rocev2.MAC{}, fmt.Errorf("the route to %v leaves through %s, not %s (check: ip route get %v)",
			peer, name, h.cfg.Dev, peer)
	}
	hop := peer
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && !gw.IsUnspecified() {
		hop = gw.Unmap()
	}
	if peer.Is6() && peer.IsLinkLocalUnicast() {
		hop = hop.WithZone(h.cfg.Dev)
	}
	deadline := time.Now().Add(timeout)
	var poked time.Time
	for {
		mac, ok, err := h.lookupNeigh(hop)
		if err != nil {
			return rocev2.MAC{}, err
		}
		if ok {
			return mac, nil
		}
		if time.Since(poked) >= 200*time.Millisecond {
			poke(hop)
			poked = time.Now()
		}
		if time.Now().After(deadline) {
			return rocev2.MAC{}, fmt.Errorf("%w: %v (next hop to %v) on %s has no Ethernet address after %v (is it up? check: ip neigh show dev %s)",
				ErrUnresolved, hop, peer, h.cfg.Dev, timeout, h.cfg.Dev)
		}
		select {
		case <-ctx.Done():
			return rocev2.MAC{}, fmt.Errorf("resolve %v on %s: %w", hop, h.cfg.Dev, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// lookupNeigh finds hop in the interface's neighbour table.
func (h *Host) lookupNeigh(hop netip.Addr) (rocev2.MAC, bool, error) {
	family := netlink.FAMILY_V4
	if hop.Is6() {
		family = netlink.FAMILY_V6
	}
	ns, err := netlink.NeighList(h.ifindex, family)
	if err != nil {
		return rocev2.MAC{}, false, fmt.Errorf("neighbours of %s: %w", h.cfg.Dev, err)
	}
	for _, n := range ns {
		a, ok := netip.AddrFromSlice(n.IP)
		if !ok || a.Unmap() != hop.WithZone("") || n.State&usableNUD == 0 || len(n.HardwareAddr) != 6 {
			continue
		}
		var mac rocev2.MAC
		copy(mac[:], n.HardwareAddr)
		return mac, true, nil
	}
	return rocev2.MAC{}, false, nil
}

// poke makes the kernel resolve hop: sending anything to it starts ARP
// or neighbour discovery. The discard port answers nothing (at worst an
// ICMP port unreachable), and errors only mean no resolution started,
// which the caller's timeout reports.
func poke(hop netip.Addr) {
	c, err := net.Dial("udp", net.JoinHostPort(hop.String(), "9"))
	if err != nil {
		return
	}
	_, _ = c.Write(nil)
	c.Close()
}
