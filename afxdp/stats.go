package afxdp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stats are the kernel's drop and starvation counters for one socket
// (XDP_STATISTICS), cumulative since bind.
type Stats struct {
	// RxDropped: frames dropped for other reasons, such as a frame
	// larger than the space left in a UMEM frame.
	RxDropped uint64
	// RxInvalidDescs: rx descriptors dropped as invalid.
	RxInvalidDescs uint64
	// TxInvalidDescs: tx descriptors the kernel refused, such as an
	// address outside the UMEM or a frame crossing a frame boundary.
	TxInvalidDescs uint64
	// RxRingFull: frames dropped because the rx ring was full, that is,
	// the worker did not Receive fast enough.
	RxRingFull uint64
	// RxFillRingEmptyDescs: times the kernel had a frame for the socket
	// but found the fill ring empty, that is, the worker did not Fill
	// fast enough. (Linux 5.9 and later; zero before.)
	RxFillRingEmptyDescs uint64
	// TxRingEmptyDescs: times the kernel was woken to transmit and
	// found the tx ring empty. (Linux 5.9 and later; zero before.)
	TxRingEmptyDescs uint64
}

// Stats reads the socket's kernel counters. Safe to call from any
// goroutine; it is a syscall, so not for the packet path.
func (s *Socket) Stats() (Stats, error) {
	if s.closed.Load() {
		return Stats{}, fmt.Errorf("af_xdp stats on %s queue %d: %w", s.ifname, s.queue, ErrClosed)
	}
	var st unix.XDPStatistics
	if _, err := getsockopt(s.fd, unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), unsafe.Sizeof(st)); err != nil {
		return Stats{}, fmt.Errorf("af_xdp stats on %s queue %d: %w", s.ifname, s.queue, err)
	}
	return Stats{
		RxDropped:            st.Rx_dropped,
		RxInvalidDescs:       st.Rx_invalid_descs,
		TxInvalidDescs:       st.Tx_invalid_descs,
		RxRingFull:           st.Rx_ring_full,
		RxFillRingEmptyDescs: st.Rx_fill_ring_empty_descs,
		TxRingEmptyDescs:     st.Tx_ring_empty_descs,
	}, nil
}
