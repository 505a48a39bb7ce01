package netrt

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"rocetor/rocev2"
)

// chain joins a source ToR (rig a: p0 host, p1 fabric) and a destination
// ToR (rig b: p0 fabric, p1 host) by a wire that loses the frames lose
// names, in either direction, and puts a Go-Back-N receiver behind b:
// it takes only its expected PSN, acknowledges every packet it takes or
// sees again (a duplicate), and counts every packet beyond it as a gap,
// NAKing the first of each gap as an RNIC does. A NAK that reaches the
// sender is an end-to-end go-back-N. The flows are QPs 7 and 8.
type chain struct {
	t    *testing.T
	a, b *rig
	src  *SrcToR
	dst  *DstToR
	lose func(dir int, kind string, n uint32, copy int) bool
	seen map[string]int // copies of each frame that reached the wire
	qp   [2]end         // QPs 7 and 8
	gaps int            // packets beyond the receiver's next PSN
	naks int            // NAKs that reached the sender: go-back-N
	lost []string       // what the wire lost
	eth  []byte         // the first data frame's Ethernet header
}

// end is what the two ends of a QP know.
type end struct {
	expected uint32 // the receiver's next PSN
	nakSent  bool   // the receiver NAKed the current gap
	acked    int64  // highest PSN the sender saw acknowledged; -1: none
}

// Directions on the wire.
const (
	toDst = iota // a → b: data, retransmissions, tail probes, notices
	toSrc        // b → a: requests, ACKs
)

func newChain(t *testing.T, c Config, lose func(dir int, kind string, n uint32, copy int) bool) *chain {
	src, dst := chainToRs(t, c)
	ch := chainOf(t, newRig(t, src), newRig(t, dst), src, dst)
	ch.lose = lose
	ch.a.ports[1].OnTransmit = func(f []byte) { ch.wire(toDst, f) }
	ch.b.ports[0].OnTransmit = func(f []byte) { ch.wire(toSrc, f) }
	return ch
}

