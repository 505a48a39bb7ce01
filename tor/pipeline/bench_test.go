package pipeline

import (
	"net/netip"
	"runtime"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
)

// benchSwitch is one ToR of benchPair: an uplink "up" and a host port
// "h1", in-memory, its pipeline built from a Config as tord builds it.
type benchSwitch struct {
	mem    *dataplane.Mem
	up, h1 *dataplane.MemPort
	pl     *Pipeline
	toHost int // frames sent to the host
}

// benchPair is two ToRs whose uplinks are wired to each other (a frame
// one sends is copied into the other's memory), host 10.0.0.1 under a,
// host 10.0.1.1 under b.
type benchPair struct {
	a, b benchSwitch
	now  int64
}

var (
	benchHostA = netip.MustParseAddr("10.0.0.1")
	benchHostB = netip.MustParseAddr("10.0.1.1")
	benchMACA  = rocev2.MAC{2, 0xaa, 0, 0, 0, 1}
	benchMACB  = rocev2.MAC{2, 0xbb, 0, 0, 0, 1}
)

// testConfig parses yaml as tord would, without listeners and with
// 16,384 frames per worker, and validates it.
func testConfig(t testing.TB, yaml string) Config {
	t.Helper()
	c, err := ParseConfig([]byte(yaml), "test")
	if err != nil {
		t.Fatal(err)
	}
	c.AdminAddr, c.MetricsAddr = "", ""
	c.XDP.Frames = 1 << 14
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return c
}

func newBenchPair(t testing.TB, yaml string) *benchPair {
	t.Helper()
	r := &benchPair{}
	for i, s := range []*benchSwitch{&r.a, &r.b} {
		c := testConfig(t, "ports: [up, h1]\n"+yaml)
		var err error
		if s.mem, err = dataplane.NewMem(make([]byte, 16384*2048), 2048); err != nil {
			t.Fatal(err)
		}
		s.up = dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, byte(i), 1}, s.mem, 1024)
		s.h1 = dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, byte(i), 2}, s.mem, 1024)
		s.h1.OnTransmit = func([]byte) { s.toHost++ }
		// Frames arrive as AF_XDP's receive places them in tord, past
		// XDP_PACKET_HEADROOM: llr's shim then goes into the headroom
		// rather than moving each 1 KB frame forward, a copy tord
		// never makes. Its cost did not resolve: stages' median paired
		// difference +14 ns (lower in 3 of 8 rounds), then −8 ns (6 of
		// 8), each round the minimum CPU time of five runs of 100,000
		// packets, GOMAXPROCS=1, 2026-11-29, load 1.5–2; the layout is
		// kept because it is tord's.
		s.up.Headroom, s.h1.Headroom = benchHeadroom, benchHeadroom
		fib := &fwd.FIB{}
		pn, err := NewPlan(&c, fib, nil)
		if err != nil {
			t.Fatal(err)
		}
		local, remote, host, mac := benchHostA, benchHostB, benchHostA, benchMACA
		if i == 1 {
			local, remote, host, mac = benchHostB, benchHostA, benchHostB, benchMACB
		}
		peer := rocev2.MAC{2, 0, 0, 0, byte(1 - i), 1}
		gw := netip.AddrFrom4([4]byte{192, 168, 0, byte(2 - i)})
		tc := &fwd.TableConfig{Multipath: pn.Fwd.Multipath,
			Routes: []fwd.Route{{Prefix: netip.PrefixFrom(local, 32), NextHops: []fwd.NextHop{{Port: 1}}},
				{Prefix: netip.PrefixFrom(remote, 24).Masked(), NextHops: []fwd.NextHop{{Port: 0, Gateway: gw}}}},
			Neighbours: []fwd.Neighbour{{Port: 1, Addr: host, MAC: mac}, {Port: 0, Addr: gw, MAC: peer}}}
		tb, err := fwd.NewTable(tc)
		if err != nil {
			t.Fatal(err)
		}
		fib.Store(tb)
		if s.pl, err = pn.Build(0, s.mem, []dataplane.Port{s.up, s.h1}, func() int64 { return r.now }); err != nil {
			t.Fatal(err)
		}
	}
	r.a.up.OnTransmit = func(f []byte) { r.b.up.Inject(f) }
	r.b.up.OnTransmit = func(f []byte) { r.a.up.Inject(f) }
	return r
}

// step runs both switches twice at a time 1 µs on, so that what each
// sends the other is forwarded in the same step.
func (r *benchPair) step() {
	r.now += 1000
	for range 2 {
		r.a.pl.Worker.Step(r.now)
		r.b.pl.Worker.Step(r.now)
	}
}

// benchHeadroom is the kernel's XDP_PACKET_HEADROOM: where AF_XDP
// receives a frame into its UMEM buffer, with tord's UMEMOptions.Headroom 0.
const benchHeadroom = 256

// benchBurst is how many data packets the host under a sends per step:
// half a batch, so that a's uplink queue stays under trimming's
// threshold (64 KiB) and nothing is trimmed or dropped.
const benchBurst = dataplane.BatchSize / 2

