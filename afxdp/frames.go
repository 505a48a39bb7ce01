package afxdp

// FrameStack is a fixed-capacity stack of free UMEM frame addresses: the
// frames a worker owns and may fill, build in, or hand to the kernel.
//
// A stack (LIFO) hands out the frame freed last, whose bytes are most
// likely still in cache. Push and Pop never allocate. A FrameStack belongs
// to one worker and is not safe for concurrent use. The zero value has no
// capacity; use NewFrameStack or NewFrameStackFull.
type FrameStack struct {
	addrs []uint64
}

// NewFrameStack returns an empty stack that holds up to capacity frames.
func NewFrameStack(capacity int) *FrameStack {
	return &FrameStack{addrs: make([]uint64, 0, capacity)}
}

// NewFrameStackFull returns a stack holding every frame of u, frame 0 on
// top.
func NewFrameStackFull(u *UMEM) *FrameStack {
	s := NewFrameStack(u.NumFrames())
	for i := u.NumFrames() - 1; i >= 0; i-- {
		s.addrs = append(s.addrs, u.FrameAddr(i))
	}
	return s
}

// Len is the number of free frames on the stack.
func (s *FrameStack) Len() int { return len(s.addrs) }

// Cap is the most frames the stack holds.
func (s *FrameStack) Cap() int { return cap(s.addrs) }

// Push returns a frame to the stack. It reports false, leaving the stack
// unchanged, when the stack is full: more frames came back than were
// handed out, which is a frame accounting bug (a double free) in the
// caller.
func (s *FrameStack) Push(addr uint64) bool {
	if len(s.addrs) == cap(s.addrs) {
		return false
	}
	s.addrs = append(s.addrs, addr)
	return true
}

// Pop takes a frame off the stack; ok is false when it is empty.
func (s *FrameStack) Pop() (addr uint64, ok bool) {
	n := len(s.addrs)
	if n == 0 {
		return 0, false
	}
	addr = s.addrs[n-1]
	s.addrs = s.addrs[:n-1]
	return addr, true
}

// PushN returns as many of addrs as fit and reports how many, taken from
// the front of addrs.
func (s *FrameStack) PushN(addrs []uint64) int {
	n := min(len(addrs), cap(s.addrs)-len(s.addrs))
	s.addrs = append(s.addrs, addrs[:n]...)
	return n
}

// PopN fills dst with up to len(dst) frames and reports how many.
func (s *FrameStack) PopN(dst []uint64) int {
	n := min(len(dst), len(s.addrs))
	copy(dst, s.addrs[len(s.addrs)-n:])
	s.addrs = s.addrs[:len(s.addrs)-n]
	return n
}
