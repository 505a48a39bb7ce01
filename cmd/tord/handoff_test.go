package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
	"rocetor/tor/pipeline"
	"rocetor/tor/trim"
)

// memSwitches is tord's switch of cfg.Workers workers over in-memory
// ports: worker w's port i stands for queue w of interface i, so a
// frame injected there is one the XDP program steered to worker w. The
// workers share frame memory through a Handoff when the configuration
// needs one (Config.Handoff), as OpenSwitch's share one UMEM.
type memSwitches struct {
	cfg   Config
	pls   []*pipeline.Pipeline
	ports [][]*dataplane.MemPort // [worker][port]
	mems  []*dataplane.Mem
	h     *dataplane.Handoff
	now   int64
	sent  [][][]byte // [port] frames sent, by every worker
	// settled, when set, is called after every settle: a test's
	// check of what must hold between steps.
	settled func()
}

// newMemSwitches builds the validated cfg's workers over in-memory
// ports with frames 2 KiB frames each, tab in their FIB.
func newMemSwitches(t testing.TB, cfg Config, tab *fwd.TableConfig, frames int) *memSwitches {
	t.Helper()
	n := cfg.Workers
	sw := &memSwitches{cfg: cfg, sent: make([][][]byte, len(cfg.Ports))}
	var err error
	if cfg.Handoff() {
		if sw.h, err = dataplane.NewHandoff(n, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sw.h.Close() })
		if sw.mems, err = dataplane.SharedMems(make([]byte, n*frames*2048), 2048, sw.h); err != nil {
			t.Fatal(err)
		}
	} else {
		for range n {
			m, err := dataplane.NewMem(make([]byte, frames*2048), 2048)
			if err != nil {
				t.Fatal(err)
			}
			sw.mems = append(sw.mems, m)
		}
	}
	pn, err := pipeline.NewPlan(&cfg, fibOf(t, tab), nil)
	if err != nil {
		t.Fatal(err)
	}
	for w := range n {
		var ports []dataplane.Port
		var mps []*dataplane.MemPort
		for i, name := range cfg.Ports {
			p := dataplane.NewMemPort(name, rocev2.MAC{2, 0, 0, 0, 0, byte(i + 1)}, sw.mems[w], 1024)
			p.OnTransmit = func(f []byte) { sw.sent[i] = append(sw.sent[i], bytes.Clone(f)) }
			ports, mps = append(ports, p), append(mps, p)
		}
		pl, err := pn.BuildHanded(w, sw.mems[w], ports, func() int64 { return sw.now }, sw.h)
		if err != nil {
			t.Fatal(err)
		}
		sw.pls, sw.ports = append(sw.pls, pl), append(sw.ports, mps)
	}
	return sw
}

// settle steps every worker, in order, until a whole round does nothing:
// whatever was handed has reached its owner and left.
func (sw *memSwitches) settle() {
	for range 1000 {
		work := 0
		for _, pl := range sw.pls {
			work += pl.Worker.Step(sw.now)
		}
		if work == 0 {
			if sw.settled != nil {
				sw.settled()
			}
			return
		}
	}
	panic("workers never settle")
}

// outcome is what a run delivered and counted, summed over the workers
// the way the metrics collector sums them.
type outcome struct {
	sent   [][]string // by port, sorted
	drops  map[string]uint64
	stages []uint64 // packets each stage was handed
	stats  map[string]any
	inUse  int
	handed uint64 // frames handed between workers
}

