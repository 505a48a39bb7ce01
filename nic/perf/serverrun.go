package perf

import (
	"fmt"

	"rocetor/nic"
)

// finish ends a client's run after the round's endpoint stopped: it
// verifies the region, answers the done line with the result and fills
// the report. Its error is the run's.
func (r *serverRun) finish() error {
	if r.err != nil {
		return r.err
	}
	d := r.d
	count := r.p.h.Count
	if r.p.h.DurationMS > 0 {
		count = d.Messages // the client ran for a time: messages 0 to count-1
	}
	if r.p.op == nic.OpWrite && !r.p.h.Lat && d.Error == "" && d.Messages == count {
		r.verifyWrites(count)
	}
	r.res.Type = "result"
	r.res.Server = r.s.Counters()
	if r.rev != nil {
		r.res.Reverse = directionOf(r.rev)
	}
	if r.failed != nil {
		r.res.Error = r.failed.Error()
	}
	if err := r.c.send(r.res, r.timeout); err != nil {
		return err
	}
	rep := r.rep
	rep.ClientMessages, rep.Messages, rep.VerifiedBytes = d.Messages, r.res.Messages, r.res.VerifiedBytes
	rep.Corrupt, rep.FirstCorrupt, rep.Counters = r.res.Corrupt, r.res.FirstCorrupt, r.res.Server
	switch {
	case r.failed != nil:
		return fmt.Errorf("%s: %w", rep.summary(), r.failed)
	case d.Error != "":
		return fmt.Errorf("%s: client failed: %s", rep.summary(), d.Error)
	case r.res.Corrupt > 0:
		return fmt.Errorf("%s: data corruption, first: %s", rep.summary(), r.res.FirstCorrupt)
	}
	return nil
}

// postRecv posts receive slot k (QP k / rq).
func (r *serverRun) postRecv(k int) error {
	q, size := k/r.p.rq, r.p.h.Size
	err := r.s.Post(nic.WR{ID: r.idBase | uint64(k), Op: nic.OpRecv, QP: r.qpns[q], LKey: r.mr.Key,
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
	k := int(c.ID & idMask)
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
