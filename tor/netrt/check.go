package netrt

import "fmt"

// Check walks the pool and reports the first disagreement between what
// it holds and what SrcStats says it holds: per port, the duplicates on
// the port's list and the sum of their lengths against Frames and
// Bytes; in all, the entries in use against the free list. It is for
// tests and fuzzing (O(pool), it allocates its error): call it from the
// worker's goroutine, between steps.
func (s *SrcToR) Check() error {
	var frames, bytes [MaxPorts]int
	n := 0
	for port := range s.byPort {
		for e := s.byPort[port].head; e >= 0; e = s.dups[e].on[onPort].next {
			d := &s.dups[e]
			if int(d.out) != port {
				return fmt.Errorf("netrt src: duplicate %d of port %d on port %d's list", e, d.out, port)
			}
			frames[port]++
			bytes[port] += int(d.len)
			if n++; n > len(s.dups) {
				return fmt.Errorf("netrt src: port %d's list loops", port)
			}
		}
		if p := &s.st.Ports[port]; p.Frames != frames[port] || p.Bytes != bytes[port] {
			return fmt.Errorf("netrt src: port %d holds %d duplicates of %d bytes, reports %d of %d", port, frames[port], bytes[port], p.Frames, p.Bytes)
		}
	}
	if n+len(s.free) != len(s.dups) {
		return fmt.Errorf("netrt src: %d duplicates pooled and %d entries free, of %d", n, len(s.free), len(s.dups))
	}
	return nil
}

// Check walks the reordering buffer and reports the first disagreement
// between what it holds and what DstStats says it holds: per host port,
// the held packets and the sum of their lengths against Frames and
// Bytes; the held NAKs against NAKs; in all, the entries in use
// against the free list. It is for tests and fuzzing (O(flows + buffer),
// it allocates its error): call it from the worker's goroutine, between
// steps.
func (d *DstToR) Check() error {
	var frames, bytes [MaxPorts]int
	held, naks := 0, 0
	for i := range d.flows[:d.fill] {
		f := &d.flows[i]
		if f.nak >= 0 {
			naks++
		}
		for k, n := f.head, 0; k >= 0; k, n = d.buf[k].next, n+1 {
			h := &d.buf[k]
			if h.flow != int32(i) || n > span {
				return fmt.Errorf("netrt dst: flow %d's list holds entry %d of flow %d, or loops", i, k, h.flow)
			}
			frames[h.p.Out]++
			bytes[h.p.Out] += int(h.p.Len)
			held++
		}
	}
	for port := range d.st.Ports {
		if p := &d.st.Ports[port]; p.Frames != frames[port] || p.Bytes != bytes[port] {
			return fmt.Errorf("netrt dst: port %d holds %d packets of %d bytes, reports %d of %d", port, frames[port], bytes[port], p.Frames, p.Bytes)
		}
	}
	if held != d.st.Frames || naks != d.st.NAKs || held+naks+len(d.free) != len(d.buf) {
		return fmt.Errorf("netrt dst: %d packets and %d NAKs held, %d entries free, of %d; reports %d packets, %d NAKs",
			held, naks, len(d.free), len(d.buf), d.st.Frames, d.st.NAKs)
	}
	return nil
}
