package fwd

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

// linear is the slow reference: scan every prefix, keep the longest that
// contains the address.
type linear []netip.Prefix

func (l linear) lookup(a netip.Addr) (netip.Prefix, bool) {
	best, ok := netip.Prefix{}, false
	for _, p := range l {
		if p.Addr().Is4() == a.Is4() && p.Contains(a) && (!ok || p.Bits() > best.Bits()) {
			best, ok = p, true
		}
	}
	return best, ok
}

// randPrefixes returns n distinct prefixes of the family with bitLen bits.
// Half of them nest under a few shared stems, so that lookups meet long
// chains of covering prefixes and leaf pushing is exercised at every
// depth, not just the top node.
func randPrefixes(rng *rand.Rand, n, bitLen int) []netip.Prefix {
	stems := make([][16]byte, 8)
	for i := range stems {
		stems[i] = randAddrBytes(rng)
	}
	seen := map[netip.Prefix]bool{}
	var out []netip.Prefix
	for len(out) < n {
		b := randAddrBytes(rng)
		if rng.IntN(2) == 0 {
			// Share a stem's first 8–(bitLen-8) bits.
			stem := stems[rng.IntN(len(stems))]
			keep := 8 + rng.IntN(bitLen-16)
			for i := 0; i < keep; i++ {
				bit := byte(0x80 >> (i % 8))
				b[i/8] = b[i/8]&^bit | stem[i/8]&bit
			}
		}
		a := mkAddr(b, bitLen)
		p := netip.PrefixFrom(a, rng.IntN(bitLen+1)).Masked()
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func randAddrBytes(rng *rand.Rand) (b [16]byte) {
	binary.LittleEndian.PutUint64(b[0:], rng.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rng.Uint64())
	return b
}

func mkAddr(b [16]byte, bitLen int) netip.Addr {
	if bitLen == 32 {
		return netip.AddrFrom4([4]byte(b[:4]))
	}
	return netip.AddrFrom16(b)
}

// nearAddr returns an address inside p with its host bits, and some of
// its last prefix bits, randomised: it hits p, a longer prefix under it,
// or a sibling.
func nearAddr(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := randAddrBytes(rng)
	pb := p.Addr().AsSlice()
	keep := max(0, p.Bits()-rng.IntN(3))
	for i := 0; i < keep; i++ {
		bit := byte(0x80 >> (i % 8))
		b[i/8] = b[i/8]&^bit | pb[i/8]&bit
	}
	return mkAddr(b, p.Addr().BitLen())
}

// TestLPMDifferential checks the trie against the linear reference with
// thousands of random prefixes and lookups per family.
func TestLPMDifferential(t *testing.T) {
	for _, fam := range []struct {
		name   string
		bitLen int
		n      int
	}{{"ipv4", 32, 5000}, {"ipv6", 128, 3000}} {
		t.Run(fam.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(fam.bitLen)))
			ps := randPrefixes(rng, fam.n, fam.bitLen)
			c := &TableConfig{}
			for i, p := range ps {
				c.Routes = append(c.Routes, Route{Prefix: p, NextHops: []NextHop{{Port: uint16(i)}}})
			}
			tab, err := NewTable(c)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d prefixes: %d KiB of trie", len(ps), tab.MemBytes()>>10)
			ref := linear(ps)
			for i := 0; i < 20000; i++ {
				var a netip.Addr
				if i%4 == 0 {
					a = mkAddr(randAddrBytes(rng), fam.bitLen)
				} else {
					a = nearAddr(rng, ps[rng.IntN(len(ps))])
				}
				want, wok := ref.lookup(a)
				got, local, ok := tab.Lookup(a)
				if ok != wok || ok && got.Prefix != want || local {
					t.Fatalf("lookup %s: got %v (ok %v), want %v (ok %v)", a, got.Prefix, ok, want, wok)
				}
			}
		})
	}
}