// chainToRs builds the source ToR of rig a (fabric p1) and the
// destination ToR of rig b (fabric p0).
func chainToRs(t *testing.T, c Config) (*SrcToR, *DstToR) {
	c.Fabric, c.InPlace = 2, true
	src, err := NewSrcToR(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Fabric = 1
	dst, err := NewDstToR(c)
	if err != nil {
		t.Fatal(err)
	}
	return src, dst
}

// chainOf joins a and b's hosts to the chain's sender and receiver; the
// caller joins their fabric ports.
func chainOf(t *testing.T, a, b *rig, src *SrcToR, dst *DstToR) *chain {
	ch := &chain{t: t, a: a, b: b, src: src, dst: dst, seen: map[string]int{}, qp: [2]end{{acked: -1}, {acked: -1}}}
	ch.b.ports[1].OnTransmit = ch.receiver
	ch.a.ports[0].OnTransmit = func(f []byte) {
		if _, ok := pfcFrame(f); ok {
			return // congestion avoidance pausing the sender: not modelled
		}
		m := meta(t, f)
		if m.Opcode != rocev2.RCAck {
			t.Errorf("opcode %v reached the sender", m.Opcode)
			return
		}
		if !rocev2.AETH(f[m.ExtOff(rocev2.ExtAETH):]).Syndrome().IsACK() {
			ch.naks++
			return
		}
		q := &ch.qp[m.Flow.QP-7]
		q.acked = max(q.acked, int64(m.PSN))
	}
	return ch
}

// kind names a frame on the wire and the PSN it is about.
func kind(t testing.TB, f []byte) (string, uint32) {
	m := meta(t, f)
	switch {
	case isData(&m):
		return "data", uint32(m.PSN)
	case m.Opcode == rocev2.RCAck:
		return "ack", uint32(m.PSN)
	case m.Opcode.IsResponse():
		return "response", uint32(m.PSN)
	case m.Opcode == rocev2.NetRTOpcode:
		_, n := message(t, f)
		if n.Type() == rocev2.NetRTRequest {
			return "request", uint32(n.PSN())
		}
		return "notice", uint32(n.PSN())
	}
	t.Fatalf("opcode %v on the wire", m.Opcode)
	return "", 0
}

func (ch *chain) wire(dir int, f []byte) {
	k, n := kind(ch.t, f)
	id := fmt.Sprintf("%d %s %d %d", dir, k, n, meta(ch.t, f).Flow.QP)
	copy := ch.seen[id]
	ch.seen[id]++
	if ch.lose(dir, k, n, copy) {
		ch.lost = append(ch.lost, fmt.Sprintf("%s %d (copy %d)", k, n, copy))
		return
	}
	if dir == toDst {
		ch.b.inject(0, f)
	} else {
		ch.a.inject(1, f)
	}
}

// receiver is the Go-Back-N RNIC behind b.
func (ch *chain) receiver(f []byte) {
	m := meta(ch.t, f)
	if !isData(&m) {
		ch.t.Errorf("opcode %v reached the receiver", m.Opcode)
		return
	}
	// The Ethernet header, which the ICRC does not cover, is the same on
	// every data frame of the run: resends included.
	if ch.eth == nil {
		ch.eth = append([]byte(nil), f[:rocev2.EthernetLen]...)
	} else if string(f[:rocev2.EthernetLen]) != string(ch.eth) {
		ch.t.Errorf("PSN %d reached the receiver with Ethernet header % x, the first had % x", m.PSN, f[:rocev2.EthernetLen], ch.eth)
	}
	qp := m.Flow.QP
	q := &ch.qp[qp-7]
	switch n := uint32(m.PSN); {
	case n == q.expected:
		q.expected++
		q.nakSent = false
	case n > q.expected:
		ch.gaps++
		if !q.nakSent {
			q.nakSent = true
			ch.b.inject(1, seqNAK(ch.t, qp, q.expected))
		}
		return
	}
	ch.b.inject(1, ack(ch.t, qp, q.expected-1))
}

// run sends PSNs 0..n-1 of QP 7 from the host, four a microsecond, then
// lets the rigs run for d ns.
func (ch *chain) run(n uint32, d int64) {
	step := func() { ch.a.step(1000); ch.b.step(1000) }
	for k := uint32(0); k < n; k++ {
		ch.a.inject(0, data(ch.t, 7, k))
		if k%4 == 3 {
			step()
		}
	}
	for range d / 1000 {
		step()
	}
}

// check asserts that the receiver got every PSN of the first qps QPs,
// the sender saw the last acknowledged and never went back N, and no
// flow fell back to the end hosts. Unless gapsOK, the receiver never
// even saw a gap.
func (ch *chain) check(qps int, n uint32, gapsOK bool) {
	ch.t.Helper()
	ds := ch.dst.Stats()
	sum := ds.Sum()
	for i, q := range ch.qp[:qps] {
		if ch.gaps != 0 && !gapsOK || ch.naks != 0 || q.expected != n || q.acked != int64(n-1) || sum.Waits() != 0 {
			ch.t.Fatalf("lost %v: QP %d's receiver expects %d of %d; %d gaps; the sender got %d NAKs, last ACK %d; %d waits",
				ch.lost, 7+i, q.expected, n, ch.gaps, ch.naks, q.acked, sum.Waits())
		}
	}
}

func (ch *chain) noLeak() {
	ch.t.Helper()
	ch.a.step(int64(ch.src.cfg.Hold))
	ch.b.step(0)
	ch.src.Close()
	ch.dst.Close()
	if ch.a.mem.InUse() != 0 || ch.b.mem.InUse() != 0 {
		ch.t.Fatalf("frames in use: %d and %d", ch.a.mem.InUse(), ch.b.mem.InUse())
	}
}

// chainConfig has a hold far above the request interval and the tail
// probe, as a deployment must.
var chainConfig = Config{Hold: 1_000_000, TailProbe: 100_000, RequestInterval: 20_000}

// TestChainLosesEachFrame loses, once or twice, each kind of frame
// in-network recovery depends on — a data packet, a request, a
// retransmission, the last packet, its tail probe, an ACK — and checks
// that the receiving RNIC never sees a gap it would have to recover end
// to end, and the sender gets its last ACK without a timeout.
func TestChainLosesEachFrame(t *testing.T) {
	const n = 20
	for _, c := range []struct {
		name string
		lose func(dir int, kind string, n uint32, copy int) bool
	}{
		{"data", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == 5 && copy == 0 }},
		{"request", func(dir int, k string, p uint32, copy int) bool {
			return k == "data" && p == 5 && copy == 0 || k == "request" && copy == 0
		}},
		{"retransmission", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == 5 && copy <= 1 }},
		{"retransmission twice", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == 5 && copy <= 2 }},
		{"burst and one retransmission", func(dir int, k string, p uint32, copy int) bool {
			return k == "data" && (p >= 5 && p <= 8 && copy == 0 || p == 7 && copy == 1)
		}},
		{"last packet", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == n-1 && copy == 0 }},
		{"tail probe", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == n-1 && copy <= 1 }},
		{"last two packets and a probe", func(dir int, k string, p uint32, copy int) bool {
			return k == "data" && (p == n-2 && copy == 0 || p == n-1 && copy <= 1)
		}},
		{"last ACK", func(dir int, k string, p uint32, copy int) bool { return k == "ack" && p == n-1 && copy == 0 }},
		{"last ACK and the probe's", func(dir int, k string, p uint32, copy int) bool { return k == "ack" && p == n-1 && copy <= 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := newChain(t, chainConfig, c.lose)
			ch.run(n, 600_000)
			ch.check(1, n, false)
			ch.noLeak()
		})
	}
}

