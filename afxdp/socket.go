package afxdp

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultRingSize is the size of each ring when Options leaves it zero.
const DefaultRingSize = 2048

// minTxBudget is the kernel's floor for XDP_MAX_TX_SKB_BUDGET.
const minTxBudget = 32

// busyRetry is how long Open retries a bind that fails with EBUSY.
const busyRetry = 250 * time.Millisecond

// BindMode is how a socket's frames move between the driver and the UMEM.
type BindMode int

const (
	// BindAuto tries zero-copy and falls back to copy mode when the
	// driver cannot do zero-copy (EOPNOTSUPP). On a shared UMEM it takes
	// whatever the UMEM's first socket got.
	BindAuto BindMode = iota
	// BindZeroCopy: the driver DMAs straight into UMEM (XDP_ZEROCOPY).
	BindZeroCopy
	// BindCopy: the kernel copies between its buffers and UMEM
	// (XDP_COPY). Works on every driver, veth included.
	BindCopy
)

func (m BindMode) String() string {
	switch m {
	case BindAuto:
		return "auto"
	case BindZeroCopy:
		return "zero-copy"
	case BindCopy:
		return "copy"
	}
	return fmt.Sprintf("BindMode(%d)", int(m))
}

// Options configures Open. The zero value is ready: 2048-slot rings,
// zero-copy with copy fallback, need_wakeup on.
type Options struct {
	// Ring sizes in descriptors; each a power of two up to MaxRingSize,
	// zero meaning DefaultRingSize. The fill ring should hold at least
	// the frames the worker wants the kernel to have ready for rx.
	RxSize, TxSize, FillSize, CompletionSize int
	// Bind selects zero-copy or copy mode; see BindMode.
	Bind BindMode
	// NoNeedWakeup binds without XDP_USE_NEED_WAKEUP: the kernel then
	// never sets the ring flags and every Wakeup with frames queued is a
	// syscall. Only for measuring what need_wakeup saves.
	NoNeedWakeup bool
	// TxBudget is how many frames one Wakeup sends in copy mode
	// (XDP_MAX_TX_SKB_BUDGET, Linux 6.17): from 32 to the tx ring size.
	// Zero keeps the kernel's 32, which on veth means one sendto per 32
	// frames; 256 sent a 200-frame burst in one call.
	TxBudget int
	// BusyPoll turns on preferred busy polling (SO_PREFER_BUSY_POLL,
	// Linux 5.11): the kernel then runs the queue's NAPI poll in this
	// socket's own recvfrom and sendto, for up to BusyPoll each
	// (SO_BUSY_POLL) and BusyPollBudget frames (SO_BUSY_POLL_BUDGET;
	// zero keeps the kernel's 8), instead of in softirq or a NAPI
	// thread. The caller must then call BusyPoll on every loop: nothing
	// else moves the receive path once the kernel defers to it. Zero:
	// off.
	BusyPoll       time.Duration
	BusyPollBudget int
}

// Rings are a socket's four rings, the low-level batch API.
type Rings struct {
	Fill       FillRing
	Completion CompletionRing
	Rx         RxRing
	Tx         TxRing
}

// Socket is one AF_XDP socket bound to one (interface, queue), with its own
// rx, tx, fill and completion rings on a UMEM that other sockets may share.
//
// Rings gives the low-level batch API; Receive, Transmit, Fill and Complete
// wrap it for slices of descriptors and addresses. A Socket belongs to one
// worker: only Stats and Wakeups may be called concurrently with the data
// path, and Close only after the worker has let go of the socket. The zero
// value is not usable; call Open.
type Socket struct {
	rings      Rings
	fd         int
	ifname     string
	ifindex    int
	queue      int
	umem       *UMEM
	mode       BindMode
	needWakeup bool
	busyPoll   bool
	mmaps      [][]byte
	pfd        [1]unix.PollFd
	closed     atomic.Bool

	txWakeups atomic.Uint64
	rxWakeups atomic.Uint64
	polls     atomic.Uint64
	busyPolls atomic.Uint64
}

