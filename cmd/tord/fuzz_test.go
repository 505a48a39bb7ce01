package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/impair"
	"rocetor/tor/trim"
)

// fuzzConfig is tord's configuration with every stage on, on the ports
// of the trust tests (h1, h2 hosts; s1, s2 fabric): trust with PFC
// honoured on the fabric only, fwd with ECMP over s1 and s2, NetRT
// (src and dst) with small tables so that they fill, trimming on the
// fabric ports, shaped slow enough for their queues to pass the
// threshold, llr on s2, and impairment on s1 (loss that trims,
// reordering, delay, duplicates) and on h2's ingress (corruption).
// ECN marking joins when the egress queues have it.
func fuzzConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.Ports = []string{"h1", "h2", "s1", "s2"}
	cfg.XDP.RingSize = 64
	cfg.XDP.Frames = 2048
	cfg.Egress.QueueLimit = 64 << 10
	cfg.Egress.PortRates = map[string]dataplane.Rate{"s1": 1e9, "s2": 1e9}
	cfg.DCP = true
	cfg.NetRT.Fabric = []string{"s1", "s2"}
	cfg.NetRT.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
	cfg.NetRT.Flows = 16
	cfg.NetRT.PoolFrames = 256
	cfg.NetRT.PoolBytes = 32 << 10
	cfg.NetRT.BufferFrames = 128
	cfg.NetRT.BufferBytes = 16 << 10
	cfg.NetRT.TailProbe = 30 * time.Microsecond
	cfg.NetRT.KLow = 4 << 10
	cfg.NetRT.KHigh = 16 << 10
	cfg.Trim = &trim.Config{Threshold: 16 << 10, Ports: []string{"s1", "s2"}}
	cfg.LLR.Ports = []string{"s2"}
	cfg.LLR.TxBuffer = 64 << 10
	cfg.LLR.RxBuffer = 32 << 10
	cfg.LLR.Pause = 24 << 10
	cfg.LLR.Resume = 8 << 10
	cfg.Impair = impair.Config{Seed: 7, HoldBytes: 32 << 10, Rules: []impair.Rule{
		{Port: "s1", Direction: "egress", Loss: 0.1, Trim: true, Duplicate: 0.05,
			Reorder: &impair.Reorder{P: 0.1, Delay: 20 * time.Microsecond}},
		{Port: "s1", Direction: "ingress", Delay: &impair.Delay{Mean: 5 * time.Microsecond, Jitter: 5 * time.Microsecond}},
		{Port: "h2", Direction: "ingress", Corrupt: 0.05},
	}}
	pfc := []string{"s1", "s2"}
	cfg.Trust.PFCPorts = &pfc
	// ECN marking on every queue from a few frames of depth, so that the
	// 64 KiB queues mark (and rewrite) frames the other stages hold.
	cfg.ECN = &ECNConfig{Seed: 3, Profiles: map[string]ECNProfileConfig{
		"low": {MinThreshold: 2 << 10, MaxThreshold: 16 << 10}},
		Queues: map[string]string{"control": "low", "retransmit": "low", "data": "low", "idle": "low"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pipelineSeeds are frames of every format the project speaks, as the
// hosts and switches around this one send them: RoCEv2 requests,
// responses and ACKs (IPv4, IPv6, tagged), DCP data, ACKs and
// header-only packets, NetRT messages, every link shim type, PFC and
// PAUSE, and the non-RoCE traffic a port also sees. The fuzz target
// injects them whole or mutated.
func pipelineSeeds(t testing.TB) [][]byte {
	dcp := func(tag rocev2.DCPTag) uint8 { return rocev2.WithTag(24, tag) }
	v6a, v6b := netip.MustParseAddr("fd00::1:2"), netip.MustParseAddr("fd00::2:2")
	pay := make([]byte, 700)
	for i := range pay {
		pay[i] = byte(i)
	}
	specs := []rocev2.Spec{
		{SrcIP: h1Addr, DstIP: peerAddr, DCP: true, DSCP: dcp(rocev2.DCPData), MSN: 1, Opcode: rocev2.RCWriteMiddle, DestQP: 0x11, PSN: psn.New(1), Payload: pay},
		{SrcIP: h2Addr, DstIP: peerAddr, Opcode: rocev2.RCWriteFirst, DestQP: 0x12, PSN: psn.New(0), VA: 0x1000, RKey: 7, DMALen: 4096, Payload: pay[:512]},
		{SrcIP: peerAddr, DstIP: h1Addr, DCP: true, DSCP: dcp(rocev2.DCPData), MSN: 1, Opcode: rocev2.RCWriteMiddle, DestQP: 0x22, PSN: psn.New(5), Payload: pay[:256]},
		{SrcIP: peerAddr, DstIP: h1Addr, Opcode: rocev2.RCAck, DestQP: 0x11, PSN: psn.New(3), Syndrome: rocev2.ACKSyndrome(31)},
		{SrcIP: h1Addr, DstIP: peerAddr, Opcode: rocev2.RCAck, DestQP: 0x22, PSN: psn.New(2), Syndrome: rocev2.NAKSyndrome(0)},
		{SrcIP: h1Addr, DstIP: peerAddr, Opcode: rocev2.RCReadRequest, DestQP: 0x13, PSN: psn.New(9), VA: 0x2000, RKey: 9, DMALen: 2048},
		{SrcIP: peerAddr, DstIP: h1Addr, Opcode: rocev2.RCReadResponseOnly, DestQP: 0x13, PSN: psn.New(9), Syndrome: rocev2.ACKSyndrome(31), Payload: pay[:300]},
		{SrcIP: h2Addr, DstIP: h1Addr, Opcode: rocev2.RCSendOnlyImm, DestQP: 0x14, PSN: psn.New(0), Imm: 42, Payload: pay[:64]},
		{SrcIP: peerAddr, DstIP: h1Addr, Opcode: rocev2.NetRTOpcode, DestQP: 0x11, NetRTType: rocev2.NetRTRequest, NetRTPSN: psn.New(0), Bitmap: rocev2.Bitmap128{Lo: 1 << 20}},
		{SrcIP: h1Addr, DstIP: peerAddr, Opcode: rocev2.NetRTOpcode, DestQP: 0x22, NetRTType: rocev2.NetRTUnfulfilled, NetRTPSN: psn.New(4)},
		{SrcIP: peerAddr, DstIP: h1Addr, DCP: true, DSCP: dcp(rocev2.DCPHeaderOnly), MSN: 1, Opcode: rocev2.RCAck, DestQP: 0x22, PSN: psn.New(6)},
		{SrcIP: h1Addr, DstIP: peerAddr, DCP: true, DSCP: dcp(rocev2.DCPAck), MSN: 1, Opcode: rocev2.RCAck, DestQP: 0x22, PSN: psn.New(6), Syndrome: rocev2.ACKSyndrome(31)},
		{SrcIP: v6a, DstIP: v6b, Opcode: rocev2.RCWriteMiddle, DestQP: 0x15, PSN: psn.New(1), Payload: pay[:128]},
		{VLAN: true, VID: 10, PCP: 3, SrcIP: h1Addr, DstIP: peerAddr, Opcode: rocev2.RCWriteMiddle, DestQP: 0x16, PSN: psn.New(1), Payload: pay[:128]},
	}
	var out [][]byte
	for i := range specs {
		out = append(out, spec(t, specs[i]))
	}
	data := out[0]
	for _, typ := range []uint8{rocev2.ShimOriginal, rocev2.ShimRetransmit, rocev2.ShimWatch} {
		out = append(out, withShim(data, typ))
	}
	for _, typ := range []uint8{rocev2.ShimDummy, rocev2.ShimAck, rocev2.ShimLoss, rocev2.ShimProtect} {
		out = append(out, linkFrame(typ, 3))
	}
	sync := linkFrame(rocev2.ShimSync, 0)
	rocev2.Shim(sync[14:]).SetSync(psn.LinkOf(0, false), 1, 0, 77)
	out = append(out, sync, pfcFrame(false), pfcFrame(true))
	// Not RoCE: ARP, and a UDP datagram to another port.
	arp := make([]byte, 60)
	arp[0], arp[6], arp[12], arp[13] = 0xff, 2, 0x08, 0x06
	udp := append([]byte(nil), out[1]...)
	udp[14+20+2], udp[14+20+3] = 0x12, 0x34 // destination port ≠ 4791
	return append(out, arp, udp)
}

// FuzzPipeline feeds one worker with every stage on (fuzzConfig) a
// program of random and mutated frames (pipelineSeeds) on in-memory
// ports, with random time steps, and checks after every step:
//
//   - nothing panicked;
//   - every frame of the worker's frame memory is where a port, a queue
//     or a stage reports it — a port's injected frames, an egress queue
//     (PFC frames included), NetRT's pool, its reordering buffer and the
//     hosts' NAKs it holds, an impaired port's hold — so every frame
//     was forwarded, held or dropped (with a reason: the worker frees a
//     frame only through a drop counted by reason, or a send) exactly
//     once;
//   - held bytes are what the stages report: NetRT's pool and buffer,
//     walked entry by entry, hold the frames and bytes their counters
//     say (SrcToR.Check, DstToR.Check);
//   - no budget is exceeded: egress queues, NetRT's pool and buffer per
//     port and in all, impair's hold, llr's Tx and reordering buffers.
//
// At the end the switch idles 100 ms of its clock: everything it held
// must have left or been dropped by then.
//
// A program is a byte string of operations: 0 injects seed frame a on
// port b with byte c XORed with d; 1 injects the next a bytes as a
// frame on port b; 2 advances the clock 2^(a mod 26) ns; 3 injects
// seed a cut to b bytes on port c. scripts/fuzz.sh (make fuzz) runs it
// and commits what it finds to testdata/fuzz/FuzzPipeline, which go
// test replays.
func FuzzPipeline(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 2, 10, 0, 1, 0, 0, 0, 2, 12, 0, 8, 2, 0, 0, 2, 16})
	f.Add([]byte{0, 2, 2, 0, 0, 0, 3, 2, 0, 0, 2, 10, 0, 9, 2, 0, 0, 0, 10, 0, 0, 0, 2, 20})
	f.Add([]byte{0, 14, 3, 0, 0, 0, 17, 3, 0, 0, 0, 19, 2, 0, 0, 2, 14, 0, 20, 2, 0, 0, 0, 21, 0, 0, 0})
	f.Add([]byte{0, 23, 0, 0, 0, 0, 10, 0, 0, 0, 0, 12, 1, 30, 1, 3, 11, 20, 0, 2, 8, 3, 0, 16, 1})
	f.Add([]byte{1, 40, 2, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5, 0x00, 0x01, 0x05, 0x03, 0x08, 0x00, 2, 15})
	// 150 DCP writes at once, past the shaper's burst: trimming.
	f.Add(bytes.Repeat([]byte{0, 0, 0, 0, 0}, 150))
	// The peer's flow with a gap (PSN 5, then 7 and 6): NetRT holds,
	// requests, releases.
	f.Add([]byte{0, 2, 2, 0, 0, 0, 2, 2, 53, 2, 2, 12, 0, 2, 2, 53, 3, 2, 14, 2, 18})
	seeds := pipelineSeeds(f)
	cfg := fuzzConfig(f)
	f.Fuzz(func(t *testing.T, prog []byte) {
		if err := runProgram(t, cfg, seeds, prog); err != nil {
			t.Fatal(err)
		}
	})
}

