package pipeline

import (
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
	"rocetor/tor/fwd"
)

// scaleStages is BenchmarkPipelineForward's "stages" switch: NetRT
// between the two ToRs, llr on their link (trimming is left out: it adds
// nothing to what is shared between workers).
const scaleStages = "netrt: {fabric: [up]}\nllr: {ports: [up]}\n"

// scaleSwitch is one ToR of scalePair with n workers, each with its own
// in-memory ports (worker w's port i is queue w of interface i), over
// one frame memory cut among them (dataplane.SharedMems) when they hand
// frames to each other.
type scaleSwitch struct {
	pls    []*Pipeline
	up, h1 []*dataplane.MemPort // by worker
	h      *dataplane.Handoff
	toHost []paddedCount // frames each worker sent to its host port
}

// paddedCount is a counter alone on its cache lines, so that the
// goroutine that reads another's does not slow the one that adds.
type paddedCount struct {
	_ [64]byte
	n atomic.Int64
	_ [56]byte
}

// scaleWindow is how many data packets may be on their way (injected
// and not yet at a host) over all the goroutines: the hosts' window. A
// goroutine that finds it full steps without injecting, so that neither
// worker's queues nor handoff rings overflow when the other is slower.
const scaleWindow = 512

// scalePair is benchPair with n workers a switch: goroutine w steps
// worker w of both switches, and worker w's uplink is wired to the
// peer's worker w's (a frame one sends is copied into the other's queue
// w), so each goroutine is one worker's share of the pair and no frame
// crosses goroutines but through a Handoff. The hosts of flow k are
// 10.0.0.k+1 under a and 10.0.1.k+1 under b; scaleFlows picks them so
// that flow w is owned by worker w (Owners.Flow).
type scalePair struct {
	a, b scaleSwitch
	now  []atomic.Int64 // each goroutine's last step time, read by its workers' clocks
	// clock is the pair's time, one for every goroutine (as tord's
	// workers read one monotonic clock): NetRT's shared budgets and
	// the handed packets compare times across workers. Each step takes
	// 1 µs of it over n goroutines, one atomic add per step of
	// benchBurst packets.
	clock atomic.Int64
	sent  atomic.Int64 // data packets the goroutines that finished sent
	_     [56]byte
	in    atomic.Int64 // data packets injected so far, every goroutine's
	_     [56]byte
	hs    [][2]netip.Addr
}

func newScaleSwitch(t testing.TB, side, n int, hosts [][2]netip.Addr, now []atomic.Int64) scaleSwitch {
	t.Helper()
	c := testConfig(t, fmt.Sprintf("ports: [up, h1]\nworkers: %d\n%s", n, scaleStages))
	var err error
	s := scaleSwitch{toHost: make([]paddedCount, n)}
	var mems []*dataplane.Mem
	if c.Handoff() {
		if s.h, err = dataplane.NewHandoff(n, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.h.Close() })
		if mems, err = dataplane.SharedMems(make([]byte, n*16384*2048), 2048, s.h); err != nil {
			t.Fatal(err)
		}
	} else if m, err := dataplane.NewMem(make([]byte, 16384*2048), 2048); err != nil {
		t.Fatal(err)
	} else {
		mems = []*dataplane.Mem{m}
	}
	fib := &fwd.FIB{}
	pn, err := NewPlan(&c, fib, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := &fwd.TableConfig{Multipath: pn.Fwd.Multipath}
	gw := netip.AddrFrom4([4]byte{192, 168, 0, byte(2 - side)})
	local := netip.PrefixFrom(hosts[0][side], 24).Masked()
	tc.Routes = []fwd.Route{{Prefix: local, NextHops: []fwd.NextHop{{Port: 1}}},
		{Prefix: netip.PrefixFrom(hosts[0][1-side], 24).Masked(), NextHops: []fwd.NextHop{{Port: 0, Gateway: gw}}}}
	tc.Neighbours = []fwd.Neighbour{{Port: 0, Addr: gw, MAC: rocev2.MAC{2, 0, 0, 0, byte(1 - side), 1}}}
	for k, h := range hosts {
		tc.Neighbours = append(tc.Neighbours, fwd.Neighbour{Port: 1, Addr: h[side], MAC: rocev2.MAC{2, 0xaa, 0, byte(side), 0, byte(k + 1)}})
	}
	tb, err := fwd.NewTable(tc)
	if err != nil {
		t.Fatal(err)
	}
	fib.Store(tb)
	for w := range n {
		up := dataplane.NewMemPort("up", rocev2.MAC{2, 0, 0, 0, byte(side), 1}, mems[w], 1024)
		h1 := dataplane.NewMemPort("h1", rocev2.MAC{2, 0, 0, 0, byte(side), 2}, mems[w], 1024)
		h1.OnTransmit = func([]byte) { s.toHost[w].n.Add(1) }
		pl, err := pn.BuildHanded(w, mems[w], []dataplane.Port{up, h1}, func() int64 { return now[w].Load() }, s.h)
		if err != nil {
			t.Fatal(err)
		}
		s.pls, s.up, s.h1 = append(s.pls, pl), append(s.up, up), append(s.h1, h1)
	}
	return s
}

