package nic

import (
	"fmt"
	"net/netip"

	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// ReadDepth is how many RDMA READs a requester keeps outstanding per QP
// and how many read resources a responder keeps per QP (the IBA's
// max_rd_atomic / max_dest_rd_atomic, fixed here). A responder keeps the
// last ReadDepth reads so that a re-issued request can restart one.
const ReadDepth = 4

// ropNone is the responder's last opcode when no message is in progress
// (the zero opcode is RC SEND FIRST, which would expect a MIDDLE).
const ropNone = rocev2.RCAck

// QP states.
const (
	stateReset uint8 = iota // created, not connected
	stateRTS                // connected: ready to send and receive
	stateError              // a fatal error completed or flushed its work
)

// wqe is one send work request (56 bytes). first and npkts are set when
// the requester first reaches it (assign), as rxe sets first_psn.
type wqe struct {
	id    uint64
	post  int64
	off   uint64 // local buffer offset in region mr
	rva   uint64
	len   uint32
	rkey  uint32
	first psn.PSN
	npkts uint32
	msn   uint32 // message sequence number: the QP's count of send work requests
	mr    uint16
	op    Op
}

// last returns the PSN of the work request's last packet.
func (w *wqe) last() psn.PSN { return w.first.Add(int(w.npkts) - 1) }

// rwqe is one posted receive (24 bytes).
type rwqe struct {
	id  uint64
	off uint64
	len uint32
	mr  uint16
}

// readRes is a responder's read resource (40 bytes): one accepted READ
// request, kept to stream its responses and to restart them when the
// requester re-issues the read from a lost response's PSN.
type readRes struct {
	base  psn.PSN // PSN of the original request: response base+j carries bytes [j·MTU, (j+1)·MTU)
	first psn.PSN // PSN of the latest (re-)issued request: where FIRST goes
	next  psn.PSN // next response to send
	last  psn.PSN // PSN of the last response
	hi    psn.PSN // one past the highest response sent, to count resends
	off   uint64  // region offset of the original request's VA
	len   uint32  // original DMA length
	mr    uint16
	valid bool // holds a request
	busy  bool // responses remain to be sent
}

// QP is one reliable-connected queue pair. The framework owns its fields;
// transports read them through the accessor methods and keep their own
// per-QP state in a slice indexed by Index. A QP belongs to its
// endpoint's worker goroutine.
//
// The context a NIC would keep in SRAM (everything but the queues) is
// 376 bytes on 64-bit platforms, 160 of them the ReadDepth read
// resources; the send and receive queues are rings of 56- and 24-byte
// entries allocated at CreateQP (a real NIC's host memory). Endpoint.QPBytes
// adds the transport's and congestion control's per-QP state, and
// TestQPBytes checks the sum against the heap growth per QP.
type QP struct {
	idx   uint32
	qpn   uint32
	rqpn  uint32
	ipsn  psn.PSN // initial send PSN, for Info
	lmtu  uint16  // MTU asked for at CreateQP
	mtu   uint16  // path MTU: min of both ends'
	sport uint16
	state uint8

	active     bool // in the endpoint's active ring
	parked     bool // waiting for congestion control (a wake timer is armed)
	ackPending bool // a coalesced ACK is due at the end of this batch
	heapArmed  bool // a heap entry with generation gen is armed for heapAt
	rtoOn      bool // the transport's timer is set for rtoAt
	timedOut   bool // the timer expired and no NAK came since (Stats.TimeoutRetransmits)
	gen        uint32
	heapAt     int64
	rtoAt      int64

	rmac rocev2.MAC
	rip  netip.Addr

	// requester
	sq                     []wqe
	sqHead, sqSent, sqTail uint32 // completed < sqHead ≤ assigned < sqSent ≤ posted < sqTail
	wcache                 uint32 // index of the work request last found by PSN
	next                   psn.PSN
	una                    psn.PSN // oldest PSN not yet acknowledged (or answered, for a READ)
	acked                  psn.PSN // highest PSN cumulatively acknowledged
	sndMax                 psn.PSN // one past the highest PSN sent
	smsn                   uint32  // message sequence number of the next send work request

	// responder
	epsn   psn.PSN
	msn    uint32
	rop    rocev2.Opcode // opcode of the last accepted request, for the sequence check
	wmr    uint16        // WRITE in progress: region, offset, bytes still due
	woff   uint64
	wrem   uint32
	rq     []rwqe
	rqHead uint32
	rqTail uint32
	roff   uint32 // bytes of the SEND in progress placed in the head receive
	reads  [ReadDepth]readRes
	rdNext uint8 // read resource the next READ request takes

	// requester: a refusal (Ctx.Refuse) waiting for the PSNs before it
	refSt Status  // its status; StatusOK when none waits
	refAt psn.PSN // first PSN of the refused work request
}

// Index returns q's index in the endpoint's QP table: QPN minus the
// endpoint's base QPN. Transports index their state with it.
func (q *QP) Index() int { return int(q.idx) }

// QPN returns the local QP number.
func (q *QP) QPN() uint32 { return q.qpn }

// MTU returns the path MTU in bytes.
func (q *QP) MTU() int { return int(q.mtu) }

// Una returns the oldest PSN not yet acknowledged (for a READ: not yet
// answered); it equals SndMax when nothing is outstanding.
func (q *QP) Una() psn.PSN { return q.una }

// SndMax returns one past the highest PSN sent.
func (q *QP) SndMax() psn.PSN { return q.sndMax }

// Outstanding reports whether sent PSNs are unacknowledged.
func (q *QP) Outstanding() bool { return q.una != q.sndMax }

// EPSN returns the responder's expected PSN.
func (q *QP) EPSN() psn.PSN { return q.epsn }

// Err reports whether q is in the error state.
func (q *QP) Err() bool { return q.state == stateError }

// TimerArmed reports whether the transport's timer is set.
func (q *QP) TimerArmed() bool { return q.rtoOn }

// npkts returns how many packets (and PSNs) a message of n bytes takes.
func npkts(n uint32, mtu uint16) uint32 {
	if n == 0 {
		return 1
	}
	return (n + uint32(mtu) - 1) / uint32(mtu)
}

// QPOptions configure a QP at CreateQP.
type QPOptions struct {
	// MTU in bytes: 256, 512, 1024, 2048 or 4096; 0 means Config.MTU.
	// The path MTU is the smaller of both ends' (Connect).
	MTU int
	// PSN is the first PSN this QP sends; the peer passes it to Connect.
	PSN psn.PSN
	// SrcPort is the UDP source port of every packet the QP sends, the
	// flow's ECMP entropy; 0 derives one from both QPNs at Connect.
	SrcPort uint16
}

// QPInfo is what the two ends of a connection exchange (roceperf sends
// it over TCP, with the MR each side exposes): the QPN, the first PSN,
// the MTU and the addresses.
type QPInfo struct {
	QPN uint32
	PSN psn.PSN
	MTU int
	IP  netip.Addr
	MAC rocev2.MAC
}

// maxHeaders is the most bytes a request adds to its payload: Ethernet
// with a VLAN tag, IPv6, UDP, BTH, RETH, pad and ICRC.
const maxHeaders = rocev2.EthernetLen + rocev2.VLANTagLen + rocev2.IPv6Len + rocev2.UDPLen +
	rocev2.BTHLen + rocev2.RETHLen + 3 + rocev2.ICRCLen

func validMTU(m int) bool {
	return m == 256 || m == 512 || m == 1024 || m == 2048 || m == 4096
}

// CreateQP creates a QP and returns what the peer needs to connect to it.
// Setup only: call it before the worker runs.
func (e *Endpoint) CreateQP(o QPOptions) (QPInfo, error) {
	if e.started.Load() {
		return QPInfo{}, fmt.Errorf("create QP: %w", ErrStarted)
	}
	if e.nqp == len(e.qps) {
		return QPInfo{}, fmt.Errorf("create QP: %w (%d)", ErrQPLimit, len(e.qps))
	}
	if o.MTU == 0 {
		o.MTU = e.cfg.MTU
	}
	if !validMTU(o.MTU) || o.MTU+maxHeaders > e.cfg.FrameSize {
		return QPInfo{}, fmt.Errorf("create QP: MTU %d with %d-byte frames: %w", o.MTU, e.cfg.FrameSize, ErrMTU)
	}
	i := e.nqp
	q := &e.qps[i]
	*q = QP{idx: uint32(i), qpn: e.base + uint32(i), ipsn: o.PSN.Add(0), lmtu: uint16(o.MTU), sport: o.SrcPort,
		sq: make([]wqe, min(e.cfg.SQDepth, sqFirst)), rq: make([]rwqe, e.cfg.RQDepth)}
	e.nqp++
	if e.qpc != nil {
		e.qpc.load(int32(i)) // the NIC writes the new context on chip
	}
	e.host.connected = append(e.host.connected, false)
	return e.info(q), nil
}

func (e *Endpoint) info(q *QP) QPInfo {
	return QPInfo{QPN: q.qpn, PSN: q.ipsn, MTU: int(q.lmtu), IP: e.cfg.IP, MAC: e.cfg.MAC}
}

// SrcPort returns the UDP source port of local QP qpn's packets, its
// flow's ECMP entropy (QPOptions.SrcPort, or derived at Connect).
func (e *Endpoint) SrcPort(qpn uint32) (uint16, error) {
	i := int(qpn - e.base)
	if qpn < e.base || i >= e.nqp {
		return 0, fmt.Errorf("QP %d: %w", qpn, ErrNoQP)
	}
	return e.qps[i].sport, nil
}

// Info returns the connection parameters of local QP qpn.
func (e *Endpoint) Info(qpn uint32) (QPInfo, error) {
	i := int(qpn - e.base)
	if qpn < e.base || i >= e.nqp {
		return QPInfo{}, fmt.Errorf("QP %d: %w", qpn, ErrNoQP)
	}
	return e.info(&e.qps[i]), nil
}

// Connect connects local QP qpn to the remote QP r describes (the
// INIT→RTR→RTS transitions in one step) and readies it to send and
// receive. Setup only: call it before the worker runs.
func (e *Endpoint) Connect(qpn uint32, r QPInfo) error {
	if e.started.Load() {
		return fmt.Errorf("connect QP %d: %w", qpn, ErrStarted)
	}
	i := int(qpn - e.base)
	if qpn < e.base || i >= e.nqp {
		return fmt.Errorf("connect QP %d: %w", qpn, ErrNoQP)
	}
	q := &e.qps[i]
	switch {
	case q.state != stateReset:
		return fmt.Errorf("connect QP %d: %w", qpn, ErrConnected)
	case r.QPN == 0 || r.QPN > psn.Mask:
		return fmt.Errorf("connect QP %d: remote QPN %d out of range", qpn, r.QPN)
	case !validMTU(r.MTU):
		return fmt.Errorf("connect QP %d: remote MTU %d: %w", qpn, r.MTU, ErrMTU)
	case !r.IP.IsValid() || r.IP.Unmap().Is4() != e.cfg.IP.Unmap().Is4():
		return fmt.Errorf("connect QP %d: remote address %v is not of the local address %v's family", qpn, r.IP, e.cfg.IP)
	}
	q.rqpn, q.rmac, q.rip = r.QPN, r.MAC, r.IP
	q.mtu = min(q.lmtu, uint16(r.MTU))
	if q.sport == 0 {
		h := (q.qpn*0x9e3779b1 ^ r.QPN*0x85ebca6b) >> 16
		q.sport = 0xc000 | uint16(h&0x3fff)
	}
	q.next, q.una, q.sndMax = q.ipsn, q.ipsn, q.ipsn
	q.acked = q.ipsn.Add(-1)
	q.refSt = StatusOK
	q.epsn = r.PSN.Add(0)
	q.rop = ropNone
	q.state = stateRTS
	e.t.Open(q)
	e.cc.Open(q)
	e.host.connected[i] = true
	return nil
}

// sqFirst is the work requests a QP's send queue is made with; it grows,
// doubling, to SQDepth as requests come (growSQ). A simulated fabric's
// thousands of QPs each post a message or two at a time, and their
// send queues of 256 (tor/fabric) touched a page each: 4 MB of htsim's
// 1,024-host permutation's resident memory at k = 16. Endpoint.QPBytes
// still counts SQDepth, what a QP may come to hold.
const sqFirst = 8

// growSQ doubles the send queue, keeping every request at its index
// (sqHead to sqTail) under the new mask. Post counts requests against
// SQDepth, so ingest calls it only below that.
func (q *QP) growSQ() {
	r := make([]wqe, 2*len(q.sq))
	for i := q.sqHead; i != q.sqTail; i++ {
		r[i&uint32(len(r)-1)] = q.sq[i&uint32(len(q.sq)-1)]
	}
	q.sq = r
}