// runProgram runs one FuzzPipeline program and returns the first
// invariant it broke.
func runProgram(t *testing.T, cfg Config, seeds [][]byte, prog []byte) error {
	if len(prog) > 1024 {
		return nil // long programs add time, not coverage
	}
	r := newFuzzRig(t, cfg)
	arg := func(i int) int {
		if i < len(prog) {
			return int(prog[i])
		}
		return 0
	}
	for len(prog) > 0 {
		op := prog[0] % 4
		n := 1
		switch op {
		case 0:
			s := seeds[arg(1)%len(seeds)]
			frame := append(r.scratch[:0], s...)
			if d := byte(arg(4)); d != 0 {
				frame[arg(3)%len(frame)] ^= d
			}
			r.inject(arg(2), frame)
			n = 5
		case 1:
			l := min(arg(1), len(prog)-3)
			if l > 0 {
				r.inject(arg(2), prog[3:3+l])
			}
			n = 3 + max(l, 0)
		case 2:
			r.now += 1 << (arg(1) % 26)
			n = 2
		case 3:
			s := seeds[arg(1)%len(seeds)]
			r.inject(arg(3), s[:min(len(s), arg(2))])
			n = 4
		}
		prog = prog[min(n, len(prog)):]
		r.now++
		r.w.Step(r.now)
		if err := r.check(); err != nil {
			return err
		}
	}
	// Idle longer than the longest pause a received PFC frame can
	// set (0xffff quanta at s1's 1 Gbit/s: 34 ms).
	for range 200 {
		r.now += 500_000
		r.w.Step(r.now)
		if err := r.check(); err != nil {
			return err
		}
	}
	if testing.Verbose() && r.Src != nil && r.Trim != nil {
		r.now += 2e6
		r.w.Step(r.now)
		snap := r.w.Snapshot()
		var drops []string
		for i, n := range snap.Drops {
			if n > 0 {
				drops = append(drops, dataplane.Reason(i).String()+"="+itoa(int(n)))
			}
		}
		var rx, tx uint64
		for _, p := range snap.Ports {
			rx, tx = rx+p.RxPackets, tx+p.TxPackets
		}
		src, dst, tr, ts := r.Src.Stats(), r.Dst.Stats(), r.Trim.Stats(), r.Trust.Stats()
		t.Logf("rx %d tx %d, drops %v; NetRT pooled %d, retransmitted %d, held %d; trimmed %d; trust refused %d",
			rx, tx, drops, src.Sum().Pooled, src.Sum().Retrans, dst.Sum().Held, tr.Sum().Trimmed, ts.Sum().Total())
	}
	if n := r.mem.InUse(); n != 0 {
		return fmt.Errorf("after 100 ms idle the switch still holds %d frames: %s", n, r.where())
	}
	return nil
}

