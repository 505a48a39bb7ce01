package afxdp

import (
	"errors"
	"fmt"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Binding a socket: create it, register or share the UMEM, size and map the
// rings, bind, and ask the kernel what it bound.

func open(ifi *net.Interface, queue int, umem *UMEM, opts Options, sizes ringSizes) (*Socket, error) {
	if queue < 0 {
		return nil, fmt.Errorf("negative queue: %w", unix.EINVAL)
	}
	umem.mu.Lock()
	defer umem.mu.Unlock()
	if umem.closed {
		return nil, fmt.Errorf("umem: %w", ErrClosed)
	}
	// One socket per (interface, queue) and UMEM: a second one would have
	// to share the first one's fill and completion rings, which breaks
	// the rule that every socket owns its rings.
	var owner *Socket
	for _, o := range umem.sockets {
		if o.ifindex == ifi.Index && o.queue == queue {
			return nil, fmt.Errorf("%w (a socket of this UMEM)", ErrQueueBusy)
		}
		if owner == nil {
			owner = o
		}
	}
	attempt := func() (*Socket, error) {
		if owner != nil {
			return bindShared(ifi, queue, umem, owner, opts, sizes)
		}
		return bindFirst(ifi, queue, umem, opts, sizes)
	}
	// The kernel frees a closed socket's queue from deferred work after
	// an RCU grace period, about 20 ms after close(2) on veth with Linux
	// 6.18; until then bind fails with EBUSY. An EBUSY is therefore
	// usually our own previous socket, not a competitor: retry a while.
	deadline := time.Now().Add(busyRetry)
	s, err := attempt()
	for errors.Is(err, ErrQueueBusy) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		s, err = attempt()
	}
	if err != nil {
		return nil, err
	}
	if err := s.setTxBudget(opts.TxBudget); err != nil {
		s.teardown()
		return nil, err
	}
	if err := s.setBusyPoll(opts.BusyPoll, opts.BusyPollBudget); err != nil {
		s.teardown()
		return nil, err
	}
	umem.sockets = append(umem.sockets, s)
	return s, nil
}

func (s *Socket) setTxBudget(n int) error {
	if n == 0 {
		return nil
	}
	err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, n)
	if errors.Is(err, unix.ENOPROTOOPT) {
		return fmt.Errorf("tx budget: %w (needs Linux 6.17): %w", ErrKernel, err)
	}
	if err != nil {
		return fmt.Errorf("tx budget %d: %w", n, err)
	}
	return nil
}

// setBusyPoll turns on preferred busy polling for the socket.
func (s *Socket) setBusyPoll(d time.Duration, budget int) error {
	if d <= 0 {
		return nil
	}
	us := max(1, int(d/time.Microsecond))
	for _, o := range []struct {
		name string
		opt  int
		val  int
	}{{"SO_PREFER_BUSY_POLL", unix.SO_PREFER_BUSY_POLL, 1}, {"SO_BUSY_POLL", unix.SO_BUSY_POLL, us},
		{"SO_BUSY_POLL_BUDGET", unix.SO_BUSY_POLL_BUDGET, budget}} {
		if o.val == 0 {
			continue
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, o.opt, o.val); err != nil {
			return fmt.Errorf("busy polling: %s %d: %w", o.name, o.val, err)
		}
	}
	s.busyPoll = true
	return nil
}

// bindFirst binds the first socket of a UMEM in the requested mode.
func bindFirst(ifi *net.Interface, queue int, umem *UMEM, opts Options, sizes ringSizes) (*Socket, error) {
	wakeup := uint16(unix.XDP_USE_NEED_WAKEUP)
	if opts.NoNeedWakeup {
		wakeup = 0
	}
	switch opts.Bind {
	case BindAuto:
		s, err := bindOwner(ifi, queue, umem, sizes, wakeup|unix.XDP_ZEROCOPY)
		if errors.Is(err, ErrZeroCopy) {
			return bindOwner(ifi, queue, umem, sizes, wakeup|unix.XDP_COPY)
		}
		return s, err
	case BindZeroCopy:
		return bindOwner(ifi, queue, umem, sizes, wakeup|unix.XDP_ZEROCOPY)
	case BindCopy:
		return bindOwner(ifi, queue, umem, sizes, wakeup|unix.XDP_COPY)
	}
	return nil, fmt.Errorf("bind mode %v: %w", opts.Bind, unix.EINVAL)
}

// bindOwner opens the socket that registers the UMEM. The copy-mode retry
// after a failed zero-copy bind starts again from a new socket rather than
// re-binding this one, so it does not depend on how a given kernel version
// cleans up after a failed bind.
func bindOwner(ifi *net.Interface, queue int, umem *UMEM, sizes ringSizes, flags uint16) (*Socket, error) {
	s, err := newSocket(ifi, queue, umem)
	if err != nil {
		return nil, err
	}
	if err := umem.register(s.fd); err != nil {
		s.teardown()
		return nil, err
	}
	if err := s.setupRings(sizes); err != nil {
		s.teardown()
		return nil, err
	}
	sa := &unix.SockaddrXDP{Flags: flags, Ifindex: uint32(ifi.Index), QueueID: uint32(queue)}
	if err := unix.Bind(s.fd, sa); err != nil {
		s.teardown()
		return nil, bindError(err, flags)
	}
	s.needWakeup = flags&unix.XDP_USE_NEED_WAKEUP != 0
	if err := s.readMode(); err != nil {
		s.teardown()
		return nil, err
	}
	return s, nil
}

