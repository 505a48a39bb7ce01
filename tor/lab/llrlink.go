package lab

import (
	"fmt"
	"net/netip"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/llr"
	"rocetor/tor/pipeline"
)

// llrLink is one protected link and nothing else: two switches whose
// pipelines are built from a YAML configuration as tord and the
// simulator build them (tor/pipeline), each with a host port h1 and an
// uplink up wired to the other's (a frame one sends is copied into the
// other's memory at once), llr on up, and an impair rule on up's egress
// at one or both ends: the corrupting wire, which every frame crossing
// it meets — originals, Eq. 1's copies, dummies, llr's ACKs, loss
// notices, syncs and PFC. Host a sends a stream of 1 KB-class RoCE
// WRITE packets to host b, and b one RC ACK back every 32, so that the
// reverse direction carries piggybacked ACKs as well as llr's own
// frames. Time moves 1 µs a step; nothing but the two workers runs, so
// a packet costs the two pipelines' CPU only (tor/pipeline's
// BenchmarkPipelineForward has the same pair).
type llrLink struct {
	a, b llrSwitch
	now  int64
	data []byte
	ack  []byte
	dm   rocev2.Meta
	am   rocev2.Meta
	n    uint32 // data packets injected
}

// llrSwitch is one end of an llrLink.
type llrSwitch struct {
	mem    *dataplane.Mem
	up, h1 *dataplane.MemPort
	pl     *pipeline.Pipeline
	toHost uint64
}

var (
	llrLinkHostA = netip.MustParseAddr("10.0.0.1")
	llrLinkHostB = netip.MustParseAddr("10.0.1.1")
)

// llrLinkPayload is the data packets' payload: small enough that the
// reordering buffer of a head of line held for ackNoTimeout stays under
// llr's pause level (llrLinkBurst × ack_timeout in µs × ~330 B), so
// that no PFC pause shapes the stream.
const (
	llrLinkPayload = 256
	llrLinkBurst   = 16 // data packets per 1 µs step
)

// newLLRLink builds the pair from the switches' YAML: yaml[0] is a's
// (the data's sender), yaml[1] b's; both get "ports: [up, h1]" first.
func newLLRLink(yaml [2]string) (*llrLink, error) {
	r := &llrLink{}
	for i, s := range []*llrSwitch{&r.a, &r.b} {
		if err := r.build(i, s, yaml[i]); err != nil {
			return nil, err
		}
	}
	r.a.up.OnTransmit = func(f []byte) { r.b.up.Inject(f) }
	r.b.up.OnTransmit = func(f []byte) { r.a.up.Inject(f) }
	var err error
	if r.data, err = llrLinkFrame(llrLinkHostA, llrLinkHostB, rocev2.RCWriteMiddle, llrLinkPayload); err != nil {
		return nil, err
	}
	if r.ack, err = llrLinkFrame(llrLinkHostB, llrLinkHostA, rocev2.RCAck, 0); err != nil {
		return nil, err
	}
	rocev2.Classifier{}.Classify(r.data, &r.dm)
	rocev2.Classifier{}.Classify(r.ack, &r.am)
	return r, nil
}

func (r *llrLink) build(i int, s *llrSwitch, yaml string) error {
	c, err := pipeline.ParseConfig([]byte("ports: [up, h1]\n"+yaml), fmt.Sprintf("switch %d", i))
	if err != nil {
		return err
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	c.XDP.Frames = 1 << 14
	if err := c.Validate(); err != nil {
		return err
	}
	if s.mem, err = dataplane.NewMem(make([]byte, (1<<14)*2048), 2048); err != nil {
		return err
	}
	s.up = dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, byte(i), 1}, s.mem, 1024)
	s.h1 = dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, byte(i), 2}, s.mem, 1024)
	s.h1.OnTransmit = func([]byte) { s.toHost++ }
	// tord's AF_XDP layout: llr's shim goes into the headroom.
	s.up.Headroom, s.h1.Headroom = 256, 256
	fib := &fwd.FIB{}
	pn, err := pipeline.NewPlan(&c, fib, nil)
	if err != nil {
		return err
	}
	local, remote := llrLinkHostA, llrLinkHostB
	mac := rocev2.MAC{2, 0xaa, 0, 0, 0, 1}
	if i == 1 {
		local, remote, mac = llrLinkHostB, llrLinkHostA, rocev2.MAC{2, 0xbb, 0, 0, 0, 1}
	}
	peer := rocev2.MAC{2, 0, 0, 0, byte(1 - i), 1}
	gw := netip.AddrFrom4([4]byte{192, 168, 0, byte(2 - i)})
	tb, err := fwd.NewTable(&fwd.TableConfig{Multipath: pn.Fwd.Multipath,
		Routes: []fwd.Route{{Prefix: netip.PrefixFrom(local, 32), NextHops: []fwd.NextHop{{Port: 1}}},
			{Prefix: netip.PrefixFrom(remote, 24).Masked(), NextHops: []fwd.NextHop{{Port: 0, Gateway: gw}}}},
		Neighbours: []fwd.Neighbour{{Port: 1, Addr: local, MAC: mac}, {Port: 0, Addr: gw, MAC: peer}}})
	if err != nil {
		return err
	}
	fib.Store(tb)
	s.pl, err = pn.Build(0, s.mem, []dataplane.Port{s.up, s.h1}, func() int64 { return r.now })
	return err
}

func llrLinkFrame(src, dst netip.Addr, op rocev2.Opcode, payload int) ([]byte, error) {
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: src, DstIP: dst, Opcode: op, DestQP: 7,
		Syndrome: rocev2.ACKSyndrome(31), Payload: make([]byte, payload)})
	return b[:n], err
}

// step injects a burst of data at a (and b's ACKs) and runs both
// switches twice at a time 1 µs on, so that what each sends the other
// is taken in the same step.
func (r *llrLink) step(burst int) {
	for range burst {
		rocev2.BTH(r.data[r.dm.BTHOff:]).SetPSN(psn.New(r.n))
		r.n++
		r.a.h1.Inject(r.data)
		if r.n%32 == 0 {
			rocev2.BTH(r.ack[r.am.BTHOff:]).SetPSN(psn.New(r.n - 1))
			r.b.h1.Inject(r.ack)
		}
	}
	r.now += 1000
	for range 2 {
		r.a.pl.Worker.Step(r.now)
		r.b.pl.Worker.Step(r.now)
	}
}

// drain runs the pair without new data for d ns, so that every loss
// still open is recovered or skipped.
func (r *llrLink) drain(d int64) {
	for end := r.now + d; r.now < end; {
		r.step(0)
	}
}

// stats are a's sender and b's receiver on the link: the data's
// direction.
func (r *llrLink) stats() (tx, rx llr.PortStats) {
	return r.a.pl.LLR.Stats().Ports[0], r.b.pl.LLR.Stats().Ports[0]
}
