package impair

import "math/bits"

// one is the threshold of certainty: probabilities are compared against
// the top 53 bits of a 64-bit draw, the precision of a float64 in [0, 1).
const one = 1 << 53

// threshold converts a probability to a threshold for chance.
func threshold(p float64) uint64 { return uint64(p * one) }

// chance reports whether an event of threshold t happens. Certain and
// impossible events draw nothing, so configuring p = 0 or 1 leaves the
// stream of the other impairments as it was.
func (p *Port) chance(t uint64) bool {
	switch {
	case t == 0:
		return false
	case t >= one:
		return true
	}
	return p.rng.Uint64()>>11 < t
}

// uniform returns a uniform integer in [0, n] (Lemire's multiply, whose
// bias of at most n/2^64 is far below anything a test could see).
func (p *Port) uniform(n int64) int64 {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(p.rng.Uint64(), uint64(n)+1)
	return int64(hi)
}

// splitmix64 is SplitMix64's finaliser: it spreads nearby inputs (seed 1
// and 2, worker 0 and 1) to unrelated 64-bit values before they seed a
// PCG, whose streams from nearby states would be correlated.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// portSeeds returns the two PCG seeds of a port of a worker. The port
// enters by name (FNV-1a), not by index, so a link's stream does not
// depend on the order of the switch's ports list.
func portSeeds(seed uint64, worker int, port string) (uint64, uint64) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(port); i++ {
		h = (h ^ uint64(port[i])) * 1099511628211
	}
	return splitmix64(seed), splitmix64(seed ^ splitmix64(uint64(worker)) ^ splitmix64(h))
}
