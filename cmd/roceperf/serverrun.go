package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"rocetor/nic"
)

// line is one protocol line the reader goroutine got, or its error.
type line struct {
	typ string
	b   []byte
	err error
}

// run waits for the client's done line — checking and re-posting SEND
// receives meanwhile — then stops the endpoint, verifies the region and
// answers with the result.
func (r *serverRun) run(ctx context.Context) error {
	lines := make(chan line, 4)
	go func() {
		for {
			typ, b, err := r.c.recv(r.timeout)
			lines <- line{typ, b, err}
			if err != nil || typ == "done" {
				return
			}
		}
	}()
	var d doneMsg
	var cqes [256]nic.Completion
	var failed error
	idle := 0
wait:
	for {
		n := 0
		if r.p.op == nic.OpSend || r.busyLat() {
			n = r.s.PollCQ(cqes[:])
			for _, c := range cqes[:n] {
				if err := r.received(c); err != nil && failed == nil {
					failed = err
				}
			}
		}
		if r.busyLat() && r.p.op == nic.OpWrite && failed == nil {
			answered, err := r.pollWrite()
			if err != nil {
				failed = err
			}
			if answered {
				n++
			}
		}
		var l line
		select {
		case l = <-lines:
		default:
			if n > 0 {
				idle = 0
				continue
			}
			if r.busyLat() {
				runtime.Gosched()
				continue
			}
			if idle++; r.p.op != nic.OpSend || idle > 64 {
				// Nothing to re-post: wait for the client, or for
				// receives to complete within 50 µs.
				select {
				case l = <-lines:
				case <-time.After(r.idleWait()):
					continue
				}
			} else {
				continue
			}
		}
		switch {
		case l.err != nil:
			return fmt.Errorf("waiting for the client's done line: %w", l.err)
		case l.typ == "progress":
			continue
		case l.typ == "done":
			if err := json.Unmarshal(l.b, &d); err != nil {
				return fmt.Errorf("bad done line: %w", err)
			}
			break wait
		default:
			return fmt.Errorf("got a %q line during the run", l.typ)
		}
	}
	// Stopped, the worker writes the region no more: what it holds now
	// is final, and reading it races with nothing.
	r.s.Stop()
	r.stopped = true
	if r.p.op == nic.OpSend {
		for n := r.s.PollCQ(cqes[:]); n > 0; n = r.s.PollCQ(cqes[:]) {
			for _, c := range cqes[:n] {
				if err := r.received(c); err != nil && failed == nil {
					failed = err
				}
			}
		}
	}
	count := r.p.h.Count
	if r.p.h.DurationMS > 0 {
		count = d.Messages // the client ran for a time: messages 0 to count-1
	}
	if r.p.op == nic.OpWrite && !r.p.h.Lat && d.Error == "" && d.Messages == count {
		r.verifyWrites(count)
	}
	r.res.Type = "result"
	r.res.Server = r.s.Counters()
	if failed != nil {
		r.res.Error = failed.Error()
	}
	if err := r.c.send(r.res, r.timeout); err != nil {
		return err
	}
	rep := r.rep
	rep.ClientMessages, rep.Messages, rep.VerifiedBytes = d.Messages, r.res.Messages, r.res.VerifiedBytes
	rep.Corrupt, rep.FirstCorrupt, rep.counters = r.res.Corrupt, r.res.FirstCorrupt, r.res.Server
	switch {
	case failed != nil:
		return fmt.Errorf("%s: %w", rep.summary(), failed)
	case d.Error != "":
		return fmt.Errorf("%s: client failed: %s", rep.summary(), d.Error)
	case r.res.Corrupt > 0:
		return fmt.Errorf("%s: data corruption, first: %s", rep.summary(), r.res.FirstCorrupt)
	}
	return nil
}

// idleWait is how long a server with nothing to do sleeps before it
// looks at its completion queue again.
func (r *serverRun) idleWait() time.Duration {
	if r.p.op == nic.OpSend {
		return 50 * time.Microsecond
	}
	return time.Second
}

// postRecv posts receive slot k (QP k / rq).
func (r *serverRun) postRecv(k int) error {
	q, size := k/r.p.rq, r.p.h.Size
	err := r.s.Post(nic.WR{ID: uint64(k), Op: nic.OpRecv, QP: r.qpns[q], LKey: r.mr.Key,
		LocalVA: r.mr.VA + uint64(k*size), Len: size})
	if err != nil {
		return fmt.Errorf("post receive %d on QP %#x: %w", k, r.qpns[q], err)
	}
	return nil
}

// received checks a SEND that completed a receive — the k-th on its QP
// is message k*qps+q, as SENDs on a QP arrive in order — and posts the
// receive again.
func (r *serverRun) received(c nic.Completion) error {
	if c.ID&latBit != 0 {
		return r.echoed(c)
	}
	if c.Op != nic.OpRecv {
		return nil
	}
	if c.Status != nic.StatusOK {
		return fmt.Errorf("receive on QP %#x completed with %v", c.QP, c.Status)
	}
	h := r.p.h
	k := int(c.ID)
	q := k / r.p.rq
	i := q + r.recvd[q]*h.QPs
	r.recvd[q]++
	r.res.Messages++
	r.res.VerifiedBytes += int64(h.Size)
	var err error
	if c.Len != h.Size {
		err = fmt.Errorf("message %d: %d bytes, want %d", i, c.Len, h.Size)
	} else {
		err = check(r.slot(k), uint64(i))
	}
	if err != nil {
		r.corrupt(err)
	}
	if r.stopped {
		return nil
	}
	if r.p.h.Lat {
		return r.echoSend(k)
	}
	return r.postRecv(k)
}

func (r *serverRun) corrupt(err error) {
	r.res.Corrupt++
	if r.res.FirstCorrupt == "" {
		r.res.FirstCorrupt = err.Error()
	}
}

// verifyWrites checks every slot against the last message the client
// wrote there: message i went to slot i mod slots, and slots hold whole
// multiples of the QP count, so one QP — which places its WRITEs in
// order — wrote each slot.
func (r *serverRun) verifyWrites(count int) {
	h, slots := r.p.h, r.p.slots
	for k := range min(slots, count) {
		i := k + (count-1-k)/slots*slots
		r.res.Messages++
		r.res.VerifiedBytes += int64(h.Size)
		if err := check(r.slot(k), uint64(i)); err != nil {
			r.corrupt(err)
		}
	}
}
