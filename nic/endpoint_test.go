package nic_test

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/nic/gbn"
	"rocetor/nic/nictest"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

func gbnT() nic.Transport {
	t, err := gbn.New(gbn.Config{RTO: 100_000})
	if err != nil {
		panic(err)
	}
	return t
}

func newPair(t testing.TB, o nictest.Options) *nictest.Pair {
	t.Helper()
	o.Transport = gbnT
	return nictest.New(t, o)
}

// TestPFCPause sends an 802.1Qbb PFC frame for priority 3 to an endpoint
// in the middle of a WRITE: its data stops for exactly the pause time
// (1000 quanta of 512 bit times at 10 Gb/s = 51.2 µs) while the
// endpoint holds back at its data queue budget instead of overflowing
// it, the worker counts the frame, and the WRITE completes intact. The
// pause is shorter than the 100 µs RTO: a longer one lets the
// requester's timer expire mid-pause and resend (IRN §4.1 disables
// timeouts under PFC for this reason).
func TestPFCPause(t *testing.T) {
	p := newPair(t, nictest.Options{QueueLimit: 32 << 10})
	var sent []int64 // times A put a request on the wire
	p.AB.Filter = func(_ []byte, m *rocev2.Meta) nictest.Action {
		if m.Kind == rocev2.KindRoCE && m.Opcode.IsRequest() {
			sent = append(sent, p.Now)
		}
		return nictest.Pass
	}
	const n = 4 << 20
	nictest.Fill(p.A.Buf[:n], 1)
	if err := p.A.Post(nic.OpWrite, 0, 1, 0, 0, n); err != nil {
		t.Fatal(err)
	}
	for p.Now < 20_000 {
		p.Tick()
	}
	pfc := make([]byte, 64)
	k, _ := rocev2.BuildPFC(pfc, rocev2.MAC{2, 0, 0, 0, 0, 0x77}, 1<<3, [8]uint16{3: 1000})
	p.A.Port.Inject(pfc[:k])
	before := len(sent)
	p.Tick()
	t0 := p.Now // the worker applied the pause in this loop
	const pause = 1000 * 512 * 1e9 / 10e9
	for p.Now < t0+pause-p.Step {
		p.Tick()
		if d, _ := p.A.W.Egress(0).Depth(2); d > 32<<10 {
			t.Fatalf("data queue at %d bytes, over its 32 KiB budget", d)
		}
	}
	if len(sent) != before {
		t.Fatalf("%d requests left during the pause", len(sent)-before)
	}
	if !p.Run(func() bool { return p.A.Done() == 1 }, 1e9) {
		t.Fatal("the WRITE did not complete after the pause")
	}
	if resumed := sent[before]; resumed < t0+pause || resumed > t0+pause+p.Step {
		t.Errorf("data resumed %d ns after the pause began, want %d", resumed-t0, int64(pause))
	}
	if p.A.CQ[0].Status != nic.StatusOK {
		t.Fatalf("completion %+v", p.A.CQ[0])
	}
	if err := nictest.Check(p.B.Buf[:n], 1); err != nil {
		t.Fatal(err)
	}
	p.Run(func() bool { return false }, 2e6) // let the worker publish
	s := p.A.W.Snapshot()
	if s.Ports[0].PFCRx != 1 {
		t.Errorf("worker counted %d PFC frames, want 1", s.Ports[0].PFCRx)
	}
	if s.Drops[dataplane.ReasonQueueFull] != 0 {
		t.Errorf("%d frames dropped at a full queue: the endpoint ignored its budget", s.Drops[dataplane.ReasonQueueFull])
	}
	if a := p.A.E.Stats(); a.Retransmits != 0 {
		t.Errorf("a pause caused %d retransmissions", a.Retransmits)
	}
}

