package psn

// Bits is the width of a RoCEv2 PSN.
const Bits = 24

// Mask keeps the low 24 bits of a PSN.
const Mask = 1<<Bits - 1

// PSN is a 24-bit RoCEv2 packet sequence number. Arithmetic wraps at 2^24.
type PSN uint32

// New returns v reduced to 24 bits.
func New(v uint32) PSN { return PSN(v & Mask) }

// Add returns p advanced by n (n may be negative), wrapped to 24 bits.
func (p PSN) Add(n int) PSN { return PSN((uint32(p) + uint32(n)) & Mask) }

// Diff returns the signed distance from q to p (p - q) in [-2^23, 2^23).
func (p PSN) Diff(q PSN) int {
	d := (uint32(p) - uint32(q)) & Mask
	if d >= 1<<(Bits-1) {
		return int(d) - 1<<Bits
	}
	return int(d)
}

// Less reports whether p comes before q.
func (p PSN) Less(q PSN) bool { return p.Diff(q) < 0 }

// LessEq reports whether p comes before q or equals it.
func (p PSN) LessEq(q PSN) bool { return p.Diff(q) <= 0 }

// InWindow reports whether p lies in the n sequence numbers starting at
// base: base <= p < base+n.
func (p PSN) InWindow(base PSN, n int) bool {
	d := (uint32(p) - uint32(base)) & Mask
	return n > 0 && uint64(d) < uint64(n) // not uint32(n): n >= 2^32 must not wrap
}

// LinkBits is the width of a link sequence: 16 bits of number and the era bit.
const LinkBits = 17

const linkMask = 1<<LinkBits - 1

// Link is the sequence number of the link-retransmission shim: the 16-bit
// number carried in the shim plus the era bit, which toggles on every wrap
// of the 16-bit number. Treating (era, number) as one 17-bit serial number
// gives Protego's era correction (seed 003, §3.5) and tolerates distances up
// to 2^16 instead of 2^15.
type Link uint32

// LinkOf builds a link sequence from its wire parts.
func LinkOf(seq uint16, era bool) Link {
	l := Link(seq)
	if era {
		l |= 1 << 16
	}
	return l
}

// Seq returns the 16-bit number carried on the wire.
func (l Link) Seq() uint16 { return uint16(l) }

// Era returns the era bit carried on the wire.
func (l Link) Era() bool { return l&(1<<16) != 0 }

// Add returns l advanced by n (n may be negative), wrapped to 17 bits.
func (l Link) Add(n int) Link { return Link((uint32(l) + uint32(n)) & linkMask) }

// Diff returns the signed distance l - m in [-2^16, 2^16).
func (l Link) Diff(m Link) int {
	d := (uint32(l) - uint32(m)) & linkMask
	if d >= 1<<(LinkBits-1) {
		return int(d) - 1<<LinkBits
	}
	return int(d)
}

// Less reports whether l comes before m.
func (l Link) Less(m Link) bool { return l.Diff(m) < 0 }