// scaleFlows returns n pairs of hosts (10.0.0.k, 10.0.1.k) whose flow
// worker w of n owns, for w < n, and at least two pairs.
func scaleFlows(n int) [][2]netip.Addr {
	var hs [][2]netip.Addr
	for w := range max(n, 2) {
		for k := byte(1); ; k++ {
			a, b := netip.AddrFrom4([4]byte{10, 0, 0, k}), netip.AddrFrom4([4]byte{10, 0, 1, k})
			key := rocev2.FlowKey{Src: a.As16(), Dst: b.As16()}
			if PairOwner(&key, max(n, 2)) == w {
				hs = append(hs, [2]netip.Addr{a, b})
				break
			}
		}
	}
	return hs
}

func newScalePair(t testing.TB, n int) *scalePair {
	r := &scalePair{now: make([]atomic.Int64, n), hs: scaleFlows(n)}
	r.a = newScaleSwitch(t, 0, n, r.hs, r.now)
	r.b = newScaleSwitch(t, 1, n, r.hs, r.now)
	for w := range n {
		aup, bup := r.a.up[w], r.b.up[w]
		aup.OnTransmit = func(f []byte) { bup.Inject(f) }
		bup.OnTransmit = func(f []byte) { aup.Inject(f) }
	}
	return r
}

// step runs worker w of both switches twice at a time 1 µs on, as
// benchPair.step does, and returns the work they did.
func (r *scalePair) step(w int) int {
	now := r.clock.Add(int64(1000 / len(r.now)))
	r.now[w].Store(now)
	work := 0
	for range 2 {
		work += r.a.pls[w].Worker.Step(now)
		work += r.b.pls[w].Worker.Step(now)
	}
	return work
}

// behind reports whether worker w has over two batches waiting on its
// handoff rings to another worker of either switch: the goroutine then
// steps without injecting, as a wire held back by PFC would, since a
// full ring drops (dataplane.HandoffRing).
func (r *scalePair) behind(w int) bool {
	for _, s := range []*scaleSwitch{&r.a, &r.b} {
		for o := range len(s.pls) {
			if o != w && s.h.Waiting(w, o) > 2*dataplane.BatchSize {
				return true
			}
		}
	}
	return false
}