// TestDrops feeds an endpoint frames it cannot use and checks each is
// dropped with its reason, and that a request out of sequence is NAKed
// as invalid and fails the QP.
func TestDrops(t *testing.T) {
	p := newPair(t, nictest.Options{PSN: [2]psn.PSN{100, 200}})
	frame := func(op rocev2.Opcode, qp uint32, pn psn.PSN) []byte {
		b := make([]byte, 2048)
		k, err := rocev2.Build(b, &rocev2.Spec{Src: rocev2.MAC{2, 0, 0, 0, 0, 0xa}, Dst: rocev2.MAC{2, 0, 0, 0, 0, 0xb},
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"),
			Opcode: op, DestQP: qp, PSN: pn, Payload: make([]byte, 1024)})
		if err != nil {
			t.Fatal(err)
		}
		return b[:k]
	}
	qpn := p.B.QPs[0].QPN
	arp := make([]byte, 60)
	arp[12], arp[13] = 0x08, 0x06
	for _, f := range [][]byte{
		arp,
		frame(rocev2.RCWriteMiddle, 0x999, 100), // no such QP
		frame(rocev2.UCWriteMiddle, qpn, 100),   // not RC
		frame(rocev2.RCWriteMiddle, qpn, 100),   // a MIDDLE with no FIRST
		frame(rocev2.RCWriteFirst, qpn, 101),    // the QP has failed
	} {
		p.B.Port.Inject(f)
	}
	p.Run(func() bool { return false }, 2e6)
	s, st := p.B.W.Snapshot(), p.B.E.LiveStats()
	for _, c := range []struct {
		r    dataplane.Reason
		want uint64
	}{{nic.ReasonNotRoCE, 1}, {nic.ReasonUnknownQP, 1}, {nic.ReasonBadOpcode, 1}, {nic.ReasonInvalid, 1}, {nic.ReasonQPError, 1}} {
		if got := s.Drops[c.r]; got != c.want {
			t.Errorf("drops %s: %d, want %d", c.r, got, c.want)
		}
	}
	if st.UnknownQP != 1 || st.InvalidReqs != 1 || st.NAKsSent != 1 || st.QPErrorDrops != 1 {
		t.Errorf("stats %+v", st)
	}
	if a := p.A.E.LiveStats(); a.NAKsRecv != 1 {
		t.Errorf("peer received %d NAKs, want the invalid-request NAK", a.NAKsRecv)
	}
	if p.B.Mem.InUse() != 0 || p.A.Mem.InUse() != 0 {
		t.Errorf("frames leaked: %d and %d in use", p.A.Mem.InUse(), p.B.Mem.InUse())
	}
}

