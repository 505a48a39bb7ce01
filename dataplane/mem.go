package dataplane

import (
	"errors"
	"fmt"
)

// Mem is the frame memory of one worker: a byte area cut into equal frames
// addressed by offset, with a stack of free frame addresses. Under AF_XDP
// the area is the UMEM shared by all the worker's sockets, so a frame moves
// from one port's rx ring to another's tx ring without a copy; under the
// in-memory port it is an ordinary slice. It is owned by one worker and
// not safe for concurrent use.
type Mem struct {
	buf       []byte
	frameSize int
	free      []uint64 // frames given back, most recent last
	fresh     int      // frames never handed out: the last fresh of buf
	inUse     int
}

// Errors from NewMem.
var ErrMemSize = errors.New("dataplane: frame memory size")

// NewMem cuts buf into frames of frameSize bytes, all free.
func NewMem(buf []byte, frameSize int) (*Mem, error) {
	if frameSize < 256 || frameSize&(frameSize-1) != 0 {
		return nil, fmt.Errorf("%w: frame size %d is not a power of two ≥ 256", ErrMemSize, frameSize)
	}
	n := len(buf) / frameSize
	if n == 0 {
		return nil, fmt.Errorf("%w: %d bytes hold no %d-byte frame", ErrMemSize, len(buf), frameSize)
	}
	// The stack's room is reserved, not touched: it fills as frames
	// come back, so Release never allocates.
	return &Mem{buf: buf, frameSize: frameSize, free: make([]uint64, 0, n), fresh: n}, nil
}

// FrameSize returns the size of one frame.
func (m *Mem) FrameSize() int { return m.frameSize }

// Frames returns the number of frames.
func (m *Mem) Frames() int { return len(m.buf) / m.frameSize }

// Free returns the number of free frames.
func (m *Mem) Free() int { return len(m.free) + m.fresh }

// InUse returns the number of frames handed out and not yet freed.
func (m *Mem) InUse() int { return m.inUse }

// Alloc takes a free frame. ok is false when none is left.
func (m *Mem) Alloc() (addr uint64, ok bool) {
	n := len(m.free)
	if n == 0 {
		if m.fresh == 0 {
			return 0, false
		}
		// Frames never handed out yet, from the start of buf: the
		// free stack holds only frames given back, so a large Mem
		// costs nothing until its frames are used (a simulator's
		// thousand workers each reserve what tord's UMEM would).
		m.fresh--
		m.inUse++
		return uint64((len(m.buf)/m.frameSize - 1 - m.fresh) * m.frameSize), true
	}
	addr = m.free[n-1]
	m.free = m.free[:n-1]
	m.inUse++
	return addr, true
}

// Release gives a frame back. addr may point anywhere inside the frame
// (AF_XDP descriptors carry headroom offsets); it is aligned down.
func (m *Mem) Release(addr uint64) {
	m.free = append(m.free, addr&^uint64(m.frameSize-1))
	m.inUse--
}

// Bytes returns the n bytes of the frame at addr. The slice aliases the
// frame memory and is valid until the frame is released.
func (m *Mem) Bytes(addr uint64, n int) []byte {
	return m.buf[addr : addr+uint64(n) : addr&^uint64(m.frameSize-1)+uint64(m.frameSize)]
}

// Frame returns the packet's bytes, aliasing frame memory, valid until the
// packet's frame is released.
func (m *Mem) Frame(p *Packet) []byte { return m.Bytes(p.Addr, int(p.Len)) }

// Room returns the whole frame at addr, from addr to the frame's end, for
// writing a new packet.
func (m *Mem) Room(addr uint64) []byte {
	end := addr&^uint64(m.frameSize-1) + uint64(m.frameSize)
	return m.buf[addr:end:end]
}

// Buf returns the whole area, for ports that register it with the kernel.
func (m *Mem) Buf() []byte { return m.buf }
