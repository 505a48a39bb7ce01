package netrt

// The shadow answers "what pool size does ACK retirement save?": it
// remembers the bytes ACKs retired before their Hold ran out, until it
// would have, so that pooled plus shadowed bytes is what the pool would
// hold had only Hold retired duplicates (SrcPortStats.HoldOnlyPeak).
//
// It is a min-heap on expiry with room for PoolFrames entries, made once.
// A ring would be cheaper, but ACKs of different flows retire duplicates
// out of expiry order, and a ring would then keep expired bytes behind a
// later one. Duplicates pooled in one batch share their expiry, and an
// ACK retires them together: they are added up in one entry, which took
// the heap from 15% of BenchmarkSrcInOrder's time to ~1%. When it is
// full, a retired duplicate is not remembered and its port's
// HoldOnlyLower is set: the peak is then a lower bound.

// shade is one remembered retirement: bytes of one port, one expiry.
type shade struct {
	exp   int64
	bytes int32
	port  uint16
}

// shade remembers the bytes of d, which an ACK retires at now.
func (s *SrcToR) shade(now int64, d *dup) {
	if d.exp <= now {
		return
	}
	if i := s.shadowLast; i >= 0 && s.shadow[i].exp == d.exp && s.shadow[i].port == d.out {
		s.shadow[i].bytes += int32(d.len)
		s.shadowBytes[d.out] += int(d.len)
		return
	}
	if len(s.shadow) == cap(s.shadow) {
		s.st.Ports[d.out].HoldOnlyLower = true
		return
	}
	h := append(s.shadow, shade{exp: d.exp, bytes: int32(d.len), port: d.out})
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].exp <= h[i].exp {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
	s.shadow, s.shadowLast = h, i
	s.shadowBytes[d.out] += int(d.len)
}

// unshade forgets the bytes whose Hold has run out by now.
func (s *SrcToR) unshade(now int64) {
	h := s.shadow
	for len(h) > 0 && h[0].exp <= now {
		s.shadowLast = -1 // entries move
		s.shadowBytes[h[0].port] -= int(h[0].bytes)
		last := len(h) - 1
		h[0] = h[last]
		h = h[:last]
		for i := 0; ; {
			l, r, m := 2*i+1, 2*i+2, i
			if l < last && h[l].exp < h[m].exp {
				m = l
			}
			if r < last && h[r].exp < h[m].exp {
				m = r
			}
			if m == i {
				break
			}
			h[m], h[i] = h[i], h[m]
			i = m
		}
	}
	s.shadow = h
}