// TestLPMEdges checks the prefix lengths at byte boundaries, the default
// route, host routes and local addresses overriding a route.
func TestLPMEdges(t *testing.T) {
	nh := []NextHop{{Port: 1}}
	c := &TableConfig{
		Routes: []Route{
			{Prefix: netip.MustParsePrefix("0.0.0.0/0"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.0.0.0/8"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.0.0/16"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.2.0/23"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.2.0/24"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.2.3/32"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.2.9/32"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("10.1.2.77/25"), NextHops: nh}, // masked to .0/25
			{Prefix: netip.MustParsePrefix("2001:db8::/32"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("2001:db8::1/128"), NextHops: nh},
			{Prefix: netip.MustParsePrefix("::ffff:192.168.0.0/112")}, // 192.168.0.0/16, blackhole
		},
		Local: []netip.Addr{netip.MustParseAddr("10.1.2.9"), netip.MustParseAddr("2001:db8::2")},
	}
	tab, err := NewTable(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dst, want string
		local     bool
	}{
		{"1.2.3.4", "0.0.0.0/0", false},
		{"10.200.0.1", "10.0.0.0/8", false},
		{"10.1.255.1", "10.1.0.0/16", false},
		{"10.1.3.1", "10.1.2.0/23", false},
		{"10.1.2.200", "10.1.2.0/24", false},
		{"10.1.2.100", "10.1.2.0/25", false},
		{"10.1.2.3", "10.1.2.3/32", false},
		{"10.1.2.9", "10.1.2.9/32", true},
		{"::ffff:10.1.2.3", "10.1.2.3/32", false},
		{"192.168.3.4", "192.168.0.0/16", false},
		{"2001:db8::1", "2001:db8::1/128", false},
		{"2001:db8::2", "2001:db8::2/128", true},
		{"2001:db8:1::", "2001:db8::/32", false},
		{"2001:db9::", "", false},
	} {
		r, local, ok := tab.Lookup(netip.MustParseAddr(tc.dst))
		got := ""
		if ok {
			got = r.Prefix.String()
		}
		if got != tc.want || local != tc.local {
			t.Errorf("%s: got %q local %v, want %q local %v", tc.dst, got, local, tc.want, tc.local)
		}
	}
	if r, _, _ := tab.Lookup(netip.MustParseAddr("192.168.1.1")); r.NextHops != nil {
		t.Errorf("blackhole route has next hops %v", r.NextHops)
	}
}

// mapLPM is the alternative the trie was measured against: one hash map
// per prefix length present, keyed by the masked address, probed longest
// first.
type mapLPM struct {
	lens []int
	m    []map[uint32]uint32
}

func newMapLPM(ps []netip.Prefix) *mapLPM {
	var byLen [33]map[uint32]uint32
	for i, p := range ps {
		if byLen[p.Bits()] == nil {
			byLen[p.Bits()] = map[uint32]uint32{}
		}
		byLen[p.Bits()][binary.BigEndian.Uint32(p.Addr().AsSlice())] = uint32(i + 1)
	}
	l := &mapLPM{}
	for b := 32; b >= 0; b-- {
		if byLen[b] != nil {
			l.lens = append(l.lens, b)
			l.m = append(l.m, byLen[b])
		}
	}
	return l
}

func (l *mapLPM) lookup(a uint32) uint32 {
	for i, b := range l.lens {
		if v, ok := l.m[i][a&^(0xffffffff>>b)]; ok {
			return v
		}
	}
	return 0
}

func TestMapLPMAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ps := randPrefixes(rng, 1000, 32)
	m := newMapLPM(ps)
	ref := linear(ps)
	for i := 0; i < 5000; i++ {
		a := nearAddr(rng, ps[rng.IntN(len(ps))])
		want, ok := ref.lookup(a)
		got := m.lookup(binary.BigEndian.Uint32(a.AsSlice()))
		if ok != (got != 0) || ok && ps[got-1] != want {
			t.Fatalf("%s: map LPM disagrees with the reference", a)
		}
	}
}

// BenchmarkLookup compares the trie with per-length maps on IPv4 tables
// of 10, 1000 and 100000 random prefixes (lengths 8–32) and on a
// typical ToR table: a default route, a few /16 and /24 and host routes.
func BenchmarkLookup(b *testing.B) {
	tor := []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}
	for i := 0; i < 8; i++ {
		tor = append(tor, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16))
		for j := 0; j < 8; j++ {
			tor = append(tor, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), byte(j), 0}), 24))
			tor = append(tor, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), byte(j), 5}), 32))
		}
	}
	sets := []struct {
		name string
		ps   []netip.Prefix
	}{{"tor", tor}}
	for _, n := range []int{10, 1000, 100000} {
		rng := rand.New(rand.NewPCG(uint64(n), 9))
		var ps []netip.Prefix
		seen := map[netip.Prefix]bool{}
		for len(ps) < n {
			p := netip.PrefixFrom(mkAddr(randAddrBytes(rng), 32), 8+rng.IntN(25)).Masked()
			if !seen[p] {
				seen[p] = true
				ps = append(ps, p)
			}
		}
		sets = append(sets, struct {
			name string
			ps   []netip.Prefix
		}{fmt.Sprint(n), ps})
	}
	for _, set := range sets {
		rng := rand.New(rand.NewPCG(7, 7))
		addrs := make([][16]byte, 4096)
		for i := range addrs {
			addrs[i] = nearAddr(rng, set.ps[rng.IntN(len(set.ps))]).As16()
		}
		c := &TableConfig{}
		for _, p := range set.ps {
			c.Routes = append(c.Routes, Route{Prefix: p, NextHops: []NextHop{{Port: 1}}})
		}
		tab, err := NewTable(c)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("trie/"+set.name, func(b *testing.B) {
			sum := 0
			for i := 0; b.Loop(); i++ {
				k, _ := tab.find(&addrs[i&4095], true)
				sum += k
			}
			sink = sum
		})
		m := newMapLPM(set.ps)
		b.Run(fmt.Sprintf("maps%d/%s", len(m.lens), set.name), func(b *testing.B) {
			sum := uint32(0)
			for i := 0; b.Loop(); i++ {
				sum += m.lookup(binary.BigEndian.Uint32(addrs[i&4095][12:]))
			}
			sink = int(sum)
		})
	}
}

