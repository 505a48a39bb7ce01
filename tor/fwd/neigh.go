package fwd

import (
	"encoding/binary"
	"math/bits"

	"rocetor/rocev2"
)

// neighTable is a Table's neighbours, which the packet path reads for a
// connected route's destination: open addressing with linear probing
// over a power of two of slots at most half full, hashed by three
// multiplications. A Go map with neighKey keys took about 100
// instructions a lookup (memhash of 18 bytes, then the group probe; 98
// a data packet in BenchmarkPipelineScaleWorkPaired, callgrind,
// 2026-12-01). Built once with the Table, read only after.
type neighTable struct {
	slots []neighSlot
	mask  uint64
}

type neighSlot struct {
	key  neighKey
	used bool
	mac  rocev2.MAC
}

// newNeighTable returns a table with room for n neighbours.
func newNeighTable(n int) neighTable {
	size := max(8, 1<<bits.Len(uint(2*n)))
	return neighTable{slots: make([]neighSlot, size), mask: uint64(size - 1)}
}

// neighHash mixes a neighbour's key to a slot: splitmix64's finalizer,
// whose every output bit depends on every input bit (an IPv4-mapped
// address has its first eight bytes alike, and its low bytes in the
// high half of the second word).
func neighHash(a *[16]byte, port uint16) uint64 {
	x := binary.LittleEndian.Uint64(a[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(a[8:]) ^ uint64(port)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// put adds k's MAC, or replaces it (a later entry for a neighbour wins).
func (t *neighTable) put(k neighKey, mac rocev2.MAC) {
	for i := neighHash(&k.addr, k.port) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if !s.used || s.key == k {
			*s = neighSlot{key: k, used: true, mac: mac}
			return
		}
	}
}

// get returns the MAC of addr on port and whether the table has it.
func (t *neighTable) get(addr *[16]byte, port uint16) (rocev2.MAC, bool) {
	for i := neighHash(addr, port) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if !s.used {
			return rocev2.MAC{}, false
		}
		if s.key.port == port && s.key.addr == *addr {
			return s.mac, true
		}
	}
}
