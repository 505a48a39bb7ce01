package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
)

// server answers runs one at a time; a client arriving meanwhile waits
// in the listen backlog (and gives up after its --timeout).
type server struct {
	o    serverOpts
	dev  device
	out  io.Writer // one JSON object per run
	log  io.Writer
	runs int
	// capture is --pcap's, armed on every run's session.
	capture *dataplane.Capture
}

// serverReport is what serve prints on stdout for each run, one JSON
// object per line: the run as the client described it, what the server
// verified, its endpoint's counters, and the error if the run failed.
type serverReport struct {
	Run            int    `json:"run"`
	Client         string `json:"client"`
	Op             string `json:"op,omitempty"`
	Transport      string `json:"transport,omitempty"`
	Size           int    `json:"size,omitempty"`
	Count          int    `json:"count,omitempty"`
	QPs            int    `json:"qps,omitempty"`
	ClientMessages int    `json:"client_messages"`
	Messages       int    `json:"messages"`
	VerifiedBytes  int64  `json:"verified_bytes"`
	Corrupt        int    `json:"corrupt"`
	FirstCorrupt   string `json:"first_corrupt,omitempty"`
	counters
	Pcap  *pcapStats `json:"pcap,omitempty"`
	Error string     `json:"error,omitempty"`
}

func (r *serverReport) summary() string {
	return fmt.Sprintf("%s %d × %d B on %d QPs over %s: client completed %d; verified %d messages, %d bytes, %d corrupt",
		r.Op, r.Count, r.Size, r.QPs, r.Transport, r.ClientMessages, r.Messages, r.VerifiedBytes, r.Corrupt)
}

// serve accepts runs until ctx ends, or after one with --once. It
// returns the exit code: with --once, 0 if the run verified; otherwise
// 0 when ctx ends.
func (sv *server) serve(ctx context.Context, ln net.Listener) int {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	fmt.Fprintf(sv.log, "roceperf: serving on %v\n", ln.Addr())
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				if sv.o.once {
					return exitFailure
				}
				return exitOK
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			fmt.Fprintf(sv.log, "roceperf: accept: %v\n", err)
			return exitFailure
		}
		sv.runs++
		rep := &serverReport{Run: sv.runs, Client: nc.RemoteAddr().String()}
		err = sv.handle(ctx, nc, rep)
		if err != nil {
			rep.Error = err.Error()
			fmt.Fprintf(sv.log, "roceperf: run %d from %v failed: %v\n", sv.runs, nc.RemoteAddr(), err)
		} else {
			fmt.Fprintf(sv.log, "roceperf: run %d from %v: %s\n", sv.runs, nc.RemoteAddr(), rep.summary())
		}
		if sv.capture != nil {
			// The file holds every run so far: a server stopped
			// any time leaves a whole capture.
			if st, perr := sv.o.pcap.writePcap(sv.capture); perr != nil {
				fmt.Fprintf(sv.log, "roceperf: %v\n", perr)
			} else {
				rep.Pcap = st
				fmt.Fprintln(sv.log, st.note(sv.o.pcap))
			}
		}
		if b, jerr := json.Marshal(rep); jerr == nil {
			fmt.Fprintf(sv.out, "%s\n", b)
		}
		if sv.o.once {
			if err != nil {
				return exitFailure
			}
			return exitOK
		}
	}
}

// plan is what the server sets up for a hello.
type plan struct {
	h     hello
	op    nic.Op
	slots int // WRITE, READ: size-byte slots of the region
	rq    int // SEND: receives posted per QP
	mem   int // bytes of the region
}

