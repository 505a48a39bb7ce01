package afxdp

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Defaults for zero fields of UMEMOptions.
const (
	DefaultFrameSize = 4096
	DefaultNumFrames = 4096
)

// UMEMOptions configures NewUMEM. The zero value is ready: 4096 frames of
// 4096 bytes (16 MiB) and no extra headroom.
type UMEMOptions struct {
	// FrameSize is the size of each frame (a UMEM "chunk"): 2048 or
	// 4096. A received frame must fit in FrameSize minus Headroom minus
	// the kernel's 256-byte XDP_PACKET_HEADROOM: 1792 bytes for 2048,
	// 3840 for 4096.
	FrameSize int
	// NumFrames is the number of frames, a power of two.
	NumFrames int
	// Headroom is reserved at the start of every frame, before the
	// kernel's XDP_PACKET_HEADROOM, for the worker to prepend headers
	// (a link shim, a VLAN tag) in place.
	Headroom int
}

// UMEM is the packet memory shared by the kernel and every socket opened on
// it. Frames are named by their UMEM address (a byte offset into it), which
// is what the rings carry, so a frame received on one socket can be put on
// another socket's tx ring without copying.
//
// The first Open on a UMEM registers it with the kernel (XDP_UMEM_REG);
// later Opens bind with XDP_SHARED_UMEM and their own fill and completion
// rings. The first socket's bind mode (zero-copy or copy) and need_wakeup
// setting then hold for every socket on the UMEM: the kernel makes shared
// sockets inherit them.
//
// Open, Socket.Close and Close are safe for concurrent use; the frame
// accessors only read fixed fields and are too.
type UMEM struct {
	mem       []byte
	frameSize int
	numFrames int
	headroom  int

	mu      sync.Mutex
	sockets []*Socket // open sockets, in Open order
	closed  bool
}

// NewUMEM maps anonymous memory for a UMEM. Nothing is registered with the
// kernel until the first Open.
func NewUMEM(opts UMEMOptions) (*UMEM, error) {
	fs, nf := opts.FrameSize, opts.NumFrames
	if fs == 0 {
		fs = DefaultFrameSize
	}
	if nf == 0 {
		nf = DefaultNumFrames
	}
	if fs != 2048 && fs != 4096 {
		return nil, fmt.Errorf("umem: frame size %d: %w", fs, ErrFrameSize)
	}
	if nf < 0 || !isPow2(uint64(nf)) {
		return nil, fmt.Errorf("umem: %d frames: %w", nf, ErrFrameCount)
	}
	// The kernel refuses headroom >= chunk - XDP_PACKET_HEADROOM; keep at
	// least one minimum Ethernet frame of room on top of that.
	if opts.Headroom < 0 || opts.Headroom > fs-unix.XDP_PACKET_HEADROOM-64 {
		return nil, fmt.Errorf("umem: headroom %d with %d-byte frames: %w", opts.Headroom, fs, ErrHeadroom)
	}
	// MAP_POPULATE faults every page in now rather than on the first
	// packets; the kernel pins them at registration anyway.
	mem, err := unix.Mmap(-1, 0, fs*nf, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("umem: mmap %d bytes: %w", fs*nf, err)
	}
	return &UMEM{mem: mem, frameSize: fs, numFrames: nf, headroom: opts.Headroom}, nil
}

// FrameSize is the size of each frame in bytes.
func (u *UMEM) FrameSize() int { return u.frameSize }

// NumFrames is the number of frames.
func (u *UMEM) NumFrames() int { return u.numFrames }

// Headroom is the configured headroom (not counting XDP_PACKET_HEADROOM).
func (u *UMEM) Headroom() int { return u.headroom }

// RxOffset is how far past the frame start the kernel writes a received
// frame: the configured headroom plus XDP_PACKET_HEADROOM.
func (u *UMEM) RxOffset() int { return u.headroom + unix.XDP_PACKET_HEADROOM }

// FrameAddr is the address of frame i, 0 <= i < NumFrames.
func (u *UMEM) FrameAddr(i int) uint64 { return uint64(i) * uint64(u.frameSize) }

// FrameStart rounds an address inside a frame (as rx descriptors carry) down
// to the frame's start, the form a FrameStack keeps.
func (u *UMEM) FrameStart(addr uint64) uint64 { return addr &^ uint64(u.frameSize-1) }

// Frame returns the n bytes at addr. The slice aliases UMEM: it is valid
// only while the caller owns the frame, that is until the frame is given
// back to the kernel (fill or tx ring) or to another owner. It panics if
// the range is outside the UMEM, like any slice expression.
func (u *UMEM) Frame(addr uint64, n int) []byte {
	return u.mem[addr : addr+uint64(n) : addr+uint64(n)]
}

// Bytes is the whole UMEM; frame i is Bytes()[FrameAddr(i):][:FrameSize()].
// It aliases UMEM and is valid until Close, for a dataplane that keeps its
// own view of the frames.
func (u *UMEM) Bytes() []byte { return u.mem }

// Close unmaps the memory. It fails with ErrUMEMBusy while sockets are open
// on the UMEM: the kernel would keep the pages pinned but this process
// would lose them under its feet.
func (u *UMEM) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed {
		return nil
	}
	if len(u.sockets) > 0 {
		return fmt.Errorf("umem: close with %d sockets open: %w", len(u.sockets), ErrUMEMBusy)
	}
	u.closed = true
	return unix.Munmap(u.mem)
}

// register makes fd the owner of this UMEM in the kernel. Called with mu
// held.
func (u *UMEM) register(fd int) error {
	reg := unix.XDPUmemReg{
		Addr:     uint64(uintptr(unsafe.Pointer(&u.mem[0]))),
		Len:      uint64(len(u.mem)),
		Size:     uint32(u.frameSize),
		Headroom: uint32(u.headroom),
	}
	if err := setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("register umem (%d bytes): %w", len(u.mem), err)
	}
	return nil
}
