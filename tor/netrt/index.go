package netrt

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"rocetor/rocev2"
)

// flowIndex finds a flow's entry in a flow table (DstToR's dflow,
// SrcToR's sflow) by key: open addressing with linear probing over a
// power of two of int32 slots, at least twice the table (so probes stay
// short and a search always ends at an empty slot), each holding
// entry+1 or 0 for empty. The key lives in the entry only. The hash is
// keyed by a random seed per table, so that senders cannot aim
// collisions at one.
//
// It replaces a map[rocev2.FlowKey]int32, which at 16384 flows took 96
// bytes a flow (1.5 MiB) and 35 ns a lookup, against 8 bytes and about
// 5 ns here (Go 1.26, AMD EPYC; see TestDstFlowBytes and
// BenchmarkDstInOrder). At the source ToR too since 2026-11-30: a
// SrcToR of the default 16,384 flows takes 3.05 MB instead of 4.49
// (NewSrcToR's B/op), once per worker and per simulated ToR. Reaching
// the entry's key through keyed costs DstToR nothing measurable (its
// in-order benchmark's fastest of ten rounds 22.7 ns with it, 23.1
// without, on a noisy machine).
//
// It is not safe for concurrent use. Its zero value is not ready; use
// newFlowIndex.
type flowIndex[E any, P keyed[E]] struct {
	slot   []int32
	mask   uint32
	s0, s1 uint64
}

// keyed is what flowIndex needs of a table's entry: its key.
type keyed[E any] interface {
	*E
	flowKey() *rocev2.FlowKey
}

func newFlowIndex[E any, P keyed[E]](entries int) flowIndex[E, P] {
	n := 1 << bits.Len(uint(2*entries-1)) // the least power of two ≥ 2×entries
	return flowIndex[E, P]{slot: make([]int32, n), mask: uint32(n - 1), s0: rand.Uint64() | 1, s1: rand.Uint64() | 1}
}

// mix folds the 128-bit product of a and b (wyhash's mum step).
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func (x *flowIndex[E, P]) hash(k *rocev2.FlowKey) uint32 {
	le := binary.LittleEndian
	h := mix(le.Uint64(k.Src[:8])^x.s0, le.Uint64(k.Src[8:])^x.s1)
	h = mix(le.Uint64(k.Dst[:8])^h, le.Uint64(k.Dst[8:])^x.s0)
	return uint32(mix(h^uint64(k.QP), x.s1^0x9e3779b97f4a7c15)) & x.mask
}

// find returns the entry of k, or -1.
func (x *flowIndex[E, P]) find(flows []E, k *rocev2.FlowKey) int32 {
	for i := x.hash(k); ; i = (i + 1) & x.mask {
		s := x.slot[i]
		if s == 0 {
			return -1
		}
		if P(&flows[s-1]).flowKey().Equal(k) {
			return s - 1
		}
	}
}

// insert indexes entry e under its key, which must be absent.
func (x *flowIndex[E, P]) insert(flows []E, e int32) {
	i := x.hash(P(&flows[e]).flowKey())
	for x.slot[i] != 0 {
		i = (i + 1) & x.mask
	}
	x.slot[i] = e + 1
}

// remove unindexes entry e, which must be indexed under its key. The
// slots after it in its run move back where their probe allows, so no
// tombstone is left and searches stay short (backward-shift deletion).
func (x *flowIndex[E, P]) remove(flows []E, e int32) {
	i := x.hash(P(&flows[e]).flowKey())
	for x.slot[i] != e+1 {
		i = (i + 1) & x.mask
	}
	for j := (i + 1) & x.mask; x.slot[j] != 0; j = (j + 1) & x.mask {
		home := x.hash(P(&flows[x.slot[j]-1]).flowKey())
		// The entry at j may fill i if its home is not in (i, j].
		if (j-home)&x.mask >= (j-i)&x.mask {
			x.slot[i] = x.slot[j]
			i = j
		}
	}
	x.slot[i] = 0
}

func (f *dflow) flowKey() *rocev2.FlowKey { return &f.key }
func (f *sflow) flowKey() *rocev2.FlowKey { return &f.key }
