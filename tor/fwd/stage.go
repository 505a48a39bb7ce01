package fwd

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Drop reasons of the forwarding stage. The worker counts them when the
// stage sets Packet.Drop; see the package doc for when each applies.
var (
	ReasonNotIP       = dataplane.NewReason("not_ip")
	ReasonLocal       = dataplane.NewReason("local")
	ReasonNoRoute     = dataplane.NewReason("no_route")
	ReasonNoNeighbour = dataplane.NewReason("no_neighbour")
	ReasonTTLExpired  = dataplane.NewReason("ttl_expired")
)

// Config configures the stage and, through Multipath, the tables the
// mirror builds. DefaultConfig gives the defaults; Validate names the
// first bad field.
type Config struct {
	// Queue is the egress queue index for forwarded packets; 2 is
	// "data" in dataplane.DefaultEgress.
	Queue int `yaml:"queue"`
	// DSCPQueue overrides Queue for packets with these DSCP values.
	DSCPQueue map[uint8]int `yaml:"dscp_queue"`
	// ByInput, when not 0, gives Queue one queue per input port: a
	// packet bound for Queue that came in by port i < ByInput goes to
	// queue Queue+i, so that the egress port serves its inputs round
	// robin, as an input-queued switch's virtual output queues are
	// served (pipeline's egress.by_input lays the queues out).
	ByInput int `yaml:"-"`
	// DCP puts every DCP header-only packet (tag 11, as
	// rocev2.Meta.HeaderOnly sees it: the worker's classifier must
	// parse DCP) on HOQueue, whatever its DSCP says and whether or not
	// the egress port trims: seed 002 §4.2's control plane on every port
	// of a DCP switch (see the package doc).
	DCP bool `yaml:"dcp"`
	// HOQueue is the egress queue index of header-only packets when DCP
	// is set; 0 is "control" in dataplane.DefaultEgress.
	HOQueue int `yaml:"ho_queue"`
	// HashSeed perturbs the ECMP hash. Give each switch tier its own
	// seed: switches that hash alike split traffic alike, and the
	// second tier then sees only a fraction of the flows' variety
	// (ECMP polarization).
	HashSeed uint64 `yaml:"hash_seed"`
	// Multipath sets the multipath mode per route group.
	Multipath Multipath `yaml:"multipath"`
	// MissInterval is how often a worker reports one missing neighbour
	// to the mirror while packets keep arriving for it; 0 means 100 ms.
	MissInterval time.Duration `yaml:"miss_interval"`
	// Owned names, by port index, the ports whose egress the stage's
	// worker owns when a switch's workers hand frames to their owners
	// (pipeline.Owners): an ecmp group with members on owned ports and
	// others hashes among the owned ones only, so that a flow leaves
	// by a port of the worker that owns it, without a handoff. nil:
	// every member (one worker, or no handoff).
	Owned []bool `yaml:"-"`
}

// DefaultConfig returns the configuration for dataplane.DefaultEgress:
// every packet to the "data" queue, ECMP everywhere.
func DefaultConfig() Config { return Config{Queue: 2} }

// maxQueues is dataplane's limit on queues per port.
const maxQueues = 16

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Queue < 0 || c.Queue >= maxQueues {
		return fmt.Errorf("%w: queue %d: want 0–%d", ErrConfig, c.Queue, maxQueues-1)
	}
	if c.ByInput < 0 || c.Queue+c.ByInput > maxQueues {
		return fmt.Errorf("%w: %d queues by input from queue %d: want at most %d queues", ErrConfig, c.ByInput, c.Queue, maxQueues)
	}
	if c.HOQueue < 0 || c.HOQueue >= maxQueues {
		return fmt.Errorf("%w: ho_queue %d: want 0–%d", ErrConfig, c.HOQueue, maxQueues-1)
	}
	for d, q := range c.DSCPQueue {
		if d > 63 {
			return fmt.Errorf("%w: dscp_queue: DSCP %d: want 0–63", ErrConfig, d)
		}
		if q < 0 || q >= maxQueues {
			return fmt.Errorf("%w: dscp_queue: DSCP %d: queue %d: want 0–%d", ErrConfig, d, q, maxQueues-1)
		}
	}
	if c.MissInterval < 0 {
		return fmt.Errorf("%w: miss_interval %v: want ≥ 0", ErrConfig, c.MissInterval)
	}
	return c.Multipath.Validate()
}

