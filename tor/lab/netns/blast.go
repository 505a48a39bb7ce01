package netns

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"time"

	"rocetor/afxdp"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/lab"
)

// The blaster forges, from a testbed host, the malformed and hostile
// frames a switch facing hosts must survive (project issue 20, the soak):
// random bytes at UDP 4791, truncated headers, NetRT requests and
// unfulfilled notices, the link shim's data and control frames, DCP
// header-only packets that carry payload, and PFC and PAUSE storms. Every
// frame is built with rocev2's builders, so it is exactly a format the
// switch parses; TestBlastMix checks that rocev2's classifier sees each
// kind as meant.
//
// What each kind meets on a testbed brought up with --trust (tor1 and
// tor2 know their host ports; PFC is honoured from switches only):
//
//	random     classifier drops (malformed_*), or forwarded to the victim
//	           host, whose endpoint drops a bad ICRC
//	truncated  malformed_truncated, malformed_bad_ip_length
//	netrt_*    trust_netrt_host at the forger's ToR
//	llr_*      trust_llr (a host port is no llr port)
//	dcp_payload trust_dcp_payload in a DCP fabric; elsewhere an ordinary
//	           RoCEv2 packet to a QP no endpoint has
//	pfc, pause trust_pfc (without --trust: they pause the host port)
//
// Frames that could pass the switch are addressed to destination QPs at
// and above blastQP, which no endpoint allocates, so that what a switch
// forwards to the victim host ends there as an unknown QP rather than as
// an attack on the victim's own connections (the switch cannot tell a
// forged well-formed RoCEv2 packet from a genuine one; see docs/
// operations.md, "What the model does not stop"). NetRT messages name
// small QPs, like the flows they forge requests for: the forger's ToR
// must refuse them whatever they name.

// blastKind is one kind of forged frame.
type blastKind int

const (
	blastRandom        blastKind = iota // valid Ethernet/IPv4/UDP to port 4791, random bytes from the BTH on
	blastTruncated                      // a RoCEv2 write cut inside its headers, lengths left or fixed
	blastNetRTRequest                   // NetRT retransmission request naming the victim's flows
	blastNetRTUnfulfil                  // NetRT unfulfilled notice
	blastLLRData                        // a RoCEv2 write behind an original or retransmit shim
	blastLLRAck                         // bare shim ACK
	blastLLRLoss                        // bare shim loss notice, Count 1–255
	blastLLRSync                        // bare shim sync asking for an answer
	blastLLRProtect                     // bare shim protection request
	blastLLRDummy                       // bare shim dummy
	blastDCPPayload                     // DCP header-only packet with 1–512 bytes of payload
	blastPFC                            // 802.1Qbb PFC, every priority, the longest pause
	blastPause                          // 802.3x PAUSE, the longest pause
	numBlastKinds
)

var blastKindNames = [numBlastKinds]string{
	"random", "truncated", "netrt_request", "netrt_unfulfilled", "llr_data", "llr_ack", "llr_loss",
	"llr_sync", "llr_protect", "llr_dummy", "dcp_payload", "pfc", "pause",
}

func (k blastKind) String() string { return blastKindNames[k] }

// blastWeights is the mix, in frames per 20: malformed RoCEv2 the most
// (the classifier's paths), then the forged control frames, PFC as a
// storm of its own.
var blastWeights = [numBlastKinds]int{
	blastRandom: 3, blastTruncated: 2, blastNetRTRequest: 2, blastNetRTUnfulfil: 1, blastLLRData: 1,
	blastLLRAck: 1, blastLLRLoss: 1, blastLLRSync: 1, blastLLRProtect: 1, blastLLRDummy: 1,
	blastDCPPayload: 2, blastPFC: 3, blastPause: 1,
}

// blastQP is the first destination QP of forged frames that may reach a
// host: roceperf's QPs are far below.
const blastQP = 0xf00000

// blaster builds forged frames from one host. Its frames are written into
// its own buffer and valid until the next call. Not safe for concurrent
// use; the zero value is not ready (newBlaster).
type blaster struct {
	rng       *rand.Rand
	self, gw  rocev2.MAC // the forger's interface and its ToR's port
	me, peer  netip.Addr // the forger's and the victim host's IPv4 addresses
	buf       [2048]byte
	scratch   [2048]byte
	total     int
	cumulated [numBlastKinds]int
}

func newBlaster(seed uint64, self, gw rocev2.MAC, me, peer netip.Addr) *blaster {
	b := &blaster{rng: rand.New(rand.NewPCG(seed, 0x0b1a57)), self: self, gw: gw, me: me, peer: peer}
	for k := range numBlastKinds {
		b.total += blastWeights[k]
		b.cumulated[k] = b.total
	}
	return b
}

// next picks a kind by the mix.
func (b *blaster) next() blastKind {
	r := b.rng.IntN(b.total)
	for k := range numBlastKinds {
		if r < b.cumulated[k] {
			return k
		}
	}
	return numBlastKinds - 1
}

