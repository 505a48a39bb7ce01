package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// client is one run from the client's side.
type client struct {
	o    clientOpts
	dev  device
	c    *conn
	s    session
	buf  []byte // qps × depth slots of size bytes: message k of QP q uses slot q*depth + k%depth
	mr   nic.MR
	qpns []uint32
	peer nic.MR
	// slots of the server's region: message i of a WRITE goes to, of a
	// READ comes from, slot i mod slots.
	slots int
	rep   report
	// capture is --pcap's, armed on the session before it starts.
	capture *dataplane.Capture
	// reverse receives the way back of a -b run (bidir.go): the
	// server's half of a run, on the client's endpoint.
	reverse *serverRun
}

// runClient runs one client run and returns its report (nil when it
// failed before the run began) and the error that made it fail.
func runClient(ctx context.Context, o clientOpts, dev device, capture *dataplane.Capture) (*report, error) {
	cl := &client{o: o, dev: dev, capture: capture}
	cl.rep = report{Transport: o.transport, Op: o.op.String(), Size: o.size, Count: o.count, QPs: o.qps,
		Depth: o.depth, MTU: o.mtu, DurationSet: o.duration.Seconds(), gbits: o.gbits}
	d := net.Dialer{Timeout: o.timeout}
	nc, err := d.DialContext(ctx, "tcp", o.to)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.to, err)
	}
	defer nc.Close()
	// A cancelled run must not wait out a deadline.
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	defer stop()
	cl.c = newConn(nc)
	if err := cl.setup(ctx, nc); err != nil {
		if cl.s != nil {
			cl.s.Stop()
		}
		return nil, err
	}
	defer cl.s.Stop()
	if o.bidir {
		if err := cl.c.send(started{Type: "started"}, o.timeout); err != nil {
			return nil, err
		}
	}
	cpu0, wall0 := cpuTime(), time.Now()
	var runErr error
	if o.lat {
		runErr = cl.pingPong(ctx)
	} else {
		runErr = cl.post(ctx)
	}
	if o.cpuUtil {
		u := round3(100 * float64(cpuTime()-cpu0) / float64(time.Since(wall0)))
		cl.rep.CPUUtilPct = &u
	}
	if !o.bidir {
		cl.s.Stop()
	}
	d2 := doneMsg{Type: "done", Messages: cl.rep.Messages, Bytes: cl.rep.Bytes}
	if runErr != nil {
		d2.Error = runErr.Error()
	}
	// Interrupted, still tell the server, but do not wait long for it.
	wait := o.timeout
	if ctx.Err() != nil {
		wait = min(wait, time.Second)
	}
	var res result
	err = cl.c.send(d2, wait)
	if err == nil {
		if o.bidir {
			// The endpoint answers the way back until the result.
			err = cl.awaitResult(&res, wait)
		} else {
			err = cl.c.expect("result", &res, wait)
		}
	}
	cl.s.Stop()
	cl.rep.counters = cl.s.Counters()
	if err != nil {
		return &cl.rep, errors.Join(runErr, fmt.Errorf("verification result: %w", err))
	}
	if o.bidir {
		if rerr := cl.verifyReverse(&res); rerr != nil && runErr == nil {
			runErr = rerr
		}
	}
	cl.rep.Server = &res.Server
	if o.op != nic.OpRead {
		cl.rep.VerifiedBytes, cl.rep.Corrupt = res.VerifiedBytes, res.Corrupt
		if res.Corrupt > 0 && cl.rep.firstCorrupt == "" {
			cl.rep.firstCorrupt = res.FirstCorrupt
		}
	}
	switch {
	case runErr != nil:
		return &cl.rep, runErr
	case res.Error != "":
		return &cl.rep, fmt.Errorf("server: %s", res.Error)
	case cl.rep.Corrupt > 0:
		return &cl.rep, fmt.Errorf("data corruption: %d messages differ from what was sent; first: %s", cl.rep.Corrupt, cl.rep.firstCorrupt)
	}
	return &cl.rep, nil
}