// fuzzRig is tord's pipeline of fuzzConfig on in-memory ports.
type fuzzRig struct {
	*memSwitch
	cfg     Config
	scratch []byte
}

func newFuzzRig(t *testing.T, cfg Config) *fuzzRig {
	// 1024 frames: less than the queues, pool and buffers could hold,
	// so that a program can exhaust the memory too; and a smaller
	// memory to clear makes more runs a second.
	return &fuzzRig{memSwitch: newMemSwitchFrames(t, cfg, trustTable(), 1024), cfg: cfg, scratch: make([]byte, 0, 4096)}
}

func (r *fuzzRig) inject(port int, f []byte) {
	if len(f) > 0 {
		r.ports[port%len(r.ports)].Inject(f)
	}
}

// holding is where the frames of the worker's memory are, by what the
// ports, queues and stages report.
type holding struct {
	pending, queued, control, pool, reorder, impaired int
	// llr is the frames llr's Tx buffers hold; shared the holders frames
	// have besides their owners (dataplane.Mem.Shared): a frame NetRT's
	// pool or llr holds while it is queued is counted by each.
	llr, shared int
}

func (h holding) total() int {
	return h.pending + h.queued + h.control + h.pool + h.reorder + h.impaired + h.llr - h.shared
}

func (r *fuzzRig) holding() holding {
	var h holding
	for i, p := range r.ports {
		h.pending += p.Pending()
		e := r.w.Egress(i)
		for q := 0; q < e.NumQueues(); q++ {
			_, n := e.Depth(q)
			h.queued += n
		}
		_, n := e.ControlDepth()
		h.control += n
	}
	if r.Src != nil {
		src, dst := r.Src.Stats(), r.Dst.Stats()
		for i := range src.Ports {
			h.pool += src.Ports[i].Frames
		}
		h.reorder = dst.Frames + dst.NAKs
	}
	for _, ip := range r.Impairs {
		h.impaired += ip.Counters().Held
	}
	if r.LLR != nil {
		for _, p := range r.LLR.Stats().Ports {
			h.llr += p.TxHeld
		}
	}
	h.shared = r.mem.Shared()
	return h
}

