package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"rocetor/nic"
)

// post moves the run's messages: up to depth in flight per QP, the next
// posted as each completes, until all have completed, one fails, no
// completion arrives for the timeout, or ctx ends. With a duration
// instead of a count, it posts until the duration has passed and then
// only the messages below the highest posted, so that the run is still
// messages 0 to count-1 — what the server's verification counts on — and
// sets the count. It fills the report's
// message, byte, duration and FCT figures and, for READ, verifies what
// each message brought back. It keeps the server informed with progress
// lines.
func (cl *client) post(ctx context.Context) error {
	o := cl.o
	count := o.count
	var deadline time.Time
	if o.duration > 0 {
		count = 1 << 62
		deadline = time.Now().Add(o.duration)
	}
	var (
		postAt = make([]int64, min(count, 1<<20)) // session clock at each post, by message
		posts  = make([]int64, 0, min(count, 1<<20))
		dones  = make([]int64, 0, min(count, 1<<20))
		lats   = make([]int64, 0, min(count, 1<<20))
		next   = make([]int, o.qps) // next message number k of each QP: message k*qps+q
		done   = make([]int, o.qps)
		cqes   = make([]nic.Completion, 256)
		first  = int64(-1)
		last   int64
		top    = -1 // the highest message posted
	)
	defer func() {
		cl.rep.setRun(lats, first, last, o.size)
		cl.rep.BWPeakGbps = peakGbps(posts, dones, o.size)
		if o.duration > 0 {
			cl.rep.Count = min(count, top+1)
		}
	}()
	postQP := func(q int) error {
		for {
			k := next[q]
			i := q + k*o.qps
			if i >= count || k-done[q] >= o.depth {
				return nil
			}
			for i >= len(postAt) {
				postAt = append(postAt, make([]int64, len(postAt)+1)...)
			}
			top = max(top, i)
			off := (q*o.depth + k%o.depth) * o.size
			wr := nic.WR{ID: uint64(i), Op: o.op, QP: cl.qpns[q], LKey: cl.mr.Key, LocalVA: cl.mr.VA + uint64(off), Len: o.size}
			switch o.op {
			case nic.OpWrite, nic.OpRead:
				wr.RKey, wr.RemoteVA = cl.peer.Key, cl.peer.VA+uint64(i%cl.slots)*uint64(o.size)
			}
			if o.op != nic.OpRead {
				fill(cl.buf[off:off+o.size], uint64(i))
			}
			postAt[i] = cl.s.Now()
			posts = append(posts, postAt[i])
			if first < 0 {
				first = postAt[i]
			}
			if err := cl.s.Post(wr); err != nil {
				return fmt.Errorf("post message %d on QP %#x: %w", i, cl.qpns[q], err)
			}
			next[q]++
		}
	}
	for q := range o.qps {
		if err := postQP(q); err != nil {
			return err
		}
	}
	every := min(time.Second, o.timeout/4)
	lastBeat, lastDone := time.Now(), time.Now()
	idle := 0
	for len(lats) < count {
		n := cl.s.PollCQ(cqes)
		now := time.Now()
		if o.duration > 0 && count > top+1 && !now.Before(deadline) {
			count = top + 1 // post no more beyond; fill the gaps below
		}
		if n == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("interrupted after %d messages: %w", len(lats), err)
			}
			if now.Sub(lastDone) > o.timeout {
				return fmt.Errorf("no completion for %v with %d messages outstanding (%d of %d done): the peer's endpoint is not answering",
					o.timeout, sum(next)-len(lats), len(lats), count)
			}
			// Spin a little, then sleep: the client and its worker
			// share two cores with the server on a namespace testbed.
			if idle++; idle < 64 {
				runtime.Gosched()
			} else {
				time.Sleep(50 * time.Microsecond)
			}
		} else {
			idle, lastDone = 0, now
		}
		for _, c := range cqes[:n] {
			i := int(c.ID)
			q := i % o.qps
			done[q]++
			if c.Status != nic.StatusOK {
				return fmt.Errorf("message %d on QP %#x completed with %v after %d messages", i, c.QP, c.Status, len(lats))
			}
			lats = append(lats, c.Latency)
			dones = append(dones, postAt[i]+c.Latency)
			last = max(last, postAt[i]+c.Latency)
			if o.op == nic.OpRead {
				off := (q*o.depth + (i/o.qps)%o.depth) * o.size
				cl.rep.VerifiedBytes += int64(o.size)
				if err := check(cl.buf[off:off+o.size], uint64(i%cl.slots)); err != nil {
					cl.rep.Corrupt++
					if cl.rep.firstCorrupt == "" {
						cl.rep.firstCorrupt = err.Error()
					}
				}
			}
			if err := postQP(q); err != nil {
				return err
			}
		}
		if now.Sub(lastBeat) >= every {
			lastBeat = now
			if err := cl.c.send(progress{Type: "progress", Messages: len(lats)}, o.timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
