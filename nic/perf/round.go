package perf

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"rocetor/nic"
	"rocetor/rocev2"
)

// Many clients: serve --clients N answers up to N clients at once, in
// rounds. A round gathers clients until N have said hello, or until
// half the server's --timeout has passed since the first one; then it
// builds one endpoint for all of them — each client its own QPs, its
// own memory region, its own receives — starts it, accepts them all,
// and serves their runs side by side until every one has said done.
// Then it stops the endpoint, verifies each client's data and answers
// each with its result.
//
// One endpoint, because an endpoint takes its QPs and regions before
// its worker starts (nic.Endpoint.CreateQP) and a host runs one
// endpoint on its port (host.Host.NewSession): the clients of a round
// therefore share what is endpoint-wide — the transport and its
// timeout and BDP, the congestion control, the server's address — and a
// client asking for another is refused. Their counters are the
// endpoint's, for the whole round (serve's report says how many
// clients it had). A client finished early waits for the others' to
// end the round; the server keeps it alive with progress lines.
//
// --clients 1, the default, is a round of one: a run at a time, as
// before; --once serves one round.

// MaxClients bounds --clients: one memory region each (nic.Config.MaxMRs).
const MaxClients = 64

// Work request IDs of a round's endpoint: bits 48-60 are the client's
// index in the round, revBit marks the way back of a bidirectional run
// (-b), latBit an echo, and the low 48 bits are the client's own (a
// receive slot, a message number).
const (
	idShift = 48
	idMask  = 1<<idShift - 1
	revBit  = 1 << 61
)

// serverRun is one client's run in a round, from the server's side.
type serverRun struct {
	p       *plan
	c       *conn
	nc      net.Conn
	local   netip.Addr // the server's address the client reached
	stop    func() bool
	s       session // the round's
	rep     *ServerReport
	buf     []byte
	mr      nic.MR
	peer    nic.MR // the client's region (write-lat: the echo goes to offset size)
	qpns    []uint32
	idBase  uint64 // the client's index in the round, in bits 48-61 of its work requests' IDs
	lat     latServer
	stopped bool  // the endpoint stopped: post no more receives
	recvd   []int // SEND: receives completed per QP
	res     result
	acc     accept
	// timeout bounds each line from the client: its own --timeout, as
	// it sends progress at least four times as often.
	timeout time.Duration
	rev     *sender // -b: the server's own messages to the client
	revEnd  time.Time
	// revStarted: the client said its endpoint runs (bidir.go).
	revStarted bool
	done       bool    // the client said done, or its connection failed
	d          doneMsg // its done line
	err        error   // the exchange failed: no result to send
	failed     error   // the server found the run failed (a receive, an echo)
}

// Serve runs rounds on ln until ctx ends, or one with ServerOptions.Once.
// It returns nil when ctx ends; with Once, nil if every run of the round
// verified, else ErrRoundFailed (also when ctx ends it first). It
// closes ln when ctx ends.
func (sv *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	fmt.Fprintf(sv.log, "roceperf: serving on %v\n", ln.Addr())
	for {
		rs, refused, err := sv.gather(ctx, ln)
		if err != nil {
			if ctx.Err() != nil {
				if sv.o.Once {
					return ErrRoundFailed
				}
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		ok := refused == 0
		if len(rs) > 0 {
			ok = sv.round(ctx, rs) && ok
		}
		if sv.o.Once && (len(rs) > 0 || refused > 0) {
			if ok {
				return nil
			}
			return ErrRoundFailed
		}
	}
}

// gather accepts the clients of a round: --clients of them, or as many
// as said hello within half the server's --timeout of the first. A
// client refused at hello is reported and does not count, except that
// with --once and one client per round it ends the round.
func (sv *Server) gather(ctx context.Context, ln net.Listener) (rs []*serverRun, refused int, err error) {
	dl, _ := ln.(interface{ SetDeadline(time.Time) error })
	if dl != nil {
		defer dl.SetDeadline(time.Time{})
	}
	var until time.Time
	for len(rs) < sv.clients() {
		if len(rs) > 0 && dl != nil {
			dl.SetDeadline(until)
		}
		nc, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
				if len(rs) > 0 {
					break // the round starts with the clients that came
				}
				continue
			}
			for _, r := range rs {
				r.close()
			}
			return nil, refused, err
		}
		r, err := sv.hello(ctx, nc, rs)
		if err != nil {
			refused++
			r.close()
			sv.report(r.rep, err)
			if sv.o.Once && sv.clients() == 1 {
				return nil, refused, nil
			}
			continue
		}
		if len(rs) == 0 {
			until = time.Now().Add(sv.o.Timeout / 2)
		}
		rs = append(rs, r)
	}
	return rs, refused, nil
}