func (sw *memSwitches) outcome() outcome {
	o := outcome{drops: map[string]uint64{}, stats: map[string]any{}}
	for _, fs := range sw.sent {
		var s []string
		var seqs []string
		for _, f := range fs {
			// llr numbers frames in the order they reach the link,
			// which the steering changes: compare the frames without
			// their link sequence, and the sequences apart (one
			// sequence space per link: no number twice, none skipped).
			var m rocev2.Meta
			rocev2.Classifier{DCP: true}.Classify(f, &m)
			if m.ShimOff != 0 {
				seqs = append(seqs, fmt.Sprintf("%04x%02x", f[m.ShimOff:m.ShimOff+2], f[m.ShimOff+2]&0x80))
				f = bytes.Clone(f)
				f[m.ShimOff], f[m.ShimOff+1], f[m.ShimOff+2] = 0, 0, f[m.ShimOff+2]&0x7f
				if rocev2.Shim(f[m.ShimOff:]).Type() == rocev2.ShimSync {
					f[m.ShimOff+6], f[m.ShimOff+7] = 0, 0 // the epoch each run draws
				}
				if m.Kind == rocev2.KindLinkCtrl {
					// Sent to the neighbour's MAC once a frame of
					// its has reached the receiver, which a handed
					// frame does a loop later.
					clear(f[0:6])
				}
			}
			s = append(s, fmt.Sprintf("%x", f))
		}
		slices.Sort(s)
		slices.Sort(seqs)
		o.sent = append(o.sent, append(s, seqs...))
	}
	for _, pl := range sw.pls {
		pl.Worker.Publish(sw.now)
		s := pl.Worker.Snapshot()
		for r, n := range s.Drops {
			if n > 0 {
				o.drops[dataplane.Reason(r).String()] += n
			}
		}
		for _, n := range s.Handed {
			o.handed += n
		}
		if o.stages == nil {
			o.stages = make([]uint64, len(s.Stages))
		}
		for i, c := range s.Stages {
			o.stages[i] += c.Packets
		}
		if pl.Src != nil {
			st := pl.Src.Stats()
			for i := range st.Ports {
				// Where the pool keeps a duplicate (in place with one
				// worker, a copy with more) is not an outcome.
				st.Ports[i].InPlace = 0
			}
			addStats(o.stats, "netrt-src", st)
			addStats(o.stats, "netrt-dst", pl.Dst.Stats())
		}
		if pl.Trim != nil {
			addStats(o.stats, "trim", pl.Trim.Stats())
		}
		if pl.LLR != nil {
			addStats(o.stats, "llr", pl.LLR.Stats())
		}
	}
	for range 2 { // frames freed away from home go back at the next step
		for _, pl := range sw.pls {
			pl.Worker.Step(sw.now)
		}
	}
	for _, m := range sw.mems {
		o.inUse += m.InUse()
	}
	return o
}

// addStats adds a stage's stats struct into acc[name], field by field;
// Calls fields count batches, which differ with the workers, and are
// left out.
func addStats(acc map[string]any, name string, st any) {
	v := reflect.ValueOf(st)
	sum := reflect.New(v.Type()).Elem()
	if a, ok := acc[name]; ok {
		sum.Set(reflect.ValueOf(a))
	}
	addValue(sum, v)
	acc[name] = sum.Interface()
}

func addValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			if src.Type().Field(i).Name == "Calls" || !dst.Field(i).CanSet() {
				continue
			}
			addValue(dst.Field(i), src.Field(i))
		}
	case reflect.Array:
		for i := range src.Len() {
			addValue(dst.Index(i), src.Index(i))
		}
	case reflect.Slice:
		if dst.Len() < src.Len() {
			n := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
			reflect.Copy(n, dst)
			dst.Set(n)
		}
		for i := range src.Len() {
			addValue(dst.Index(i), src.Index(i))
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		dst.SetInt(dst.Int() + src.Int())
	case reflect.Uint, reflect.Uint64, reflect.Uint32, reflect.Uint16, reflect.Uint8:
		dst.SetUint(dst.Uint() + src.Uint())
	case reflect.Float64:
		dst.SetFloat(dst.Float() + src.Float())
	case reflect.Bool:
		dst.SetBool(dst.Bool() || src.Bool())
	}
}

// flatten lists the non-zero leaves of a stats value as path=value.
func flatten(path string, v reflect.Value, out []string) []string {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			out = flatten(path+"."+v.Type().Field(i).Name, v.Field(i), out)
		}
	case reflect.Array, reflect.Slice:
		for i := range v.Len() {
			out = flatten(fmt.Sprintf("%s[%d]", path, i), v.Index(i), out)
		}
	case reflect.Invalid:
	case reflect.Float64:
		// ByteSeconds and the like: sums in another order round
		// differently.
		out = append(out, fmt.Sprintf("%s=%.6g", path, v.Float()))
	default:
		if name := path[strings.LastIndex(path, ".")+1:]; strings.HasPrefix(name, "Max") || strings.HasSuffix(name, "Peak") {
			break // a peak per worker: their sum is no peak of the port
		}
		if !v.IsZero() {
			out = append(out, fmt.Sprintf("%s=%v", path, v.Interface()))
		}
	}
	return out
}

// event is one step of a scenario: a frame arriving on a port, or the
// clock moving on.
type event struct {
	port  int
	frame []byte
	wait  time.Duration
}