func (r *fuzzRig) where() string {
	h := r.holding()
	return fmtHolding(h, r.mem.InUse())
}

func fmtHolding(h holding, inUse int) string {
	return "in use " + itoa(inUse) + "; pending " + itoa(h.pending) + ", queued " + itoa(h.queued) + ", PFC queued " + itoa(h.control) +
		", NetRT pool " + itoa(h.pool) + ", NetRT reordering " + itoa(h.reorder) + ", impair held " + itoa(h.impaired) +
		", llr Tx held " + itoa(h.llr) + ", held twice " + itoa(h.shared)
}

// check asserts the invariants of FuzzPipeline after a step.
func (r *fuzzRig) check() error {
	if h := r.holding(); h.total() != r.mem.InUse() {
		return fmt.Errorf("frames unaccounted for: %s", fmtHolding(h, r.mem.InUse()))
	}
	for i, name := range r.cfg.Ports {
		e := r.w.Egress(i)
		for q := 0; q < e.NumQueues(); q++ {
			if b, _ := e.Depth(q); b > e.Limit(q) {
				return fmt.Errorf("%s queue %s holds %d bytes, budget %d", name, e.QueueName(q), b, e.Limit(q))
			}
		}
	}
	if r.Src != nil {
		if err := r.checkNetRT(); err != nil {
			return err
		}
	}
	hold := int(r.cfg.Impair.HoldBytes)
	for _, ip := range r.Impairs {
		if c := ip.Counters(); c.HeldBytes > hold || c.HeldBytes < 0 {
			return fmt.Errorf("impaired port %s holds %d bytes, budget %d", c.Port, c.HeldBytes, hold)
		}
	}
	if r.LLR == nil {
		return nil
	}
	lc := r.LLR.Config()
	for i := range r.cfg.Ports {
		if !r.LLR.Protected(i) {
			continue
		}
		p := r.LLR.Stats().Ports[i]
		if p.TxBytes > lc.TxBuffer || p.RxBytes > lc.RxBuffer {
			return fmt.Errorf("llr on %s: Tx buffer %d bytes (budget %d), reordering buffer %d (budget %d)", r.cfg.Ports[i], p.TxBytes, lc.TxBuffer, p.RxBytes, lc.RxBuffer)
		}
	}
	return nil
}