// clients is --clients; the zero value of serverOpts serves one.
func (sv *Server) clients() int { return max(sv.o.Clients, 1) }

// hello reads and plans a client's hello; a refusal goes back to the
// client. The run it returns has its report even on error.
func (sv *Server) hello(ctx context.Context, nc net.Conn, others []*serverRun) (*serverRun, error) {
	sv.runs++
	r := &serverRun{nc: nc, c: newConn(nc), rep: &ServerReport{Run: sv.runs, Round: sv.rounds + 1, Client: nc.RemoteAddr().String()}}
	// A cancelled server must not wait out a deadline.
	r.stop = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	var h hello
	if err := r.c.expect("hello", &h, sv.o.Timeout); err != nil {
		return r, err
	}
	r.rep.Op, r.rep.Transport, r.rep.Size, r.rep.Count, r.rep.QPs = h.Op, h.Transport, h.Size, h.Count, h.QPs
	p, err := sv.planRun(h)
	r.p, r.local = &p, addrOf(nc.LocalAddr())
	r.timeout = time.Duration(h.TimeoutMS) * time.Millisecond
	if err == nil && !sv.dev.HasAddr(r.local) {
		err = fmt.Errorf("the client reached this server at %v, which is not an address of the server's --dev", r.local)
	}
	if err == nil && len(others) > 0 {
		err = others[0].joins(r)
	}
	if err == nil && h.Lat && sv.clients() > 1 {
		err = errors.New("a latency test wants the server to itself: this one serves several clients at once (--clients)")
	}
	if err != nil {
		r.c.send(errorMsg{Type: "error", Error: err.Error()}, sv.o.Timeout)
		return r, err
	}
	return r, nil
}

// joins says why r cannot share first's endpoint, if it cannot.
func (first *serverRun) joins(r *serverRun) error {
	a, b := first.p.h, r.p.h
	ca, _ := json.Marshal(a.CC)
	cb, _ := json.Marshal(b.CC)
	switch {
	case r.local != first.local:
		return fmt.Errorf("this round's endpoint is at %v, the client reached %v", first.local, r.local)
	case a.Transport != b.Transport || a.RTOUS != b.RTOUS || cmp.Or(a.BDP, srBDP) != cmp.Or(b.BDP, srBDP):
		return fmt.Errorf("this round runs transport %s (RTO %d µs, BDP %d), the client asks for %s (RTO %d µs, BDP %d): clients served at once share the endpoint's",
			a.Transport, a.RTOUS, a.BDP, b.Transport, b.RTOUS, b.BDP)
	case string(ca) != string(cb):
		return fmt.Errorf("this round runs congestion control %s, the client asks for %s: clients served at once share the endpoint's", ca, cb)
	}
	return nil
}

// close ends the run's connection.
func (r *serverRun) close() {
	if r.stop != nil {
		r.stop()
	}
	r.nc.Close()
}

