package fwd

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync/atomic"

	"rocetor/rocev2"
)

// Sentinel errors; every error of the package wraps one of them.
var (
	// ErrConfig wraps stage and multipath configuration errors.
	ErrConfig = errors.New("fwd: config")
	// ErrTable wraps errors in the routes, neighbours or addresses a
	// table is built from.
	ErrTable = errors.New("fwd: table")
	// ErrMirror wraps kernel mirror errors.
	ErrMirror = errors.New("fwd: kernel mirror")
)

// NextHop is one way out of the switch for a route.
type NextHop struct {
	// Port is the egress port: an index into the worker's ports
	// (dataplane.WorkerConfig.Ports), not a kernel ifindex.
	Port uint16
	// Gateway is the neighbour to send to, or the zero Addr for a
	// directly connected route, where the destination address itself is
	// the neighbour. An IPv4 route may have an IPv6 gateway (RFC 5549).
	Gateway netip.Addr
}

// Route sends the packets whose destination lies in Prefix to one of its
// next hops. A route with no next hop is a blackhole: its packets are
// dropped as no_route, as the kernel's blackhole, unreachable and
// prohibit routes do.
type Route struct {
	Prefix   netip.Prefix
	NextHops []NextHop
}

// Neighbour is a resolved link-layer address on a port.
type Neighbour struct {
	Port uint16
	Addr netip.Addr
	MAC  rocev2.MAC
}

// TableConfig is everything a table is built from.
type TableConfig struct {
	Routes     []Route
	Neighbours []Neighbour
	// Local are the switch's own addresses: packets to them are dropped
	// as local (the XDP program passes them to the kernel, so one
	// reaching a worker was misdirected).
	Local     []netip.Addr
	Multipath Multipath
}

// Route kinds in a table.
const (
	kindForward uint8 = iota
	kindBlackhole
	kindLocal
)

// route is a route as the packet path reads it: its next hops are
// t.hops[first : first+n], which routes with the same next hops share
// (Table.group).
type route struct {
	kind  uint8
	mode  Mode
	n     uint16
	first uint32
	bias  int
}

// hop is a next hop as the packet path reads it. A gateway's neighbour is
// resolved when the table is built, so only connected routes look up
// neighbours per packet.
type hop struct {
	port     uint16
	gateway  bool
	resolved bool
	mac      rocev2.MAC
	gw       [16]byte
}

// neighKey names a neighbour: address (IPv4-mapped for IPv4) on a port.
type neighKey struct {
	addr [16]byte
	port uint16
}

// Table is an immutable snapshot of routes, neighbours and local
// addresses. The control plane builds a new one for every change and
// publishes it through a FIB; workers read it without locks. It is safe
// for concurrent use because nothing changes it after NewTable.
type Table struct {
	v4, v6   trie
	routes   []route
	hops     []hop
	neigh    neighTable
	maxPort  int
	cfg      TableConfig // as given, with routes deduplicated, for introspection
	prefixes []netip.Prefix
}