// write builds a RoCEv2 RC write from the forger to the victim into
// dst, to a QP no endpoint has.
func (b *blaster) write(dst []byte, payload int) []byte {
	s := rocev2.Spec{Src: b.self, Dst: b.gw, SrcIP: b.me, DstIP: b.peer, Opcode: rocev2.RCWriteOnly,
		DestQP: blastQP | b.rng.Uint32N(1<<12), PSN: psn.New(b.rng.Uint32()), VA: b.rng.Uint64(),
		RKey: b.rng.Uint32(), DMALen: uint32(payload), Payload: b.scratch[:payload]}
	return b.build(dst, &s)
}

func (b *blaster) build(dst []byte, s *rocev2.Spec) []byte {
	n, err := rocev2.Build(dst, s)
	if err != nil {
		panic(err) // the specs above are always valid
	}
	return dst[:n]
}

// frame builds one frame of kind k; it is valid until the next call.
func (b *blaster) frame(k blastKind) []byte {
	const bthOff = rocev2.EthernetLen + rocev2.IPv4MinLen + rocev2.UDPLen
	switch k {
	case blastRandom:
		f := b.write(b.buf[:], b.rng.IntN(1024))
		end := rocev2.EthernetLen + rocev2.IPv4(f[rocev2.EthernetLen:]).TotalLen()
		for i := bthOff; i < end; i++ {
			f[i] = byte(b.rng.Uint32())
		}
		return f
	case blastTruncated:
		f := b.write(b.buf[:], 256)
		if b.rng.IntN(2) == 0 {
			// Cut inside the BTH or RETH, the IP and UDP lengths
			// still announcing the whole packet.
			return f[:bthOff+1+b.rng.IntN(rocev2.BTHLen+16-1)]
		}
		// Lengths that agree with a UDP payload too short for a BTH
		// and ICRC.
		cut := b.rng.IntN(rocev2.BTHLen + rocev2.ICRCLen)
		rocev2.IPv4(f[rocev2.EthernetLen:]).SetTotalLen(rocev2.IPv4MinLen + rocev2.UDPLen + cut)
		binary.BigEndian.PutUint16(f[bthOff-4:], uint16(rocev2.UDPLen+cut))
		return f[:bthOff+cut]
	case blastNetRTRequest, blastNetRTUnfulfil:
		// As the victim's ToR would send it for the victim's flows
		// (reversed addresses: from the victim to the forger), or
		// toward the victim.
		src, dst := b.peer, b.me
		if b.rng.IntN(2) == 0 {
			src, dst = b.me, b.peer
		}
		s := rocev2.Spec{Src: b.self, Dst: b.gw, SrcIP: src, DstIP: dst, Opcode: rocev2.NetRTOpcode,
			DestQP: 1 + b.rng.Uint32N(64), NetRTType: rocev2.NetRTRequest, NetRTPSN: psn.New(b.rng.Uint32()),
			Bitmap: rocev2.Bitmap128{Hi: b.rng.Uint64(), Lo: b.rng.Uint64() | 1}}
		if k == blastNetRTUnfulfil {
			s.NetRTType = rocev2.NetRTUnfulfilled
		}
		return b.build(b.buf[:], &s)
	case blastLLRData:
		inner := b.write(b.scratch[1024:], b.rng.IntN(512))
		f := b.buf[:len(inner)+rocev2.ShimLen]
		copy(f, inner[:12])
		binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
		typ := uint8(rocev2.ShimOriginal)
		if b.rng.IntN(2) == 0 {
			typ = rocev2.ShimRetransmit
		}
		rocev2.Shim(f[14:]).Set(b.link(), typ, 0, binary.BigEndian.Uint16(inner[12:14]))
		copy(f[14+rocev2.ShimLen:], inner[14:])
		return f
	case blastLLRAck, blastLLRLoss, blastLLRSync, blastLLRProtect, blastLLRDummy:
		f := b.buf[:rocev2.MinFrameLen]
		clear(f)
		copy(f[0:6], b.gw[:])
		copy(f[6:12], b.self[:])
		binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
		sh := rocev2.Shim(f[14:])
		switch k {
		case blastLLRAck:
			sh.Set(b.link(), rocev2.ShimAck, 0, 0)
			sh.SetAck(b.link())
		case blastLLRLoss:
			sh.Set(b.link(), rocev2.ShimLoss, uint8(1+b.rng.IntN(255)), 0)
		case blastLLRSync:
			sh.SetSync(b.link(), rocev2.SyncNeed, uint16(b.rng.Uint32()), uint16(b.rng.Uint32()))
		case blastLLRProtect:
			sh.Set(b.link(), rocev2.ShimProtect, rocev2.LossCode(1e-2), 0)
		default:
			sh.Set(b.link(), rocev2.ShimDummy, 0, 0)
		}
		return f
	case blastDCPPayload:
		s := rocev2.Spec{Src: b.self, Dst: b.gw, SrcIP: b.me, DstIP: b.peer, DCP: true,
			DSCP: rocev2.WithTag(24, rocev2.DCPHeaderOnly), Opcode: rocev2.RCWriteOnly,
			DestQP: blastQP | b.rng.Uint32N(1<<12), PSN: psn.New(b.rng.Uint32()), MSN: b.rng.Uint32N(1 << 24),
			Payload: b.scratch[:1+b.rng.IntN(512)]}
		return b.build(b.buf[:], &s)
	case blastPFC:
		var times [8]uint16
		for i := range times {
			times[i] = 0xffff
		}
		n, err := rocev2.BuildPFC(b.buf[:], b.self, 0xff, times)
		if err != nil {
			panic(err)
		}
		return b.buf[:n]
	default: // blastPause
		n, err := rocev2.BuildPause(b.buf[:], b.self, 0xffff)
		if err != nil {
			panic(err)
		}
		return b.buf[:n]
	}
}