// report logs a finished run and prints its JSON line.
func (sv *Server) report(rep *ServerReport, err error) {
	if err != nil {
		rep.Error = err.Error()
		fmt.Fprintf(sv.log, "roceperf: run %d from %v failed: %v\n", rep.Run, rep.Client, err)
	} else {
		fmt.Fprintf(sv.log, "roceperf: run %d from %v: %s\n", rep.Run, rep.Client, rep.summary())
	}
	if sv.metrics != nil {
		sv.metrics.finished(rep, err)
	}
	if b, jerr := json.Marshal(rep); jerr == nil {
		fmt.Fprintf(sv.out, "%s\n", b)
	}
}

// round serves the runs of one round and reports each; it returns
// whether every one verified.
func (sv *Server) round(ctx context.Context, rs []*serverRun) bool {
	sv.rounds++
	defer func() {
		for _, r := range rs {
			r.close()
		}
	}()
	for _, r := range rs {
		r.rep.Round, r.rep.Clients = sv.rounds, len(rs)
	}
	s, err := sv.setup(ctx, rs)
	if err != nil {
		for _, r := range rs {
			r.c.send(errorMsg{Type: "error", Error: err.Error()}, sv.o.Timeout)
			sv.report(r.rep, err)
		}
		return false
	}
	defer s.Stop()
	if sv.metrics != nil {
		sv.metrics.started(s, rs)
	}
	sv.run(ctx, s, rs)
	// Stopped, the worker writes the regions no more: what they hold
	// now is final, and reading them races with nothing.
	s.Stop()
	if sv.metrics != nil {
		sv.metrics.stopped(s.Counters())
	}
	var cqes [256]nic.Completion
	for _, r := range rs {
		r.stopped = true
	}
	for n := s.PollCQ(cqes[:]); n > 0; n = s.PollCQ(cqes[:]) {
		sv.dispatch(rs, cqes[:n])
	}
	if sv.capture != nil {
		// The file holds every round so far: a server stopped any
		// time leaves a whole capture.
		if st, perr := sv.o.Pcap.writePcap(sv.capture); perr != nil {
			fmt.Fprintf(sv.log, "roceperf: %v\n", perr)
		} else {
			for _, r := range rs {
				r.rep.Pcap = st
			}
			fmt.Fprintln(sv.log, st.note(sv.o.Pcap))
		}
	}
	ok := true
	for _, r := range rs {
		err := r.finish()
		ok = ok && err == nil
		sv.report(r.rep, err)
	}
	return ok
}

// setup makes the round's session, each client's region and QPs,
// connects them to the client's, starts the endpoint and sends each
// client its accept. A client whose accept cannot be sent fails alone.
func (sv *Server) setup(ctx context.Context, rs []*serverRun) (session, error) {
	h0 := rs[0].p.h
	t, err := NewTransport(h0.Transport, time.Duration(h0.RTOUS)*time.Microsecond, h0.BDP)
	if err != nil {
		return nil, err
	}
	ctl, err := h0.CC.Build()
	if err != nil {
		return nil, err
	}
	qps, rq, sq, cq := 0, 1, 1, 0
	for _, r := range rs {
		qps += r.p.h.QPs
		rq = max(rq, r.p.rq)
		if r.p.h.Lat {
			sq = max(sq, latSQ) // the echoes
		}
		if r.p.h.Bidir {
			sq = max(sq, r.p.h.Depth) // the way back
		}
	}
	for _, r := range rs {
		cq += r.p.h.QPs * (max(r.p.rq, 1) + sq)
	}
	if qps > MaxQPs {
		return nil, fmt.Errorf("the round's clients ask for %d QPs, more than the %d an endpoint has", qps, MaxQPs)
	}
	s, err := sv.dev.open(sessionConfig{ip: rs[0].local, transport: t, qps: qps, sq: sq, rq: rq,
		cq: cq, mtu: h0.MTU, rate: sv.o.Rate, poll: sv.o.Poll, baseQPN: randomBase(), cc: ctl, mrs: 2 * len(rs), class: sv.o.Class})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if sv.capture != nil {
		s.Capture(sv.capture)
	}
	macs := map[netip.Addr]rocev2.MAC{}
	for i, r := range rs {
		r.s, r.idBase = s, uint64(i)<<idShift
		if err := sv.setupRun(ctx, r, macs); err != nil {
			return nil, err
		}
	}
	// The endpoint runs before the clients hear of it: their first
	// packets find the QPs open and, for SEND, the receives posted
	// (Start takes them in before it returns).
	s.Start()
	for _, r := range rs {
		if err := r.c.send(r.acc, r.timeout); err != nil {
			r.err, r.done = err, true
			continue
		}
	}
	ok = true
	return s, nil
}