// checkNetRT holds NetRT's pool and reordering buffer to what they
// report (their bytes are the sum of the frames they hold) and to their
// budgets.
func (r *fuzzRig) checkNetRT() error {
	// What the pool and the buffer hold, entry by entry, against what
	// they report.
	if err := r.Src.Check(); err != nil {
		return err
	}
	if err := r.Dst.Check(); err != nil {
		return err
	}
	nc := r.Src.Config()
	src, dst := r.Src.Stats(), r.Dst.Stats()
	frames, bytes := 0, 0
	for i := range src.Ports {
		p := &src.Ports[i]
		frames += p.Frames
		if p.Bytes > nc.PoolBytes || p.Bytes < 0 || p.Frames < 0 {
			return fmt.Errorf("NetRT pool of port %d: %d bytes in %d frames, budget %d", i, p.Bytes, p.Frames, nc.PoolBytes)
		}
	}
	if frames > nc.PoolFrames {
		return fmt.Errorf("NetRT pool holds %d frames, budget %d", frames, nc.PoolFrames)
	}
	frames = 0
	for i := range dst.Ports {
		p := &dst.Ports[i]
		frames += p.Frames
		bytes += p.Bytes
		if p.Bytes > nc.BufferBytes || p.Bytes < 0 || p.Frames < 0 {
			return fmt.Errorf("NetRT reordering buffer of port %d: %d bytes in %d frames, budget %d", i, p.Bytes, p.Frames, nc.BufferBytes)
		}
	}
	if dst.Frames+dst.NAKs > nc.BufferFrames || frames != dst.Frames || bytes != dst.Bytes {
		return fmt.Errorf("NetRT reordering buffer: %d frames, %d bytes in all, ports say %d, %d; budget %d frames",
			dst.Frames, dst.Bytes, frames, bytes, nc.BufferFrames)
	}
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }
