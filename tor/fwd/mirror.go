package fwd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"rocetor/rocev2"
)

// MirrorConfig configures a Mirror.
type MirrorConfig struct {
	// Ports are the kernel interface names of the switch's ports, in
	// switch port order: Ports[i] is dataplane port i. Routes and
	// neighbours on other interfaces are ignored.
	Ports []string
	// FIB receives every table the mirror builds.
	FIB *FIB
	// Misses, if not nil, carries the stages' neighbour misses; the
	// mirror asks the kernel to resolve each.
	Misses *Misses
	// Multipath sets the multipath mode per route group.
	Multipath Multipath
	// Logger receives control-plane events and errors; nil logs nothing.
	Logger *zap.Logger
	// Coalesce is how long the mirror gathers kernel changes before it
	// rebuilds the table, so a burst (a link flap withdrawing hundreds
	// of routes, a routing daemon's update) costs one rebuild; it is
	// also the shortest time between two rebuilds. 0 means 20 ms.
	Coalesce time.Duration
	// Retry is how long the mirror waits before asking the kernel again
	// to resolve a neighbour that is still missing. 0 means 1 s.
	Retry time.Duration
	// Netns is the path of the network namespace to mirror (for example
	// /var/run/netns/NAME); empty means the caller's, which is where
	// tord runs. Tests use it to mirror a throw-away namespace.
	Netns string
}

// MirrorStats are the mirror's counters.
type MirrorStats struct {
	Builds      uint64 // tables built and published
	BuildErrors uint64 // builds that failed (the previous table stays)
	Resyncs     uint64 // full dumps after a subscription failed
	Routes      uint64 // routes in the last table
	Ignored     uint64 // routes in the last dump not through the switch's ports
	Neighbours  uint64 // neighbours in the last table
	Requests    uint64 // managed-neighbour requests sent to the kernel
	ReqErrors   uint64 // requests the kernel refused
	Fallbacks   uint64 // UDP datagrams sent to make the kernel resolve
}

type mirrorCounters struct {
	builds, buildErrors, resyncs, routes, ignored, neighbours atomic.Uint64
	requests, reqErrors, fallbacks                            atomic.Uint64
}

// Mirror keeps a FIB in step with the kernel's routing and neighbour
// tables of the switch's network namespace: an initial dump, then
// netlink subscriptions, so `ip route add` and `ip neigh` changes apply
// live. It also asks the kernel to resolve the neighbours the stages
// miss: forwarded traffic never passes through the kernel, so the kernel
// would never ARP for it. Start is called once; Stats and Close are safe
// for concurrent use. Its zero value is not usable (see NewMirror).
type Mirror struct {
	cfg     MirrorConfig
	log     *zap.Logger
	ns      netns.NsHandle
	h       *netlink.Handle
	managed bool // the kernel supports NTF_EXT_MANAGED neighbours

	// Owned by the run goroutine after Start.
	ifindex   []int
	portOf    map[int]uint16
	routes    []Route
	ignored   int
	local     []netip.Addr
	neigh     map[neighKey]rocev2.MAC
	requested map[neighKey]time.Time
	managedIn map[neighKey]bool // kernel entries already managed, resolved or not
	sub       *subscription

	cnt  mirrorCounters
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

// NewMirror opens a netlink handle in the configured namespace. Nothing
// is read from the kernel until Start.
func NewMirror(c MirrorConfig) (*Mirror, error) {
	if c.FIB == nil {
		return nil, fmt.Errorf("%w: no FIB", ErrMirror)
	}
	if len(c.Ports) == 0 || len(c.Ports) >= dataplaneNoPort {
		return nil, fmt.Errorf("%w: %d ports", ErrMirror, len(c.Ports))
	}
	if err := c.Multipath.Validate(); err != nil {
		return nil, err
	}
	if c.Coalesce <= 0 {
		c.Coalesce = 20 * time.Millisecond
	}
	if c.Retry <= 0 {
		c.Retry = time.Second
	}
	m := &Mirror{cfg: c, log: c.Logger, ns: netns.None(), neigh: map[neighKey]rocev2.MAC{},
		requested: map[neighKey]time.Time{}, managedIn: map[neighKey]bool{}, done: make(chan struct{})}
	if m.log == nil {
		m.log = zap.NewNop()
	}
	var err error
	if c.Netns != "" {
		if m.ns, err = netns.GetFromPath(c.Netns); err != nil {
			return nil, fmt.Errorf("%w: open network namespace %s: %w", ErrMirror, c.Netns, err)
		}
		m.h, err = netlink.NewHandleAt(m.ns, unix.NETLINK_ROUTE)
	} else {
		m.h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	if err != nil {
		m.ns.Close()
		return nil, fmt.Errorf("%w: open netlink: %w", ErrMirror, err)
	}
	m.managed = kernelAtLeast(5, 16)
	return m, nil
}

// kernelAtLeast reports whether the running kernel is at least
// major.minor. Managed neighbour entries (NTF_EXT_MANAGED) came in 5.16;
// an older kernel ignores the attribute and would leave an entry that
// nobody resolves.
func kernelAtLeast(major, minor int) bool {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	parts := strings.SplitN(strings.TrimSpace(string(b)), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return ma > major || ma == major && mi >= minor
}

// Start resolves the ports, subscribes to route, neighbour, address and
// link changes, dumps the kernel's tables, publishes the first table and
// returns; the mirror then follows the kernel until ctx is done or Close
// is called. Subscribing before dumping means no change is lost between
// the two.
func (m *Mirror) Start(ctx context.Context) error {
	m.ifindex = make([]int, len(m.cfg.Ports))
	m.portOf = map[int]uint16{}
	for i, name := range m.cfg.Ports {
		l, err := m.h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("%w: port %d (%s): %w", ErrMirror, i, name, err)
		}
		m.ifindex[i] = l.Attrs().Index
		m.portOf[l.Attrs().Index] = uint16(i)
	}
	sub, err := m.subscribe()
	if err != nil {
		return err
	}
	m.sub = sub
	if err := m.dumpAll(); err != nil {
		sub.close()
		return err
	}
	m.build()
	m.log.Info("kernel mirror started", zap.Strings("ports", m.cfg.Ports),
		zap.Int("routes", len(m.routes)), zap.Int("neighbours", len(m.neigh)),
		zap.Bool("managed_neighbours", m.managed))
	ctx, m.stop = context.WithCancel(ctx)
	go m.run(ctx)
	return nil
}

// Close stops the mirror and releases its netlink sockets. The FIB keeps
// the last table.
func (m *Mirror) Close() error {
	m.once.Do(func() {
		if m.stop != nil {
			m.stop()
			<-m.done
		}
		m.h.Close()
		m.ns.Close()
	})
	return nil
}

// Stats returns the counters.
func (m *Mirror) Stats() MirrorStats {
	c := &m.cnt
	return MirrorStats{Builds: c.builds.Load(), BuildErrors: c.buildErrors.Load(), Resyncs: c.resyncs.Load(),
		Routes: c.routes.Load(), Ignored: c.ignored.Load(), Neighbours: c.neighbours.Load(),
		Requests: c.requests.Load(), ReqErrors: c.reqErrors.Load(), Fallbacks: c.fallbacks.Load()}
}

// subscription is one set of netlink subscriptions. When one of them
// fails (typically ENOBUFS: the kernel dropped notifications we were too
// slow to read), all are closed and replaced, and the tables dumped
// again, since an unknown number of changes were lost.
type subscription struct {
	done   chan struct{}
	routes chan netlink.RouteUpdate
	neighs chan netlink.NeighUpdate
	addrs  chan netlink.AddrUpdate
	links  chan netlink.LinkUpdate
	drains []func()
	once   sync.Once
}

func (s *subscription) close() {
	s.once.Do(func() {
		close(s.done)
		// The library's readers exit, closing their channels, once
		// their sockets close; until then one may be blocked sending
		// to us, so drain the channels of the subscriptions that
		// started.
		for _, drain := range s.drains {
			go drain()
		}
	})
}

// subscribeBuffer is the socket receive buffer asked for each
// subscription: a full-table change (a link flap) must fit, or the kernel
// drops notifications and we must resync.
const subscribeBuffer = 4 << 20

func (m *Mirror) subscribe() (*subscription, error) {
	s := &subscription{
		done:   make(chan struct{}),
		routes: make(chan netlink.RouteUpdate, 256),
		neighs: make(chan netlink.NeighUpdate, 256),
		addrs:  make(chan netlink.AddrUpdate, 64),
		links:  make(chan netlink.LinkUpdate, 64),
	}
	var ns *netns.NsHandle
	if m.ns.IsOpen() {
		ns = &m.ns
	}
	onErr := func(what string) func(error) {
		return func(err error) {
			select {
			case <-s.done:
				return // we closed it: Close, or a resync
			default:
			}
			m.log.Warn("netlink subscription", zap.String("what", what), zap.Error(err))
		}
	}
	// Each subscription that starts adds a drain for its channel, for
	// close; a failure closes those that started.
	start := func(what string, sub func() error, drain func()) error {
		if err := sub(); err != nil {
			s.close()
			return fmt.Errorf("%w: subscribe to %s: %w", ErrMirror, what, err)
		}
		s.drains = append(s.drains, drain)
		return nil
	}
	if err := start("routes", func() error {
		return netlink.RouteSubscribeWithOptions(s.routes, s.done, netlink.RouteSubscribeOptions{
			Namespace: ns, ErrorCallback: onErr("routes"), ReceiveBufferSize: subscribeBuffer})
	}, func() {
		for range s.routes {
		}
	}); err != nil {
		return nil, err
	}
	if err := start("neighbours", func() error {
		return netlink.NeighSubscribeWithOptions(s.neighs, s.done, netlink.NeighSubscribeOptions{
			Namespace: ns, ErrorCallback: onErr("neighbours"), ReceiveBufferSize: subscribeBuffer})
	}, func() {
		for range s.neighs {
		}
	}); err != nil {
		return nil, err
	}
	if err := start("addresses", func() error {
		return netlink.AddrSubscribeWithOptions(s.addrs, s.done, netlink.AddrSubscribeOptions{
			Namespace: ns, ErrorCallback: onErr("addresses")})
	}, func() {
		for range s.addrs {
		}
	}); err != nil {
		return nil, err
	}
	if err := start("links", func() error {
		return netlink.LinkSubscribeWithOptions(s.links, s.done, netlink.LinkSubscribeOptions{
			Namespace: ns, ErrorCallback: onErr("links")})
	}, func() {
		for range s.links {
		}
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// What a batch of changes invalidated.
const (
	dirtyRoutes = 1 << iota // dump routes again
	dirtyAddrs              // dump addresses again
	dirtyTable              // rebuild from what we have
)

func (m *Mirror) run(ctx context.Context) {
	defer close(m.done)
	defer func() {
		if m.sub != nil {
			m.sub.close()
		}
	}()
	var misses <-chan struct{}
	if m.cfg.Misses != nil {
		misses = m.cfg.Misses.Wait()
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed, dirty := false, 0
	backoff := 100 * time.Millisecond
	for {
		lost := false
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case u, ok := <-m.sub.routes:
			if lost = !ok; ok && u.Table == unix.RT_TABLE_MAIN {
				// Route notifications only say that something
				// changed: IPv4 routes that die with their link or
				// address are removed without one, and IPv6 multipath
				// changes can arrive one next hop at a time, so the
				// table is always dumped afresh.
				dirty |= dirtyRoutes
			}
		case u, ok := <-m.sub.neighs:
			if lost = !ok; ok && m.applyNeigh(u) {
				dirty |= dirtyTable
			}
		case _, ok := <-m.sub.addrs:
			if lost = !ok; ok {
				dirty |= dirtyAddrs | dirtyRoutes
			}
		case u, ok := <-m.sub.links:
			if lost = !ok; ok && m.applyLink(u) {
				dirty |= dirtyRoutes
			}
		case <-misses:
			m.drainMisses()
		case <-timer.C:
			armed = false
			if dirty = m.refresh(dirty); dirty != 0 {
				// A dump failed: try again, but not at the pace of
				// changes, or a persistent error floods the log.
				timer.Reset(max(m.cfg.Coalesce, time.Second))
				armed = true
			}
		}
		if lost {
			// One subscription ended without our asking: replace them
			// all and dump everything, with a growing pause so a
			// persistent failure does not spin.
			m.sub.close()
			for {
				sub, err := m.subscribe()
				if err == nil {
					m.sub = sub
					backoff = 100 * time.Millisecond
					break
				}
				m.log.Error("resubscribe", zap.Error(err), zap.Duration("retry_in", backoff))
				select {
				case <-ctx.Done():
					m.sub = nil
					return
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, 5*time.Second)
			}
			m.cnt.resyncs.Add(1)
			if err := m.dumpAll(); err != nil {
				m.log.Error("resync", zap.Error(err))
				dirty |= dirtyRoutes | dirtyAddrs
			}
			dirty |= dirtyTable
		}
		if dirty != 0 && !armed {
			timer.Reset(m.cfg.Coalesce)
			armed = true
		}
	}
}

// refresh dumps what dirty says changed and publishes a new table. It
// returns the bits of the dumps that failed; the table is then built
// from what the mirror has, so the changes that were read apply.
func (m *Mirror) refresh(dirty int) int {
	left := 0
	if dirty&dirtyRoutes != 0 {
		if err := m.dumpRoutes(); err != nil {
			m.log.Error("dump routes", zap.Error(err))
			left |= dirtyRoutes
		}
	}
	if dirty&dirtyAddrs != 0 {
		if err := m.dumpAddrs(); err != nil {
			m.log.Error("dump addresses", zap.Error(err))
			left |= dirtyAddrs
		}
	}
	m.build()
	return left
}

// dumpAll reads routes, addresses and neighbours from the kernel.
func (m *Mirror) dumpAll() error {
	if err := m.dumpRoutes(); err != nil {
		return err
	}
	if err := m.dumpAddrs(); err != nil {
		return err
	}
	return m.dumpNeighs()
}

// dumpRetries bounds the retries of a dump the kernel interrupted
// because the table changed under it.
const dumpRetries = 5

func (m *Mirror) dumpRoutes() error {
	var rs []netlink.Route
	var err error
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		var got []netlink.Route
		for try := 0; ; try++ {
			got, err = m.h.RouteList(nil, fam) // main table only
			if !errors.Is(err, netlink.ErrDumpInterrupted) || try == dumpRetries {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("%w: dump routes: %w", ErrMirror, err)
		}
		rs = append(rs, got...)
	}
	// The first route of a prefix wins in NewTable: order by metric, as
	// the kernel prefers the lowest.
	slices.SortStableFunc(rs, func(a, b netlink.Route) int { return cmp.Compare(a.Priority, b.Priority) })
	m.routes, m.ignored = m.routes[:0], 0
	for i := range rs {
		if r, ok := m.convert(&rs[i]); ok {
			m.routes = append(m.routes, r)
		} else {
			m.ignored++
		}
	}
	return nil
}

// convert turns a kernel route into a table route. ok is false for
// routes the switch does not forward by: other types, TOS-specific,
// link-local or multicast destinations, and routes none of whose next
// hops leaves through a switch port.
func (m *Mirror) convert(r *netlink.Route) (Route, bool) {
	var out Route
	var p netip.Prefix
	if r.Dst == nil {
		p = netip.PrefixFrom(netip.IPv4Unspecified(), 0)
		if r.Family == netlink.FAMILY_V6 {
			p = netip.PrefixFrom(netip.IPv6Unspecified(), 0)
		}
	} else {
		a, ok := netip.AddrFromSlice(r.Dst.IP)
		ones, _ := r.Dst.Mask.Size()
		if !ok {
			return out, false
		}
		a = a.Unmap()
		p = netip.PrefixFrom(a, ones)
	}
	// Routers do not forward to link-local addresses (RFC 4291 §2.5.6),
	// and every IPv6 interface has an fe80::/64 route.
	if a := p.Addr(); p.Bits() > 0 && (a.IsLinkLocalUnicast() || a.IsMulticast()) || r.Tos != 0 {
		return out, false
	}
	out.Prefix = p
	switch r.Type {
	case unix.RTN_UNICAST:
	case unix.RTN_BLACKHOLE, unix.RTN_UNREACHABLE, unix.RTN_PROHIBIT:
		return out, true // a route with no next hop drops as no_route
	default:
		return out, false
	}
	add := func(ifindex int, gw net.IP, via netlink.Destination, flags, weight int, live bool) {
		port, ok := m.portOf[ifindex]
		if !ok || flags&unix.RTNH_F_DEAD != 0 || live && flags&unix.RTNH_F_LINKDOWN != 0 {
			return
		}
		nh := NextHop{Port: port}
		if a, ok := netip.AddrFromSlice(gw); ok && !a.IsUnspecified() {
			nh.Gateway = a.Unmap()
		} else if v, ok := via.(*netlink.Via); ok && v != nil {
			// An IPv4 route through an IPv6 gateway (RFC 5549).
			if a, ok := netip.AddrFromSlice(v.Addr); ok {
				nh.Gateway = a.Unmap()
			}
		}
		// A weighted next hop (ip route … nexthop … weight w) takes w
		// slots of the group, so ECMP, spray and adaptive all honour
		// the weights.
		for range max(1, min(weight, maxWeight)) {
			out.NextHops = append(out.NextHops, nh)
		}
	}
	// Leave out next hops whose link is down, unless that leaves none:
	// sending into a dead link loses packets that a live one carries.
	for _, live := range []bool{true, false} {
		if len(r.MultiPath) > 0 {
			for _, nh := range r.MultiPath {
				add(nh.LinkIndex, nh.Gw, nh.Via, nh.Flags, nh.Hops+1, live)
			}
		} else {
			add(r.LinkIndex, r.Gw, r.Via, r.Flags, 1, live)
		}
		if len(out.NextHops) > 0 {
			return out, true
		}
	}
	return out, false
}

// maxWeight bounds the slots one weighted next hop takes.
const maxWeight = 16

func (m *Mirror) dumpAddrs() error {
	as, err := m.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return fmt.Errorf("%w: dump addresses: %w", ErrMirror, err)
	}
	m.local = m.local[:0]
	for _, a := range as {
		if a.IPNet == nil {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			m.local = append(m.local, ip.Unmap())
		}
	}
	return nil
}

func (m *Mirror) dumpNeighs() error {
	var ns []netlink.Neigh
	var err error
	for try := 0; ; try++ {
		ns, err = m.h.NeighList(0, netlink.FAMILY_ALL)
		if !errors.Is(err, netlink.ErrDumpInterrupted) || try == dumpRetries {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%w: dump neighbours: %w", ErrMirror, err)
	}
	clear(m.neigh)
	clear(m.managedIn)
	for i := range ns {
		m.applyNeigh(netlink.NeighUpdate{Type: unix.RTM_NEWNEIGH, Neigh: ns[i]})
	}
	return nil
}

// usable are the neighbour states whose link-layer address we forward
// to. STALE entries are kept: the kernel only revalidates an entry when
// its own traffic uses it, which forwarded traffic never does; managed
// entries are revalidated by the kernel itself.
const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE |
	netlink.NUD_PERMANENT | netlink.NUD_NOARP

// applyNeigh applies a neighbour notification and reports whether the
// table must change: state changes that keep the MAC (REACHABLE to
// STALE, every few tens of seconds per neighbour) do not rebuild it.
func (m *Mirror) applyNeigh(u netlink.NeighUpdate) bool {
	n := &u.Neigh
	port, ok := m.portOf[n.LinkIndex]
	if !ok || n.Family != netlink.FAMILY_V4 && n.Family != netlink.FAMILY_V6 {
		return false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return false
	}
	k := neighKey{addrKey(a.Unmap()), port}
	if u.Type == unix.RTM_NEWNEIGH && n.FlagsExt&netlink.NTF_EXT_MANAGED != 0 {
		m.managedIn[k] = true
	} else {
		delete(m.managedIn, k)
	}
	old, had := m.neigh[k]
	if u.Type == unix.RTM_NEWNEIGH && n.State&usable != 0 && len(n.HardwareAddr) == 6 {
		mac := rocev2.MAC(n.HardwareAddr)
		m.neigh[k] = mac
		delete(m.requested, k)
		return !had || old != mac
	}
	delete(m.neigh, k)
	return had
}

// applyLink follows a port's interface being replaced (a new ifindex for
// the same name) and reports whether routes may have changed: a link
// going down or up changes its routes without a route notification.
func (m *Mirror) applyLink(u netlink.LinkUpdate) bool {
	name := u.Attrs().Name
	i := slices.Index(m.cfg.Ports, name)
	if i < 0 {
		return false
	}
	if u.Header.Type == unix.RTM_NEWLINK && m.ifindex[i] != int(u.Index) {
		delete(m.portOf, m.ifindex[i])
		m.ifindex[i] = int(u.Index)
		m.portOf[int(u.Index)] = uint16(i)
		m.log.Info("port interface replaced", zap.String("port", name), zap.Int32("ifindex", u.Index))
	}
	return true
}

// build makes a table of what the mirror knows and publishes it, then
// asks the kernel to resolve every gateway still missing, before any
// packet needs it.
func (m *Mirror) build() {
	c := &TableConfig{Routes: m.routes, Local: m.local, Multipath: m.cfg.Multipath}
	c.Neighbours = make([]Neighbour, 0, len(m.neigh))
	for k, mac := range m.neigh {
		c.Neighbours = append(c.Neighbours, Neighbour{Port: k.port, Addr: netip.AddrFrom16(k.addr).Unmap(), MAC: mac})
	}
	t, err := NewTable(c)
	if err != nil {
		m.cnt.buildErrors.Add(1)
		m.log.Error("build forwarding table; keeping the previous one", zap.Error(err))
		return
	}
	m.cfg.FIB.Store(t)
	m.cnt.builds.Add(1)
	m.cnt.routes.Store(uint64(len(m.routes)))
	m.cnt.ignored.Store(uint64(m.ignored))
	m.cnt.neighbours.Store(uint64(len(m.neigh)))
	m.log.Debug("forwarding table published", zap.Int("routes", len(m.routes)),
		zap.Int("ignored", m.ignored), zap.Int("neighbours", len(m.neigh)), zap.Int("local", len(m.local)))
	for _, r := range m.routes {
		for _, nh := range r.NextHops {
			if nh.Gateway.IsValid() {
				m.request(nh.Port, nh.Gateway)
			}
		}
	}
}

// drainMisses takes every reported miss and asks for resolution.
func (m *Mirror) drainMisses() {
	for {
		port, addr, ok := m.cfg.Misses.Take()
		if !ok {
			return
		}
		m.request(port, addr)
	}
}

// maxRequested bounds the memory of outstanding requests; a flood of
// packets to unresolvable addresses prunes the oldest.
const maxRequested = 4096

// request asks the kernel to resolve addr on port unless it is known or
// was asked for within Retry.
func (m *Mirror) request(port uint16, addr netip.Addr) {
	if int(port) >= len(m.ifindex) {
		return
	}
	k := neighKey{addrKey(addr), port}
	if _, ok := m.neigh[k]; ok {
		return
	}
	if m.managedIn[k] {
		return // the kernel keeps trying by itself
	}
	now := time.Now()
	if t, ok := m.requested[k]; ok && now.Sub(t) < m.cfg.Retry {
		return
	}
	if len(m.requested) >= maxRequested {
		for k, t := range m.requested {
			if now.Sub(t) >= m.cfg.Retry {
				delete(m.requested, k)
			}
		}
	}
	m.requested[k] = now
	m.log.Debug("resolve neighbour", zap.String("port", m.cfg.Ports[port]), zap.Stringer("addr", addr))
	managed, err := m.resolve(port, addr)
	if err != nil {
		m.log.Warn("resolve neighbour", zap.String("port", m.cfg.Ports[port]), zap.Stringer("addr", addr), zap.Error(err))
	}
	// The kernel announces a managed entry only when its state settles
	// (reachable, or failed after its probes): until then, remember it.
	m.managedIn[k] = managed
}

// resolve makes the kernel resolve addr on port. It adds a managed
// neighbour entry (ip neigh add ADDR dev PORT managed; Linux ≥ 5.16),
// which the kernel resolves at once and then keeps reachable by itself,
// with no traffic of its own to the neighbour. Where that is not
// available or fails, it sends an empty UDP datagram to the address
// through the kernel's stack, which makes the kernel resolve it once
// (and the stage reports the miss again if it goes stale and away).
// managed reports whether a managed entry now stands for addr.
func (m *Mirror) resolve(port uint16, addr netip.Addr) (managed bool, err error) {
	ifindex := m.ifindex[port]
	var nerr error
	if m.managed {
		n := &netlink.Neigh{LinkIndex: ifindex, Family: netlink.FAMILY_V4, State: netlink.NUD_NONE,
			FlagsExt: netlink.NTF_EXT_MANAGED, IP: addr.AsSlice()}
		if addr.Is6() {
			n.Family = netlink.FAMILY_V6
		}
		m.cnt.requests.Add(1)
		nerr = m.h.NeighAdd(n)
		if errors.Is(nerr, unix.EEXIST) {
			// An unmanaged entry is there (INCOMPLETE or FAILED from
			// the kernel's own traffic, or one that went away): make
			// it managed.
			nerr = m.h.NeighSet(n)
		}
		if nerr == nil {
			return true, nil
		}
		m.cnt.reqErrors.Add(1)
		nerr = fmt.Errorf("ip neigh add %s dev %s managed: %w", addr, m.cfg.Ports[port], nerr)
	}
	m.cnt.fallbacks.Add(1)
	if err := m.poke(port, addr); err != nil {
		if nerr == nil {
			return false, fmt.Errorf("%w: udp fallback: %w", ErrMirror, err)
		}
		return false, fmt.Errorf("%w: %w; udp fallback: %w", ErrMirror, nerr, err)
	}
	return false, nil
}

// poke sends an empty UDP datagram to addr's discard port from the
// mirrored namespace: the kernel must resolve the next hop to send it.
func (m *Mirror) poke(port uint16, addr netip.Addr) error {
	ua := &net.UDPAddr{IP: addr.AsSlice(), Port: 9}
	if addr.Is6() && addr.IsLinkLocalUnicast() {
		ua.Zone = m.cfg.Ports[port]
	}
	return m.inNetns(func() error {
		c, err := net.DialUDP("udp", nil, ua)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(nil)
		return err
	})
}

// inNetns runs f on a thread in the mirrored namespace, so sockets it
// opens belong there.
func (m *Mirror) inNetns(f func() error) error {
	if !m.ns.IsOpen() {
		return f()
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(m.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", m.cfg.Netns, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// Leave the thread locked: the runtime then ends it with this
		// goroutine instead of running others in the wrong namespace.
		return fmt.Errorf("return from network namespace %s: %w", m.cfg.Netns, err)
	}
	runtime.UnlockOSThread()
	return ferr
}