var sink int

// TestNextHop checks the route lookup for packets the switch makes:
// gateway routes answer with the resolved gateway, connected routes with
// the destination's own neighbour entry, and everything else says no.
func TestNextHop(t *testing.T) {
	gwMAC := rocev2.MAC{2, 0, 0, 0, 0, 1}
	hostMAC := rocev2.MAC{2, 0, 0, 0, 0, 2}
	tab, err := NewTable(&TableConfig{
		Routes: []Route{
			{Prefix: netip.MustParsePrefix("10.2.0.0/16"), NextHops: []NextHop{
				{Port: 1, Gateway: netip.MustParseAddr("10.9.0.1")}, // unresolved: skipped
				{Port: 2, Gateway: netip.MustParseAddr("10.9.0.2")}}},
			{Prefix: netip.MustParsePrefix("10.1.0.0/24"), NextHops: []NextHop{{Port: 0}}},
			{Prefix: netip.MustParsePrefix("10.3.0.0/16")}, // blackhole
		},
		Neighbours: []Neighbour{
			{Port: 2, Addr: netip.MustParseAddr("10.9.0.2"), MAC: gwMAC},
			{Port: 0, Addr: netip.MustParseAddr("10.1.0.5"), MAC: hostMAC},
		},
		Local: []netip.Addr{netip.MustParseAddr("10.1.0.1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dst  string
		port uint16
		mac  rocev2.MAC
		ok   bool
	}{
		{"10.2.3.4", 2, gwMAC, true},
		{"::ffff:10.2.3.4", 2, gwMAC, true},
		{"10.1.0.5", 0, hostMAC, true},
		{"10.1.0.6", 0, rocev2.MAC{}, false}, // connected but unresolved
		{"10.1.0.1", 0, rocev2.MAC{}, false}, // local
		{"10.3.0.1", 0, rocev2.MAC{}, false}, // blackhole
		{"192.0.2.1", 0, rocev2.MAC{}, false},
	} {
		port, mac, ok := tab.NextHop(netip.MustParseAddr(c.dst))
		if ok != c.ok || ok && (port != c.port || mac != c.mac) {
			t.Errorf("NextHop(%s) = %d %v %v, want %d %v %v", c.dst, port, mac, ok, c.port, c.mac, c.ok)
		}
	}
	if n := testing.AllocsPerRun(100, func() { tab.NextHop(netip.MustParseAddr("10.2.3.4")) }); n != 0 {
		t.Errorf("NextHop allocates %.0f times", n)
	}
}
