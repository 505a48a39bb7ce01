package netrt

import (
	"net/netip"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Drop reasons of both stages.
var (
	// ReasonConsumed counts NetRT messages a stage consumed: they end at
	// the ToR and never reach a host. It is not a loss.
	ReasonConsumed = dataplane.NewReason("netrt_consumed")
	// ReasonDuplicate counts data packets DstToR already holds a copy of.
	ReasonDuplicate = dataplane.NewReason("netrt_duplicate")
	// ReasonNAKAnswered counts a host's sequence NAKs DstToR held while
	// the network recovered what they named, and dropped once it did:
	// the sender need not go back. It is not a loss.
	ReasonNAKAnswered = dataplane.NewReason("netrt_nak_answered")
	// ReasonBuild counts messages that did not fit their frame: a frame
	// memory of frames too small for a NetRT message.
	ReasonBuild = dataplane.NewReason("netrt_build")
)

// isData reports whether m is a well-formed RoCEv2 request carrying
// payload: the packets NetRT numbers, pools and reorders. RDMA Read
// requests and atomics advance the PSN differently and are left alone.
func isData(m *rocev2.Meta) bool {
	return m.Kind == rocev2.KindRoCE && m.Reason == rocev2.ReasonNone &&
		m.Opcode.IsRequest() && m.Opcode.HasPayload()
}

// netRT returns the NetRT header of p, or nil when p is not a
// well-formed NetRT message.
func netRT(c *dataplane.Ctx, p *dataplane.Packet) rocev2.NetRT {
	m := &p.Meta
	if m.Kind != rocev2.KindRoCE || m.Reason != rocev2.ReasonNone || m.Opcode != rocev2.NetRTOpcode {
		return nil
	}
	off := m.ExtOff(rocev2.ExtNetRT)
	if off == 0 {
		return nil
	}
	return rocev2.NetRT(c.Mem.Frame(p)[off:])
}

// served returns the key of the flow a request (which travels on the
// flow's reversed addresses) is about.
func served(m *rocev2.Meta) rocev2.FlowKey { return m.Flow.Reverse(m.Flow.QP) }

func addr(a [16]byte) netip.Addr { return netip.AddrFrom16(a).Unmap() }

// next returns the port and destination MAC of a message to dst: the
// route Config.Route gives, or else the port the prompting frame f came
// in by and f's source MAC.
func next(cfg *Config, dst [16]byte, in uint16, f []byte) (uint16, rocev2.MAC) {
	if cfg.Route != nil {
		if port, mac, ok := cfg.Route(addr(dst)); ok {
			return port, mac
		}
	}
	var m rocev2.MAC
	copy(m[:], f[6:12])
	return in, m
}

// send builds a NetRT message with addresses src→dst and destination QP
// qp, and queues it on port out, queue 0 ("control"). It returns false
// when no frame was free or the queue refused it (both counted by the
// worker).
func send(c *dataplane.Ctx, spec *rocev2.Spec, out uint16, dstMAC rocev2.MAC,
	src, dst [16]byte, qp uint32, typ uint8, n psn.PSN, bm rocev2.Bitmap128) bool {
	a, room, ok := c.Alloc()
	if !ok {
		return false
	}
	*spec = rocev2.Spec{Src: c.Port(int(out)).MAC(), Dst: dstMAC,
		SrcIP: addr(src), DstIP: addr(dst), Opcode: rocev2.NetRTOpcode, DestQP: qp,
		NetRTType: typ, NetRTPSN: n, Bitmap: bm}
	l, err := rocev2.Build(room, spec)
	if err != nil {
		// Only a mis-sized frame memory gets here; the frame is ours,
		// and its loss is counted like any other.
		c.Discard(&dataplane.Packet{Addr: a}, ReasonBuild)
		return false
	}
	p := dataplane.Packet{Addr: a, Len: uint16(l), In: dataplane.NoPort, Out: out, Queue: queueControl}
	return c.Emit(&p)
}

// Egress queues of dataplane.DefaultEgress the stages use.
const (
	queueControl    = 0
	queueRetransmit = 1
)
