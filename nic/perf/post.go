package perf

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
	sd := newSender(o.Op, o.Size, o.QPs, o.Depth, o.Count, o.Duration, cl.s, cl.qpns, cl.mr, cl.mr.VA, cl.buf,
		cl.peer, cl.slots, 0)
	cqes := make([]nic.Completion, 256)
	defer func() {
		cl.rep.setRun(sd.lat, sd.first, sd.last, o.Size)
		cl.rep.setWall(sd.first, sd.last, cl.s.Now(), time.Now())
		cl.rep.BWPeakGbps = peakGbps(sd.posts, sd.dones, o.Size)
		if o.Duration > 0 {
			cl.rep.Count = sd.ran()
		}
		if o.Op == nic.OpRead {
			cl.rep.VerifiedBytes, cl.rep.Corrupt, cl.rep.firstCorrupt = sd.verified, sd.corrupt, sd.firstCorrupt
		}
	}()
	if err := sd.start(); err != nil {
		return err
	}
	every := min(time.Second, o.Timeout/4)
	lastBeat, lastDone := time.Now(), time.Now()
	idle := 0
	for !sd.finished() {
		n := cl.s.PollCQ(cqes)
		now := time.Now()
		sd.tick(now)
		if n == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("interrupted after %d messages: %w", len(sd.lat), err)
			}
			if now.Sub(lastDone) > o.Timeout {
				return fmt.Errorf("no completion for %v with %d messages outstanding (%d done): the peer's endpoint is not answering",
					o.Timeout, sd.outstanding(), len(sd.lat))
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
			if c.ID&revBit != 0 {
				if err := cl.reverse.received(c); err != nil {
					return err
				}
				continue
			}
			if err := sd.complete(c); err != nil {
				return err
			}
		}
		if now.Sub(lastBeat) >= every {
			lastBeat = now
			if err := cl.c.send(progress{Type: "progress", Messages: len(sd.lat)}, o.Timeout); err != nil {
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
