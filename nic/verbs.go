package nic

import (
	"errors"
	"fmt"
	"strconv"
)

// Access says what a peer may do to a memory region.
type Access uint8

// Access flags.
const (
	AccessRemoteWrite Access = 1 << iota // RDMA WRITE into the region
	AccessRemoteRead                     // RDMA READ from the region
	AccessRemote      = AccessRemoteWrite | AccessRemoteRead
)

// MR describes a registered memory region: what a peer needs to address
// it (Key as the rkey, VA as the base of its virtual addresses) and what
// the owner passes as LKey/LocalVA in work requests. Byte i of the
// registered slice has address VA+i.
type MR struct {
	Key uint32
	VA  uint64
	Len uint64
}

// mr is the endpoint's view of a region. VAs are synthetic, (index+1)<<40,
// so that an address meant for another region fails the bounds check.
type mr struct {
	buf    []byte
	va     uint64
	key    uint32
	access Access
}

const mrVAShift = 40

// Op is the operation of a work request or completion.
type Op uint8

// Operations.
const (
	OpWrite Op = iota + 1 // RDMA WRITE from a local buffer to a remote region
	OpSend                // SEND into the peer's next posted receive
	OpRead                // RDMA READ from a remote region into a local buffer
	OpRecv                // a receive buffer for one incoming SEND
)

var opNames = [...]string{"", "write", "send", "read", "recv"}

func (o Op) String() string {
	if int(o) < len(opNames) && o != 0 {
		return opNames[o]
	}
	return "op" + strconv.Itoa(int(o))
}

// Status is how a work request completed.
type Status uint8

// Completion statuses; the names follow ibv_wc_status.
const (
	StatusOK            Status = iota
	StatusRetryExceeded        // the transport's retry limit ran out (IBV_WC_RETRY_EXC_ERR)
	StatusRemoteAccess         // the peer refused the rkey, range or permission (IBV_WC_REM_ACCESS_ERR)
	StatusRemoteInvalid        // the peer found the request invalid (IBV_WC_REM_INV_REQ_ERR)
	StatusRemoteOp             // the peer failed it (IBV_WC_REM_OP_ERR)
	StatusRNR                  // no receive posted at the peer; RNR retry count is 0 (IBV_WC_RNR_RETRY_EXC_ERR)
	StatusLocalLength          // a received SEND was longer than the receive buffer (IBV_WC_LOC_LEN_ERR)
	StatusFlushed              // the QP went to the error state first (IBV_WC_WR_FLUSH_ERR)
	numStatus
)

var statusNames = [numStatus]string{"ok", "retry_exceeded", "remote_access", "remote_invalid",
	"remote_op", "rnr", "local_length", "flushed"}

func (s Status) String() string {
	if s < numStatus {
		return statusNames[s]
	}
	return "status" + strconv.Itoa(int(s))
}

// WR is a work request. For OpWrite, OpSend and OpRead the local buffer is
// [LocalVA, LocalVA+Len) of the region LKey; OpWrite and OpRead address
// [RemoteVA, RemoteVA+Len) of the peer's region RKey. OpRecv posts the
// local buffer as a receive for one SEND of at most Len bytes.
type WR struct {
	ID       uint64 // returned in the completion
	Op       Op
	QP       uint32 // local QPN
	LKey     uint32
	LocalVA  uint64
	Len      int
	RKey     uint32
	RemoteVA uint64
}

// Completion is one entry of the completion queue.
type Completion struct {
	ID     uint64
	QP     uint32 // local QPN
	Op     Op
	Status Status
	Len    int // bytes transferred (for OpRecv, the SEND's length)
	// Latency is the time from the post to the completion in nanoseconds
	// on the endpoint's clock: the message's flow completion time. Zero
	// for OpRecv.
	Latency int64
}

// MaxMessage is the longest message: at the smallest MTU it spans 2^22
// PSNs, a quarter of the sequence space, so PSN comparisons stay exact.
const MaxMessage = 1 << 30

// Errors of the verbs API. Post returns them unwrapped so that a caller
// can test them without allocation; setup calls wrap them with context.
var (
	ErrConfig       = errors.New("nic: endpoint config")
	ErrStarted      = errors.New("nic: the endpoint's worker is running; set up QPs and regions before it starts")
	ErrNoQP         = errors.New("nic: no such QP")
	ErrNotConnected = errors.New("nic: QP not connected")
	ErrConnected    = errors.New("nic: QP already connected")
	ErrQPLimit      = errors.New("nic: every QP is in use")
	ErrMRLimit      = errors.New("nic: every memory region slot is in use")
	ErrMTU          = errors.New("nic: MTU must be 256, 512, 1024, 2048 or 4096 and fit a frame")
	ErrSQFull       = errors.New("nic: send queue full")
	ErrRQFull       = errors.New("nic: receive queue full")
	ErrCQFull       = errors.New("nic: completion queue could overflow: poll completions first")
	ErrLength       = errors.New("nic: message length out of range")
	ErrLocalAccess  = errors.New("nic: local buffer outside its memory region")
	ErrOp           = errors.New("nic: unknown operation")
	ErrRing         = errors.New("nic: command ring full")
)

