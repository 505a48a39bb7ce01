package pipeline

import (
	"encoding/binary"
	"slices"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Handoff reports whether the switch's workers hand frames to their
// owners (dataplane.Handoff): with more than one worker and any stage
// that keeps state per flow or budgets per port (netrt, trim, llr, int).
// Plain forwarding keeps no such state, so every frame stays on the
// worker whose rx queue it arrived at, as it always did.
func (c *Config) Handoff() bool {
	return c.Workers > 1 && (c.NetRT.On() || c.Trim != nil || c.LLR.On() || c.INT != nil)
}

// shares is how many workers share each port's egress, by port index:
// its rate, marking thresholds and shared-buffer reserves are cut into
// that many parts (each worker's queues keep queue_limit, as without a
// handoff). With a handoff one worker owns each port's egress
// (Owners.Port) and the port keeps its budgets whole, but for the
// shared ports (SharedPorts), which every worker queues on as without
// a handoff.
func (c *Config) shares() []int {
	out := make([]int, len(c.Ports))
	shared := c.SharedPorts()
	for i := range out {
		out[i] = 1
		if !c.Handoff() || (shared != nil && shared[i]) {
			out[i] = max(c.Workers, 1)
		}
	}
	return out
}

// SharedPorts returns, by port index, the ports whose egress the workers
// of a switch with a handoff (Handoff) share rather than one owning it
// (Owners: -1; dataplane.WorkerConfig.PortOwner): every worker queues
// on its own share of such a port and transmits from it — its own tx
// queue, as DPDK gives each core a transmit queue of every port — so a
// frame bound for it is never handed. A port is shared when no stage
// keeps state for its egress that needs one writer:
//
//   - not an llr-protected port (one sequence space per link, seed 003
//     §3) and not a link to another switch (netrt.fabric, not facing
//     hosts), which Owners deals round the workers so that a flow's
//     owner sends on uplinks it owns;
//   - not a trimming port: trimming reads the depth of the port's data
//     queue against one threshold, and a DCP incast is trimmed at the
//     host port (seed 002 §4.2) — cut into W shares, each trimming at
//     its share's depth, a flow whose owner alone sends to the port
//     would be trimmed at the threshold over W (and W thresholds would
//     have to add up to one for the others), so a trimming port keeps
//     one owner and its threshold whole;
//   - int off: HPCC's record is the port's queue, bytes sent and rate
//     (tor/inband), which a share knows only in part;
//   - unshaped (egress.rate, port_rates 0): a shaper cut into W shapers
//     at rate/W leaves the rate of idle shares unused, so a port whose
//     flows one worker owns would send at rate/W;
//   - not named in egress.owned_ports, which keeps one owner for a
//     port with fewer transmit queues than workers (the testbed's host
//     links have one, tor/lab).
//
// A shared port's budgets are cut as without a handoff (shares): each
// worker's queues keep queue_limit (the shared buffer, when there is
// one, bounds them together), and ECN marks at each share's thresholds
// over W, which stands for the port's threshold when the flows spread
// over the workers and marks sooner — at K/W of the port's depth — a
// port whose flows one worker owns. NetRT's flow state stays on the
// flow's owner; its DstToR, which releases a flow's packets to its
// host port, runs there and queues on that worker's share. All nil
// without a handoff.
func (c *Config) SharedPorts() []bool {
	if !c.Handoff() || c.INT != nil {
		return nil
	}
	out := make([]bool, len(c.Ports))
	hosts := c.Trust.HostPorts(c)
	for i, name := range c.Ports {
		rate := c.Egress.Rate
		if r, ok := c.Egress.PortRates[name]; ok {
			rate = r
		}
		link := slices.Contains(c.LLR.Ports, name) || (!hosts[i] && slices.Contains(c.NetRT.Fabric, name))
		trims := c.Trim != nil && c.Trim.Trims(name)
		out[i] = !link && !trims && rate == 0 && !slices.Contains(c.Egress.OwnedPorts, name)
	}
	return out
}

// Owners says which worker owns what, for a switch whose workers hand
// frames to their owners (Config.Handoff):
//
//   - A port's egress (its queues, shaper, byte budgets and marking;
//     trimming's and llr's sender state for it, the stages from
//     EgressStage on) and, on an llr-protected port, the link (llr's
//     receiver and sender, one sequence space: seed 003 §3, one
//     sender and one receiver per link) belong to worker Port(i). The
//     links — ports that netrt.fabric or llr.ports name and that do
//     not face hosts (TrustConfig.HostPorts): a ToR's uplinks, one per
//     spine — are dealt round the workers in their
//     order (the first link to worker 0, the second to worker 1, …),
//     so that each worker sends on its share of them whatever their
//     place among the ports; any other port i belongs to worker
//     i mod N, as every port did before (the testbed puts host ports
//     at indexes 0, N, 2N, … so that worker 0 sends to them, tor/lab).
//     A shared port (Config.SharedPorts: a port no stage keeps egress
//     state for, such as an unshaped host port without llr or
//     trimming) has no owner, -1: every worker queues on its own
//     share of it and sends from it, so that a flow's frames bound for
//     it stay on the flow's owner.
//     Both ends of a link deal alike when their links are listed in
//     the same order, so a frame one's worker w sends on its link u
//     reaches the other's worker w where link u is w's too.
//   - A RoCEv2 frame belongs to the worker the unordered pair of its IP
//     addresses hashes to (Flow). BTH names only the destination QP,
//     so the pair is the finest key both directions compute alike: a
//     flow's data, the ACKs, NAKs and CNPs that answer it, NetRT's
//     requests (which travel on the flow's reversed addresses) and
//     unfulfilled notices (on its own) all meet one SrcToR or DstToR
//     state. All QPs between two hosts share an owner. The flow's
//     owner runs fwd; with forwarding.owner_ecmp its ecmp picks among
//     the next hops on ports it owns where the route has any
//     (fwd.Config.Owned): the flow leaves by an uplink its owner sends
//     on, without a handoff.
//   - A MAC control frame belongs to the owner of the port whose egress
//     it pauses; on a shared port it stays where it arrived, whose
//     worker hands the pause to every other share (the dataplane's
//     sharePause).
//   - Anything else (ARP, plain IP) has no flow state and stays where it
//     arrived; its egress is still its port's owner's.
//
// Until 2026-11-29 every llr link belonged to worker 0, which then ran
// llr's sender, the queues and the transmit of every uplink; two
// workers forwarded 0.69× what one did with NetRT and llr on
// (docs/performance.md, "Issue 30").
//
// Owners is read-only after NewOwners and safe for concurrent use.
type Owners struct {
	n     int
	ports []int
}

// NewOwners divides cfg's ports and flows among its workers.
func NewOwners(cfg *Config) *Owners {
	o := &Owners{n: max(cfg.Workers, 1), ports: make([]int, len(cfg.Ports))}
	links, hosts, shared := 0, cfg.Trust.HostPorts(cfg), cfg.SharedPorts()
	for i, name := range cfg.Ports {
		o.ports[i] = i % o.n
		if !hosts[i] && (slices.Contains(cfg.LLR.Ports, name) || slices.Contains(cfg.NetRT.Fabric, name)) {
			o.ports[i] = links % o.n
			links++
		}
		if shared != nil && shared[i] {
			o.ports[i] = -1
		}
	}
	return o
}

// Owned returns, by port index, whether worker w owns the port's
// egress or shares it: the ports its fwd stage prefers
// (fwd.Config.Owned).
func (o *Owners) Owned(w int) []bool {
	out := make([]bool, len(o.ports))
	for i, p := range o.ports {
		out[i] = p == w || p < 0
	}
	return out
}

// Ports returns the owner of each port, by index (WorkerConfig.PortOwner).
func (o *Owners) Ports() []int { return o.ports }

// Port returns the worker that owns port i's egress, -1 for a shared
// port.
func (o *Owners) Port(i int) int { return o.ports[i] }

// Flow returns the worker that owns a classified frame fresh from port
// p.In, or -1 when it stays (WorkerConfig.Owner).
func (o *Owners) Flow(p *dataplane.Packet, _ []byte) int {
	switch p.Meta.Kind {
	case rocev2.KindRoCE:
		return PairOwner(&p.Meta.Flow, o.n)
	case rocev2.KindMACControl:
		return o.ports[p.In]
	}
	return -1
}

// Owner returns Flow as one function (WorkerConfig.Owner), the pair's
// hash inlined in it: the worker calls it for every frame it receives,
// and the method value's wrapper, Flow and PairOwner were three calls
// deep, 10.7 ns a data packet with two workers
// (BenchmarkPipelineScaleWorkPaired's perf profile, 2026-11-29). It is
// not inlined itself: the closure of an Owner inlined into BuildHanded
// called addrHash and pairMix rather than inlining them (go1.26).
//
//go:noinline
func (o *Owners) Owner() func(p *dataplane.Packet, _ []byte) int {
	n, ports := o.n, o.ports
	if n&(n-1) != 0 {
		return o.Flow
	}
	mask := uint64(n - 1)
	return func(p *dataplane.Packet, _ []byte) int {
		switch p.Meta.Kind {
		case rocev2.KindRoCE:
			// pairHash, written out: it is over the inliner's
			// budget, its parts are not.
			k := &p.Meta.Flow
			return int(pairMix(addrHash(&k.Src)+addrHash(&k.Dst)) & mask)
		case rocev2.KindMACControl:
			return ports[p.In]
		}
		return -1
	}
}

// PairOwner hashes the unordered pair of k's addresses to one of n
// workers: k and its reverse map alike.
func PairOwner(k *rocev2.FlowKey, n int) int {
	h := pairHash(k)
	if n&(n-1) == 0 {
		// The same worker as h % n, without the 64-bit division:
		// the division was half of PairOwner's samples, and
		// PairOwner 14 of the 100 ns a data packet cost more with
		// two workers than with one (perf record of
		// BenchmarkPipelineScaleWorkPaired, 2026-11-29).
		return int(h & uint64(n-1))
	}
	return int(h % uint64(n))
}

// pairHash hashes the unordered pair of k's addresses.
func pairHash(k *rocev2.FlowKey) uint64 {
	return pairMix(addrHash(&k.Src) + addrHash(&k.Dst)) // + commutes: both directions agree
}

// pairMix mixes the sum of a pair's address hashes.
func pairMix(h uint64) uint64 {
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

func addrHash(a *[16]byte) uint64 {
	x := binary.LittleEndian.Uint64(a[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(a[8:])
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	return x ^ x>>29
}