// Stats are the stage's counters. Drops are counted by the worker under
// the Reason* values, not here.
type Stats struct {
	Forwarded uint64 // packets given an egress port and queue
	// Packets forwarded through a route with more than one next hop,
	// by the route's mode.
	ECMP, Spray, Adaptive uint64
	// Diverted counts adaptive packets sent elsewhere than their ECMP
	// choice because another queue was shorter by more than the bias.
	Diverted uint64
	// AdaptiveChoices counts, per egress port index, the packets
	// adaptive routing sent there (ports from CountedPorts on are not
	// counted).
	AdaptiveChoices [CountedPorts]uint64
	// MissReports counts missing neighbours reported to the mirror;
	// MissLost those lost to a full report ring.
	MissReports, MissLost uint64
	// Tables counts table snapshots picked up.
	Tables uint64
}

// CountedPorts bounds the ports with per-port counters in Stats.
const CountedPorts = 64

// missCache is the number of recently reported neighbours a stage
// remembers, so that a burst of packets to one unresolved address costs
// one report per MissInterval, not one per packet.
const missCache = 64

type pending struct {
	gen   uint32
	bytes int32
}

type missEntry struct {
	addr [16]byte
	port uint16
	at   int64
	used bool
}

// Stage is the forwarding stage: see the package doc. One worker owns
// each Stage (its counters, round-robin state and report cache are
// plain fields); several stages, one per worker, share a FIB and a
// Misses. Its zero value is not usable; see NewStage.
type Stage struct {
	fib       *FIB
	misses    *Misses
	queue     [64]uint8 // egress queue by DSCP
	dcp       bool      // header-only packets to hoQueue (Config.DCP)
	hoQueue   uint8
	dataQ     uint8  // Config.Queue
	byInput   uint16 // Config.ByInput
	seed      uint64
	missEvery int64

	tab  *Table       // table of the current batch
	rr   []uint32     // spray position per route of tab
	macs []rocev2.MAC // port MACs, the source of rewritten frames
	// pend counts, per port and queue (index port·maxQueues+queue), the
	// bytes this batch has forwarded there: the worker queues a batch
	// only after its last stage, so Egress.Depth does not show them yet,
	// and adaptive routing would send a whole batch of one flow to the
	// queue that looked shortest when the batch began. An entry counts
	// only while its gen is the batch's, so a new batch costs no clear.
	pend   []pending
	gen    uint32
	recent [missCache]missEntry
	st     Stats
	// owned is Config.Owned; mine lists, for each route of tab, the
	// indices within its next hops of those on owned ports, from
	// mineAt[ri] to mineAt[ri+1] (empty where all or none are).
	owned  []bool
	mine   []uint32
	mineAt []uint32

	pub dataplane.Published[Stats]
}

// NewStage returns a stage that forwards by the tables published in fib
// and reports missing neighbours to misses (nil disables reports).
func NewStage(c Config, fib *FIB, misses *Misses) (*Stage, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if fib == nil {
		return nil, fmt.Errorf("%w: no FIB", ErrConfig)
	}
	s := &Stage{fib: fib, misses: misses, seed: c.HashSeed, missEvery: int64(c.MissInterval),
		dcp: c.DCP, hoQueue: uint8(c.HOQueue), owned: c.Owned, dataQ: uint8(c.Queue), byInput: uint16(c.ByInput)}
	if s.missEvery == 0 {
		s.missEvery = int64(100 * time.Millisecond)
	}
	for d := range s.queue {
		s.queue[d] = uint8(c.Queue)
	}
	for d, q := range c.DSCPQueue {
		s.queue[d] = uint8(q)
	}
	return s, nil
}

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "fwd" }

