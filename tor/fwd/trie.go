package fwd

import "net/netip"

// trie is a multibit trie with a fixed stride of 8 bits and leaf pushing
// (controlled prefix expansion, Srinivasan and Varghese): every node is
// 256 entries, one per value of the next address byte, and an entry holds
// either the route that is the longest match for every address through it
// or the index of a child node for the next byte. A lookup is therefore
// one load per address byte until it reaches a leaf: at most 4 for IPv4
// and 16 for IPv6, with no comparisons, no hashing and no allocation.
//
// We measured it against the per-prefix-length hash maps (one map per
// length present, probed longest first) that the design first proposed:
// see BenchmarkLookup in trie_test.go and the package doc for the
// numbers. The maps cost one hash probe per length present longer than
// the match, so their cost grows with the variety of lengths in the
// table; the trie's cost is bounded by the address length.
//
// The price is memory: 1 KiB per node. An IPv4 /24 costs at most three
// nodes, shared by every prefix under the same /16; an IPv6 host route
// costs up to eight nodes beyond its /64. A ToR's table of some
// thousands of routes stays within a few megabytes.
//
// A trie is built once by the control plane and never changed after it
// is published, so readers need no synchronisation.
type trie struct {
	// nodes holds node k in nodes[256k : 256k+256]; node 0 is the root.
	nodes []uint32
	first int // index of the first address byte looked at: 12 for IPv4
}

// Entries are route indices plus one (0 means no route) or, with
// childBit set, child node indices.
const childBit = 1 << 31

func newTrie(first int) trie { return trie{nodes: make([]uint32, 256), first: first} }

// lookup returns the entry for address a (IPv4 as IPv4-mapped IPv6, as in
// rocev2.FlowKey): a route index plus one, or 0.
func (t *trie) lookup(a *[16]byte) uint32 {
	n := t.nodes
	i := t.first
	e := n[a[i]]
	for e&childBit != 0 {
		i++
		// The builder never creates a child below the last address
		// byte, so i stays below 16; the mask only spares the bounds
		// check and keeps a corrupt table from reading out of a.
		e = n[(e&^childBit)<<8|uint32(a[i&15])]
	}
	return e
}

// insert sets the route of prefix p (bits counted in the trie's address,
// so 0–32 for IPv4) to entry v. Prefixes must be inserted shortest first:
// a longer prefix then overwrites the expansion of every shorter one it
// covers, and a shorter one never meets a child pointer (children are
// made only by longer prefixes, which come later).
func (t *trie) insert(a [16]byte, bits int, v uint32) {
	node := uint32(0)
	i := t.first
	// Walk the bytes the prefix covers entirely, except the last one
	// (which is expanded in its node), creating children as needed.
	for rem := bits; rem > 8; rem -= 8 {
		k := node<<8 | uint32(a[i])
		e := t.nodes[k]
		if e&childBit == 0 {
			// Push the shorter route that covered this entry down
			// into the new child, so the child's leaves still
			// answer for it.
			c := uint32(len(t.nodes) >> 8)
			for j := 0; j < 256; j++ {
				t.nodes = append(t.nodes, e)
			}
			t.nodes[k] = c | childBit
			e = c | childBit
		}
		node = e &^ childBit
		i++
	}
	// Expand the remaining 0–8 bits: the prefix covers 2^(8-rem)
	// consecutive entries of this node.
	rem := bits - 8*(i-t.first)
	span := 1 << (8 - rem)
	start := int(a[i]) &^ (span - 1)
	for j := start; j < start+span; j++ {
		t.nodes[int(node)<<8|j] = v
	}
}

// addrKey returns a's 16-byte form: IPv4 addresses IPv4-mapped, as the
// classifier stores them in rocev2.FlowKey.
func addrKey(a netip.Addr) [16]byte { return a.As16() }