// RegisterMR registers buf as a memory region the peer may access as a
// says. The endpoint keeps buf: the worker reads it for WRITE, SEND and
// read responses and writes it for incoming WRITE, SEND and READ data, so
// the owner touches it only between a completion and the next post (and,
// for a region a peer writes, when the worker is stopped or the peer's
// completion says so). Setup only: call it before the worker runs.
func (e *Endpoint) RegisterMR(buf []byte, a Access) (MR, error) {
	if e.started.Load() {
		return MR{}, fmt.Errorf("register memory region: %w", ErrStarted)
	}
	if len(e.mrs) == cap(e.mrs) {
		return MR{}, fmt.Errorf("register memory region: %w (%d)", ErrMRLimit, cap(e.mrs))
	}
	if uint64(len(buf)) >= 1<<mrVAShift {
		return MR{}, fmt.Errorf("register memory region of %d bytes: %w", len(buf), ErrLength)
	}
	i := len(e.mrs)
	m := mr{buf: buf, va: uint64(i+1) << mrVAShift, key: uint32(i+1) << 8, access: a}
	e.mrs = append(e.mrs, m)
	return MR{Key: m.key, VA: m.va, Len: uint64(len(buf))}, nil
}

// region finds [va, va+n) in the region key and returns the region's
// index and the offset of va in it. n == 0 always succeeds (IBA: a
// zero-length RDMA operation checks no key).
func (e *Endpoint) region(key uint32, va uint64, n uint32, need Access) (idx uint16, off uint64, ok bool) {
	if n == 0 {
		return 0, 0, true
	}
	i := int(key>>8) - 1
	if key&0xff != 0 || i < 0 || i >= len(e.mrs) {
		return 0, 0, false
	}
	m := &e.mrs[i]
	if m.access&need != need && need != 0 {
		return 0, 0, false
	}
	size := uint64(len(m.buf))
	if va < m.va || va-m.va > size || uint64(n) > size-(va-m.va) {
		return 0, 0, false
	}
	return uint16(i), va - m.va, true
}

// cmd is a work request on its way from the posting goroutine to the
// worker.
type cmd struct {
	WR
	post int64
	mr   uint16
	off  uint64
}

// Post queues a work request. It may be called from one goroutine other
// than the worker's (the same one that calls PollCQ), or from the
// worker's own goroutine when a test drives Step; the request travels to
// the worker through a lock-free single-producer ring, as a doorbell
// would. It checks everything it can synchronously — the QP, the
// operation, the length, the local buffer, and room in the send or
// receive queue and in the completion queue — and returns a sentinel
// error without side effects when a check fails. It does not allocate.
func (e *Endpoint) Post(wr WR) error {
	h := &e.host
	i := int(wr.QP - e.base)
	if wr.QP < e.base || i >= len(h.connected) {
		return ErrNoQP
	}
	if !h.connected[i] {
		return ErrNotConnected
	}
	if wr.Len < 0 || wr.Len > MaxMessage {
		return ErrLength
	}
	c := cmd{WR: wr}
	idx, off, ok := e.region(wr.LKey, wr.LocalVA, uint32(wr.Len), 0)
	if !ok {
		return ErrLocalAccess
	}
	c.mr, c.off = idx, off
	switch wr.Op {
	case OpWrite, OpSend, OpRead:
		if int(h.sq[i]) >= e.cfg.SQDepth {
			return ErrSQFull
		}
	case OpRecv:
		if int(h.rq[i]) >= e.cfg.RQDepth {
			return ErrRQFull
		}
	default:
		return ErrOp
	}
	if h.out >= e.cfg.CQDepth {
		return ErrCQFull
	}
	if e.cfg.Clock != nil {
		c.post = e.cfg.Clock()
	} else {
		c.post = -1 // stamped by the worker when it takes the request
	}
	if !e.cmds.push(&c) {
		return ErrRing // cannot happen: the ring holds CQDepth requests
	}
	h.out++
	if wr.Op == OpRecv {
		h.rq[i]++
	} else {
		h.sq[i]++
	}
	return nil
}

// PollCQ moves up to len(out) completions into out and returns how many.
// Call it from the goroutine that posts. It does not allocate.
func (e *Endpoint) PollCQ(out []Completion) int {
	h := &e.host
	n := 0
	for n < len(out) && e.cq.pop(&out[n]) {
		i := int(out[n].QP - e.base)
		if out[n].Op == OpRecv {
			h.rq[i]--
		} else {
			h.sq[i]--
		}
		h.out--
		n++
	}
	return n
}

// Outstanding returns how many posted work requests have not been polled
// as completions yet. Call it from the posting goroutine.
func (e *Endpoint) Outstanding() int { return e.host.out }