// Process implements dataplane.Stage: it routes every packet still marked
// Forward, rewriting its MAC addresses and TTL in place, or drops it with
// a reason.
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	// One atomic load per batch: every packet of a batch sees the same
	// table, and a new table costs nothing until it is published.
	t := s.fib.Load()
	if t != s.tab {
		s.swap(t)
	}
	if len(s.macs) != c.NumPorts() {
		s.macs = make([]rocev2.MAC, c.NumPorts())
		for i := range s.macs {
			s.macs[i] = c.Port(i).MAC()
		}
		s.pend = make([]pending, c.NumPorts()*maxQueues)
	}
	if s.gen++; s.gen == 0 { // wrapped: no stale entry may pass for current
		clear(s.pend)
		s.gen = 1
	}
	for i := 0; i < b.N; i++ {
		if p := &b.Pkts[i]; p.Verdict == dataplane.Forward {
			s.forward(c, t, p)
		}
	}
	s.pub.Maybe(c.Now, &s.st)
}

// swap adopts a new table. The spray positions are kept where the route
// count allows: a new table usually differs in a route or neighbour, and
// restarting every group at its first next hop would bunch them.
func (s *Stage) swap(t *Table) {
	s.tab = t
	s.st.Tables++
	if t != nil && len(s.rr) < len(t.routes) {
		rr := make([]uint32, len(t.routes))
		copy(rr, s.rr)
		s.rr = rr
	}
	if s.owned != nil && t != nil {
		s.ownHops(t)
	}
}

// ownHops lists, per route of t, its next hops on the ports the worker
// owns (Stage.mine), where they are some of the route's but not all.
// It runs once per table, off the packet path.
func (s *Stage) ownHops(t *Table) {
	s.mine, s.mineAt = s.mine[:0], append(s.mineAt[:0], 0)
	for ri := range t.routes {
		r := &t.routes[ri]
		at := len(s.mine)
		for k := uint32(0); k < uint32(r.n); k++ {
			if p := int(t.hops[r.first+k].port); p < len(s.owned) && s.owned[p] {
				s.mine = append(s.mine, k)
			}
		}
		if len(s.mine)-at == int(r.n) {
			s.mine = s.mine[:at] // all owned: the whole group, as without owners
		}
		s.mineAt = append(s.mineAt, uint32(len(s.mine)))
	}
}

func (s *Stage) forward(c *dataplane.Ctx, t *Table, p *dataplane.Packet) {
	m := &p.Meta
	if m.Kind != rocev2.KindIP && m.Kind != rocev2.KindRoCE {
		p.Drop(ReasonNotIP)
		return
	}
	if t == nil {
		p.Drop(ReasonNoRoute)
		return
	}
	v4 := m.IPVersion == 4
	ri, ok := t.find(&m.Flow.Dst, v4)
	if !ok {
		p.Drop(ReasonNoRoute)
		return
	}
	r := &t.routes[ri]
	switch r.kind {
	case kindLocal:
		p.Drop(ReasonLocal)
		return
	case kindBlackhole:
		p.Drop(ReasonNoRoute)
		return
	}
	f := c.Mem.Frame(p)
	q := s.queue[m.DSCP&63]
	if s.dcp && m.HeaderOnly() {
		// Chosen before the next hop, so that adaptive routing weighs
		// the members by the queue the packet will join.
		q = s.hoQueue
	}
	if q == s.dataQ && p.In < s.byInput {
		q += uint8(p.In) // Config.ByInput
	}
	k := uint32(0)
	if r.n > 1 {
		k = s.pick(c, t, r, ri, m, f, q)
	}
	h := &t.hops[r.first+k]
	mac := h.mac
	if h.gateway {
		if !h.resolved {
			s.miss(c.Now, h.port, &h.gw)
			p.Drop(ReasonNoNeighbour)
			return
		}
	} else if mac, ok = t.neigh.get(&m.Flow.Dst, h.port); !ok {
		s.miss(c.Now, h.port, &m.Flow.Dst)
		p.Drop(ReasonNoNeighbour)
		return
	}
	// The classifier checked that the IP header is all there.
	l3 := f[m.L3Off:]
	if v4 {
		ttl := l3[8]
		if ttl <= 1 {
			p.Drop(ReasonTTLExpired)
			return
		}
		// TTL is masked out of the ICRC, so only the header
		// checksum changes, incrementally.
		rocev2.IPv4(l3).SetTTL(ttl - 1)
	} else {
		hl := l3[7]
		if hl <= 1 {
			p.Drop(ReasonTTLExpired)
			return
		}
		rocev2.IPv6(l3).SetHopLimit(hl - 1)
	}
	e := rocev2.Ethernet(f)
	e.SetDst(mac)
	if int(h.port) < len(s.macs) {
		e.SetSrc(s.macs[h.port])
	}
	// Meta holds neither MAC addresses nor TTL, so it stays as the
	// classifier left it; the worker drops a port out of range as
	// bad_port.
	s.st.Forwarded++
	p.Forward(h.port, q)
	if i := int(h.port)*maxQueues + int(q); i < len(s.pend) {
		e := &s.pend[i]
		if e.gen != s.gen {
			e.gen, e.bytes = s.gen, 0
		}
		e.bytes += int32(p.Len)
	}
}

