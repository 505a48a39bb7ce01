package perf

import (
	"fmt"
	"time"

	"rocetor/nic"
)

// A bidirectional run (-b, perftest's --bidirectional) moves the same
// messages both ways at once over the same QPs: the client's to the
// server as in any run, and the server's back to the client, which
// receives them exactly as a server does — into slots of a region for
// WRITE, from them for READ, into posted receives for SEND — so the way
// back reuses the server's receiving half (serverRun) on the client's
// endpoint and the sender that drives the client's own messages on the
// server's (sender). The client sizes its side as a server of
// --max-mr 64 MiB would, tells the server its region and slots in the
// hello, keeps its endpoint running after its own messages completed
// until the server's result, then checks what came back.

// reverseMR is the memory the client's side of the way back may take,
// as a server's default --max-mr.
const reverseMR = 64 << 20

// planReverse sizes the client's receiving side of the way back.
func (cl *client) planReverse() (plan, error) {
	o := cl.o
	h := hello{Version: protoVersion, Op: o.Op.String(), Transport: o.Transport, QPs: o.QPs, QP: make([]qpWire, o.QPs),
		Size: o.Size, Count: o.Count, MTU: o.MTU, Depth: o.Depth, TimeoutMS: o.Timeout.Milliseconds(),
		RxDepth: o.RxDepth, DurationMS: o.Duration.Milliseconds()}
	p, err := (&Server{o: ServerOptions{MaxMR: reverseMR}}).planRun(h)
	if err != nil {
		return p, fmt.Errorf("usage: -b: %v", err)
	}
	return p, nil
}

// newReverse registers the region of the way back on s; for READ it
// holds the messages the server reads.
func newReverse(s session, p *plan) (*serverRun, error) {
	r := &serverRun{p: p, s: s, buf: make([]byte, p.mem), idBase: revBit}
	if p.op == nic.OpRead {
		for k := range p.slots {
			fill(r.slot(k), uint64(k))
		}
	}
	var err error
	if r.mr, err = s.RegisterMR(r.buf, nic.AccessRemote); err != nil {
		return nil, fmt.Errorf("the way back: %w", err)
	}
	return r, nil
}

// postReceives posts the receives of a SEND's way back on qpns.
func (r *serverRun) postReceives(qpns []uint32) error {
	r.qpns = qpns
	if r.p.op != nic.OpSend {
		return nil
	}
	r.recvd = make([]int, len(qpns))
	for q := range qpns {
		for j := range r.p.rq {
			if err := r.postRecv(q*r.p.rq + j); err != nil {
				return fmt.Errorf("the way back: %w", err)
			}
		}
	}
	return nil
}

// awaitResult waits for the server's result line while the endpoint
// still receives the way back, re-posting SEND receives as they
// complete.
func (cl *client) awaitResult(res *result, wait time.Duration) error {
	got := make(chan error, 1)
	go func() { got <- cl.c.expect("result", res, wait) }()
	var cqes [256]nic.Completion
	for idle := 0; ; idle++ {
		select {
		case err := <-got:
			return err
		default:
		}
		n := cl.s.PollCQ(cqes[:])
		for _, c := range cqes[:n] {
			if c.ID&revBit == 0 {
				continue
			}
			if err := cl.reverse.received(c); err != nil && cl.reverse.failed == nil {
				cl.reverse.failed = err
			}
		}
		if n > 0 {
			idle = 0
		} else if idle > 64 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// verifyReverse checks the way back once the endpoint stopped and fills
// the report's reverse figures.
func (cl *client) verifyReverse(res *result) error {
	r := cl.reverse
	r.stopped = true
	var cqes [256]nic.Completion
	for n := cl.s.PollCQ(cqes[:]); n > 0; n = cl.s.PollCQ(cqes[:]) {
		for _, c := range cqes[:n] {
			if c.ID&revBit != 0 {
				if err := r.received(c); err != nil && r.failed == nil {
					r.failed = err
				}
			}
		}
	}
	if res.Reverse == nil {
		return fmt.Errorf("the server sent nothing back for -b")
	}
	rev := *res.Reverse
	count := cl.o.Count
	if cl.o.Duration > 0 {
		count = rev.Messages
	}
	switch r.p.op {
	case nic.OpWrite:
		if rev.Messages == count {
			r.verifyWrites(count)
		}
		rev.VerifiedBytes, rev.Corrupt, rev.FirstCorrupt = r.res.VerifiedBytes, r.res.Corrupt, r.res.FirstCorrupt
	case nic.OpSend:
		rev.VerifiedBytes, rev.Corrupt, rev.FirstCorrupt = r.res.VerifiedBytes, r.res.Corrupt, r.res.FirstCorrupt
	}
	cl.rep.Reverse = &rev
	switch {
	case r.failed != nil:
		return fmt.Errorf("the way back: %w", r.failed)
	case rev.Messages < count:
		return fmt.Errorf("the way back: the server completed %d of %d messages", rev.Messages, count)
	case rev.Corrupt > 0:
		return fmt.Errorf("the way back: data corruption: %d messages differ; first: %s", rev.Corrupt, rev.FirstCorrupt)
	}
	return nil
}
