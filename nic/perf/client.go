package perf

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
	o    ClientOptions
	dev  Device
	c    *conn
	s    session
	buf  []byte // qps × depth slots of size bytes: message k of QP q uses slot q*depth + k%depth
	mr   nic.MR
	qpns []uint32
	peer nic.MR
	// slots of the server's region: message i of a WRITE goes to, of a
	// READ comes from, slot i mod slots.
	slots int
	rep   Report
	// capture is --pcap's, armed on the session before it starts.
	capture *dataplane.Capture
	// reverse receives the way back of a -b run (bidir.go): the
	// server's half of a run, on the client's endpoint.
	reverse *serverRun
}

// runClient runs one client run and returns its report (nil when it
// failed before the run began) and the error that made it fail.
func runClient(ctx context.Context, o ClientOptions, dev Device, capture *dataplane.Capture) (*Report, error) {
	cl := &client{o: o, dev: dev, capture: capture}
	cl.rep = Report{Transport: o.Transport, Op: o.Op.String(), Size: o.Size, Count: o.Count, QPs: o.QPs,
		Depth: o.Depth, MTU: o.MTU, DurationSet: o.Duration.Seconds(), gbits: o.Gbits}
	d := net.Dialer{Timeout: o.Timeout}
	nc, err := d.DialContext(ctx, "tcp", o.To)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.To, err)
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
	if o.Bidir {
		if err := cl.c.send(started{Type: "started"}, o.Timeout); err != nil {
			return nil, err
		}
	}
	cpu0, wall0 := cpuTime(), time.Now()
	var runErr error
	if o.Lat {
		runErr = cl.pingPong(ctx)
	} else {
		runErr = cl.post(ctx)
	}
	if o.CPUUtil {
		u := round3(100 * float64(cpuTime()-cpu0) / float64(time.Since(wall0)))
		cl.rep.CPUUtilPct = &u
	}
	if !o.Bidir {
		cl.s.Stop()
	}
	d2 := doneMsg{Type: "done", Messages: cl.rep.Messages, Bytes: cl.rep.Bytes}
	if runErr != nil {
		d2.Error = runErr.Error()
	}
	// Interrupted, still tell the server, but do not wait long for it.
	wait := o.Timeout
	if ctx.Err() != nil {
		wait = min(wait, time.Second)
	}
	var res result
	err = cl.c.send(d2, wait)
	if err == nil {
		if o.Bidir {
			// The endpoint answers the way back until the result.
			err = cl.awaitResult(&res, wait)
		} else {
			err = cl.c.expect("result", &res, wait)
		}
	}
	cl.s.Stop()
	cl.rep.Counters = cl.s.Counters()
	if err != nil {
		return &cl.rep, errors.Join(runErr, fmt.Errorf("verification result: %w", err))
	}
	if o.Bidir {
		if rerr := cl.verifyReverse(&res); rerr != nil && runErr == nil {
			runErr = rerr
		}
	}
	cl.rep.Server = &res.Server
	if o.Op != nic.OpRead {
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
			o.To, local, o.Dev)
	}
	t, err := NewTransport(o.Transport, o.RTO, o.BDP)
	if err != nil {
		return err
	}
	ctl, err := o.CC.Build()
	if err != nil {
		return err
	}
	sc := sessionConfig{ip: local, transport: t, qps: o.QPs, sq: o.Depth, rq: 1,
		cq: o.QPs * o.Depth, mtu: o.MTU, rate: o.Rate, poll: o.Poll, baseQPN: randomBase(), cc: ctl, class: o.Class}
	var rp plan
	if o.Bidir {
		if rp, err = cl.planReverse(); err != nil {
			return err
		}
		sc.rq, sc.cq, sc.mrs = max(1, rp.rq), sc.cq+o.QPs*max(1, rp.rq), 2
	}
	bufLen := o.QPs * o.Depth * o.Size
	if o.Lat {
		// The message and its echo (write-lat, send-lat) or what a
		// READ brings back (read-lat): lat.go.
		sc.sq, sc.rq, sc.cq = latSQ, 1, latSQ+1
		bufLen = 2 * o.Size
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
	if o.Bidir {
		if cl.reverse, err = newReverse(cl.s, &rp); err != nil {
			return err
		}
	}
	h := hello{Type: "hello", Version: protoVersion, Op: o.Op.String(), Transport: o.Transport, QPs: o.QPs,
		Size: o.Size, Count: o.Count, MTU: o.MTU, Depth: o.Depth, RTOUS: o.RTO.Microseconds(), BDP: o.BDP, TimeoutMS: o.Timeout.Milliseconds(),
		MR: mrToWire(cl.mr), Lat: o.Lat, RxDepth: o.RxDepth, DurationMS: o.Duration.Milliseconds()}
	if o.Bidir {
		h.Bidir, h.RMR, h.RSlots = true, mrToWire(cl.reverse.mr), rp.slots
	}
	if o.CC.Name != "none" {
		h.CC = &o.CC
	}
	for range o.QPs {
		qi, err := cl.s.CreateQP(nic.QPOptions{MTU: o.MTU, PSN: randomPSN()})
		if err != nil {
			return err
		}
		cl.qpns = append(cl.qpns, qi.QPN)
		h.QP = append(h.QP, toWire(qi))
	}
	if err := cl.c.send(h, o.Timeout); err != nil {
		return err
	}
	var acc accept
	if err := cl.c.expect("accept", &acc, o.Timeout); err != nil {
		return err
	}
	switch {
	case acc.Version != protoVersion:
		return fmt.Errorf("server speaks protocol version %d, this roceperf %d", acc.Version, protoVersion)
	case len(acc.QP) != o.QPs:
		return fmt.Errorf("server sent %d QPs for %d", len(acc.QP), o.QPs)
	case o.Op != nic.OpSend && (acc.Slots < 1 || uint64(acc.Slots)*uint64(o.Size) > acc.MR.Len):
		return fmt.Errorf("server region of %d bytes cannot hold %d slots of %d bytes", acc.MR.Len, acc.Slots, o.Size)
	}
	cl.peer = nic.MR{Key: acc.MR.RKey, VA: acc.MR.VA, Len: acc.MR.Len}
	cl.slots = acc.Slots
	if o.Op == nic.OpWrite && !o.Lat && orderTolerant(o.Transport) && (o.Count == 0 || cl.slots < o.Count) {
		// Slots are reused: message i+slots goes where message i went,
		// on the same QP. An order-tolerant transport places a late
		// packet of message i wherever it arrives, so message i+slots
		// must not start before message i completed — then the
		// receiver has finished i and drops its late packets.
		if d := cl.slots / o.QPs; d < cl.o.Depth {
			cl.o.Depth, cl.rep.Depth = d, d
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
			if m, err = cl.dev.NextHop(ctx, ip, o.Timeout); err != nil {
				return err
			}
			macs[w.IP] = m
		}
		r, err := fromWire(w, o.MTU, m)
		if err != nil {
			return fmt.Errorf("server %w", err)
		}
		if err := cl.s.Connect(cl.qpns[i], r); err != nil {
			return err
		}
	}
	if o.Bidir {
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
	return 0x100 + uint32(rand.IntN(min(2048, (1<<24-0x100)/MaxQPs)))*MaxQPs
}