// TestChainRecoversForHost: the receiver sees a gap the destination ToR
// could not hold — the flow's first packet lost before the ToR saw any
// (its entry starts at the next), or a packet lost after the ToR — and
// NAKs it. The ToR holds the NAK, has the source ToR resend the run, and
// the sender never goes back N.
func TestChainRecoversForHost(t *testing.T) {
	const n = 20
	for _, c := range []struct {
		name string
		lose func(dir int, kind string, n uint32, copy int) bool
	}{
		{"first packet", func(dir int, k string, p uint32, copy int) bool { return k == "data" && p == 0 && copy == 0 }},
		{"first two packets and a resend", func(dir int, k string, p uint32, copy int) bool {
			return k == "data" && (p <= 1 && copy == 0 || p == 1 && copy == 1)
		}},
		{"first packet and the request", func(dir int, k string, p uint32, copy int) bool {
			return k == "data" && p == 0 && copy == 0 || k == "request" && copy == 0
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := newChain(t, chainConfig, c.lose)
			ch.run(n, 600_000)
			ch.check(1, n, true)
			if p := ch.dst.Stats().Ports[1]; p.NAKHeld != 1 || p.NAKAnswered != 1 {
				t.Fatalf("NAKs held %d, answered %d; want 1, 1", p.NAKHeld, p.NAKAnswered)
			}
			ch.noLeak()
		})
	}
	t.Run("after the destination ToR", func(t *testing.T) {
		ch := newChain(t, chainConfig, func(int, string, uint32, int) bool { return false })
		lost := false
		ch.b.ports[1].OnTransmit = func(f []byte) {
			if m := meta(t, f); m.PSN == 7 && !lost { // the host's ring overflowed
				lost = true
				return
			}
			ch.receiver(f)
		}
		ch.run(n, 600_000)
		ch.check(1, n, true)
		ch.noLeak()
	})
}

// TestChainLosesNotice: the source ToR lacks the lost packet, and the
// wire loses its first unfulfilled notice. The repeated request draws
// another, and the flow falls back to the end hosts on that notice, as
// Algorithm 2 has it, not after MaxRequests unanswered requests.
func TestChainLosesNotice(t *testing.T) {
	frame := len(data(t, 7, 0))
	c := chainConfig
	c.PoolBytes = 2 * frame
	ch := newChain(t, c, func(dir int, k string, p uint32, copy int) bool {
		return k == "data" && p == 5 && copy == 0 || k == "notice" && copy == 0
	})
	ch.run(20, 200_000)
	ds := ch.dst.Stats()
	if p := ds.Ports[1]; p.WaitUnfulfilled != 1 || p.WaitGaveUp != 0 || p.Requests != 2 || ds.Notices != 1 {
		t.Fatalf("lost %v: %d waits on a notice, %d gave up, %d requests, %d notices; want 1, 0, 2, 1",
			ch.lost, p.WaitUnfulfilled, p.WaitGaveUp, p.Requests, ds.Notices)
	}
	if ch.gaps == 0 || ch.qp[0].expected != 5 {
		t.Fatalf("the receiver expects %d after %d gaps; want 5 after the flushed ones", ch.qp[0].expected, ch.gaps)
	}
	ch.noLeak()
}

// readResponse returns an RDMA READ response on its way from the
// responder srcIP to the requester dstIP, QP qp, PSN n (the requester's
// PSN space), with an AETH where the opcode has one.
func readResponse(t testing.TB, op rocev2.Opcode, qp, n uint32) []byte {
	return build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: srcIP, DstIP: dstIP,
		Opcode: op, DestQP: qp, PSN: rocev2PSN(n), Syndrome: rocev2.ACKSyndrome(31), Payload: make([]byte, 256)})
}