// setupRun makes one client's region and QPs on the round's session and
// connects them; macs caches next hops.
func (sv *Server) setupRun(ctx context.Context, r *serverRun, macs map[netip.Addr]rocev2.MAC) error {
	p, h, s := r.p, r.p.h, r.s
	remote := make([]nic.QPInfo, h.QPs)
	for i, w := range h.QP {
		q, err := fromWire(w, h.MTU, rocev2.MAC{})
		if err != nil {
			return fmt.Errorf("client %w", err)
		}
		m, ok := macs[q.IP]
		if !ok {
			if m, err = sv.dev.NextHop(ctx, q.IP, sv.o.Timeout); err != nil {
				return fmt.Errorf("server: %w", err)
			}
			macs[q.IP] = m
		}
		q.MAC = m
		remote[i] = q
	}
	r.buf = make([]byte, p.mem)
	r.peer = nic.MR{Key: h.MR.RKey, VA: h.MR.VA, Len: h.MR.Len}
	if p.op == nic.OpRead {
		for k := range p.slots {
			fill(r.slot(k), uint64(k))
		}
	}
	var err error
	if r.mr, err = s.RegisterMR(r.buf, nic.AccessRemote); err != nil {
		return err
	}
	r.acc = accept{Type: "accept", Version: protoVersion, MR: mrToWire(r.mr), Slots: p.slots}
	for i := range h.QPs {
		qi, err := s.CreateQP(nic.QPOptions{MTU: h.MTU, PSN: randomPSN()})
		if err != nil {
			return err
		}
		if err := s.Connect(qi.QPN, remote[i]); err != nil {
			return err
		}
		r.qpns = append(r.qpns, qi.QPN)
		r.acc.QP = append(r.acc.QP, toWire(qi))
	}
	if p.op == nic.OpSend {
		r.recvd = make([]int, h.QPs)
		for q := range h.QPs {
			for j := range p.rq {
				if err := r.postRecv(q*p.rq + j); err != nil {
					return err
				}
			}
		}
	}
	if h.Bidir {
		// The way back: the same messages from the server's own
		// buffers into the client's reverse region (bidir.go).
		buf := make([]byte, h.QPs*h.Depth*h.Size)
		mr, err := s.RegisterMR(buf, nic.AccessRemote)
		if err != nil {
			return err
		}
		peer := nic.MR{Key: h.RMR.RKey, VA: h.RMR.VA, Len: h.RMR.Len}
		r.rev = newSender(p.op, h.Size, h.QPs, h.Depth, h.Count, time.Duration(h.DurationMS)*time.Millisecond, s, r.qpns,
			mr, mr.VA, buf, peer, max(h.RSlots, 1), r.idBase|revBit)
	}
	return nil
}

// line is one protocol line a client's reader goroutine got, or its
// error.
type line struct {
	run int // the client's index in the round
	typ string
	b   []byte
	err error
}