// play runs events on sw, each frame injected at a worker drawn from
// seed (the adversary: any rx queue may receive any frame), the workers
// settled after each event.
func (sw *memSwitches) play(events []event, seed uint64) outcome {
	rng := rand.New(rand.NewPCG(seed, 1))
	// Started before any frame arrives: what the stages send on their
	// first loop (llr's sync) goes before a frame a loop late would.
	sw.settle()
	for _, e := range events {
		if e.frame != nil {
			// At the time the last settle fired the timers of: a
			// frame and a timer due together would otherwise meet in
			// the order the workers happen to step in.
			w := rng.IntN(len(sw.pls))
			sw.ports[w][e.port].Inject(e.frame)
			sw.settle()
		}
		sw.now += int64(e.wait) + 1
		sw.settle()
	}
	sw.now += int64(200 * time.Millisecond)
	sw.settle()
	return sw.outcome()
}

func (o outcome) diff(want outcome) string {
	var b strings.Builder
	for i := range want.sent {
		if !slices.Equal(o.sent[i], want.sent[i]) {
			fmt.Fprintf(&b, "port %d: sent %d frames, want %d (or other frames)\n", i, len(o.sent[i]), len(want.sent[i]))
		}
	}
	if !reflect.DeepEqual(o.drops, want.drops) {
		fmt.Fprintf(&b, "drops %v, want %v\n", o.drops, want.drops)
	}
	if !slices.Equal(o.stages, want.stages) {
		fmt.Fprintf(&b, "stage packets %v, want %v\n", o.stages, want.stages)
	}
	for k, v := range want.stats {
		got, want := flatten(k, reflect.ValueOf(o.stats[k]), nil), flatten(k, reflect.ValueOf(v), nil)
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				g := "nothing"
				if i < len(got) {
					g = got[i]
				}
				fmt.Fprintf(&b, "%s, want %s\n", g, want[i])
			}
		}
	}
	if o.inUse != want.inUse {
		fmt.Fprintf(&b, "%d frames in use, want %d\n", o.inUse, want.inUse)
	}
	return b.String()
}

