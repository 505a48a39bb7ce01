package netrt

import (
	"math"
	"sync/atomic"
)

// Budgets is the per-port accounting that the SrcToR and DstToR stages
// of all the workers of one switch share (Config.Budgets), so that a
// port's budgets are the port's, whatever the number of workers:
//
//   - the bytes pooled for each fabric port (Config.PoolBytes), over
//     every worker's duplicate pool;
//   - the bytes held for each host port (Config.BufferBytes), over
//     every worker's reordering buffer;
//   - N, the bytes of retransmission requested on each fabric port
//     within the last Window (KLow, KHigh, §III-C-3);
//   - each fabric port's retransmission token bucket (RetxRate,
//     RetxBurst);
//   - how many workers pace retransmissions on each fabric port while
//     N ≥ KLow: each paces at R_r divided by their number, so that
//     together they send R_r, not R_r each.
//
// Each worker still pools, holds, evicts and paces only what it owns
// (a flow's frames are all on its owner worker, tor/pipeline.Owners):
// what is shared is the count the budgets are checked against, not the
// frames. A worker that finds a port's pool full evicts its own oldest
// duplicates on that port (LFU among them), if they can make the room;
// otherwise it does not pool the new duplicate (SrcPortStats.Crowded).
// The frame budgets (PoolFrames, BufferFrames) stay per worker: they
// bound each worker's own tables and its share of the UMEM.
//
// Why shared counts rather than one owner per port, as the egress
// queues have: NetRT keeps its state per flow, and a port carries many
// flows whose owners are different workers; handing every pooled
// packet to its port's owner would add a hand-off per data packet,
// where the counts add one compare-and-swap per pooled or held packet
// and one atomic add per retired one: about 19 ns a packet uncontended,
// 95–100 ns when two workers pool on one port at the same instant
// (BenchmarkBudgets; docs/performance.md, "Shared NetRT budgets").
// SrcToR's pool, which every data packet bound for the fabric meets,
// takes its bytes leaseAhead frames at a time and gives back what a
// call retired or left unused once, at its end (SrcToR.reserve,
// settle), so that between calls the count is exact. No lock is taken:
// each figure is one word, updated by a compare-and-swap loop or an
// atomic add.
//
// It is safe for concurrent use; its zero value is ready (nothing
// pooled or held, no bytes requested, every bucket full). Make one per
// switch and give the same pointer to every worker's stages.
type Budgets struct {
	ports [MaxPorts]portBudget
}

// portBudget is one port's shared figures, padded to two cache lines:
// a Budgets need not start on a line, and at 128 bytes apart no two
// ports' figures share a line (nor, mostly, the pair of lines the
// adjacent-line prefetcher fetches together), so that workers busy on
// different ports do not contend.
type portBudget struct {
	pool atomic.Int64 // SrcToR: bytes pooled for the port, every worker's
	buf  atomic.Int64 // DstToR: bytes held for the port, every worker's
	// N's two fixed windows (cport), by the parity of their number:
	// the window's number (mod 2^32) in the high half, its bytes in the
	// low half, so that a window and its bytes change together.
	req [2]atomic.Uint64
	// The retransmission bucket as a GCRA: when it would be full again
	// (cport.tat). Zero, below any worker time, is full.
	tat atomic.Int64
	// The workers with duplicates waiting to be paced on the port: each
	// paces at R_r divided by their number.
	pacers atomic.Int64
	_      [128 - 6*8]byte
}

// Pool returns the bytes pooled for port i by every worker.
func (b *Budgets) Pool(i int) int { return int(b.ports[i].pool.Load()) }

// Buffer returns the bytes held for port i by every worker.
func (b *Budgets) Buffer(i int) int { return int(b.ports[i].buf.Load()) }

// take adds n to a if the sum stays within limit, and reports whether
// it did.
func take(a *atomic.Int64, n, limit int) bool {
	for {
		v := a.Load()
		if v+int64(n) > int64(limit) {
			return false
		}
		if a.CompareAndSwap(v, v+int64(n)) {
			return true
		}
	}
}

// request counts n requested bytes in window e (now / Window). A
// worker whose clock is a whole window behind another's, finding the
// slot taken by a later window, counts nothing: its bytes belong to a
// window N no longer weighs.
func (p *portBudget) request(e int64, n int) {
	s := &p.req[e&1]
	for {
		v := s.Load()
		var b uint64
		switch d := int32(uint32(e) - uint32(v>>32)); {
		case d == 0:
			b = v & math.MaxUint32
		case d < 0:
			return
		}
		if s.CompareAndSwap(v, uint64(uint32(e))<<32|min(b+uint64(n), math.MaxUint32)) {
			return
		}
	}
}

// window returns the bytes requested in windows e and e-1.
func (p *portBudget) window(e int64) (cur, prev int) {
	get := func(e int64) int {
		v := p.req[e&1].Load()
		if uint32(v>>32) != uint32(e) {
			return 0
		}
		return int(v & math.MaxUint32)
	}
	return get(e), get(e - 1)
}

// allow takes cost ns from the port's bucket, which holds at most
// burst ns, and reports whether there was room (SrcToR.allow).
func (p *portBudget) allow(now, cost, burst int64) bool {
	for {
		old := p.tat.Load()
		t := max(old, now)
		if t+cost-now > burst {
			return false
		}
		if p.tat.CompareAndSwap(old, t+cost) {
			return true
		}
	}
}