// TestPostErrors checks Post's synchronous validation.
func TestPostErrors(t *testing.T) {
	p := newPair(t, nictest.Options{Endpoint: func(_ int, c *nic.Config) { c.SQDepth, c.CQDepth = 4, 6 }})
	a := p.A
	wr := func(f func(*nic.WR)) nic.WR {
		w := nic.WR{ID: 1, Op: nic.OpWrite, QP: a.QPs[0].QPN, LKey: a.MR.Key, LocalVA: a.MR.VA, Len: 10,
			RKey: a.Peer.Key, RemoteVA: a.Peer.VA}
		f(&w)
		return w
	}
	for _, c := range []struct {
		name string
		wr   nic.WR
		err  error
	}{
		{"qp", wr(func(w *nic.WR) { w.QP = 5 }), nic.ErrNoQP},
		{"op", wr(func(w *nic.WR) { w.Op = 9 }), nic.ErrOp},
		{"len", wr(func(w *nic.WR) { w.Len = nic.MaxMessage + 1 }), nic.ErrLength},
		{"lkey", wr(func(w *nic.WR) { w.LKey++ }), nic.ErrLocalAccess},
		{"bounds", wr(func(w *nic.WR) { w.LocalVA += a.MR.Len - 5 }), nic.ErrLocalAccess},
	} {
		if err := a.E.Post(c.wr); !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %v", c.name, err, c.err)
		}
	}
	for i := 0; i < 4; i++ {
		if err := a.E.Post(wr(func(*nic.WR) {})); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.E.Post(wr(func(*nic.WR) {})); !errors.Is(err, nic.ErrSQFull) {
		t.Errorf("fifth post on a 4-deep SQ: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := a.E.Post(wr(func(w *nic.WR) { w.Op = nic.OpRecv })); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.E.Post(wr(func(w *nic.WR) { w.Op = nic.OpRecv })); !errors.Is(err, nic.ErrCQFull) {
		t.Errorf("seventh post with a 6-entry CQ: %v", err)
	}
	if !p.Run(func() bool { return a.Done() == 4 }, 1e8) {
		t.Fatal("writes did not complete")
	}
	if err := a.E.Post(wr(func(*nic.WR) {})); err != nil {
		t.Errorf("post after polling completions: %v", err)
	}
	if _, err := a.E.CreateQP(nic.QPOptions{}); !errors.Is(err, nic.ErrStarted) {
		t.Errorf("CreateQP on a running endpoint: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	eg := dataplane.DefaultEgress(0, 64<<10)
	ip := netip.MustParseAddr("10.0.0.1")
	for _, c := range []nic.Config{
		{IP: ip, Egress: eg},
		{Transport: gbnT(), Egress: eg},
		{Transport: gbnT(), IP: ip, Egress: eg, MTU: 1000},
		{Transport: gbnT(), IP: ip, Egress: eg, MTU: 4096},
		{Transport: gbnT(), IP: ip, Egress: eg, DataQueue: "bulk"},
		{Transport: gbnT(), IP: ip, Egress: eg, BaseQPN: 1},
		{Transport: gbnT(), IP: ip, Egress: dataplane.DefaultEgress(0, 1000)},
	} {
		if _, err := nic.NewEndpoint(c); !errors.Is(err, nic.ErrConfig) {
			t.Errorf("%+v: %v, want a config error", c, err)
		}
	}
	e, err := nic.NewEndpoint(nic.Config{Transport: gbnT(), IP: ip, Egress: eg})
	if err != nil {
		t.Fatal(err)
	}
	q, err := e.CreateQP(nic.QPOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []nic.QPInfo{
		{QPN: 0, MTU: 1024, IP: ip},
		{QPN: 7, MTU: 333, IP: ip},
		{QPN: 7, MTU: 1024, IP: netip.MustParseAddr("fe80::1")},
	} {
		if err := e.Connect(q.QPN, r); err == nil {
			t.Errorf("connect to %+v succeeded", r)
		}
	}
	if _, err := e.CreateQP(nic.QPOptions{MTU: 4096}); !errors.Is(err, nic.ErrMTU) {
		t.Errorf("MTU 4096 in 2048-byte frames: %v", err)
	}
}

// TestManyQPs runs 2048 QP pairs at once, one WRITE each.
func TestManyQPs(t *testing.T) {
	const qps, size = 2048, 3000
	p := newPair(t, nictest.Options{QPs: qps, MRSize: qps * size, Frames: 16384})
	for i := 0; i < qps; i++ {
		nictest.Fill(p.A.Buf[i*size:(i+1)*size], uint64(i))
		if err := p.A.Post(nic.OpWrite, i, uint64(i), i*size, i*size, size); err != nil {
			t.Fatal(err)
		}
	}
	if !p.Run(func() bool { return p.A.Done() == qps }, 1e9) {
		t.Fatalf("%d of %d completed", p.A.Done(), qps)
	}
	for i, c := range p.A.CQ {
		if c.Status != nic.StatusOK {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
	for i := 0; i < qps; i++ {
		if err := nictest.Check(p.B.Buf[i*size:(i+1)*size], uint64(i)); err != nil {
			t.Fatalf("QP %d: %v", i, err)
		}
	}
}

// TestQPBytes reports the memory one QP costs, from the type sizes and
// measured: the growth of the heap per QP created and connected.
func TestQPBytes(t *testing.T) {
	ctx, queues := newPair(t, nictest.Options{}).A.E.QPBytes()
	t.Logf("per QP: %d bytes of context (framework + gbn + pacer), %d bytes of queues (SQ 32 × 56, RQ 32 × 24)", ctx, queues)
	if ctx > 512 {
		t.Errorf("QP context is %d bytes; the QP doc says 376 plus 12 for gbn", ctx)
	}
	measure := func(n int) uint64 {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		e, err := nic.NewEndpoint(nic.Config{Transport: gbnT(), IP: netip.MustParseAddr("10.0.0.1"),
			Egress: dataplane.DefaultEgress(0, 64<<10), MaxQPs: n, CQDepth: 16})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			q, err := e.CreateQP(nic.QPOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Connect(q.QPN, nic.QPInfo{QPN: 7, MTU: 1024, IP: netip.MustParseAddr("10.0.0.2")}); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&m1)
		runtime.KeepAlive(e)
		return m1.TotalAlloc - m0.TotalAlloc
	}
	small, large := measure(1), measure(4097)
	per := float64(large-small) / 4096
	t.Logf("measured: %.0f bytes per QP", per)
	if per > float64(ctx+queues)*1.25 {
		t.Errorf("measured %.0f bytes per QP, the type sizes say %d", per, ctx+queues)
	}
}

// TestAllocs asserts that a steady WRITE stream through two endpoints —
// workers, endpoints, link, Post and PollCQ — allocates nothing.
func TestAllocs(t *testing.T) {
	nictest.NewStream(t, newPair(t, nictest.Options{})).NoAllocs(t, 0)
}

// TestAllocsQPCache is TestAllocs with a QP-context cache (Config.QPCache)
// on both endpoints: its lookups allocate nothing either.
func TestAllocsQPCache(t *testing.T) {
	p := newPair(t, nictest.Options{Endpoint: func(_ int, c *nic.Config) {
		c.QPCache = nic.QPCache{Bytes: 1 << 20, Miss: time.Microsecond}
	}})
	nictest.NewStream(t, p).NoAllocs(t, 0)
	if st := p.A.E.LiveStats(); st.QPCHits == 0 || st.QPCMisses != 0 {
		t.Errorf("%d hits, %d misses: want the lookups counted, no miss in a cache that holds the QP", st.QPCHits, st.QPCMisses)
	}
}

// BenchmarkWriteStream measures a lossless WRITE stream between two
// endpoints in memory, both run by this goroutine: ns/pkt is the cost of
// one 1 KiB data packet through requester and responder (build with
// ICRC, classify with ICRC check, place, ACK).
func BenchmarkWriteStream(b *testing.B) {
	nictest.NewStream(b, newPair(b, nictest.Options{})).Bench(b)
}

// TestConcurrentPost runs both workers on one goroutine and posts and
// polls from another, as roceperf will: WRITEs, then READs of what they
// wrote, whose data the posting goroutine checks as each completes. The
// command and completion rings are the only synchronisation (run with
// -race).
func TestConcurrentPost(t *testing.T) {
	const msgs, size = 100, 16 << 10
	p := newPair(t, nictest.Options{Endpoint: func(_ int, c *nic.Config) { c.Clock = nil }})
	a := p.A
	for i := 0; i < msgs; i++ {
		nictest.Fill(a.Buf[i*size:(i+1)*size], uint64(i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			p.Tick()
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	var cq [16]nic.Completion
	done, posted := 0, 0
	readAt := func(i int) int { return (msgs + i) * size }
	for deadline := time.Now().Add(20 * time.Second); done < 2*msgs && time.Now().Before(deadline); {
		for posted < 2*msgs && a.E.Outstanding() < 8 {
			op, i, loff := nic.OpWrite, posted, posted*size
			if posted >= msgs {
				op, i = nic.OpRead, posted-msgs
				loff = readAt(i)
			}
			if err := a.Post(op, 0, uint64(posted), loff, i*size, size); err != nil {
				t.Fatal(err)
			}
			posted++
		}
		n := a.E.PollCQ(cq[:])
		for _, c := range cq[:n] {
			if c.Status != nic.StatusOK {
				t.Fatalf("completion %+v", c)
			}
			if c.Op == nic.OpRead {
				i := int(c.ID) - msgs
				if err := nictest.Check(a.Buf[readAt(i):readAt(i)+size], uint64(i)); err != nil {
					t.Fatalf("READ %d: %v", i, err)
				}
			}
		}
		done += n
		runtime.Gosched()
	}
	if done != 2*msgs {
		t.Fatalf("%d of %d completed", done, 2*msgs)
	}
}