// handoffConfigs are the mechanisms that keep state per flow or port,
// and plain forwarding, on the trust tests' ports (h1, h2 hosts; s1, s2
// fabric toward 10.0.2.0/24).
func handoffConfigs(t testing.TB) map[string]Config {
	base := func() Config {
		cfg := DefaultConfig()
		cfg.Ports = []string{"h1", "h2", "s1", "s2"}
		cfg.XDP.RingSize = 64
		cfg.XDP.Frames = 8192
		cfg.Egress.QueueLimit = 64 << 10
		return cfg
	}
	out := map[string]Config{}
	out["plain"] = base()
	n := base()
	n.NetRT.Fabric = []string{"s1", "s2"}
	n.NetRT.Prefixes = []netip.Prefix{netip.MustParsePrefix("10.0.2.0/24")}
	// The default budgets, which the scenario does not fill: with
	// budgets it fills, each worker evicts only its own duplicates and
	// the outcome depends on the ownership (TestHandoffNetRTBudgets).
	// No tail probes: SrcToR keeps one timer for its probe list and does
	// not pull it in when the list's head changes, so a probe may come
	// late by as much as the stale timer; how late depends on which
	// flows share the list, i.e. on the number of workers.
	out["netrt"] = n
	// The host ports are shared in the others (pipeline.SharedPorts:
	// unshaped, no llr, no trimming): every worker queues on its own
	// share of them. Shaped, each has an owner again, to which the
	// flows' owners hand what leaves by it.
	oh := n
	oh.Egress.PortRates = map[string]dataplane.Rate{"h1": 10e9, "h2": 10e9}
	out["netrt-owned-hosts"] = oh
	tr := base()
	tr.Egress.PortRates = map[string]dataplane.Rate{"s1": 1e9, "s2": 1e9}
	tr.Trim = &trim.Config{Threshold: 16 << 10, Ports: []string{"s1", "s2"}}
	out["trim"] = tr
	// llr on s2, whose far end sends nothing shimmed: what crosses it
	// toward the peers is numbered and kept until the Tx buffer's
	// budget, the frames it receives pass as unprotected.
	l := base()
	l.LLR.Ports = []string{"s2"}
	l.LLR.TxBuffer = 64 << 10
	out["llr"] = l
	// Everything at once.
	all := n
	all.Egress.PortRates = tr.Egress.PortRates
	all.Trim = tr.Trim
	all.LLR = l.LLR
	out["all"] = all
	for name, c := range out {
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// handoffScenario is traffic between the hosts h1, h2 (and a few more
// addresses behind them) and eight peers behind the fabric, drawn from
// seed: DCP-tagged writes from the hosts (pooled by NetRT's SrcToR,
// trimmed when s1 and s2 back up), writes from the peers with holes and
// late packets (held by DstToR, which asks for the holes), the hosts'
// ACKs, the peer ToR's retransmission requests and notices, and time.
// With shim, what arrives on s2 comes from an llr neighbour: numbered in
// one link sequence space, in the shim.
func handoffScenario(t testing.TB, seed uint64, shim bool) []event {
	var seq uint16
	linkFrame := func(port int, f []byte) []byte {
		if !shim || port != portS2 {
			return f
		}
		f = withShim(f, rocev2.ShimOriginal)
		rocev2.Shim(f[14:]).Set(psn.LinkOf(seq, false), rocev2.ShimOriginal, 0, 0x0800)
		seq++
		return f
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	hosts := []netip.Addr{h1Addr, h2Addr}
	peer := func(k int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 2, byte(2 + k)}) }
	hostPort := func(h int) int { return h } // h1Addr on h1, h2Addr on h2
	dcpData := rocev2.WithTag(24, rocev2.DCPData)
	var ev []event
	out := map[[2]int]uint32{} // next PSN host → peer
	in := map[[2]int]uint32{}  // next PSN peer → host
	var late []event
	for range 400 {
		h, k := rng.IntN(2), rng.IntN(8)
		key := [2]int{h, k}
		switch x := rng.IntN(10); {
		case x < 4: // a burst of host writes
			for range 1 + rng.IntN(8) {
				ev = append(ev, event{port: hostPort(h), frame: spec(t, rocev2.Spec{SrcIP: hosts[h], DstIP: peer(k), DCP: true, DSCP: dcpData, MSN: 1,
					Opcode: rocev2.RCWriteMiddle, DestQP: uint32(0x100 + k), PSN: psn.New(out[key]), Payload: make([]byte, 1000)})})
				out[key]++
			}
		case x < 7: // a peer's write; sometimes one is late
			port := portS1 + rng.IntN(2)
			f := event{port: port, frame: linkFrame(port, spec(t, rocev2.Spec{SrcIP: peer(k), DstIP: hosts[h],
				Opcode: rocev2.RCWriteMiddle, DestQP: uint32(0x200 + h), PSN: psn.New(in[key]), Payload: make([]byte, 500)}))}
			in[key]++
			if rng.IntN(6) == 0 {
				late = append(late, f)
			} else {
				ev = append(ev, f)
			}
		case x < 8: // the host ACKs what it has
			if in[key] > 0 {
				ev = append(ev, event{port: hostPort(h), frame: spec(t, rocev2.Spec{SrcIP: hosts[h], DstIP: peer(k), Opcode: rocev2.RCAck,
					DestQP: uint32(0x300 + k), PSN: psn.New(in[key] - 1), Syndrome: rocev2.ACKSyndrome(31)})})
			}
			if out[key] > 0 { // and the peer ACKs the host's writes
				ev = append(ev, event{port: portS1 + rng.IntN(2), frame: spec(t, rocev2.Spec{SrcIP: peer(k), DstIP: hosts[h], Opcode: rocev2.RCAck,
					DestQP: uint32(0x400 + h), PSN: psn.New(out[key] - 1 - uint32(rng.IntN(int(out[key])))), Syndrome: rocev2.ACKSyndrome(31)})})
			}
		case x < 9: // the peer ToR asks for the host's writes again
			if out[key] > 2 {
				e := out[key] - 2 - uint32(rng.IntN(int(out[key]-1)))
				ev = append(ev, event{port: portS1 + rng.IntN(2), frame: spec(t, rocev2.Spec{SrcIP: peer(k), DstIP: hosts[h], Opcode: rocev2.NetRTOpcode,
					DestQP: uint32(0x100 + k), NetRTType: rocev2.NetRTRequest, NetRTPSN: psn.New(e), Bitmap: rocev2.Bitmap128{Lo: 1}})})
			}
		default: // time passes; late packets arrive
			ev = append(ev, late...)
			late = late[:0]
			ev = append(ev, event{wait: time.Duration(rng.IntN(50)) * time.Microsecond})
		}
	}
	return append(ev, late...)
}

// TestHandoffSameOutcome runs each mechanism on 2 and 4 workers with
// every frame steered to a random worker, with the host ports shared
// (but in netrt-owned-hosts), and expects what one worker does: the same frames sent on each port, the same drops, the same
// packets through each stage and the same stage counters, and every
// frame back in memory.
func TestHandoffSameOutcome(t *testing.T) {
	for name, cfg := range handoffConfigs(t) {
		for _, seed := range []uint64{1, 2, 3} {
			ev := handoffScenario(t, seed, cfg.LLR.On())
			var want outcome
			for _, workers := range []int{1, 2, 4} {
				c := cfg
				c.Workers = workers
				if err := c.Validate(); err != nil {
					t.Fatal(err)
				}
				got := newMemSwitches(t, c, trustTable(), c.XDP.Frames).play(ev, seed*10+uint64(workers))
				if workers == 1 {
					want = got
					var n int
					for _, s := range got.sent {
						n += len(s)
					}
					t.Logf("%s seed %d: %d events, %d frames sent, drops %v", name, seed, len(ev), n, got.drops)
					continue
				}
				if d := got.diff(want); d != "" {
					t.Errorf("%s, seed %d, %d workers:\n%s", name, seed, workers, d)
				}
				if c.Handoff() != (got.handed > 0) {
					t.Errorf("%s, seed %d, %d workers: %d frames handed; a handoff with netrt, trim or llr only", name, seed, workers, got.handed)
				}
			}
		}
	}
}

// TestHandoffNetRTBudgets runs NetRT with a pool and a reordering
// buffer small enough that handoffScenario fills them, on 2 and 4
// workers with every frame steered to a random worker. The outcome
// may differ from one worker's, legitimately: a port's budget is the
// port's (netrt.Budgets), but its duplicates are their flows' owners',
// so a worker finding the pool full evicts only its own (LFU among the
// flows it owns), and one with none there pools nothing; which
// duplicates a request then finds depends on the ownership. Asserted
// instead: between any two steps the workers' pools per fabric port
// and buffers per host port add up to at most the budget, the budgets
// were reached, the same frames reached the hosts as with one worker,
// and every frame is back in memory.
func TestHandoffNetRTBudgets(t *testing.T) {
	// handoffScenario's peers send 500 bytes of payload: a frame of 558
	// bytes, one of which the buffer of a host port holds at a time.
	const pool, buffer = 8 << 10, 1 << 10
	cfg := handoffConfigs(t)["netrt"]
	cfg.NetRT.PoolBytes, cfg.NetRT.BufferBytes = pool, buffer
	// No peer answers the requests: a flow would give up after
	// max_requests and back off for a second, holding nothing more.
	// Requests far apart keep each gap held until its late packet.
	cfg.NetRT.RequestInterval = 10 * time.Millisecond
	for _, seed := range []uint64{1, 2, 3} {
		ev := handoffScenario(t, seed, false)
		var want outcome
		for _, workers := range []int{1, 2, 4} {
			c := cfg
			c.Workers = workers
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			sw := newMemSwitches(t, c, trustTable(), c.XDP.Frames)
			var peakPool, peakBuf int
			var crowded, full uint64
			sw.settled = func() {
				for i := range c.Ports {
					var p, b int
					for _, pl := range sw.pls {
						p += pl.Src.Stats().Ports[i].Bytes
						b += pl.Dst.Stats().Ports[i].Bytes
					}
					if p > pool || b > buffer {
						t.Fatalf("seed %d, %d workers: port %s pools %d bytes (budget %d), buffers %d (budget %d)",
							seed, workers, c.Ports[i], p, pool, b, buffer)
					}
					peakPool, peakBuf = max(peakPool, p), max(peakBuf, b)
				}
			}
			got := sw.play(ev, seed*10+uint64(workers))
			for _, pl := range sw.pls {
				crowded += pl.Src.Stats().Sum().Crowded
				st := pl.Dst.Stats()
				d := st.Sum()
				full += d.Full + d.WaitBudget
			}
			t.Logf("seed %d, %d workers: peaks %d of %d pooled, %d of %d held; %d crowded out of the pool, %d found the buffer full",
				seed, workers, peakPool, pool, peakBuf, buffer, crowded, full)
			if peakPool < pool-2<<10 || peakBuf < buffer/2 {
				t.Fatalf("seed %d, %d workers: the budgets were not reached (peaks %d and %d bytes)", seed, workers, peakPool, peakBuf)
			}
			if got.inUse != 0 {
				t.Errorf("seed %d, %d workers: %d frames in use", seed, workers, got.inUse)
			}
			if workers == 1 {
				want = got
				continue
			}
			for _, i := range []int{portH1, portH2} {
				if !slices.Equal(got.sent[i], want.sent[i]) {
					t.Errorf("seed %d, %d workers: host port %s got %d frames, want %d (or other frames)", seed, workers, c.Ports[i], len(got.sent[i]), len(want.sent[i]))
				}
			}
		}
	}
}

// programEvents reads a FuzzPipeline program as events: 0 injects seed
// frame a on port b with byte c XORed with d; 1 injects the next a bytes
// as a frame on port b; 2 lets 2^(a mod 26) ns pass; 3 injects seed a
// cut to b bytes on port c.
func programEvents(seeds [][]byte, ports int, prog []byte) []event {
	arg := func(i int) int {
		if i < len(prog) {
			return int(prog[i])
		}
		return 0
	}
	var ev []event
	for len(prog) > 0 {
		n := 1
		switch prog[0] % 4 {
		case 0:
			f := bytes.Clone(seeds[arg(1)%len(seeds)])
			f[arg(3)%len(f)] ^= byte(arg(4))
			ev = append(ev, event{port: arg(2) % ports, frame: f})
			n = 5
		case 1:
			l := min(arg(1), len(prog)-3)
			if l > 0 {
				ev = append(ev, event{port: arg(2) % ports, frame: bytes.Clone(prog[3 : 3+l])})
			}
			n = 3 + max(l, 0)
		case 2:
			ev = append(ev, event{wait: time.Duration(1) << (arg(1) % 26)})
			n = 2
		case 3:
			s := seeds[arg(1)%len(seeds)]
			if l := min(len(s), arg(2)); l > 0 {
				ev = append(ev, event{port: arg(3) % ports, frame: bytes.Clone(s[:l])})
			}
			n = 4
		}
		prog = prog[min(n, len(prog)):]
	}
	return ev
}

// FuzzHandoff plays a FuzzPipeline program (programEvents, its seed
// frames) on tord's pipeline with every stateful stage on
// (handoffConfigs' "all") on one worker, and on 2 to 4 workers with every
// frame steered to a worker drawn from the input, and expects the same
// outcome (TestHandoffSameOutcome's).
func FuzzHandoff(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 2, 10, 0, 1, 0, 0, 0, 2, 12, 0, 8, 2, 0, 0, 2, 16})
	f.Add(uint8(1), []byte{0, 2, 2, 0, 0, 0, 3, 2, 0, 0, 2, 10, 0, 9, 2, 0, 0, 0, 10, 0, 0, 0, 2, 20})
	f.Add(uint8(2), []byte{0, 14, 3, 0, 0, 0, 17, 3, 0, 0, 0, 19, 2, 0, 0, 2, 14, 0, 20, 2, 0, 0, 0, 21, 0, 0, 0})
	f.Add(uint8(5), []byte{1, 40, 2, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5, 0x00, 0x01, 0x05, 0x03, 0x08, 0x00, 2, 15})
	f.Add(uint8(4), bytes.Repeat([]byte{0, 0, 0, 0, 0}, 100))
	f.Add(uint8(3), []byte{0, 2, 2, 0, 0, 0, 2, 2, 53, 2, 2, 12, 0, 2, 2, 53, 3, 2, 14, 2, 18})
	seeds := pipelineSeeds(f)
	cfg := handoffConfigs(f)["all"]
	f.Fuzz(func(t *testing.T, w uint8, prog []byte) {
		if len(prog) > 512 {
			return
		}
		ev := programEvents(seeds, len(cfg.Ports), prog)
		c := cfg
		// 1024 frames a worker: a program of 512 bytes injects at
		// most 128 frames, and a smaller memory makes more runs.
		want := newMemSwitches(t, c, trustTable(), 1024).play(ev, 0)
		c.Workers = 2 + int(w%3)
		got := newMemSwitches(t, c, trustTable(), 1024).play(ev, uint64(w))
		if d := got.diff(want); d != "" {
			t.Fatalf("%d workers:\n%s", c.Workers, d)
		}
	})
}
