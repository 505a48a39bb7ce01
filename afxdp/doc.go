// Package afxdp drives AF_XDP sockets on golang.org/x/sys/unix alone: a
// UMEM of packet frames, the fill, completion, rx and tx rings mapped from
// the kernel, batch receive and transmit, need_wakeup, zero-copy and copy
// binds, one socket per (interface, queue), and a free-frame stack. It has
// no cgo and no dependency on libxdp; with bpf (the XDP program that
// redirects frames here) it is the only package that uses unsafe and raw
// syscalls.
//
// # Frames and ownership
//
// A frame is named by its UMEM address, a uint64 byte offset; descriptors
// carry addresses, never pointers, so a frame received on one socket can be
// put on the tx ring of another socket on the same UMEM with no copy in
// user space. Every frame has one owner at a time:
//
//	worker (FrameStack) --Fill--> kernel --Receive--> worker
//	worker --Transmit--> kernel --Complete--> worker
//
// Fill and Transmit take ownership of the frames they accept (the return
// value says how many; the rest stay the caller's). Receive and Complete
// give ownership back. UMEM.Frame returns a slice that aliases UMEM, valid
// only while the caller owns the frame. Received descriptors point past the
// frame start by UMEM.RxOffset; UMEM.FrameStart recovers the frame.
//
// # Rings
//
// Socket.Rings exposes the rings in the style of gVisor's pkg/xdp: a
// producer ring is used as Reserve(n) → Set(idx+i, …) → Submit(got), a
// consumer ring as Peek(n) → Get(idx+i) → Release(got). Indices are free
// running uint32 counters and slots are idx & (size-1); ring sizes must be
// powers of two (ErrRingSize). Each side caches the other side's index and
// reloads it only when the cached view runs short, so the shared words are
// touched once per batch, not per frame. The memory-ordering
// argument is at the top of ring.go: sync/atomic loads and stores are
// sequentially consistent, at least the acquire and release the kernel's
// xsk_queue.h protocol asks for, on amd64 and arm64.
//
// # Bind modes and the shared UMEM
//
// Open binds with XDP_USE_NEED_WAKEUP and tries XDP_ZEROCOPY, falling back
// to XDP_COPY when the driver says EOPNOTSUPP; Socket.BindMode reports the
// mode the kernel confirms (XDP_OPTIONS). veth has no zero-copy AF_XDP, so
// on veth the socket is in copy mode.
//
// The first Open on a UMEM registers it (XDP_UMEM_REG). Each later Open on
// another (interface, queue) binds with XDP_SHARED_UMEM and its own fill and
// completion rings (Linux 5.10 and later). The kernel forbids mode flags on
// such a bind and copies the UMEM's zero-copy and need_wakeup settings, so
// all sockets of one UMEM share one mode: a zero-copy UMEM cannot take a
// veth port (ErrZeroCopy), and asking a shared socket for another mode is
// ErrBindMode. Use one UMEM per mode. One socket per (interface, queue) and
// UMEM: the kernel would make a second one share the first one's fill and
// completion rings. Interface indexes are compared, so keep the sockets of
// one UMEM in one network namespace.
//
// # Wake-ups
//
// With need_wakeup the kernel says, through a flag on the fill and tx rings,
// when it needs a syscall. Socket.Wakeup issues sendto only when the tx ring
// flag is set and frames are queued; Socket.Poll sleeps in poll(2) for rx
// (the adaptive and interrupt worker modes) and Socket.WakeupRx is the
// busy-poll kick for a zero-copy driver. Socket.Wakeups counts each syscall.
//
// Copy mode transmits only inside sendto (or poll), at most the tx budget
// per call: 32 frames by default, so a 200-frame burst takes 7 syscalls on
// Linux 6.18 veth; Options.TxBudget (XDP_MAX_TX_SKB_BUDGET, Linux 6.17)
// raises it to the tx ring size and the same burst takes one. In copy mode
// the tx flag never clears, which is why Wakeup also checks that frames are
// queued: otherwise an idle worker would make a syscall per iteration.
//
// # Kernel quirks measured here (Linux 6.18, veth)
//
//   - A closed socket's queue stays bound for about 20 ms (the kernel frees
//     it from deferred work after an RCU grace period); bind fails with
//     EBUSY meanwhile. Open retries EBUSY for up to 250 ms before
//     reporting ErrQueueBusy.
//   - A frame redirected to a socket whose fill ring is empty is dropped
//     and counted in both Stats.RxDropped and Stats.RxFillRingEmptyDescs:
//     fill the ring before registering the socket with the XDP program.
//   - Stats.TxRingEmptyDescs counts wake-ups (sendto, and poll in copy
//     mode) that found nothing to send; it is not a drop.
//   - A received frame must fit in FrameSize − Headroom − 256 bytes
//     (XDP_PACKET_HEADROOM): 1792 with 2048-byte frames, 3840 with 4096.
//     Larger frames need multi-buffer AF_XDP (XDP_USE_SG), not enabled here.
//
// # Privileges
//
// Creating AF_XDP sockets needs CAP_NET_RAW; registering a UMEM pins its
// pages and counts against RLIMIT_MEMLOCK unless the process has
// CAP_IPC_LOCK. The privileged tests create throw-away network namespaces
// with package xdptest and skip with a reason when not run as root.
//
// # Concurrency
//
// A Socket, its rings and a FrameStack belong to one worker goroutine
// (locked to its OS thread by the dataplane) and are not safe for
// concurrent use. Socket.Stats and Socket.Wakeups may be called from any
// goroutine; Socket.Close only once the worker has stopped using the socket,
// since it unmaps the rings. Open and the UMEM's methods are safe for
// concurrent use. No
// method on the packet path allocates: the tests check Fill, Poll, Receive,
// Transmit, Wakeup, Complete and the FrameStack with testing.AllocsPerRun.
package afxdp
