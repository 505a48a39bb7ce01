package fwd

import (
	"net/netip"

	"rocetor/rocev2"
)

// FlowHop returns the egress port the request packets of a RoCE flow —
// source and destination address, UDP source port and destination QP,
// what the ECMP hash reads — leave by under the stage's current table,
// as the packet path picks it. ok is false when no route matches, the
// route is local or a blackhole, or its group sprays or routes
// adaptively: a choice made per packet, not per flow. It reads the
// published table and the stage's hash seed only, so any goroutine may
// call it; it allocates nothing. For the control plane and for the
// simulator's flow records (tor/fabric FlowPath). With Config.Owned it
// answers for flows the stage's worker owns, as pick does.
func (s *Stage) FlowHop(src, dst netip.Addr, sport uint16, qp uint32) (port uint16, ok bool) {
	t := s.fib.Load()
	if t == nil {
		return 0, false
	}
	src, dst = src.Unmap(), dst.Unmap()
	m := rocev2.Meta{Kind: rocev2.KindRoCE, SrcPort: sport, Flow: rocev2.FlowKey{Src: addrKey(src), Dst: addrKey(dst), QP: qp}}
	ri, ok := t.find(&m.Flow.Dst, dst.Is4())
	if !ok {
		return 0, false
	}
	r := &t.routes[ri]
	if r.kind != kindForward || r.n == 0 {
		return 0, false
	}
	k := uint32(0)
	if r.n > 1 {
		if r.mode != ECMP {
			return 0, false
		}
		k = s.ownedHop(t, r, s.hash(&m, nil))
	}
	return t.hops[r.first+k].port, true
}

// ownedHop is pick's ecmp choice for hash h in route r of t, counting
// the owned members afresh rather than from the worker's Stage.mine,
// which only its goroutine reads.
func (s *Stage) ownedHop(t *Table, r *route, h uint32) uint32 {
	mine := uint32(0)
	for k := range uint32(r.n) {
		if p := int(t.hops[r.first+k].port); p < len(s.owned) && s.owned[p] {
			mine++
		}
	}
	if mine == 0 || mine == uint32(r.n) {
		return fastRange(h, uint32(r.n))
	}
	j := fastRange(h, mine)
	for k := range uint32(r.n) {
		if p := int(t.hops[r.first+k].port); p < len(s.owned) && s.owned[p] {
			if j == 0 {
				return k
			}
			j--
		}
	}
	return 0 // not reached
}
