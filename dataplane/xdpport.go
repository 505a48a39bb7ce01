package dataplane

import (
	"fmt"

	"rocetor/afxdp"
	"rocetor/rocev2"
)

// XDPPort is a Port on one AF_XDP socket, i.e. one (interface, queue).
// Its frames live in the worker's Mem, which must be the socket's UMEM
// (see MemOfUMEM), so a frame received here can be transmitted on another
// port of the same worker without a copy. It keeps the fill ring topped up
// from Mem and returns completed frames to Mem.
type XDPPort struct {
	sock   *afxdp.Socket
	mem    *Mem
	mac    rocev2.MAC
	native bool
	rx     [BatchSize]afxdp.Desc
	tx     [BatchSize]afxdp.Desc
	addrs  [BatchSize]uint64
	posted int // frames on the fill ring or in the kernel's rx path
	inTx   int // frames on the tx ring or not yet completed
	refill int // fill ring target
	stats  PortStats
}

// MemOfUMEM returns a Mem over a UMEM's frames, for the worker that owns
// every socket on that UMEM. Workers that hand frames to each other share
// one UMEM instead, each with its Mem of SharedMems over it: a frame one
// worker's socket received may then complete on another's, whose Mem
// gives it back to its own.
func MemOfUMEM(u *afxdp.UMEM) (*Mem, error) {
	return NewMem(u.Bytes(), u.FrameSize())
}

// NewXDPPort wraps an open socket whose UMEM backs mem. fill is how many
// frames to keep posted for receive (at most the fill ring size). native
// records whether the XDP program runs in driver mode, for Stats.
func NewXDPPort(sock *afxdp.Socket, mem *Mem, mac rocev2.MAC, fill int, native bool) (*XDPPort, error) {
	if fill <= 0 || fill > mem.Free() {
		return nil, fmt.Errorf("port %s: fill target %d with %d free frames", sock.Interface(), fill, mem.Free())
	}
	p := &XDPPort{sock: sock, mem: mem, mac: mac, native: native, refill: fill}
	p.post()
	return p, nil
}

// Name implements Port.
func (p *XDPPort) Name() string { return p.sock.Interface() }

// MAC implements Port.
func (p *XDPPort) MAC() rocev2.MAC { return p.mac }

// Socket returns the underlying socket.
func (p *XDPPort) Socket() *afxdp.Socket { return p.sock }

// Receive implements Port.
func (p *XDPPort) Receive(b *Batch) int {
	_ = p.sock.BusyPoll() // transient refusals retry on the next loop
	n := p.sock.Receive(p.rx[:BatchSize-b.N])
	for i := 0; i < n; i++ {
		d := &p.rx[i]
		b.Pkts[b.N] = Packet{Addr: d.Addr, Len: uint16(d.Len)}
		b.N++
	}
	p.posted -= n
	return n
}

// TxRoom implements Port.
func (p *XDPPort) TxRoom() int { return int(p.sock.Rings().Tx.Free()) }

// Transmit implements Port.
func (p *XDPPort) Transmit(pkts []Packet) int {
	n := min(len(pkts), BatchSize)
	for i := 0; i < n; i++ {
		p.tx[i] = afxdp.Desc{Addr: pkts[i].Addr, Len: uint32(pkts[i].Len)}
	}
	k := p.sock.Transmit(p.tx[:n])
	p.inTx += k
	p.stats.TxRefused += uint64(len(pkts) - k)
	return k
}

// Service implements Port: kick the tx ring, take back completed frames
// and top up the fill ring.
func (p *XDPPort) Service() {
	if p.inTx > 0 {
		_ = p.sock.Wakeup() // transient refusals retry on the next loop
		for {
			n := p.sock.Complete(p.addrs[:])
			for i := 0; i < n; i++ {
				p.mem.Release(p.addrs[i])
			}
			p.inTx -= n
			if n < len(p.addrs) {
				break
			}
		}
	}
	p.post()
}

// post tops up the fill ring to the refill target from Mem.
func (p *XDPPort) post() {
	for p.posted < p.refill {
		want := min(p.refill-p.posted, BatchSize)
		got := 0
		for got < want {
			a, ok := p.mem.Alloc()
			if !ok {
				break
			}
			p.addrs[got] = a
			got++
		}
		k := p.sock.Fill(p.addrs[:got])
		for i := k; i < got; i++ {
			p.mem.Release(p.addrs[i])
		}
		p.posted += k
		if k < want {
			return
		}
	}
}

// Fd implements Port.
func (p *XDPPort) Fd() int { return p.sock.FD() }

// Stats implements Port. It reads XDP_STATISTICS, a getsockopt, so call it
// at publication rate, not per packet.
func (p *XDPPort) Stats() PortStats {
	s := p.stats
	if k, err := p.sock.Stats(); err == nil {
		s.RxDropped, s.RxInvalid, s.TxInvalid = k.RxDropped, k.RxInvalidDescs, k.TxInvalidDescs
		s.RxRingFull, s.FillEmpty, s.TxRingEmpty = k.RxRingFull, k.RxFillRingEmptyDescs, k.TxRingEmptyDescs
	}
	w := p.sock.Wakeups()
	s.Wakeups = w.Tx + w.Rx + w.Poll + w.Busy
	s.RxQueueDepth = int(p.sock.Rings().Rx.Available())
	s.ZeroCopy = p.sock.BindMode() == afxdp.BindZeroCopy
	s.NativeXDP = p.native
	s.TxInFlight, s.RxFramesPosted = p.inTx, p.posted
	return s
}

// Close implements Port. Frames the kernel still holds are not returned to
// Mem: the worker has stopped and Mem goes away with the UMEM.
func (p *XDPPort) Close() error { return p.sock.Close() }