// planRun checks a hello and sizes the run; its errors go back to the
// client as the reason for refusing.
func (sv *server) planRun(h hello) (plan, error) {
	p := plan{h: h, op: ops[h.Op]}
	switch {
	case h.Version != protoVersion:
		return p, fmt.Errorf("protocol version %d, this server speaks %d", h.Version, protoVersion)
	case p.op == 0:
		return p, fmt.Errorf("unknown op %q (want write, send or read)", h.Op)
	case transports[h.Transport] == nil:
		return p, fmt.Errorf("unknown transport %q (this server has: %s)", h.Transport, transportNames())
	case !supports(h.Transport, p.op):
		return p, fmt.Errorf("transport %s does not do %s", h.Transport, h.Op)
	case h.QPs < 1 || h.QPs > maxQPs || len(h.QP) != h.QPs:
		return p, fmt.Errorf("%d QPs with %d described: want 1 to %d", h.QPs, len(h.QP), maxQPs)
	case h.Size < 1 || h.Size > nic.MaxMessage:
		return p, fmt.Errorf("bad size %d: want 1 B to %d B", h.Size, nic.MaxMessage)
	case h.Count < 1 && h.DurationMS <= 0, h.Count < 0:
		return p, fmt.Errorf("bad count %d", h.Count)
	case h.Lat && (h.QPs != 1 || h.Depth != 1):
		return p, fmt.Errorf("a latency test with %d QPs and depth %d: want one QP, one message in flight", h.QPs, h.Depth)
	case h.RxDepth < 0 || h.RxDepth > 4096:
		return p, fmt.Errorf("bad rx depth %d: want 0 to 4096", h.RxDepth)
	case !validMTU(h.MTU):
		return p, fmt.Errorf("bad MTU %d: want 256, 512, 1024 or 2048", h.MTU)
	case h.Depth < 1 || h.Depth > maxDepth:
		return p, fmt.Errorf("bad depth %d: want 1 to %d", h.Depth, maxDepth)
	case h.TimeoutMS < 1:
		return p, fmt.Errorf("bad timeout %d ms", h.TimeoutMS)
	case h.RTOUS < 0 || h.RTOUS > 10e6:
		return p, fmt.Errorf("bad RTO %d µs", h.RTOUS)
	case h.BDP < 0 || h.BDP > maxBDP:
		return p, fmt.Errorf("bad BDP %d packets: want 1 to %d", h.BDP, maxBDP)
	}
	if _, err := transports[h.Transport](time.Duration(h.RTOUS)*time.Microsecond, h.BDP); err != nil {
		return p, fmt.Errorf("transport %s: %w", h.Transport, err)
	}
	if _, err := h.CC.build(); err != nil {
		return p, err
	}
	limit := sv.o.maxMR
	if h.Lat && p.op != nic.OpRead {
		return p, sv.planLat(&p)
	}
	switch p.op {
	case nic.OpWrite, nic.OpRead:
		// Every message its own slot while they fit; past that, slots
		// come in multiples of the QP count, so that each slot is only
		// ever written by one QP and its last WRITE is known.
		fit := limit / h.Size
		switch {
		case h.Count > 0 && h.Count <= fit:
			p.slots = h.Count
		case fit >= h.QPs:
			p.slots = fit / h.QPs * h.QPs
		default:
			return p, fmt.Errorf("bad size: %d QPs × %d B exceed the server's --max-mr of %d B", h.QPs, h.Size, limit)
		}
		p.mem = p.slots * h.Size
	case nic.OpSend:
		// A receive is posted again only after the server has checked
		// it, and the client may have sent up to its depth more by
		// then; a SEND that finds no receive fails the run (an RNR
		// NAK, which the transports do not retry). So post at least
		// twice the depth, and as many more as 16 MiB allows (up to
		// 4096 per QP): the server may then fall that many messages
		// behind — a descheduled goroutine, a GC pause — with no RNR.
		p.rq = max(2*h.Depth, min(4096, (16<<20)/(h.QPs*h.Size)))
		if h.RxDepth > 0 {
			// The client's -r, as perftest's: fewer receives than
			// its depth risk the RNR that fails the run.
			p.rq = h.RxDepth
		}
		if int64(h.QPs)*int64(p.rq)*int64(h.Size) > int64(limit) {
			return p, fmt.Errorf("bad size: %d QPs × %d receives × %d B exceed the server's --max-mr of %d B",
				h.QPs, p.rq, h.Size, limit)
		}
		p.mem = h.QPs * p.rq * h.Size
	}
	return p, nil
}

