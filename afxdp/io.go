package afxdp

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"
)

// The batch helpers below copy between a caller's slice and a ring in one
// Peek/Release or Reserve/Submit, so the shared indices are touched once per
// batch, not per frame. None of them allocates.

// Receive moves up to len(descs) received frames into descs and returns how
// many. The caller owns those frames from now on and must give each back:
// to the fill ring (Fill), to a tx ring (Transmit), or to its allocator.
func (s *Socket) Receive(descs []Desc) int {
	idx, got := s.rings.Rx.Peek(uint32(len(descs)))
	for i := range got {
		descs[i] = s.rings.Rx.Get(idx + i)
	}
	s.rings.Rx.Release(got)
	return int(got)
}

// Transmit queues up to len(descs) frames on the tx ring and returns how
// many; the rest did not fit and stay the caller's. The queued frames are
// the kernel's until their addresses come back from Complete. The kernel
// may not send them until Wakeup: call it after the last Transmit of a
// batch.
func (s *Socket) Transmit(descs []Desc) int {
	idx, got := s.rings.Tx.Reserve(uint32(len(descs)))
	for i := range got {
		s.rings.Tx.Set(idx+i, descs[i])
	}
	s.rings.Tx.Submit(got)
	return int(got)
}

// Complete moves up to len(addrs) addresses of transmitted frames into
// addrs and returns how many. Those frames are the caller's again.
func (s *Socket) Complete(addrs []uint64) int {
	idx, got := s.rings.Completion.Peek(uint32(len(addrs)))
	for i := range got {
		addrs[i] = s.rings.Completion.Get(idx + i)
	}
	s.rings.Completion.Release(got)
	return int(got)
}

// Fill hands up to len(addrs) free frames to the kernel for receiving and
// returns how many it took; the rest stay the caller's. Any address inside
// a frame names the whole frame (the kernel masks it in aligned mode).
func (s *Socket) Fill(addrs []uint64) int {
	idx, got := s.rings.Fill.Reserve(uint32(len(addrs)))
	for i := range got {
		s.rings.Fill.Set(idx+i, addrs[i])
	}
	s.rings.Fill.Submit(got)
	return int(got)
}

// Wakeup makes the kernel transmit what Transmit queued, with a
// non-blocking sendto, but only when the tx ring asks for it (need_wakeup)
// and still holds descriptors; otherwise it costs two atomic loads. In copy
// mode the kernel sends frames only inside this syscall and sets
// need_wakeup for good, at most Options.TxBudget frames per call (32 by
// default), so call Wakeup on every loop iteration that has frames queued.
//
// Transient refusals (EAGAIN, EBUSY, ENOBUFS, ENETDOWN: the driver is busy
// or the link down) return nil; the frames stay queued and the next Wakeup
// retries.
func (s *Socket) Wakeup() error {
	if s.needWakeup && !s.rings.Tx.NeedWakeup() {
		return nil
	}
	// Copy mode keeps need_wakeup set even with nothing to send; an idle
	// worker would make a syscall per iteration without this check.
	if s.rings.Tx.Pending() == 0 {
		return nil
	}
	s.txWakeups.Add(1)
	// A raw syscall: it never blocks (MSG_DONTWAIT), so the Go scheduler
	// need not hear of it. Through unix.Syscall6 it did, and a copy-mode
	// sendto lasts long enough (tens of µs on veth) for sysmon to retake
	// the worker's P during it: a runtime thread then woke about 6,600
	// times a second on the worker's CPU, and the worker thread was
	// switched out about 6,700 times a second and ran 84% of the time.
	// With the raw call: under 300 switches a second, 97%, and 15–20%
	// more frames forwarded (tord at 64 B on veth, 2-core AMD EPYC;
	// docs/performance.md).
	_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN:
		return nil
	}
	return e
}

// WakeupRx is the busy-polling counterpart of Poll: a non-blocking
// recvfrom that makes a sleeping zero-copy driver look at the fill ring,
// issued only when the fill ring asks for it.
func (s *Socket) WakeupRx() error {
	if s.needWakeup && !s.rings.Fill.NeedWakeup() {
		return nil
	}
	s.rxWakeups.Add(1)
	return s.recv()
}

// recv is a non-blocking recvfrom with no buffer: it only drives the
// kernel's receive path. Raw for the reason Wakeup's sendto is: it never
// blocks. Transient refusals return nil.
func (s *Socket) recv() error {
	_, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS, unix.ENETDOWN:
		return nil
	}
	return e
}

// BusyPoll runs the queue's NAPI poll in this thread, with a
// non-blocking recvfrom, on a socket opened with Options.BusyPoll; it
// does nothing on any other, nor while the rx ring still holds frames:
// the worker has work without the syscall, and polls again once it has
// drained the ring (DPDK's net_af_xdp does the same). Call it once per
// loop before Receive.
func (s *Socket) BusyPoll() error {
	if !s.busyPoll || s.rings.Rx.Available() > 0 {
		return nil
	}
	s.busyPolls.Add(1)
	return s.recv()
}

// Poll sleeps until the rx ring has frames or timeout passes (a negative
// timeout waits for ever) and reports whether frames are ready. The
// adaptive and interrupt worker modes sleep here. With need_wakeup the
// kernel also uses the call: a zero-copy driver is woken to refill from the
// fill ring, and in copy mode queued tx frames are sent as by Wakeup. An
// interrupted poll reports false and no error.
func (s *Socket) Poll(timeout time.Duration) (bool, error) {
	ms := -1
	if timeout >= 0 {
		// Round up so a sub-millisecond timeout still sleeps.
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	s.polls.Add(1)
	s.pfd[0].Revents = 0
	n, err := unix.Poll(s.pfd[:], ms)
	if errors.Is(err, unix.EINTR) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return n > 0 && s.pfd[0].Revents&unix.POLLIN != 0, nil
}

// Wakeups counts the syscalls a socket made to wake the kernel: the cost
// need_wakeup is there to keep low.
type Wakeups struct {
	Tx   uint64 // sendto calls by Wakeup
	Rx   uint64 // recvfrom calls by WakeupRx
	Poll uint64 // poll calls by Poll
	Busy uint64 // recvfrom calls by BusyPoll
}

// Wakeups returns the socket's wakeup syscall counts. Safe to call from any
// goroutine, for example a metrics collector.
func (s *Socket) Wakeups() Wakeups {
	return Wakeups{Tx: s.txWakeups.Load(), Rx: s.rxWakeups.Load(), Poll: s.polls.Load(), Busy: s.busyPolls.Load()}
}

// Yield gives the calling thread's CPU to another thread waiting for it
// and returns at once when none does (sched_yield). A busy-polling
// worker calls it on a loop that found its rings empty
// (dataplane.WorkerConfig.Yield): on veth the thread that fills the rx
// ring — the NAPI thread copying frames in — may be waiting for that
// very CPU. A raw syscall, like sendto above: it never blocks, so the
// Go scheduler need not hear of it.
func Yield() {
	_, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) // it cannot fail
}
