package perf

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
)

// FakeNet is an in-memory fabric of fake endpoints for tests, of this
// package and of programs built on it (cmd/roceperf): a work request
// takes effect the moment it is posted, under one lock, so a test
// exercises the exchange, the post loop and verification without root,
// AF_XDP or a transport. Set Tamper and Silent before the first run;
// FakeNet is safe for concurrent use by the runs on it.
type FakeNet struct {
	mu     sync.Mutex
	qps    map[uint32]*fakeQP
	nextQP uint32
	// Tamper sees each WRITE or SEND payload as it is placed and each
	// READ's as it is returned, with the work request's ID; it may
	// change the bytes, or return a status to fail the request.
	Tamper func(op nic.Op, id uint64, b []byte) nic.Status
	// Silent drops every work request without completing it: a peer
	// endpoint that never answers.
	Silent bool
}

// NewFakeNet returns an empty fake fabric.
func NewFakeNet() *FakeNet { return &FakeNet{qps: map[uint32]*fakeQP{}, nextQP: 0x100} }

// Device returns a host on n.
func (n *FakeNet) Device() Device { return fakeDevice{n} }

// Open is an Opener of hosts on n, whatever the interface's name.
func (n *FakeNet) Open(string) (Device, func(), error) { return fakeDevice{n}, func() {}, nil }

// fakeDevice is one host of a FakeNet; every address is its own.
type fakeDevice struct{ n *FakeNet }

func (d fakeDevice) HasAddr(netip.Addr) bool { return true }

func (d fakeDevice) NextHop(context.Context, netip.Addr, time.Duration) (rocev2.MAC, error) {
	return rocev2.MAC{2, 0, 0, 0, 0, 1}, nil
}

func (d fakeDevice) open(c sessionConfig) (session, error) {
	s := &fakeSession{n: d.n, start: time.Now()}
	// The SR state as nic.Endpoint.SRState gives it.
	s.st.setSR(c.transport.SRState(), c.qps)
	// The congestion control the run asked for, as hostSession reports it.
	s.st.CC = ccCountersOf(c.cc)
	return s, nil
}

type fakeQP struct {
	s       *fakeSession
	qpn     uint32
	remote  uint32
	rq      []nic.WR
	waiting []waitingSend
}

type waitingSend struct {
	src *fakeSession
	wr  nic.WR
}

type fakeSession struct {
	n     *FakeNet
	start time.Time
	mrs   [][]byte
	cq    []nic.Completion
	st    Counters
}

func (s *fakeSession) RegisterMR(buf []byte, a nic.Access) (nic.MR, error) {
	s.mrs = append(s.mrs, buf)
	k := len(s.mrs)
	return nic.MR{Key: uint32(k) << 8, VA: uint64(k) << 40, Len: uint64(len(buf))}, nil
}

// region returns the n bytes at va of region key.
func (s *fakeSession) region(key uint32, va uint64, n int) []byte {
	b := s.mrs[key>>8-1]
	off := va - uint64(key>>8)<<40
	return b[off : off+uint64(n)]
}

func (s *fakeSession) CreateQP(o nic.QPOptions) (nic.QPInfo, error) {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	q := &fakeQP{s: s, qpn: s.n.nextQP}
	s.n.nextQP++
	s.n.qps[q.qpn] = q
	return nic.QPInfo{QPN: q.qpn, PSN: o.PSN, MTU: 1024, IP: netip.MustParseAddr("192.0.2.1")}, nil
}

func (s *fakeSession) Connect(qpn uint32, r nic.QPInfo) error {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	s.n.qps[qpn].remote = r.QPN
	return nil
}

func (s *fakeSession) Post(wr nic.WR) error {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.qps[wr.QP]
	if wr.Op == nic.OpRecv {
		q.rq = append(q.rq, wr)
		// A SEND that found no receive waits for one, as with an
		// unlimited RNR retry count.
		if len(q.waiting) > 0 {
			w := q.waiting[0]
			q.waiting = q.waiting[1:]
			w.src.execute(w.wr)
		}
		return nil
	}
	if n.Silent {
		return nil
	}
	s.execute(wr)
	return nil
}

// execute carries out a work request; the lock is held.
func (s *fakeSession) execute(wr nic.WR) {
	n := s.n
	q := n.qps[wr.QP]
	peer := n.qps[q.remote]
	local := s.region(wr.LKey, wr.LocalVA, wr.Len)
	st := nic.StatusOK
	s.st.PacketsSent++
	switch wr.Op {
	case nic.OpWrite:
		dst := peer.s.region(wr.RKey, wr.RemoteVA, wr.Len)
		copy(dst, local)
		st = n.tamperWith(wr.Op, wr.ID, dst)
	case nic.OpRead:
		copy(local, peer.s.region(wr.RKey, wr.RemoteVA, wr.Len))
		st = n.tamperWith(wr.Op, wr.ID, local)
	case nic.OpSend:
		if len(peer.rq) == 0 {
			peer.waiting = append(peer.waiting, waitingSend{s, wr})
			return
		}
		r := peer.rq[0]
		peer.rq = peer.rq[1:]
		dst := peer.s.region(r.LKey, r.LocalVA, r.Len)
		copy(dst, local)
		st = n.tamperWith(wr.Op, wr.ID, dst)
		peer.s.cq = append(peer.s.cq, nic.Completion{ID: r.ID, QP: peer.qpn, Op: nic.OpRecv, Len: wr.Len})
		peer.s.st.PacketsReceived++
	}
	s.cq = append(s.cq, nic.Completion{ID: wr.ID, QP: wr.QP, Op: wr.Op, Status: st, Len: wr.Len,
		Latency: int64(1000 + wr.ID%100)})
}

func (n *FakeNet) tamperWith(op nic.Op, id uint64, b []byte) nic.Status {
	if n.Tamper == nil {
		return nic.StatusOK
	}
	return n.Tamper(op, id, b)
}

func (s *fakeSession) PollCQ(out []nic.Completion) int {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	k := copy(out, s.cq)
	s.cq = s.cq[k:]
	return k
}

func (s *fakeSession) Now() int64 { return int64(time.Since(s.start)) }
func (s *fakeSession) Start()     {}
func (s *fakeSession) Stop()      {}

func (s *fakeSession) Capture(*dataplane.Capture) {}
func (s *fakeSession) Counters() Counters {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	return s.st
}

func (s *fakeSession) LiveCounters() Counters { return s.Counters() }