// ringSize applies the default and validates one ring size.
func ringSize(name string, n int) (uint32, error) {
	if n == 0 {
		return DefaultRingSize, nil
	}
	if n < 0 || n > MaxRingSize || !isPow2(uint64(n)) {
		return 0, fmt.Errorf("%s ring size %d: %w", name, n, ErrRingSize)
	}
	return uint32(n), nil
}

type ringSizes struct{ rx, tx, fill, comp uint32 }

func (o Options) sizes() (ringSizes, error) {
	var s ringSizes
	var err error
	if s.rx, err = ringSize("rx", o.RxSize); err != nil {
		return s, err
	}
	if s.tx, err = ringSize("tx", o.TxSize); err != nil {
		return s, err
	}
	if s.fill, err = ringSize("fill", o.FillSize); err != nil {
		return s, err
	}
	s.comp, err = ringSize("completion", o.CompletionSize)
	return s, err
}

// Open creates an AF_XDP socket on queue of interface ifname with umem as
// its packet memory, and binds it. The interface name is resolved in the
// calling thread's network namespace, and the socket belongs to that
// namespace for its life.
//
// The frames stay the caller's: the fill ring starts empty, so nothing is
// received until Fill hands the kernel some frames. An XDP program must
// redirect the queue's traffic to the socket (see package bpf).
func Open(ifname string, queue int, umem *UMEM, opts Options) (*Socket, error) {
	sizes, err := opts.sizes()
	if err == nil && opts.TxBudget != 0 && (opts.TxBudget < minTxBudget || opts.TxBudget > int(sizes.tx)) {
		err = fmt.Errorf("tx budget %d outside [%d, %d]: %w", opts.TxBudget, minTxBudget, sizes.tx, ErrTxBudget)
	}
	if err != nil {
		return nil, fmt.Errorf("open af_xdp on %s queue %d: %w", ifname, queue, err)
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("open af_xdp on %s queue %d: %w", ifname, queue, err)
	}
	s, err := open(ifi, queue, umem, opts, sizes)
	if err != nil {
		return nil, fmt.Errorf("open af_xdp on %s queue %d: %w", ifname, queue, err)
	}
	return s, nil
}

// teardown unmaps the rings and closes the fd.
func (s *Socket) teardown() error {
	var first error
	for _, b := range s.mmaps {
		if err := unix.Munmap(b); err != nil && first == nil {
			first = err
		}
	}
	s.mmaps = nil
	if err := unix.Close(s.fd); err != nil && first == nil {
		first = err
	}
	return first
}

// Close unbinds the socket and unmaps its rings. Frames the kernel held in
// its fill, rx, tx and completion rings are not returned: a worker that
// closes a socket must rebuild its frame accounting. The UMEM stays
// registered while other sockets use it. Close is idempotent.
func (s *Socket) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	u := s.umem
	u.mu.Lock()
	for i, o := range u.sockets {
		if o == s {
			u.sockets = append(u.sockets[:i], u.sockets[i+1:]...)
			break
		}
	}
	u.mu.Unlock()
	if err := s.teardown(); err != nil {
		return fmt.Errorf("close af_xdp on %s queue %d: %w", s.ifname, s.queue, err)
	}
	return nil
}

// Rings returns the socket's rings. They are mapped until Close.
func (s *Socket) Rings() *Rings { return &s.rings }

// FD is the socket's file descriptor, for the XSKMAP of the XDP program
// (bpf.Program.Register).
func (s *Socket) FD() int { return s.fd }

// Interface is the name of the interface the socket is bound to.
func (s *Socket) Interface() string { return s.ifname }

// Queue is the queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// UMEM is the packet memory the socket's frames live in.
func (s *Socket) UMEM() *UMEM { return s.umem }

// BindMode is the mode the kernel bound the socket in: BindZeroCopy or
// BindCopy, never BindAuto.
func (s *Socket) BindMode() BindMode { return s.mode }

// NeedWakeup reports whether the socket runs with XDP_USE_NEED_WAKEUP.
func (s *Socket) NeedWakeup() bool { return s.needWakeup }