func benchFrame(t testing.TB, src, dst netip.Addr, op rocev2.Opcode, payload int) []byte {
	t.Helper()
	b := make([]byte, 2048)
	n, err := rocev2.Build(b, &rocev2.Spec{SrcIP: src, DstIP: dst, Opcode: op, DestQP: 7,
		Syndrome: rocev2.ACKSyndrome(31), Payload: make([]byte, payload)})
	if err != nil {
		t.Fatal(err)
	}
	return b[:n]
}

// BenchmarkPipelineForward runs one flow of 1 KB RC WRITE packets from
// the host under ToR a to the host under ToR b, 32 per step, and one RC
// ACK back for every 32, through two pipelines built from a Config as
// tord builds them: "plain" forwards only (trust, fwd); "stages" adds
// NetRT between the two ToRs, trimming and llr on their link. ns/pkt
// is both switches' time per data packet (the ACKs and llr's and
// NetRT's own messages included), so the ratio stages/plain is what
// the three stages cost over forwarding (issue 30 aims at 2 at most).
// The PSNs advance in order; the ICRCs are not recomputed, as neither
// switch verifies them (verify_icrc: false, tord's default).
func BenchmarkPipelineForward(b *testing.B) {
	for _, c := range []struct{ name, yaml string }{
		{"plain", ""},
		{"stages", benchStages},
	} {
		b.Run(c.name, func(b *testing.B) { benchForward(b, c.yaml) })
	}
}

// benchStages is BenchmarkPipelineForward's "stages" configuration.
const benchStages = "netrt: {fabric: [up]}\ntrim: {ports: [up]}\nllr: {ports: [up]}\n"

// BenchmarkPipelineForwardSplit is BenchmarkPipelineForward's "stages"
// with one of its three stages left out of the configuration in turn:
// what "stages" costs over each is what that stage costs in it, so the
// three show where the stages' time over plain forwarding goes (the
// differences add up to about the whole), the copies each keeps
// included. Run it interleaved with BenchmarkPipelineForward/stages,
// GOMAXPROCS=1, and compare cpu-ns/pkt round by round.
func BenchmarkPipelineForwardSplit(b *testing.B) {
	for _, c := range []struct{ name, yaml string }{
		{"no-netrt", "trim: {ports: [up]}\nllr: {ports: [up]}\n"},
		{"no-trim", "netrt: {fabric: [up]}\nllr: {ports: [up]}\n"},
		{"no-llr", "netrt: {fabric: [up]}\ntrim: {ports: [up]}\n"},
	} {
		b.Run(c.name, func(b *testing.B) { benchForward(b, c.yaml) })
	}
}

// benchForward times the flow of BenchmarkPipelineForward through a
// pair built from yaml.
func benchForward(b *testing.B, yaml string) {
	r := newBenchPair(b, yaml)
	d := benchFrame(b, benchHostA, benchHostB, rocev2.RCWriteMiddle, 970)
	a := benchFrame(b, benchHostB, benchHostA, rocev2.RCAck, 0)
	var dm, am rocev2.Meta
	rocev2.Classifier{}.Classify(d, &dm)
	rocev2.Classifier{}.Classify(a, &am)
	n := uint32(0)
	// The thread's CPU time too: on a machine shared with other
	// work, wall time per packet counts the time slices others
	// take; the CPU time does not.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	b.ResetTimer()
	t0 := threadCPU()
	for i := 0; i < b.N; i += benchBurst {
		for range benchBurst {
			rocev2.BTH(d[dm.BTHOff:]).SetPSN(psn.New(n))
			n++
			r.a.h1.Inject(d)
			if n%32 == 0 {
				rocev2.BTH(a[am.BTHOff:]).SetPSN(psn.New(n - 1))
				r.b.h1.Inject(a)
			}
		}
		r.step()
	}
	cpu := threadCPU() - t0
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pkt")
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/pkt")
	r.check(b, int(n))
}

// check fails b unless the run was clean: every data packet but the last
// burst reached b's host, and, with the stages on, each was pooled by
// a's NetRT, retired by an ACK and delivered in order by b's NetRT, and
// protected by a's llr (each check where its stage is on), so that the
// benchmark timed the lossless path.
func (r *benchPair) check(b *testing.B, n int) {
	if r.b.toHost < n-benchBurst {
		b.Fatalf("%d of %d data packets reached the host", r.b.toHost, n)
	}
	if r.a.pl.Src != nil {
		src, dst := r.a.pl.Src.Stats().Ports[0], r.b.pl.Dst.Stats().Ports[1]
		if int(src.Pooled) < n-benchBurst || src.InPlace != src.Pooled || src.Acked+uint64(benchBurst) < src.Pooled || src.Requests != 0 ||
			int(dst.InOrder) < n-benchBurst || dst.Gaps != 0 {
			b.Fatalf("not NetRT's lossless path: %d data, pooled %d (%d in place), acked %d, requests %d, in order %d, gaps %d",
				n, src.Pooled, src.InPlace, src.Acked, src.Requests, dst.InOrder, dst.Gaps)
		}
	}
	if r.a.pl.LLR != nil {
		if l := r.a.pl.LLR.Stats().Ports[0]; int(l.Protected) < n-2*benchBurst || l.TxCopied != 0 {
			b.Fatalf("not llr's lossless path: %d data, protected %d, %d of them copied, not held", n, l.Protected, l.TxCopied)
		}
	}
}