// run waits for every client's done line — checking and re-posting SEND
// receives and answering latency tests meanwhile, and keeping the
// clients that are done alive while the others finish.
func (sv *Server) run(ctx context.Context, s session, rs []*serverRun) {
	lines := make(chan line, 4*len(rs))
	pending := 0
	pollCQ, busy := false, false
	every := time.Second
	for i, r := range rs {
		if r.done {
			continue
		}
		pending++
		pollCQ = pollCQ || r.p.op == nic.OpSend || r.busyLat() || r.rev != nil
		busy = busy || r.busyLat()
		every = min(every, r.timeout/4)
		go func() {
			for {
				typ, b, err := r.c.recv(r.timeout)
				lines <- line{i, typ, b, err}
				if err != nil || typ == "done" {
					return
				}
			}
		}()
	}
	wait := time.Second
	if pollCQ {
		wait = 50 * time.Microsecond
	}
	wait = min(wait, every)
	var cqes [256]nic.Completion
	lastBeat := time.Now()
	idle := 0
	for pending > 0 || sv.reversing(rs) {
		n := 0
		if pollCQ {
			n = s.PollCQ(cqes[:])
			sv.dispatch(rs, cqes[:n])
		}
		if pollCQ {
			now := time.Now()
			for _, r := range rs {
				if r.rev != nil {
					r.rev.tick(now)
					if r.done && r.failed == nil && !r.rev.finished() && now.After(r.revEnd) {
						r.failed = fmt.Errorf("the way back: no end %v after the client's: %d of its messages outstanding",
							r.timeout, r.rev.outstanding())
					}
				}
			}
		}
		for _, r := range rs {
			if !r.done && r.busyLat() && r.p.op == nic.OpWrite && r.failed == nil {
				answered, err := r.pollWrite()
				if err != nil {
					r.failed = err
				}
				if answered {
					n++
				}
			}
		}
		if pending < len(rs) {
			if now := time.Now(); now.Sub(lastBeat) >= every {
				lastBeat = now
				for _, r := range rs {
					if r.done && r.err == nil {
						if err := r.c.send(progress{Type: "progress", Messages: r.d.Messages}, r.timeout); err != nil {
							r.err = err
						}
					}
				}
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
			if busy {
				latIdle(idle)
				idle++
				continue
			}
			if idle++; !pollCQ || idle > 64 {
				// Nothing to re-post: wait for a client, or for
				// receives to complete.
				select {
				case l = <-lines:
				case <-time.After(wait):
					continue
				}
			} else {
				continue
			}
		}
		r := rs[l.run]
		switch {
		case l.err != nil:
			r.err = fmt.Errorf("waiting for the client's done line: %w", l.err)
		case l.typ == "progress":
			continue
		case l.typ == "started" && r.rev != nil && !r.revStarted:
			// The client's endpoint runs: the way back may go.
			r.revStarted = true
			if err := r.rev.start(); err != nil && r.failed == nil {
				r.failed = fmt.Errorf("the way back: %w", err)
			}
			continue
		case l.typ == "done":
			if err := json.Unmarshal(l.b, &r.d); err != nil {
				r.err = fmt.Errorf("bad done line: %w", err)
			}
		default:
			r.err = fmt.Errorf("got a %q line during the run", l.typ)
		}
		r.done = true
		r.revEnd = time.Now().Add(r.timeout)
		pending--
	}
}

// reversing reports whether a client that said done still has the way
// back of its -b run in flight.
func (sv *Server) reversing(rs []*serverRun) bool {
	for _, r := range rs {
		if r.rev != nil && r.err == nil && r.failed == nil && !r.rev.finished() {
			return true
		}
	}
	return false
}

// dispatch hands each completion to the run whose work request it was.
func (sv *Server) dispatch(rs []*serverRun, cqes []nic.Completion) {
	for _, c := range cqes {
		i := int(c.ID>>idShift) & (1<<(61-idShift) - 1)
		if i >= len(rs) {
			continue
		}
		r := rs[i]
		var err error
		if c.ID&revBit != 0 && r.rev != nil {
			err = r.rev.complete(c)
		} else {
			err = r.received(c)
		}
		if err != nil && r.failed == nil {
			r.failed = err
		}
	}
}