// NewTable builds a table. Prefixes are masked; of several routes with
// the same prefix the first wins (the mirror orders them by metric); a
// local address overrides any route to the same host. The table does not
// keep references into c.
func NewTable(c *TableConfig) (*Table, error) {
	if err := c.Multipath.Validate(); err != nil {
		return nil, err
	}
	t := &Table{v4: newTrie(12), v6: newTrie(0), neigh: newNeighTable(len(c.Neighbours)), maxPort: -1}
	t.cfg.Multipath = c.Multipath
	t.cfg.Multipath.Groups = slices.Clone(c.Multipath.Groups)
	for i, n := range c.Neighbours {
		if !n.Addr.IsValid() {
			return nil, fmt.Errorf("%w: neighbour %d: no address", ErrTable, i)
		}
		t.neigh.put(neighKey{addrKey(n.Addr.Unmap()), n.Port}, n.MAC)
		t.cfg.Neighbours = append(t.cfg.Neighbours, Neighbour{Port: n.Port, Addr: n.Addr.Unmap(), MAC: n.MAC})
	}

	type entry struct {
		p    netip.Prefix
		kind uint8
		r    *Route
	}
	seen := map[netip.Prefix]int{}
	var all []entry
	for i := range c.Routes {
		r := &c.Routes[i]
		p := r.Prefix
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: route %d: invalid prefix", ErrTable, i)
		}
		if p.Addr().Is4In6() {
			// ::ffff:a.b.c.d/96+n is the IPv4 prefix a.b.c.d/n.
			if p.Bits() < 96 {
				return nil, fmt.Errorf("%w: route %d: %s covers IPv4-mapped and other addresses", ErrTable, i, p)
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		p = p.Masked()
		for j, h := range r.NextHops {
			if h.Port == dataplaneNoPort {
				return nil, fmt.Errorf("%w: route %s: next hop %d: port %d is the dataplane's NoPort", ErrTable, p, j, h.Port)
			}
		}
		if _, dup := seen[p]; dup {
			continue
		}
		seen[p] = len(all)
		kind := kindForward
		if len(r.NextHops) == 0 {
			kind = kindBlackhole
		}
		all = append(all, entry{p: p, kind: kind, r: r})
	}
	for i, a := range c.Local {
		if !a.IsValid() {
			return nil, fmt.Errorf("%w: local address %d: invalid", ErrTable, i)
		}
		a = a.Unmap()
		p := netip.PrefixFrom(a, a.BitLen())
		t.cfg.Local = append(t.cfg.Local, a)
		if j, dup := seen[p]; dup {
			all[j] = entry{p: p, kind: kindLocal}
			continue
		}
		seen[p] = len(all)
		all = append(all, entry{p: p, kind: kindLocal})
	}
	// Shortest first, as trie.insert requires.
	slices.SortStableFunc(all, func(a, b entry) int { return cmp.Compare(a.p.Bits(), b.p.Bits()) })

	groups := map[string]group{}
	for _, e := range all {
		rt := route{kind: e.kind, first: uint32(len(t.hops))}
		if e.kind == kindForward {
			rt.mode, rt.bias = c.Multipath.policy(e.p)
			rt.n = uint16(min(len(e.r.NextHops), 0xffff))
			g := t.group(groups, e.r.NextHops[:rt.n])
			rt.first = g.first
			t.cfg.Routes = append(t.cfg.Routes, Route{Prefix: e.p, NextHops: g.nh})
		} else if e.kind == kindBlackhole {
			t.cfg.Routes = append(t.cfg.Routes, Route{Prefix: e.p})
		}
		t.routes = append(t.routes, rt)
		t.prefixes = append(t.prefixes, e.p)
		v := uint32(len(t.routes)) // route index plus one
		if e.p.Addr().Is4() {
			t.v4.insert(addrKey(e.p.Addr()), e.p.Bits(), v)
		} else {
			t.v6.insert(addrKey(e.p.Addr()), e.p.Bits(), v)
		}
	}
	return t, nil
}

// group is a list of next hops as the table holds it: its hops at
// t.hops[first:], and the list as given, for Config.
type group struct {
	first uint32
	nh    []NextHop
}

// group returns the group of next hops nhs, adding it unless a route
// before had the same list: routes share their groups' hops. A fat
// tree's switch sends most of its routes up through one group (a k = 16
// aggregation switch has 112 routes over the same 8 core switches), and
// a simulator builds hundreds of tables.
func (t *Table) group(groups map[string]group, nhs []NextHop) group {
	key := make([]byte, 0, 19*len(nhs))
	for _, nh := range nhs {
		key = append(key, byte(nh.Port), byte(nh.Port>>8))
		if nh.Gateway.IsValid() {
			// The address as given (Config returns it): its
			// family, 16 bytes, its zone.
			a, z := nh.Gateway.As16(), nh.Gateway.Zone()
			key = append(append(key, byte(nh.Gateway.BitLen())), a[:]...)
			key = append(append(key, byte(len(z))), z...)
		} else {
			key = append(key, 0)
		}
	}
	if g, ok := groups[string(key)]; ok {
		return g
	}
	g := group{first: uint32(len(t.hops)), nh: slices.Clone(nhs)}
	for _, nh := range nhs {
		h := hop{port: nh.Port}
		if nh.Gateway.IsValid() {
			gw := nh.Gateway.Unmap()
			h.gateway, h.gw = true, addrKey(gw)
			h.mac, h.resolved = t.neigh.get(&h.gw, nh.Port)
		}
		t.hops = append(t.hops, h)
		t.maxPort = max(t.maxPort, int(nh.Port))
	}
	groups[string(key)] = g
	return g
}

// dataplaneNoPort mirrors dataplane.NoPort without importing the engine
// into the table code.
const dataplaneNoPort = 0xffff

// find returns the index of the route for destination a (16-byte form)
// and whether there is one.
func (t *Table) find(a *[16]byte, v4 bool) (int, bool) {
	var e uint32
	if v4 {
		e = t.v4.lookup(a)
	} else {
		e = t.v6.lookup(a)
	}
	return int(e) - 1, e != 0
}

// Lookup returns the route the packet path would use for dst: its prefix,
// its next hops (nil for a blackhole) and whether dst is one of the local
// addresses. ok is false when no route matches. It allocates, and is
// meant for the control plane, tests and the admin API.
func (t *Table) Lookup(dst netip.Addr) (r Route, local, ok bool) {
	dst = dst.Unmap()
	a := addrKey(dst)
	i, ok := t.find(&a, dst.Is4())
	if !ok {
		return Route{}, false, false
	}
	rt := &t.routes[i]
	r.Prefix = t.prefixes[i]
	for _, h := range t.hops[rt.first : rt.first+uint32(rt.n)] {
		nh := NextHop{Port: h.port}
		if h.gateway {
			nh.Gateway = netip.AddrFrom16(h.gw).Unmap()
		}
		r.NextHops = append(r.NextHops, nh)
	}
	return r, rt.kind == kindLocal, true
}

// NextHop returns where a packet the switch makes itself (a NetRT
// message, say) to dst leaves: the port and the neighbour's MAC of the
// route's first resolved next hop. ok is false when no route matches,
// the route is local or a blackhole, or no next hop is resolved. It does
// not allocate; unlike the packet path it neither spreads over the next
// hops nor asks for missing neighbours.
func (t *Table) NextHop(dst netip.Addr) (port uint16, mac rocev2.MAC, ok bool) {
	dst = dst.Unmap()
	a := addrKey(dst)
	i, found := t.find(&a, dst.Is4())
	if !found || t.routes[i].kind != kindForward {
		return 0, mac, false
	}
	rt := &t.routes[i]
	for _, h := range t.hops[rt.first : rt.first+uint32(rt.n)] {
		if h.gateway {
			if h.resolved {
				return h.port, h.mac, true
			}
		} else if m, ok := t.neigh.get(&a, h.port); ok {
			return h.port, m, true
		}
	}
	return 0, mac, false
}

// Neighbour returns the MAC of addr on port, as the table knows it.
func (t *Table) Neighbour(port uint16, addr netip.Addr) (rocev2.MAC, bool) {
	a := addrKey(addr.Unmap())
	m, ok := t.neigh.get(&a, port)
	return m, ok
}

// Mode returns the multipath mode and bias of the route matching dst.
func (t *Table) Mode(dst netip.Addr) (Mode, int, bool) {
	dst = dst.Unmap()
	a := addrKey(dst)
	i, ok := t.find(&a, dst.Is4())
	if !ok {
		return 0, 0, false
	}
	return t.routes[i].mode, t.routes[i].bias, true
}

// Config returns a copy of what the table was built from: routes with
// masked, deduplicated prefixes in length order, neighbours and local
// addresses.
func (t *Table) Config() TableConfig {
	c := TableConfig{
		Routes:     make([]Route, len(t.cfg.Routes)),
		Neighbours: slices.Clone(t.cfg.Neighbours),
		Local:      slices.Clone(t.cfg.Local),
		Multipath:  t.cfg.Multipath,
	}
	c.Multipath.Groups = slices.Clone(t.cfg.Multipath.Groups)
	for i, r := range t.cfg.Routes {
		c.Routes[i] = Route{Prefix: r.Prefix, NextHops: slices.Clone(r.NextHops)}
	}
	return c
}

// NumRoutes returns the number of routes, local addresses included.
func (t *Table) NumRoutes() int { return len(t.routes) }

// MemBytes returns the memory of the two tries, the bulk of a table.
func (t *Table) MemBytes() int { return 4 * (len(t.v4.nodes) + len(t.v6.nodes)) }

// FIB is where the control plane publishes tables and workers pick them
// up: an atomic pointer, so a worker reads the current table once per
// batch without a lock (read-copy-update: an old table stays valid for
// whoever still holds it, and the garbage collector frees it after). Its
// zero value holds no table, which drops every packet as no_route. It is
// safe for concurrent use.
type FIB struct{ p atomic.Pointer[Table] }

// Load returns the current table, or nil.
func (f *FIB) Load() *Table { return f.p.Load() }

// Store publishes t.
func (f *FIB) Store(t *Table) { f.p.Store(t) }