// bindShared opens a socket on a UMEM that owner already registered.
// Since Linux 5.10 a socket on another (interface, queue) brings its own
// fill and completion rings; the kernel refuses mode flags on such a bind
// and copies zero-copy and need_wakeup from the UMEM.
func bindShared(ifi *net.Interface, queue int, umem *UMEM, owner *Socket, opts Options, sizes ringSizes) (*Socket, error) {
	if opts.Bind != BindAuto && opts.Bind != owner.mode {
		return nil, fmt.Errorf("%v requested, UMEM is %v since %s queue %d: %w",
			opts.Bind, owner.mode, owner.ifname, owner.queue, ErrBindMode)
	}
	s, err := newSocket(ifi, queue, umem)
	if err != nil {
		return nil, err
	}
	if err := s.setupRings(sizes); err != nil {
		s.teardown()
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOPROTOOPT) {
			err = fmt.Errorf("%w (per-socket fill/completion rings need Linux 5.10): %w", ErrKernel, err)
		}
		return nil, err
	}
	sa := &unix.SockaddrXDP{Flags: unix.XDP_SHARED_UMEM, Ifindex: uint32(ifi.Index),
		QueueID: uint32(queue), SharedUmemFD: uint32(owner.fd)}
	if err := unix.Bind(s.fd, sa); err != nil {
		s.teardown()
		flags := uint16(unix.XDP_COPY)
		if owner.mode == BindZeroCopy {
			flags = unix.XDP_ZEROCOPY
		}
		return nil, fmt.Errorf("shared umem of %s queue %d: %w", owner.ifname, owner.queue, bindError(err, flags))
	}
	s.needWakeup = owner.needWakeup
	if err := s.readMode(); err != nil {
		s.teardown()
		return nil, err
	}
	return s, nil
}

// bindError maps the errnos of bind to the sentinels callers test.
func bindError(err error, flags uint16) error {
	switch {
	case errors.Is(err, unix.EBUSY):
		return fmt.Errorf("bind: %w: %w", ErrQueueBusy, err)
	case errors.Is(err, unix.EOPNOTSUPP) && flags&unix.XDP_ZEROCOPY != 0:
		return fmt.Errorf("bind: %w: %w", ErrZeroCopy, err)
	}
	return fmt.Errorf("bind: %w", err)
}

func newSocket(ifi *net.Interface, queue int, umem *UMEM) (*Socket, error) {
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	s := &Socket{fd: fd, ifname: ifi.Name, ifindex: ifi.Index, queue: queue, umem: umem}
	s.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	return s, nil
}

// setupRings sizes and maps the four rings. It must run before bind: the
// kernel refuses to map fill and completion rings of a bound socket.
func (s *Socket) setupRings(sz ringSizes) error {
	for _, o := range []struct {
		name int
		size uint32
	}{
		{unix.XDP_RX_RING, sz.rx},
		{unix.XDP_TX_RING, sz.tx},
		{unix.XDP_UMEM_FILL_RING, sz.fill},
		{unix.XDP_UMEM_COMPLETION_RING, sz.comp},
	} {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, o.name, int(o.size)); err != nil {
			return fmt.Errorf("set ring size (option %d) to %d: %w", o.name, o.size, err)
		}
	}
	var off unix.XDPMmapOffsets
	n, err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), unsafe.Sizeof(off))
	if err != nil {
		return fmt.Errorf("get mmap offsets: %w", err)
	}
	if n != unsafe.Sizeof(off) {
		// Before Linux 5.4 the offsets have no flags field, so there is
		// no need_wakeup to read.
		return fmt.Errorf("mmap offsets are %d bytes, want %d: %w", n, unsafe.Sizeof(off), ErrKernel)
	}
	descSize := uint64(unsafe.Sizeof(Desc{}))
	rx, err := s.mmap(unix.XDP_PGOFF_RX_RING, off.Rx, sz.rx, descSize)
	if err != nil {
		return fmt.Errorf("map rx ring: %w", err)
	}
	tx, err := s.mmap(unix.XDP_PGOFF_TX_RING, off.Tx, sz.tx, descSize)
	if err != nil {
		return fmt.Errorf("map tx ring: %w", err)
	}
	fr, err := s.mmap(unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, sz.fill, 8)
	if err != nil {
		return fmt.Errorf("map fill ring: %w", err)
	}
	cr, err := s.mmap(unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, sz.comp, 8)
	if err != nil {
		return fmt.Errorf("map completion ring: %w", err)
	}
	r := &s.rings
	r.Rx.setup(rx, off.Rx, sz.rx)
	r.Rx.descs = entries[Desc](rx, off.Rx, sz.rx)
	r.Tx.setup(tx, off.Tx, sz.tx)
	r.Tx.descs = entries[Desc](tx, off.Tx, sz.tx)
	r.Fill.setup(fr, off.Fr, sz.fill)
	r.Fill.addrs = entries[uint64](fr, off.Fr, sz.fill)
	r.Completion.setup(cr, off.Cr, sz.comp)
	r.Completion.addrs = entries[uint64](cr, off.Cr, sz.comp)
	return nil
}

func (s *Socket) mmap(pgoff int64, off unix.XDPRingOffset, size uint32, entSize uint64) ([]byte, error) {
	n := off.Desc + uint64(size)*entSize
	b, err := unix.Mmap(s.fd, pgoff, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	s.mmaps = append(s.mmaps, b)
	return b, nil
}

// readMode asks the kernel which mode the bind ended up in rather than
// trusting the flags: on a shared UMEM they are inherited.
func (s *Socket) readMode() error {
	v, err := unix.GetsockoptInt(s.fd, unix.SOL_XDP, unix.XDP_OPTIONS)
	if err != nil {
		return fmt.Errorf("get xdp options: %w", err)
	}
	s.mode = BindCopy
	if v&unix.XDP_OPTIONS_ZEROCOPY != 0 {
		s.mode = BindZeroCopy
	}
	return nil
}