// pick returns the index, within route r's next hops, of the one packet
// m takes.
func (s *Stage) pick(c *dataplane.Ctx, t *Table, r *route, ri int, m *rocev2.Meta, f []byte, q uint8) uint32 {
	n := uint32(r.n)
	switch r.mode {
	case Spray:
		s.st.Spray++
		k := s.rr[ri]
		if k >= n {
			k = 0 // the route shrank in a new table
		}
		next := k + 1
		if next == n {
			next = 0
		}
		s.rr[ri] = next
		return k
	case Adaptive:
		s.st.Adaptive++
		choice := fastRange(s.hash(m, f), n)
		hops := t.hops[r.first : r.first+n]
		best, bestDepth := choice, s.depth(c, hops[choice].port, q)-r.bias
		for j := uint32(1); j < n; j++ {
			k := choice + j
			if k >= n {
				k -= n
			}
			if d := s.depth(c, hops[k].port, q); d < bestDepth {
				best, bestDepth = k, d
			}
		}
		if best != choice {
			s.st.Diverted++
		}
		if p := hops[best].port; int(p) < CountedPorts {
			s.st.AdaptiveChoices[p]++
		}
		return best
	default:
		s.st.ECMP++
		if s.owned != nil {
			// The worker owns the flow (pipeline.Owners) and
			// some of the group's ports: the flow leaves by one
			// of those, spread over them by the same hash.
			if lo, hi := s.mineAt[ri], s.mineAt[ri+1]; hi > lo {
				return s.mine[lo+fastRange(s.hash(m, f), hi-lo)]
			}
		}
		return fastRange(s.hash(m, f), n)
	}
}

// depth returns the bytes waiting in queue q of port, with those this
// batch has forwarded there already, or a depth no queue reaches when
// the port or queue does not exist, so adaptive routing never picks a
// next hop the worker would drop as bad_port.
func (s *Stage) depth(c *dataplane.Ctx, port uint16, q uint8) int {
	if int(port) >= c.NumPorts() {
		return 1 << 62
	}
	e := c.Egress(int(port))
	if int(q) >= e.NumQueues() {
		return 1 << 62
	}
	d := c.QueueDepth(int(port), int(q))
	if p := &s.pend[int(port)*maxQueues+int(q)]; p.gen == s.gen {
		d += int(p.bytes)
	}
	return d
}

// fastRange maps a 32-bit hash onto [0, n) with a multiply instead of a
// division (Lemire); each next hop gets an equal share of hash values
// within one part in 2^32/n.
func fastRange(h, n uint32) uint32 { return uint32(uint64(h) * uint64(n) >> 32) }