// TestChainReadResponses: READ responses are not NetRT's (package doc,
// "READ responses"): the responder's ToR does not pool them, the
// requester's ToR neither holds nor requests them, even across a PSN
// jump (the PSNs of the requester's WRITEs between two READs, or a
// loss, which the requester's go-back-N re-reads), and they reach the
// requester unchanged, in the order sent.
func TestChainReadResponses(t *testing.T) {
	ch := newChain(t, chainConfig, func(int, string, uint32, int) bool { return false })
	var got []uint32
	ch.b.ports[1].OnTransmit = func(f []byte) {
		m := meta(t, f)
		if !m.Opcode.IsResponse() || !m.Opcode.HasPayload() {
			t.Errorf("opcode %v reached the requester", m.Opcode)
		}
		got = append(got, uint32(m.PSN))
	}
	sent := []struct {
		op rocev2.Opcode
		n  uint32
	}{
		{rocev2.RCReadResponseFirst, 10}, {rocev2.RCReadResponseMiddle, 11}, {rocev2.RCReadResponseLast, 12},
		{rocev2.RCReadResponseOnly, 20},                                   // WRITEs took 13–19
		{rocev2.RCReadResponseFirst, 21}, {rocev2.RCReadResponseLast, 23}, // 22 lost
	}
	for _, s := range sent {
		ch.a.inject(0, readResponse(t, s.op, 7, s.n))
	}
	for range 300 {
		ch.a.step(1000)
		ch.b.step(1000)
	}
	if !equal(got, []uint32{10, 11, 12, 20, 21, 23}) {
		t.Fatalf("requester got %v, want every response, in the order sent", got)
	}
	ss, ds := ch.src.Stats(), ch.dst.Stats()
	if ss.Packets != 0 || ss.Sum().Pooled != 0 || ds.Packets != 0 || ds.Sum().Held != 0 || ds.Sum().Requests != 0 {
		t.Fatalf("src saw %d, pooled %d; dst saw %d, held %d, requested %d; want none",
			ss.Packets, ss.Sum().Pooled, ds.Packets, ds.Sum().Held, ds.Sum().Requests)
	}
	ch.noLeak()
}

// TestChainRandomLoss loses every kind of frame on the wire, in both
// directions, at random (seeded, so the test is deterministic), behind
// senders of one or two QPs that each keep at most a Go-Back-N window
// (128) unacknowledged, streaming or in messages sent one at a time (so
// that every message's last packet and last ACK are a tail): every
// packet reaches the receiver, no NAK reaches a sender, no flow falls
// back to the end hosts.
func TestChainRandomLoss(t *testing.T) {
	const n, window = 3000, 128
	for _, c := range []struct {
		seed uint64
		loss float64
		qps  int
		msg  uint32 // packets per message, sent when the last is acknowledged; 0: a stream
	}{{1, 0.01, 1, 0}, {2, 0.05, 1, 0}, {3, 0.05, 2, 0}, {4, 0.1, 2, 0}, {5, 0.05, 1, 10}, {6, 0.1, 2, 3}, {7, 0.2, 1, 1}} {
		t.Run(fmt.Sprintf("seed %d loss %g QPs %d message %d", c.seed, c.loss, c.qps, c.msg), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(c.seed, 0))
			ch := newChain(t, chainConfig, func(int, string, uint32, int) bool { return rng.Float64() < c.loss })
			var next [2]uint32
			done := func() bool {
				for _, q := range ch.qp[:c.qps] {
					if q.acked != n-1 {
						return false
					}
				}
				return true
			}
			for now := 0; now < 200_000 && !done(); now++ {
				for i := range c.qps {
					q := &ch.qp[i]
					for k := 0; k < 2 && next[i] < n && int64(next[i]) <= q.acked+window; k++ {
						if c.msg > 0 && next[i]%c.msg == 0 && int64(next[i]) != q.acked+1 {
							break // the previous message is not complete
						}
						ch.a.inject(0, data(t, uint32(7+i), next[i]))
						next[i]++
					}
				}
				ch.a.step(1000)
				ch.b.step(1000)
			}
			ch.check(c.qps, n, false)
			ss, ds := ch.src.Stats(), ch.dst.Stats()
			t.Logf("lost %d frames; %d requests, %d retransmissions, %d tail probes", len(ch.lost),
				ds.Sum().Requests, ss.Sum().Retrans+ss.Sum().Paced, ss.Sum().TailProbes)
			ch.noLeak()
		})
	}
}
