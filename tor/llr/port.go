package llr

import (
	"encoding/binary"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Port is a protected port: it wraps the port the worker would otherwise
// poll and runs the link half of the protocol where the link is, in wire
// order.
//
// Receive takes the frames of the inner port and hands the worker only
// what the rest of the pipeline should see: protected frames of the
// neighbour de-duplicated (Algorithm 1), in sequence in Blocking mode
// (held out-of-order frames are released from the reordering buffer into
// later batches as the head of line arrives or is skipped), always with
// the shim stripped; unprotected frames (PFC, ARP, frames sent
// unprotected) as they are. It consumes the neighbour's dummies, explicit
// ACKs and loss notices, and the ACK every shim carries. Everything that
// needs a clock or must send a frame (loss notices, retransmissions,
// explicit ACKs, dummies, PFC, ackNoTimeout) is left to the Stage's Poll,
// which runs in the same worker loop before transmission.
//
// Transmit stamps the receiver's current ackNo into the shim of every
// frame leaving by the port (the piggybacked ACK, §3.1) and hands the
// frames to the inner port.
//
// Frames it consumes (duplicates, control shims) go straight back to Mem;
// frames it holds are copies in the reordering buffer (its byte budget,
// Config.RxBuffer), so it holds no frame of Mem between calls. Like every
// port it belongs to the worker's thread.
type Port struct {
	inner dataplane.Port
	mem   *dataplane.Mem
	l     *link
	sc    dataplane.Batch
}

// Inner returns the wrapped port.
func (p *Port) Inner() dataplane.Port { return p.inner }

// Name implements dataplane.Port.
func (p *Port) Name() string { return p.inner.Name() }

// MAC implements dataplane.Port.
func (p *Port) MAC() rocev2.MAC { return p.inner.MAC() }

// TxRoom implements dataplane.Port.
func (p *Port) TxRoom() int { return p.inner.TxRoom() }

// Service implements dataplane.Port.
func (p *Port) Service() { p.inner.Service() }

// Fd implements dataplane.Port.
func (p *Port) Fd() int { return p.inner.Fd() }

// Stats implements dataplane.Port.
func (p *Port) Stats() dataplane.PortStats { return p.inner.Stats() }

// Close implements dataplane.Port. The reordering buffer holds copies,
// not frames, so there is nothing of Mem to give back.
func (p *Port) Close() error { return p.inner.Close() }

// Pending implements dataplane.Pender: when the reordering buffer holds
// the next frame in sequence, Receive would release it now, so it waits
// as a frame on the wire does. A worker stepped only when it has work
// (dataplane.Worker.Next, the fabric simulator) comes back for frames a
// filled hole freed beyond one batch; the inner port's own frames it
// finds under this one.
func (p *Port) Pending() int {
	if l := p.l; l.rx != nil && l.has(l.ackNo) {
		return 1
	}
	return 0
}

// shimAt returns the offset of the shim (14, or 18 behind an 802.1Q tag)
// when f carries one, else 0.
func shimAt(f []byte) int {
	if len(f) < rocev2.EthernetLen {
		return 0
	}
	off, et := rocev2.EthernetLen, binary.BigEndian.Uint16(f[12:14])
	if et == rocev2.EtherTypeVLAN && len(f) >= rocev2.EthernetLen+rocev2.VLANTagLen {
		off, et = off+rocev2.VLANTagLen, binary.BigEndian.Uint16(f[16:18])
	}
	if et != rocev2.EtherTypeShim || len(f) < off+rocev2.ShimLen {
		return 0
	}
	return off
}

// Receive implements dataplane.Port.
func (p *Port) Receive(b *dataplane.Batch) int {
	n0 := b.N
	l := p.l
	if l.rx != nil {
		p.drain(b)
	}
	// Every frame taken from the inner port may need a place in b, so
	// take no more than b has room for.
	if room := dataplane.BatchSize - b.N; room > 0 {
		first := dataplane.BatchSize - room
		p.sc.N = first
		p.inner.Receive(&p.sc)
		for j := first; j < p.sc.N; j++ {
			p.one(b, &p.sc.Pkts[j])
		}
		if l.rx != nil {
			p.drain(b)
		}
	}
	return b.N - n0
}

func (p *Port) deliver(b *dataplane.Batch, addr uint64, n uint16) {
	b.Pkts[b.N] = dataplane.Packet{Addr: addr, Len: n}
	b.N++
}

// one handles a frame from the wire.
func (p *Port) one(b *dataplane.Batch, pk *dataplane.Packet) {
	l, st := p.l, p.l.st
	f := p.mem.Frame(pk)
	off := shimAt(f)
	if off == 0 {
		if len(f) >= rocev2.EthernetLen {
			if et := binary.BigEndian.Uint16(f[12:14]); et == rocev2.EtherTypeShim || et == rocev2.EtherTypeVLAN && len(f) >= 18 && binary.BigEndian.Uint16(f[16:18]) == rocev2.EtherTypeShim {
				st.RxMalformed++ // a shim cut short
				p.mem.Release(pk.Addr)
				return
			}
		}
		st.RxUnprotected++
		p.deliver(b, pk.Addr, pk.Len)
		return
	}
	sh := rocev2.Shim(f[off : off+rocev2.ShimLen])
	l.peer = rocev2.MAC(f[6:12]) // not copy: a 6-byte runtime.memmove call, 13 instructions a frame (callgrind)
	if sh.HasAck() && l.established {
		l.ack(sh.Ack())
	}
	t := sh.Type()
	if l.peerEpoch == 0 && t != rocev2.ShimSync && t != rocev2.ShimProtect {
		// No session with the neighbour yet (this switch just started):
		// its numbering means nothing here. Pass what it carries, as
		// an unprotected frame; consume the rest.
		st.RxNoSession++
		if t == rocev2.ShimOriginal || t == rocev2.ShimRetransmit || t == rocev2.ShimWatch {
			strip(f, off)
			p.deliver(b, pk.Addr+rocev2.ShimLen, pk.Len-rocev2.ShimLen)
			return
		}
		st.RxConsumed++
		p.mem.Release(pk.Addr)
		return
	}
	bad := st.RxMalformed
	switch t {
	case rocev2.ShimOriginal, rocev2.ShimRetransmit:
		p.data(b, pk, f, off, sh.Seq())
		return
	case rocev2.ShimWatch:
		p.watched(b, pk, f, off, sh.Seq())
		return
	case rocev2.ShimProtect:
		if sh.Count() == 0 {
			st.RxMalformed++
			break
		}
		st.ProtectRequests++
		l.lossCode.Store(uint32(sh.Count()))
		l.neighbourLoss = rocev2.LossOfCode(sh.Count())
		switch {
		case l.pinned.Load():
			st.ProtectIgnored++
		case l.off.Load():
			l.off.Store(false)
			st.Activations++
		}
	case rocev2.ShimSync:
		if sh.SyncEpoch() == 0 {
			st.RxMalformed++
			break
		}
		l.sync(sh.Seq(), sh.Count(), sh.SyncEcho(), sh.SyncEpoch())
	case rocev2.ShimDummy:
		st.DummiesReceived++
		switch d := sh.Seq().Diff(l.ackNo); {
		case d > Window:
			st.RxMalformed++ // beyond the window: no position of this session
		case d >= 0:
			l.saw(sh.Seq(), sh.Seq())
		}
		// d < 0: queued before frames that overtook it on the data
		// queue; nothing to learn but that the neighbour waits.
		l.pending = true // the neighbour still probes: it lacks our ACK
	case rocev2.ShimAck:
		st.AcksReceived++
	case rocev2.ShimLoss:
		if sh.Count() == 0 {
			st.RxMalformed++
		} else {
			l.request(sh.Seq(), int(sh.Count()))
		}
	default:
		st.RxMalformed++
	}
	if st.RxMalformed == bad {
		st.RxConsumed++ // a control shim, read and done with
	}
	p.mem.Release(pk.Addr)
}

// data runs Algorithm 1 on a protected frame with sequence s.
func (p *Port) data(b *dataplane.Batch, pk *dataplane.Packet, f []byte, off int, s psn.Link) {
	l, st := p.l, p.l.st
	st.RxProtected++
	d := s.Diff(l.ackNo)
	if d >= Window {
		st.RxMalformed++ // beyond the window: no sequence of this session
		p.mem.Release(pk.Addr)
		return
	}
	if d < 0 || l.has(s) {
		st.Duplicates++
		l.pending = true
		p.mem.Release(pk.Addr)
		return
	}
	isNew := s.Diff(l.high) >= 0
	l.saw(s, s.Add(1))
	l.pending = true
	if l.rx == nil || d == 0 {
		// In order, or non-blocking: forward now.
		strip(f, off)
		p.deliver(b, pk.Addr+rocev2.ShimLen, pk.Len-rocev2.ShimLen)
		st.Delivered++
		if d == 0 {
			l.ackNo = l.ackNo.Add(1)
		} else {
			l.mark(s)
		}
		if l.rx == nil {
			for l.has(l.ackNo) {
				l.unmark(l.ackNo)
				l.ackNo = l.ackNo.Add(1)
			}
		}
		return
	}
	h, ok := l.rx.put(f)
	p.mem.Release(pk.Addr)
	if !ok {
		st.RxBufferFull++
		if isNew {
			// Lost here rather than on the wire: ask for it again.
			l.addHole(s, 1, false)
		}
		return
	}
	l.mark(s)
	l.slot[s&(Window-1)] = h
	st.Held++
	p.rxLevel()
}

// watched passes a frame of a dormant sender that numbers without
// keeping copies (ShimWatch): its gaps are losses counted for the
// corruption monitor, asked for by nobody. The sender watches only when
// nothing it protected is outstanding, so ackNo normally stands right
// at the last sequence; should it not (frames overtook), the frame
// passes uncounted.
func (p *Port) watched(b *dataplane.Batch, pk *dataplane.Packet, f []byte, off int, s psn.Link) {
	l, st := p.l, p.l.st
	st.RxWatched++
	if d := s.Diff(l.ackNo); d >= 0 && d < Window && l.high == l.ackNo && l.hN == 0 {
		st.LossesDetected += uint64(d)
		st.Expected += uint64(d) + 1
		l.ackNo = s.Add(1)
		l.high = l.ackNo
	}
	strip(f, off)
	p.deliver(b, pk.Addr+rocev2.ShimLen, pk.Len-rocev2.ShimLen)
}

func (p *Port) rxLevel() {
	st := p.l.st
	st.RxBytes = p.l.rx.span()
	st.RxBytesMax = max(st.RxBytesMax, st.RxBytes)
}

// strip removes the shim at off in place: the addresses (and tag) move 8
// bytes on and end where the shim's InnerType is, which becomes the
// frame's EtherType. The frame then starts at f[ShimLen:].
func strip(f []byte, off int) {
	moveAddrs(f[rocev2.ShimLen:], f, off-2)
}

// moveAddrs moves a frame's n bytes before its EtherType (the
// addresses, 12, and a VLAN tag, 16) from src to dst, which overlap:
// all are loaded before any is stored. copy called runtime.memmove for
// it, about 30 instructions a packet at each end of a protected link
// (callgrind, BenchmarkPipelineForward/stages).
func moveAddrs(dst, src []byte, n int) {
	a := binary.LittleEndian.Uint64(src[:8])
	if n == 12 {
		b := binary.LittleEndian.Uint32(src[8:12])
		binary.LittleEndian.PutUint64(dst[:8], a)
		binary.LittleEndian.PutUint32(dst[8:12], b)
		return
	}
	b := binary.LittleEndian.Uint64(src[8:16])
	binary.LittleEndian.PutUint64(dst[:8], a)
	binary.LittleEndian.PutUint64(dst[8:16], b)
}

// drain releases held frames from ackNo on, in sequence, while b has
// room and Mem has frames (Blocking).
func (p *Port) drain(b *dataplane.Batch) {
	l, st := p.l, p.l.st
	moved := false
	for b.N < dataplane.BatchSize && l.has(l.ackNo) {
		i := l.ackNo & (Window - 1)
		addr, ok := p.mem.Alloc()
		if !ok {
			st.NoFrame++
			break
		}
		room := p.mem.Room(addr)
		var n int
		if src, ok := l.rx.get(l.slot[i]); ok {
			off := shimAt(src)
			copy(room, src[:off-2])
			n = copy(room[off-2:], src[off+rocev2.ShimLen-2:]) + off - 2
		} else { // wrapped round the ring: copy, then strip in place
			k := l.rx.read(l.slot[i], room)
			off := shimAt(room[:k])
			n = copy(room[off-2:], room[off+rocev2.ShimLen-2:k]) + off - 2
		}
		l.rx.free(l.slot[i])
		l.slot[i] = noEntry
		l.unmark(l.ackNo)
		l.ackNo = l.ackNo.Add(1)
		p.deliver(b, addr, uint16(n))
		st.Released++
		st.Delivered++
		moved = true
	}
	if moved {
		p.rxLevel()
	}
}

// resync starts the receiver over at s for a new session of the
// neighbour. The frames it holds are of the old session, whose sender
// is gone and will fill no hole before them: dropped, counted in
// ResyncDropped.
func (l *link) resync(s psn.Link) {
	if l.rx != nil {
		for i := range l.slot {
			if l.slot[i] != noEntry {
				l.rx.free(l.slot[i])
				l.slot[i] = noEntry
				l.st.ResyncDropped++
			}
		}
		l.st.RxBytes = l.rx.span()
	}
	clear(l.got)
	l.hN, l.hHead, l.fresh, l.pending = 0, 0, 0, false
	l.ackNo, l.high = s, s
}

// Transmit implements dataplane.Port: the piggybacked ACK, when the
// receiver has a session, and the wire position of every sync, which
// only here is exact. It offers the inner port no more than its TxRoom,
// so that the position it stamps counts only frames that leave.
func (p *Port) Transmit(pkts []dataplane.Packet) int {
	l := p.l
	pkts = pkts[:min(len(pkts), p.inner.TxRoom())]
	wire, firstAck, acks := l.wireNext, len(pkts), 0
	for i := range pkts {
		f := p.mem.Frame(&pkts[i])
		off := shimAt(f)
		if off == 0 {
			continue
		}
		sh := rocev2.Shim(f[off : off+rocev2.ShimLen])
		switch t := sh.Type(); {
		case t == rocev2.ShimSync:
			sh.SetSeq(wire, rocev2.ShimSync)
			continue
		case t == rocev2.ShimOriginal || t == rocev2.ShimWatch:
			if s := sh.Seq(); s.Diff(wire) >= 0 {
				wire = s.Add(1)
			}
		}
		if l.peerEpoch == 0 {
			sh.ClearAck()
			continue
		}
		sh.SetAck(l.ackNo)
		firstAck, acks = min(firstAck, i), acks+1
	}
	k := p.inner.Transmit(pkts)
	if k == len(pkts) {
		l.wireNext = wire
	}
	if firstAck < k {
		// Only a frame that left carries the ACK: one the inner port
		// refused leaves the neighbour's copy stale.
		l.pending = false
		l.st.AcksCarried += uint64(min(acks, k-firstAck))
	}
	return k
}