// setup exchanges QPs and regions with the server and starts the
// endpoint.
func (cl *client) setup(ctx context.Context, nc net.Conn) error {
	o := cl.o
	local := addrOf(nc.LocalAddr())
	if !cl.dev.HasAddr(local) {
		return fmt.Errorf("the connection to %s leaves from %v, which is not an address of %s: the server must be reached through --dev",
			o.to, local, o.dev)
	}
	t, err := newTransport(o.transport, o.rto, o.bdp)
	if err != nil {
		return err
	}
	ctl, err := o.cc.build()
	if err != nil {
		return err
	}
	sc := sessionConfig{ip: local, transport: t, qps: o.qps, sq: o.depth, rq: 1,
		cq: o.qps * o.depth, mtu: o.mtu, rate: o.rate, poll: o.poll, baseQPN: randomBase(), cc: ctl}
	var rp plan
	if o.bidir {
		if rp, err = cl.planReverse(); err != nil {
			return err
		}
		sc.rq, sc.cq, sc.mrs = max(1, rp.rq), sc.cq+o.qps*max(1, rp.rq), 2
	}
	bufLen := o.qps * o.depth * o.size
	if o.lat {
		// The message and its echo (write-lat, send-lat) or what a
		// READ brings back (read-lat): lat.go.
		sc.sq, sc.rq, sc.cq = latSQ, 1, latSQ+1
		bufLen = 2 * o.size
	}
	cl.s, err = cl.dev.open(sc)
	if err != nil {
		return err
	}
	if cl.capture != nil {
		cl.s.Capture(cl.capture)
	}
	cl.buf = make([]byte, bufLen)
	if cl.mr, err = cl.s.RegisterMR(cl.buf, nic.AccessRemote); err != nil {
		return err
	}
	if o.bidir {
		if cl.reverse, err = newReverse(cl.s, &rp); err != nil {
			return err
		}
	}
	h := hello{Type: "hello", Version: protoVersion, Op: o.op.String(), Transport: o.transport, QPs: o.qps,
		Size: o.size, Count: o.count, MTU: o.mtu, Depth: o.depth, RTOUS: o.rto.Microseconds(), BDP: o.bdp, TimeoutMS: o.timeout.Milliseconds(),
		MR: mrToWire(cl.mr), Lat: o.lat, RxDepth: o.rxDepth, DurationMS: o.duration.Milliseconds()}
	if o.bidir {
		h.Bidir, h.RMR, h.RSlots = true, mrToWire(cl.reverse.mr), rp.slots
	}
	if o.cc.Name != "none" {
		h.CC = &o.cc
	}
	for range o.qps {
		qi, err := cl.s.CreateQP(nic.QPOptions{MTU: o.mtu, PSN: randomPSN()})
		if err != nil {
			return err
		}
		cl.qpns = append(cl.qpns, qi.QPN)
		h.QP = append(h.QP, toWire(qi))
	}
	if err := cl.c.send(h, o.timeout); err != nil {
		return err
	}
	var acc accept
	if err := cl.c.expect("accept", &acc, o.timeout); err != nil {
		return err
	}
	switch {
	case acc.Version != protoVersion:
		return fmt.Errorf("server speaks protocol version %d, this roceperf %d", acc.Version, protoVersion)
	case len(acc.QP) != o.qps:
		return fmt.Errorf("server sent %d QPs for %d", len(acc.QP), o.qps)
	case o.op != nic.OpSend && (acc.Slots < 1 || uint64(acc.Slots)*uint64(o.size) > acc.MR.Len):
		return fmt.Errorf("server region of %d bytes cannot hold %d slots of %d bytes", acc.MR.Len, acc.Slots, o.size)
	}
	cl.peer = nic.MR{Key: acc.MR.RKey, VA: acc.MR.VA, Len: acc.MR.Len}
	cl.slots = acc.Slots
	if o.op == nic.OpWrite && !o.lat && orderTolerant(o.transport) && (o.count == 0 || cl.slots < o.count) {
		// Slots are reused: message i+slots goes where message i went,
		// on the same QP. An order-tolerant transport places a late
		// packet of message i wherever it arrives, so message i+slots
		// must not start before message i completed — then the
		// receiver has finished i and drops its late packets.
		if d := cl.slots / o.qps; d < cl.o.depth {
			cl.o.depth, cl.rep.Depth = d, d
		}
	}
	macs := map[string]rocev2.MAC{}
	for i, w := range acc.QP {
		m, ok := macs[w.IP]
		if !ok {
			ip, err := netip.ParseAddr(w.IP)
			if err != nil {
				return fmt.Errorf("server QP %d: address %q: %w", w.QPN, w.IP, err)
			}
			if m, err = cl.dev.NextHop(ctx, ip, o.timeout); err != nil {
				return err
			}
			macs[w.IP] = m
		}
		r, err := fromWire(w, o.mtu, m)
		if err != nil {
			return fmt.Errorf("server %w", err)
		}
		if err := cl.s.Connect(cl.qpns[i], r); err != nil {
			return err
		}
	}
	if o.bidir {
		if err := cl.reverse.postReceives(cl.qpns); err != nil {
			return err
		}
	}
	cl.s.Start()
	return nil
}

// addrOf returns the IP of a TCP address, unmapped.
func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// randomPSN picks a first PSN, as a NIC does, so that runs and QPs do
// not share sequence numbers.
func randomPSN() psn.PSN { return psn.New(rand.Uint32()) }

// randomBase picks a base QPN for a run, so that a late packet of an
// earlier run between the same hosts finds no QP rather than a new one;
// base + maxQPs stays within the 24-bit QPN space.
func randomBase() uint32 {
	return 0x100 + uint32(rand.IntN(min(2048, (1<<24-0x100)/maxQPs)))*maxQPs
}
