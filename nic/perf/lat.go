package perf

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"time"

	"rocetor/nic"
)

// The latency tests (write-lat, send-lat, read-lat) follow perftest's:
// one QP, one message in flight.
//
//   - send-lat: the client SENDs message i; the server's receive
//     completes, it checks the message and SENDs it back from the same
//     buffer; the client's receive completes. A sample is half the time
//     from the client's post to its receive completion.
//   - write-lat: the client WRITEs message i into the server's slot 0;
//     the server polls the slot until it holds message i — as
//     ib_write_lat polls the buffer's last byte — clears it and WRITEs
//     message i back into the client's region at offset size, which the
//     client polls the same way. A sample is half the round trip.
//     Polling reads memory the endpoint's worker writes, as a CPU polls
//     what a NIC places by DMA: the tail first, then the whole message,
//     so an order-tolerant transport that places the last packet first
//     is not taken for done.
//   - read-lat: the client READs slot i mod slots of the server's region
//     and checks it; a sample is the READ's whole completion time (the
//     request and the response), which is what ib_read_lat reports.
//
// The samples are taken on the session clock, which also stamps posts
// and completions.

// latBit marks the work request IDs of the receives and echoes of a
// latency test, apart from the messages' numbers.
const latBit = 1 << 62

// pingPong runs a latency test: o.count iterations, or as many as fit in
// o.duration. It fills the report's figures and its lat_us summary.
func (cl *client) pingPong(ctx context.Context) error {
	o := cl.o
	size := o.Size
	src, echo := cl.buf[:size], cl.buf[size:2*size]
	var (
		samples  = make([]int64, 0, max(o.Count, 1024))
		cqes     [16]nic.Completion
		first    = int64(-1)
		last     int64
		sqOut    int // send-queue entries not yet completed
		deadline time.Time
	)
	if o.Duration > 0 {
		deadline = time.Now().Add(o.Duration)
	}
	defer func() {
		cl.rep.setRun(samples, first, last, size)
		cl.rep.Count = len(samples)
		ls := LatStatsOf(samples)
		cl.rep.Lat = &ls
	}()
	qp := cl.qpns[0]
	postRecv := func() error {
		return cl.s.Post(nic.WR{ID: latBit, Op: nic.OpRecv, QP: qp, LKey: cl.mr.Key, LocalVA: cl.mr.VA + uint64(size), Len: size})
	}
	if o.Op == nic.OpSend {
		if err := postRecv(); err != nil {
			return fmt.Errorf("post receive: %w", err)
		}
	}
	every := min(time.Second, o.Timeout/4)
	lastBeat := time.Now()
	for i := 0; ; i++ {
		if o.Duration > 0 {
			if !time.Now().Before(deadline) {
				break
			}
		} else if i >= o.Count {
			break
		}
		var wr nic.WR
		switch o.Op {
		case nic.OpWrite, nic.OpSend:
			fill(src, uint64(i))
			wr = nic.WR{ID: uint64(i), Op: o.Op, QP: qp, LKey: cl.mr.Key, LocalVA: cl.mr.VA, Len: size}
			if o.Op == nic.OpWrite {
				wr.RKey, wr.RemoteVA = cl.peer.Key, cl.peer.VA
			}
		case nic.OpRead:
			wr = nic.WR{ID: uint64(i), Op: o.Op, QP: qp, LKey: cl.mr.Key, LocalVA: cl.mr.VA + uint64(size), Len: size,
				RKey: cl.peer.Key, RemoteVA: cl.peer.VA + uint64(i%cl.slots)*uint64(size)}
		}
		// The send queue holds the unsignalled tail of earlier
		// iterations (a WRITE's or SEND's ACK may come after the
		// echo); wait for room rather than fail.
		for sqOut >= latSQ {
			if _, err := cl.reap(ctx, cqes[:], &sqOut, -1); err != nil {
				return err
			}
		}
		t0 := cl.s.Now()
		if first < 0 {
			first = t0
		}
		if err := cl.s.Post(wr); err != nil {
			return fmt.Errorf("post message %d: %w", i, err)
		}
		sqOut++
		var sample int64
		switch o.Op {
		case nic.OpRead:
			lat, err := cl.reap(ctx, cqes[:], &sqOut, i)
			if err != nil {
				return err
			}
			last = cl.s.Now()
			sample = lat
			cl.rep.VerifiedBytes += int64(size)
			if err := check(echo, uint64(i%cl.slots)); err != nil {
				cl.rep.Corrupt++
				if cl.rep.firstCorrupt == "" {
					cl.rep.firstCorrupt = err.Error()
				}
			}
		case nic.OpSend:
			if _, err := cl.reap(ctx, cqes[:], &sqOut, latBit); err != nil {
				return err
			}
			last = cl.s.Now()
			sample = (last - t0) / 2
			cl.verifyEcho(echo, src, i)
			if err := postRecv(); err != nil {
				return fmt.Errorf("post receive: %w", err)
			}
		case nic.OpWrite:
			if err := cl.awaitEcho(ctx, cqes[:], &sqOut, echo, src, i); err != nil {
				return err
			}
			last = cl.s.Now()
			sample = (last - t0) / 2
			cl.rep.VerifiedBytes += int64(size)
			clear(echo)
		}
		samples = append(samples, sample)
		if now := time.Now(); now.Sub(lastBeat) >= every {
			lastBeat = now
			if err := cl.c.send(progress{Type: "progress", Messages: len(samples)}, o.Timeout); err != nil {
				return err
			}
		}
	}
	// The last ACKs, so that the run ends with nothing in flight.
	for sqOut > 0 {
		if _, err := cl.reap(ctx, cqes[:], &sqOut, -1); err != nil {
			return err
		}
	}
	return nil
}