// handle serves one run on nc and fills rep.
func (sv *server) handle(ctx context.Context, nc net.Conn, rep *serverReport) error {
	defer nc.Close()
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	c := newConn(nc)
	var h hello
	if err := c.expect("hello", &h, sv.o.timeout); err != nil {
		return err
	}
	rep.Op, rep.Transport, rep.Size, rep.Count, rep.QPs = h.Op, h.Transport, h.Size, h.Count, h.QPs
	p, err := sv.planRun(h)
	if err == nil {
		local := addrOf(nc.LocalAddr())
		if !sv.dev.HasAddr(local) {
			err = fmt.Errorf("the client reached this server at %v, which is not an address of the server's --dev", local)
		}
	}
	if err != nil {
		c.send(errorMsg{Type: "error", Error: err.Error()}, sv.o.timeout)
		return err
	}
	r, err := sv.setup(ctx, c, nc, &p)
	if err != nil {
		c.send(errorMsg{Type: "error", Error: err.Error()}, sv.o.timeout)
		return err
	}
	defer r.s.Stop()
	r.rep = rep
	return r.run(ctx)
}

// serverRun is one run from the server's side.
type serverRun struct {
	p       *plan
	c       *conn
	s       session
	rep     *serverReport
	buf     []byte
	mr      nic.MR
	qpns    []uint32
	peer    nic.MR // the client's region (write-lat: the echo goes to offset size)
	lat     latServer
	stopped bool  // the endpoint stopped: post no more receives
	recvd   []int // SEND: receives completed per QP
	res     result
	// timeout bounds each line from the client: its own --timeout, as
	// it sends progress at least four times as often.
	timeout time.Duration
}

// setup makes the session, region and QPs, connects them to the
// client's and sends accept.
func (sv *server) setup(ctx context.Context, c *conn, nc net.Conn, p *plan) (*serverRun, error) {
	h := p.h
	t, err := transports[h.Transport](time.Duration(h.RTOUS)*time.Microsecond, h.BDP)
	if err != nil {
		return nil, err
	}
	ctl, err := h.CC.build()
	if err != nil {
		return nil, err
	}
	r := &serverRun{p: p, c: c, timeout: time.Duration(h.TimeoutMS) * time.Millisecond}
	macs := map[netip.Addr]rocev2.MAC{}
	remote := make([]nic.QPInfo, h.QPs)
	for i, w := range h.QP {
		q, err := fromWire(w, h.MTU, rocev2.MAC{})
		if err != nil {
			return nil, fmt.Errorf("client %w", err)
		}
		m, ok := macs[q.IP]
		if !ok {
			if m, err = sv.dev.NextHop(ctx, q.IP, sv.o.timeout); err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
			macs[q.IP] = m
		}
		q.MAC = m
		remote[i] = q
	}
	rq, sq := max(p.rq, 1), 1
	if h.Lat {
		sq = latSQ // the echoes
	}
	s, err := sv.dev.open(sessionConfig{ip: addrOf(nc.LocalAddr()), transport: t, qps: h.QPs, sq: sq, rq: rq,
		cq: h.QPs*rq + sq, mtu: h.MTU, rate: sv.o.rate, baseQPN: randomBase(), cc: ctl})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	r.s = s
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if sv.capture != nil {
		s.Capture(sv.capture)
	}
	r.buf = make([]byte, p.mem)
	r.peer = nic.MR{Key: h.MR.RKey, VA: h.MR.VA, Len: h.MR.Len}
	if p.op == nic.OpRead {
		for k := range p.slots {
			fill(r.slot(k), uint64(k))
		}
	}
	if r.mr, err = s.RegisterMR(r.buf, nic.AccessRemote); err != nil {
		return nil, err
	}
	acc := accept{Type: "accept", Version: protoVersion, MR: mrToWire(r.mr), Slots: p.slots}
	for i := range h.QPs {
		qi, err := s.CreateQP(nic.QPOptions{MTU: h.MTU, PSN: randomPSN()})
		if err != nil {
			return nil, err
		}
		if err := s.Connect(qi.QPN, remote[i]); err != nil {
			return nil, err
		}
		r.qpns = append(r.qpns, qi.QPN)
		acc.QP = append(acc.QP, toWire(qi))
	}
	if p.op == nic.OpSend {
		r.recvd = make([]int, h.QPs)
		for q := range h.QPs {
			for j := range p.rq {
				if err := r.postRecv(q*p.rq + j); err != nil {
					return nil, err
				}
			}
		}
	}
	// The endpoint runs before the client hears of it: its first
	// packets find the QPs open and, for SEND, the receives posted
	// (Start takes them in before it returns).
	s.Start()
	if err := c.send(acc, r.timeout); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

// slot returns the region's slot k.
func (r *serverRun) slot(k int) []byte { return r.buf[k*r.p.h.Size : (k+1)*r.p.h.Size] }
