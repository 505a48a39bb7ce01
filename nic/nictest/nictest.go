package nictest

import (
	"fmt"
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// Action is what a Link does with one frame.
type Action uint8

// Link actions.
const (
	Pass      Action = iota
	Drop             // lose it
	Duplicate        // deliver it twice
	Hold             // deliver it right after the next frame that passes
	Trim             // deliver it trimmed to a DCP header-only packet (rocev2.Trim), as a DCP switch does; other frames pass
	Late             // deliver it Link.Late nanoseconds after its time, behind frames sent after it
)

// Link carries frames one way after Delay nanoseconds. Filter, when set,
// sees every frame (m is its classification, with the classifier the
// receiving endpoint uses) and decides its fate; it runs on the test's
// goroutine and may change the frame in place. Frames wait in
// preallocated rings (one for the frames Late holds back); one that
// finds its ring full is lost and counted in Overflow.
type Link struct {
	Delay  int64
	Late   int64 // extra delay of a frame the Filter makes Late (default 10 × Delay)
	Filter func(f []byte, m *rocev2.Meta) Action

	Passed, Dropped, Duplicated, Held, Trimmed, Delayed, Overflow, Refused uint64

	now  *int64
	to   *dataplane.MemPort
	cls  rocev2.Classifier
	meta rocev2.Meta
	q    [2]fifo // on time, late
	held []byte
	hlen int
	hold bool
}

// fifo is a ring of frames due in the order they were queued.
type fifo struct {
	bufs [][]byte
	lens []int
	at   []int64
	head int
	n    int
}

func newFIFO(slots, frameSize int) fifo {
	f := fifo{bufs: make([][]byte, slots), lens: make([]int, slots), at: make([]int64, slots)}
	for i := range f.bufs {
		f.bufs[i] = make([]byte, frameSize)
	}
	return f
}

func newLink(now *int64, to *dataplane.MemPort, slots, frameSize int, delay int64, cls rocev2.Classifier) *Link {
	l := &Link{Delay: delay, Late: 10 * delay, now: now, to: to, cls: cls, held: make([]byte, frameSize)}
	l.q[0] = newFIFO(slots, frameSize)
	l.q[1] = newFIFO(slots, frameSize)
	return l
}

func (l *Link) enqueue(f []byte, late bool) {
	q, at := &l.q[0], *l.now+l.Delay
	if late {
		q, at = &l.q[1], at+l.Late
	}
	if q.n == len(q.bufs) {
		l.Overflow++
		return
	}
	i := (q.head + q.n) % len(q.bufs)
	q.lens[i] = copy(q.bufs[i], f)
	q.at[i] = at
	q.n++
}

// transmit is the sending port's OnTransmit.
func (l *Link) transmit(f []byte) {
	a := Pass
	if l.Filter != nil {
		l.cls.Classify(f, &l.meta)
		a = l.Filter(f, &l.meta)
	}
	switch a {
	case Drop:
		l.Dropped++
		return
	case Hold:
		if !l.hold {
			l.Held++
			l.hlen = copy(l.held, f)
			l.hold = true
			return
		}
	case Duplicate:
		l.Duplicated++
		l.enqueue(f, false)
	case Trim:
		if n, err := rocev2.Trim(f, &l.meta); err == nil {
			l.Trimmed++
			f = f[:n]
		}
	case Late:
		l.Delayed++
		l.enqueue(f, true)
		return
	}
	l.Passed++
	l.enqueue(f, false)
	if l.hold {
		l.hold = false
		l.enqueue(l.held[:l.hlen], false)
	}
}

// deliver injects the frames due by now.
func (l *Link) deliver() {
	for k := range l.q {
		q := &l.q[k]
		for q.n > 0 && q.at[q.head] <= *l.now {
			if !l.to.Inject(q.bufs[q.head][:q.lens[q.head]]) {
				l.Refused++
			}
			q.head = (q.head + 1) % len(q.bufs)
			q.n--
		}
	}
}

// InFlight returns the frames on the link.
func (l *Link) InFlight() int { return l.q[0].n + l.q[1].n }

// Options configure a Pair. The zero value gives working defaults.
type Options struct {
	// Transport returns a fresh transport for one endpoint (required).
	Transport func() nic.Transport
	// CC returns a fresh congestion control for one endpoint; nil paces nothing.
	CC func() nic.CC
	// RateBps shapes both ports' egress (0: unshaped). QueueLimit is each
	// egress queue's byte budget (default 128 KiB).
	RateBps    uint64
	QueueLimit int
	// QPs is the number of connected QP pairs (default 1): A's QP i talks
	// to B's QP i. MTU and PSN are passed to CreateQP (PSN[0] for A's
	// QPs, PSN[1] for B's).
	QPs int
	MTU int
	PSN [2]psn.PSN
	// MRSize is the size of each side's one memory region (default 4 MiB).
	MRSize int
	// Delay is the one-way link delay (default 1 µs); Step the clock step
	// (default 500 ns).
	Delay, Step int64
	// Frames per worker (default 8192) of FrameSize bytes (default 2048).
	Frames, FrameSize int
	// Endpoint, if set, adjusts each endpoint's configuration (side 0 is A).
	Endpoint func(side int, c *nic.Config)
	// DCP makes both workers classify DCP-tagged frames as DCP packets
	// (rocev2.Classifier.DCP). A transport that asks for it
	// (nic.Classifying, as nic/dcp does) gets it without.
	DCP bool
	// BEvery, if above 1, runs B's worker one loop in BEvery ticks: B
	// takes the frames of several ticks in one receive batch, as a
	// worker that sleeps between polls does (AF_XDP, the testbed).
	BEvery int
}

// Side is one endpoint with its worker, port, memory region and QPs.
type Side struct {
	E    *nic.Endpoint
	W    *dataplane.Worker
	Port *dataplane.MemPort
	Mem  *dataplane.Mem
	Buf  []byte // the registered region
	MR   nic.MR // this side's region
	Peer nic.MR // the other side's region
	QPs  []nic.QPInfo
	CQ   []nic.Completion // completions gathered by Pair.Collect
	cqb  [64]nic.Completion
}

// Pair is two connected endpoints, A and B, with a Link each way and one
// clock.
type Pair struct {
	Now    int64
	Step   int64
	A, B   *Side
	AB, BA *Link
	bEvery int
	ticks  int
}

// New builds a Pair; it fails tb on any setup error.
func New(tb testing.TB, o Options) *Pair {
	tb.Helper()
	if o.Transport == nil {
		tb.Fatal("nictest: Options.Transport is required")
	}
	if o.QueueLimit == 0 {
		o.QueueLimit = 128 << 10
	}
	if o.QPs == 0 {
		o.QPs = 1
	}
	if o.MRSize == 0 {
		o.MRSize = 4 << 20
	}
	if o.Delay == 0 {
		o.Delay = 1000
	}
	if o.Step == 0 {
		o.Step = 500
	}
	if o.Frames == 0 {
		o.Frames = 8192
	}
	if o.FrameSize == 0 {
		o.FrameSize = 2048
	}
	p := &Pair{Step: o.Step, bEvery: o.BEvery}
	eg := dataplane.DefaultEgress(o.RateBps, o.QueueLimit)
	var sides [2]*Side
	for i := range sides {
		mem, err := dataplane.NewMem(make([]byte, o.Frames*o.FrameSize), o.FrameSize)
		if err != nil {
			tb.Fatal(err)
		}
		mac := rocev2.MAC{0x02, 0, 0, 0, 0, byte(0xa + i)}
		ip := netip.AddrFrom4([4]byte{10, 0, byte(i), 1})
		port := dataplane.NewMemPort([]string{"a", "b"}[i], mac, mem, o.Frames)
		c := nic.Config{MAC: mac, IP: ip, Egress: eg, Transport: o.Transport(), MTU: o.MTU,
			FrameSize: o.FrameSize, MaxQPs: max(o.QPs, 1), Clock: func() int64 { return p.Now }}
		if o.CC != nil {
			c.CC = o.CC()
		}
		if c.MTU == 0 {
			c.MTU = 1024
		}
		if o.Endpoint != nil {
			o.Endpoint(i, &c)
		}
		e, err := nic.NewEndpoint(c)
		if err != nil {
			tb.Fatal(err)
		}
		w, err := dataplane.NewWorker(dataplane.WorkerConfig{ID: i, Mem: mem, Ports: []dataplane.Port{port},
			Egress: []dataplane.EgressConfig{eg}, Stages: []dataplane.Stage{e},
			Classifier: e.Classifier(rocev2.Classifier{VerifyICRC: true, DCP: o.DCP}), TimerCap: 4*c.MaxQPs + 1024})
		if err != nil {
			tb.Fatal(err)
		}
		s := &Side{E: e, W: w, Port: port, Mem: mem, Buf: make([]byte, o.MRSize)}
		s.MR, err = e.RegisterMR(s.Buf, nic.AccessRemote)
		if err != nil {
			tb.Fatal(err)
		}
		for k := 0; k < o.QPs; k++ {
			qi, err := e.CreateQP(nic.QPOptions{MTU: o.MTU, PSN: o.PSN[i].Add(k * 1000)})
			if err != nil {
				tb.Fatal(err)
			}
			s.QPs = append(s.QPs, qi)
		}
		sides[i] = s
	}
	p.A, p.B = sides[0], sides[1]
	p.A.Peer, p.B.Peer = p.B.MR, p.A.MR
	for k := 0; k < o.QPs; k++ {
		if err := p.A.E.Connect(p.A.QPs[k].QPN, p.B.QPs[k]); err != nil {
			tb.Fatal(err)
		}
		if err := p.B.E.Connect(p.B.QPs[k].QPN, p.A.QPs[k]); err != nil {
			tb.Fatal(err)
		}
	}
	// Room for what can be in flight — a worker sends at most a batch per
	// step — and no more, so that the ring stays in cache.
	slots := min(o.Frames, max(1024, 2*dataplane.BatchSize*int(o.Delay/o.Step+2)))
	p.AB = newLink(&p.Now, p.B.Port, slots, o.FrameSize, o.Delay, p.B.E.Classifier(rocev2.Classifier{DCP: o.DCP}))
	p.BA = newLink(&p.Now, p.A.Port, slots, o.FrameSize, o.Delay, p.A.E.Classifier(rocev2.Classifier{DCP: o.DCP}))
	p.A.Port.OnTransmit = p.AB.transmit
	p.B.Port.OnTransmit = p.BA.transmit
	return p
}

// Tick advances the clock one step: due frames arrive, then A's and B's
// workers run one loop each (B's every Options.BEvery ticks).
func (p *Pair) Tick() {
	p.Now += p.Step
	p.AB.deliver()
	p.BA.deliver()
	p.A.W.Step(p.Now)
	if p.ticks++; p.bEvery <= 1 || p.ticks%p.bEvery == 0 {
		p.B.W.Step(p.Now)
	}
}

// Collect moves both endpoints' completions into their Side.CQ.
func (p *Pair) Collect() {
	for _, s := range []*Side{p.A, p.B} {
		for {
			n := s.E.PollCQ(s.cqb[:])
			if n == 0 {
				break
			}
			s.CQ = append(s.CQ, s.cqb[:n]...)
		}
	}
}

// Run ticks and collects until done returns true or the clock has
// advanced by limit nanoseconds; it reports whether done came true.
func (p *Pair) Run(done func() bool, limit int64) bool {
	end := p.Now + limit
	for p.Now < end {
		p.Tick()
		p.Collect()
		if done() {
			return true
		}
	}
	return false
}

// Post posts op on the side's QP k: n bytes from local offset loff,
// to or from the peer's region at offset roff (for OpRecv, a receive of
// n bytes at loff).
func (s *Side) Post(op nic.Op, k int, id uint64, loff, roff, n int) error {
	return s.E.Post(nic.WR{ID: id, Op: op, QP: s.QPs[k].QPN, LKey: s.MR.Key, LocalVA: s.MR.VA + uint64(loff),
		Len: n, RKey: s.Peer.Key, RemoteVA: s.Peer.VA + uint64(roff)})
}

// Done returns how many completions the side has gathered.
func (s *Side) Done() int { return len(s.CQ) }

// Fill writes the pattern for seed into b: byte i depends on seed and i,
// so a misplaced, shifted or stale chunk fails Check.
func Fill(b []byte, seed uint64) {
	for i := range b {
		b[i] = pattern(seed, i)
	}
}

// Check reports the first byte of b that does not hold the pattern for
// seed.
func Check(b []byte, seed uint64) error {
	for i := range b {
		if b[i] != pattern(seed, i) {
			return fmt.Errorf("byte %d of %d is %#02x, want %#02x", i, len(b), b[i], pattern(seed, i))
		}
	}
	return nil
}

func pattern(seed uint64, i int) byte {
	x := seed + uint64(i)*0x9e3779b97f4a7c15
	x ^= x >> 29
	return byte(x * 0xbf58476d1ce4e5b9 >> 56)
}
