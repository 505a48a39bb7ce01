package afxdp

import "errors"

// Sentinel errors for what callers test with errors.Is. Each is wrapped with
// the interface, queue or value that caused it.
var (
	// ErrFrameSize: UMEMOptions.FrameSize is not 2048 or 4096, the two
	// chunk sizes an aligned UMEM supports on every 4 KiB-page machine.
	ErrFrameSize = errors.New("frame size must be 2048 or 4096")

	// ErrFrameCount: UMEMOptions.NumFrames is not a power of two. The
	// free-frame accounting and the fill ring sizes that match it assume
	// powers of two throughout.
	ErrFrameCount = errors.New("number of frames must be a power of two")

	// ErrHeadroom: UMEMOptions.Headroom leaves no room for a frame after
	// the kernel's own XDP_PACKET_HEADROOM.
	ErrHeadroom = errors.New("headroom too large for the frame size")

	// ErrRingSize: a ring size in Options is not a power of two in
	// [1, MaxRingSize]. The kernel refuses other sizes with a bare EINVAL.
	ErrRingSize = errors.New("ring size must be a power of two")

	// ErrTxBudget: Options.TxBudget is outside [32, tx ring size], the
	// range the kernel accepts.
	ErrTxBudget = errors.New("tx budget out of range")

	// ErrQueueBusy: another socket is bound to this (interface, queue),
	// through this UMEM or elsewhere in the system.
	ErrQueueBusy = errors.New("queue already has an AF_XDP socket")

	// ErrZeroCopy: zero-copy was required (BindZeroCopy, or a UMEM whose
	// first socket is zero-copy) but the driver of this interface cannot
	// do it.
	ErrZeroCopy = errors.New("driver does not support zero-copy AF_XDP")

	// ErrBindMode: a socket on a shared UMEM asked for a bind mode other
	// than the one the UMEM's first socket fixed for all of them.
	ErrBindMode = errors.New("bind mode differs from the shared UMEM's")

	// ErrKernel: the kernel lacks something this package needs (the v2
	// mmap offsets with ring flags, Linux 5.4, or per-socket fill and
	// completion rings on a shared UMEM, Linux 5.10).
	ErrKernel = errors.New("kernel too old for this AF_XDP feature")

	// ErrClosed: the socket or UMEM was closed.
	ErrClosed = errors.New("closed")

	// ErrUMEMBusy: UMEM.Close was called while sockets still use it.
	ErrUMEMBusy = errors.New("UMEM still has open sockets")
)