// latSQ is the send queue of a latency test's QP: one message and the
// unreaped completions of a few before it.
const latSQ = 4

// reap polls the completion queue, busy as perftest does, until the
// completion with ID want arrives (-1: any one) or o.timeout passes
// without one, and returns its latency. Completions of the send queue
// decrement *sqOut; a failed one fails the run.
func (cl *client) reap(ctx context.Context, cqes []nic.Completion, sqOut *int, want int) (int64, error) {
	start := time.Now()
	for spins := 0; ; spins++ {
		n := cl.s.PollCQ(cqes)
		got, lat := false, int64(0)
		for _, c := range cqes[:n] {
			if c.Op != nic.OpRecv {
				*sqOut--
			}
			if c.Status != nic.StatusOK {
				return 0, fmt.Errorf("%v %d on QP %#x completed with %v", c.Op, c.ID&^latBit, c.QP, c.Status)
			}
			if want < 0 || c.ID == uint64(want) {
				got, lat = true, c.Latency
			}
		}
		if got {
			return lat, nil
		}
		if err := cl.idle(ctx, spins, start); err != nil {
			return 0, err
		}
	}
}

// idle is one empty poll of a latency loop: it spins a little, then
// sleeps (latIdle), and fails once the timeout passed since start or
// ctx ended.
func (cl *client) idle(ctx context.Context, spins int, start time.Time) error {
	if spins&255 == 255 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("interrupted: %w", err)
		}
		if time.Since(start) > cl.o.Timeout {
			return fmt.Errorf("no answer for %v: the peer's endpoint is not answering", cl.o.Timeout)
		}
	}
	latIdle(spins)
	return nil
}

// latIdle waits after an empty poll of a latency loop: runtime.Gosched
// for the first latSpins polls, then short sleeps. A poll loop that
// only spins holds a whole CPU — Gosched yields to goroutines, not to
// the endpoint's worker thread or another process — and on a two-CPU
// host the client's and the server's loops would take both from the
// workers that move the packets: perftest's busy polling assumes the
// NIC does that work.
func latIdle(spins int) {
	if spins < latSpins {
		runtime.Gosched()
		return
	}
	time.Sleep(latSleep)
}

// The latency loops' idle policy (latIdle).
const (
	latSpins = 64
	latSleep = 10 * time.Microsecond
)

// awaitEcho polls echo until it holds what src holds (message i, written
// back by the server), reaping completions meanwhile.
func (cl *client) awaitEcho(ctx context.Context, cqes []nic.Completion, sqOut *int, echo, src []byte, i int) error {
	start := time.Now()
	tail := max(0, len(src)-8)
	for spins := 0; ; spins++ {
		if bytes.Equal(echo[tail:], src[tail:]) && bytes.Equal(echo, src) {
			return nil
		}
		n := cl.s.PollCQ(cqes)
		for _, c := range cqes[:n] {
			*sqOut--
			if c.Status != nic.StatusOK {
				return fmt.Errorf("%v %d on QP %#x completed with %v", c.Op, c.ID, c.QP, c.Status)
			}
		}
		if err := cl.idle(ctx, spins, start); err != nil {
			if cerr := check(echo, uint64(i)); cerr != nil {
				return fmt.Errorf("message %d: %w; the echo region holds: %v", i, err, cerr)
			}
			return fmt.Errorf("message %d: %w", i, err)
		}
	}
}

// verifyEcho checks a SEND's echo against what was sent.
func (cl *client) verifyEcho(echo, src []byte, i int) {
	cl.rep.VerifiedBytes += int64(len(src))
	if !bytes.Equal(echo, src) {
		cl.rep.Corrupt++
		if cl.rep.firstCorrupt == "" {
			cl.rep.firstCorrupt = fmt.Sprintf("echo of %v", check(echo, uint64(i)))
		}
	}
}
