package netrt

import (
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// BusiestFlows is how many flows Busiest reports at most.
const BusiestFlows = 8

// publishEvery is how often, in worker time, the stage publishes its
// counters and busiest flows for other goroutines.
const publishEvery = 1_000_000

// pubTimer is the timer argument of publication; a request timer's
// entry (its low 32 bits) is below 2^24.
const pubTimer = ^uint64(0)

// FlowInfo describes one flow DstToR holds packets for, for the admin
// API. It is a plain value.
type FlowInfo struct {
	Key       rocev2.FlowKey
	State     uint8 // Ordered, ReTx or Waiting
	Port      uint16
	EPSN      psn.PSN
	Held      int // packets held
	HeldBytes int
	Requests  int // requests sent for the current ePSN
}

// dstPub is what DstToR publishes: its counters and its busiest flows.
type dstPub struct {
	st  DstStats
	top [BusiestFlows]FlowInfo
	n   int
}

// publish stores the counters and the busiest flows for other
// goroutines. The flows holding packets are found from the buffer, not
// the table: a flow holds packets only in ReTx, and each such flow's
// list head is one buffer entry, so the cost is bounded by BufferFrames
// (1024 entries by default, a few µs once a millisecond), not by Flows.
func (d *DstToR) publish(now int64) {
	d.pubAt = now
	s := &d.scratch
	s.st = d.st
	s.n = 0
	for e := range d.buf {
		h := &d.buf[e]
		if h.flow < 0 || d.flows[h.flow].head != int32(e) {
			continue
		}
		f := &d.flows[h.flow]
		fi := FlowInfo{Key: f.key, State: f.state, Port: uint16(f.out), EPSN: f.epsn, Requests: int(f.requests)}
		for k := int32(e); k >= 0; k = d.buf[k].next {
			fi.Held++
			fi.HeldBytes += int(d.buf[k].p.Len)
		}
		s.rank(&fi)
	}
	d.pub.Store(now, s)
}

// rank inserts fi into the top list, ordered by held bytes and then by
// requests, both descending; the last one drops out of a full list.
func (s *dstPub) rank(fi *FlowInfo) {
	busier := func(a, b *FlowInfo) bool {
		return a.HeldBytes > b.HeldBytes || a.HeldBytes == b.HeldBytes && a.Requests > b.Requests
	}
	k := s.n
	if k == len(s.top) {
		if !busier(fi, &s.top[k-1]) {
			return
		}
		k--
	} else {
		s.n++
	}
	for ; k > 0 && busier(fi, &s.top[k-1]); k-- {
		s.top[k] = s.top[k-1]
	}
	s.top[k] = *fi
}

// Busiest returns the flows holding the most bytes (then with the most
// requests for their ePSN), at most BusiestFlows, busiest first, as last
// published (about once a millisecond of worker time). Only flows in
// ReTx hold packets, so only they appear. It is safe from any goroutine;
// the slice is the caller's.
func (d *DstToR) Busiest() []FlowInfo {
	v := d.pub.Load()
	return append([]FlowInfo(nil), v.top[:v.n]...)
}
