package perf

import (
	"bytes"
	"fmt"

	"rocetor/nic"
)

// The server's half of the latency tests (lat.go has the client's): it
// answers each message with the same message, at once.

// latServer is a latency run's responder state.
type latServer struct {
	next  int     // the message expected next
	ready bool    // write-lat: next's pattern is in its source slot
	busy  [2]bool // write-lat: a source slot's echo is in flight
}

// planLat sizes a write-lat or send-lat run: write-lat's region is the
// slot the client writes into and two source slots the echoes go from,
// alternately (one may still be in flight when the next message comes);
// send-lat posts two receives, one for the next message while the last
// one's echo is sent from the other.
func (sv *Server) planLat(p *plan) error {
	h := p.h
	switch p.op {
	case nic.OpWrite:
		p.slots, p.mem = 1, 3*h.Size
	case nic.OpSend:
		p.rq, p.mem = 2, 2*h.Size
	}
	if p.mem > sv.o.MaxMR {
		return fmt.Errorf("bad size: a latency run of %d B needs %d B, above the server's --max-mr of %d B", h.Size, p.mem, sv.o.MaxMR)
	}
	if p.op == nic.OpWrite && h.MR.Len < 2*uint64(h.Size) {
		return fmt.Errorf("write-lat: the client's region of %d B has no room for the echo at offset %d", h.MR.Len, h.Size)
	}
	return nil
}

// busyLat reports whether the run answers messages as they come, polling
// without sleeping as perftest's responder does (read-lat needs no
// answer).
func (r *serverRun) busyLat() bool { return r.p.h.Lat && r.p.op != nic.OpRead }

// pollWrite looks once for the next WRITE of a write-lat run in slot 0
// and, when it is all there, clears the slot and writes it back to the
// client. The slot is read while the worker may place into it: the tail
// first and then the whole message, so a message is taken only once
// every byte of it is what the client wrote. It reports whether it
// answered one.
func (r *serverRun) pollWrite() (bool, error) {
	l := &r.lat
	size := r.p.h.Size
	k := 1 + l.next%2
	src := r.slot(k)
	if !l.ready {
		if l.busy[k-1] {
			return false, nil // the echo from this slot two messages ago is in flight
		}
		fill(src, uint64(l.next))
		l.ready = true
	}
	in := r.slot(0)
	tail := max(0, size-8)
	if !bytes.Equal(in[tail:], src[tail:]) || !bytes.Equal(in, src) {
		return false, nil
	}
	clear(in)
	err := r.s.Post(nic.WR{ID: r.idBase | latBit | uint64(k), Op: nic.OpWrite, QP: r.qpns[0], LKey: r.mr.Key,
		LocalVA: r.mr.VA + uint64(k*size), Len: size, RKey: r.peer.Key, RemoteVA: r.peer.VA + uint64(size)})
	if err != nil {
		return false, fmt.Errorf("echo message %d: %w", l.next, err)
	}
	l.busy[k-1], l.ready = true, false
	l.next++
	r.res.Messages++
	r.res.VerifiedBytes += int64(size)
	return true, nil
}

// echoed handles the completion of an echo: its source is free again
// (send-lat: the receive is posted again).
func (r *serverRun) echoed(c nic.Completion) error {
	k := int(c.ID & idMask)
	if c.Status != nic.StatusOK {
		return fmt.Errorf("echo on QP %#x completed with %v", c.QP, c.Status)
	}
	if r.p.op == nic.OpWrite {
		r.lat.busy[k-1] = false
		return nil
	}
	if r.stopped {
		return nil
	}
	return r.postRecv(k)
}

// echoSend sends receive slot k back to the client (send-lat); the
// receive is posted again once the echo completed.
func (r *serverRun) echoSend(k int) error {
	size := r.p.h.Size
	err := r.s.Post(nic.WR{ID: r.idBase | latBit | uint64(k), Op: nic.OpSend, QP: r.qpns[0], LKey: r.mr.Key,
		LocalVA: r.mr.VA + uint64(k*size), Len: size})
	if err != nil {
		return fmt.Errorf("echo SEND from receive %d: %w", k, err)
	}
	return nil
}