// run drives flow w from goroutine w: bursts bursts of benchBurst data
// packets from its host under a to its host under b, with an ACK back
// every 32, then steps until every goroutine has sent its bursts and
// its workers are idle. It returns the data packets sent.
func (r *scalePair) run(w, bursts int, left *atomic.Int32) int {
	hs := r.hs[w]
	var d, a [2048]byte
	dn, _ := rocev2.Build(d[:], &rocev2.Spec{SrcIP: hs[0], DstIP: hs[1], Opcode: rocev2.RCWriteMiddle, DestQP: 7, Payload: make([]byte, 970)})
	an, _ := rocev2.Build(a[:], &rocev2.Spec{SrcIP: hs[1], DstIP: hs[0], Opcode: rocev2.RCAck, DestQP: 7, Syndrome: rocev2.ACKSyndrome(31)})
	var dm, am rocev2.Meta
	rocev2.Classifier{}.Classify(d[:dn], &dm)
	rocev2.Classifier{}.Classify(a[:an], &am)
	n := uint32(0)
	for range bursts {
		for len(r.a.pls) > 1 && (r.behind(w) || r.in.Load()-r.delivered() > scaleWindow) {
			r.step(w)
			runtime.Gosched()
		}
		for range benchBurst {
			rocev2.BTH(d[dm.BTHOff:]).SetPSN(psn.New(n))
			n++
			r.a.h1[w].Inject(d[:dn])
			if n%32 == 0 {
				rocev2.BTH(a[am.BTHOff:]).SetPSN(psn.New(n - 1))
				r.b.h1[w].Inject(a[:an])
			}
		}
		r.in.Add(benchBurst)
		r.step(w)
	}
	r.sent.Add(int64(n))
	left.Add(-1)
	// Step on until the other goroutine is done too and every data
	// packet sent has reached its host, or nothing reached one for
	// 1,000 steps (check tells).
	for last, still := int64(-1), 0; left.Load() > 0 || still < 1000; {
		r.step(w)
		runtime.Gosched()
		got := r.delivered()
		if left.Load() == 0 && got >= r.sent.Load() {
			break
		}
		if got == last {
			still++
		} else {
			last, still = got, 0
		}
	}
	return int(n)
}

// delivered returns the data packets b's workers sent to their hosts.
func (r *scalePair) delivered() int64 {
	got := int64(0)
	for w := range r.b.toHost {
		got += r.b.toHost[w].n.Load()
	}
	return got
}

// BenchmarkPipelineScale is issue 30's scaling benchmark: the pair of
// ToRs of BenchmarkPipelineForward/stages (NetRT, llr on their link),
// built with workers: 1 and workers: 2, each worker on a goroutine of
// its own as tord runs them (goroutine w steps worker w of both
// switches). Each goroutine sends one flow, owned by its worker, so
// with two workers the flows' NetRT state is apart but llr's link and
// the uplink's egress are worker 0's (Owners): worker 1 hands it every
// data packet it routes, and worker 0 hands worker 1 what leaves by
// its host port, handoff included. ns/pkt is wall time per data packet
// of all the flows, so the ratio workers=1 / workers=2 is the scaling
// (issue 30 aims at 1.8 at least). It needs as many idle CPUs as
// workers: on a busy machine it measures the machine. Run it long
// (-benchtime 400000x): the first pass over the frame memory, twice as
// large with two workers, page-faults inside the timed loop, which
// dominated runs of 40,000 packets (2026-11-29, a shared machine).
func BenchmarkPipelineScale(b *testing.B) {
	for _, n := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			r := newScalePair(b, n)
			bursts := (b.N + n*benchBurst - 1) / (n * benchBurst)
			var left atomic.Int32
			left.Store(int32(n))
			sent := make([]int, n)
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for w := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sent[w] = r.run(w, bursts, &left)
				}()
			}
			wg.Wait()
			b.StopTimer()
			total, got := 0, r.delivered()
			for w := range n {
				total += sent[w]
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(total), "ns/pkt")
			r.check(b, total, int(got))
		})
	}
}

// check fails b unless every data packet but the last bursts reached
// b's hosts with nothing dropped by either switch.
func (r *scalePair) check(b *testing.B, sent, got int) {
	n := len(r.a.pls)
	if got < sent-n*benchBurst {
		b.Errorf("%d of %d data packets reached the hosts", got, sent)
	}
	for _, s := range []*scaleSwitch{&r.a, &r.b} {
		for w, pl := range s.pls {
			pl.Worker.Publish(r.now[w].Load())
			for k, d := range pl.Worker.Snapshot().Drops {
				if d > 0 {
					b.Errorf("worker %d dropped %d as %v", w, d, dataplane.Reason(k))
				}
			}
		}
	}
}