// Hash mixing constants (wyhash's primes).
const (
	k0 = 0xa0761d6478bd642f
	k1 = 0xe7037ed1a0b428db
	k2 = 0x8ebc6af09c88c6e3
	k3 = 0x589965cc75374cc3
)

// mum multiplies to 128 bits and folds: wyhash's mixing step, two
// multiplies for 32 bytes of addresses and one for ports and QP.
func mum(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// hash returns the ECMP hash of packet m: source and destination
// address, the L4 ports of UDP and TCP, and for RoCE the destination QP,
// so that every packet of a flow (NetRT's flow key plus the UDP source
// port a RoCE NIC varies per QP for entropy) hashes alike.
func (s *Stage) hash(m *rocev2.Meta, f []byte) uint32 {
	var l4 uint64
	if m.Kind == rocev2.KindRoCE {
		l4 = uint64(m.SrcPort)<<16 | rocev2.UDPPortRoCE | uint64(m.Flow.QP)<<32
	} else {
		l4 = l4Ports(m, f)
	}
	src, dst := &m.Flow.Src, &m.Flow.Dst
	h := mum(binary.LittleEndian.Uint64(src[0:8])^s.seed^k0, binary.LittleEndian.Uint64(src[8:16])^k1)
	h ^= mum(binary.LittleEndian.Uint64(dst[0:8])^k2, binary.LittleEndian.Uint64(dst[8:16])^k3)
	h = mum(h^k1, l4^s.seed^k0)
	return uint32(h) ^ uint32(h>>32)
}

// l4Ports returns the source and destination port and the protocol of a
// non-RoCE UDP or TCP datagram, or 0 for other protocols and for IPv4
// fragments (whose later pieces carry no ports, so the whole datagram
// must hash on addresses alone to stay on one path).
func l4Ports(m *rocev2.Meta, f []byte) uint64 {
	l3, end := int(m.L3Off), int(m.End)
	var proto uint8
	var l4 int
	if m.IPVersion == 4 {
		h := rocev2.IPv4(f[l3:])
		if h.FragOff()&0x3fff != 0 {
			return 0
		}
		proto, l4 = h.Protocol(), l3+h.HeaderLen()
	} else {
		// Extension headers are not walked: such packets hash on
		// addresses only, which keeps them on one path too.
		proto, l4 = rocev2.IPv6(f[l3:]).NextHeader(), l3+rocev2.IPv6Len
	}
	if proto != 6 && proto != rocev2.ProtoUDP || l4+4 > end {
		return 0
	}
	return uint64(binary.BigEndian.Uint32(f[l4:])) | uint64(proto)<<32
}

// miss reports a missing neighbour to the mirror, at most once per
// MissInterval per address while it stays in the stage's small cache.
func (s *Stage) miss(now int64, port uint16, a *[16]byte) {
	if s.misses == nil {
		return
	}
	e := &s.recent[binary.LittleEndian.Uint64(a[8:16])*k2>>(64-6)]
	if e.used && e.port == port && e.addr == *a && now-e.at < s.missEvery {
		return
	}
	*e = missEntry{addr: *a, port: port, at: now, used: true}
	if s.misses.Add(port, a) {
		s.st.MissReports++
	} else {
		s.st.MissLost++
	}
}

// Poll implements dataplane.Source, only to publish the counters: the
// worker calls it every loop, also when no batch comes, so the last
// millisecond of a burst shows in Snapshot without waiting for the next
// packet. It originates nothing and returns 0.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	s.pub.Maybe(c.Now, &s.st)
	return 0
}

// Stats returns the live counters. Call it only from the worker's
// goroutine (or after the worker stopped); other goroutines use Snapshot.
func (s *Stage) Stats() Stats { return s.st }

// Snapshot returns the counters as last published. It is safe to call
// from any goroutine.
func (s *Stage) Snapshot() Stats {
	return s.pub.Load()
}

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (s *Stage) Publish(now int64) { s.pub.Store(now, &s.st) }

var (
	_ dataplane.Stage  = (*Stage)(nil)
	_ dataplane.Source = (*Stage)(nil)
)