// link draws a link sequence number with its era.
func (b *blaster) link() psn.Link {
	return psn.LinkOf(uint16(b.rng.Uint32()), b.rng.IntN(2) == 0)
}

// BlastReport is what testbed blast prints when it ends.
type BlastReport struct {
	From      string            `json:"from"`
	To        string            `json:"to"`
	Seed      uint64            `json:"seed"`
	Rate      int               `json:"rate"` // frames per second asked for
	DurationS float64           `json:"duration_s"`
	Sent      int               `json:"sent"`
	SendErrs  int               `json:"send_errors"` // e.g. ENOBUFS
	CPUS      float64           `json:"cpu_s"`       // the blaster's user and system CPU time
	PerKind   map[string]int    `json:"per_kind"`
	Mix       map[string]string `json:"mix"` // each kind's share, as configured
}

// BlastConfig is what testbed blast forges and for how long.
type BlastConfig struct {
	From     string        // the host that forges
	To       string        // the victim host whose address and flows the frames name
	Rate     int           // frames per second, all kinds together
	Duration time.Duration // how long to blast; ctx ends it early, with the report
	Seed     uint64        // seed of the mix and of every random field
}

// Blast runs the blaster on a host of a testbed that is up and reports
// what it sent.
func Blast(ctx context.Context, st *lab.State, c BlastConfig) (*BlastReport, error) {
	p := st.Plan
	var host, sw lab.End
	for _, l := range p.Links {
		for _, e := range [][2]lab.End{{l.A, l.B}, {l.B, l.A}} {
			if e[0].Node == c.From {
				host, sw = e[0], e[1]
			}
		}
	}
	if host.Node == "" || p.Node(c.To) == nil || p.Node(c.From).Kind == lab.SwitchNode {
		return nil, lab.Usagef("testbed %s: no hosts %q and %q", st.Name, c.From, c.To)
	}
	var gw, self rocev2.MAC
	if err := inNetns(p.Node(sw.Node).Netns, func() error {
		ifi, err := net.InterfaceByName(sw.Iface)
		if err == nil {
			copy(gw[:], ifi.HardwareAddr)
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s's port %s: %w", sw.Node, sw.Iface, err)
	}
	var ps *afxdp.PacketSender
	if err := inNetns(p.Node(host.Node).Netns, func() error {
		ifi, err := net.InterfaceByName(host.Iface)
		if err != nil {
			return err
		}
		copy(self[:], ifi.HardwareAddr)
		ps, err = afxdp.OpenPacketSender(host.Iface)
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", c.From, err)
	}
	defer ps.Close()

	bl := newBlaster(c.Seed, self, gw, p.Addr(c.From), p.Addr(c.To))
	rep := &BlastReport{From: c.From, To: c.To, Seed: c.Seed, Rate: c.Rate, PerKind: map[string]int{}, Mix: map[string]string{}}
	for k := range numBlastKinds {
		rep.Mix[k.String()] = fmt.Sprintf("%d/%d", blastWeights[k], bl.total)
	}
	// Paced in ticks of 5 ms: each sends what the rate owes by then, so
	// the mean rate holds whatever the timer's slack.
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	end := time.NewTimer(c.Duration)
	defer end.Stop()
	var per [numBlastKinds]int
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end.C:
			break loop
		case now := <-tick.C:
			owed := int(now.Sub(start).Seconds()*float64(c.Rate)) - rep.Sent - rep.SendErrs
			for range min(owed, c.Rate) {
				k := bl.next()
				if err := ps.Send(bl.frame(k)); err != nil {
					rep.SendErrs++
					continue
				}
				per[k]++
				rep.Sent++
			}
		}
	}
	rep.DurationS = time.Since(start).Seconds()
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		rep.CPUS = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	for k := range numBlastKinds {
		rep.PerKind[k.String()] = per[k]
	}
	return rep, nil
}
