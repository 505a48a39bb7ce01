package netrt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sort"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// model is a reference DstToR for the differential test: Algorithms 1
// and 2 of seed 000 with this package's additions (a byte budget per
// host port and a frame budget, Waiting on a spent budget or beyond the
// bitmap in ReTx, MaxRequests and Backoff, Prefixes), written for
// clarity over maps with PSNs as integers mod 2^24. Flows are told apart
// by QP alone.
type model struct {
	cfg    Config
	flows  map[uint32]*mflow
	bytes  map[uint16]int // held bytes by host port
	frames int
	out    map[uint32][][]byte // delivered toward the host, by QP, in order
	msgs   []mmsg              // requests sent
	waits  map[string]int      // entries into Waiting by cause, and retries
	heard  int                 // frames from the fabric: data and notices
}

type mflow struct {
	serve    bool
	port     uint16
	epsn     uint32
	state    uint8
	held     map[uint32]mpkt // by PSN
	requests int
	silent   int   // requests not counted: nothing heard since the one before
	heard    int   // model.heard at the last request
	due      int64 // when the request timer fires; 0: not armed
	until    int64 // end of the backoff; 0: never gave up
	answered bool  // a hole filled after a request, or a notice came
}

type mpkt struct {
	f    []byte
	port uint16
}

type mmsg struct {
	qp, epsn uint32
	bm       rocev2.Bitmap128
}

func newModel(c Config) *model {
	c, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	return &model{cfg: c, flows: map[uint32]*mflow{}, bytes: map[uint16]int{},
		out: map[uint32][][]byte{}, waits: map[string]int{}}
}

// mdiff is a−b as a signed distance on the 24-bit PSN circle.
func mdiff(a, b uint32) int {
	d := int((a - b) & psn.Mask)
	if d >= 1<<23 {
		d -= 1 << 24
	}
	return d
}

func (m *model) deliver(qp uint32, f []byte) { m.out[qp] = append(m.out[qp], f) }

func (m *model) bitmap(f *mflow) rocev2.Bitmap128 {
	var bm rocev2.Bitmap128
	for n := range f.held {
		bm = bm.Set(mdiff(n, f.epsn) - 1)
	}
	return bm
}

func (m *model) request(now int64, qp uint32, f *mflow) {
	f.requests++
	f.heard = m.heard
	f.due = now + m.cfg.RequestInterval
	m.msgs = append(m.msgs, mmsg{qp, f.epsn, m.bitmap(f)})
}

// wait flushes the buffer, and the packet that forced it if any, in PSN
// order, and moves f to Waiting.
func (m *model) wait(qp uint32, f *mflow, trig *mpkt, trigPSN uint32, cause string) {
	var ns []uint32
	for n := range f.held {
		ns = append(ns, n)
	}
	if trig != nil {
		ns = append(ns, trigPSN)
	}
	sort.Slice(ns, func(i, j int) bool { return mdiff(ns[i], f.epsn) < mdiff(ns[j], f.epsn) })
	for _, n := range ns {
		if trig != nil && n == trigPSN {
			m.deliver(qp, trig.f)
			continue
		}
		p := f.held[n]
		m.deliver(qp, p.f)
		m.bytes[p.port] -= len(p.f)
		m.frames--
	}
	clear(f.held)
	f.state, f.due, f.requests, f.silent = Waiting, 0, 0, 0
	m.waits[cause]++
}

// data is HandleDataPacket.
func (m *model) data(now int64, qp, n uint32, frame []byte, port uint16, src netip.Addr) {
	m.heard++
	f := m.flows[qp]
	if f == nil {
		f = &mflow{serve: m.remote(src), port: port, epsn: n, held: map[uint32]mpkt{}}
		m.flows[qp] = f
	}
	if !f.serve {
		m.deliver(qp, frame)
		return
	}
	room := m.frames < m.cfg.BufferFrames && m.bytes[port]+len(frame) <= m.cfg.BufferBytes
	hold := func() {
		f.held[n] = mpkt{frame, port}
		m.bytes[port] += len(frame)
		m.frames++
	}
	d := mdiff(n, f.epsn)
	switch {
	case d == 0:
		m.deliver(qp, frame)
		f.epsn = (f.epsn + 1) & psn.Mask
		f.answered = f.answered || f.state == ReTx && f.requests > 0
		f.requests, f.silent = 0, 0
		if f.state == Waiting {
			f.state = Ordered
		}
		if f.state == ReTx {
			for { // Algorithm 1
				p, ok := f.held[f.epsn]
				if !ok {
					break
				}
				m.deliver(qp, p.f)
				delete(f.held, f.epsn)
				m.bytes[p.port] -= len(p.f)
				m.frames--
				f.epsn = (f.epsn + 1) & psn.Mask
			}
			if len(f.held) == 0 {
				f.state, f.due = Ordered, 0
			}
		}
	case d < 0 || f.state == Waiting:
		m.deliver(qp, frame)
	case f.state == Ordered && now < f.until:
		m.deliver(qp, frame)
		f.state = Waiting
		m.waits["backoff"]++
	case f.state == Ordered && (d > 128 || !room):
		m.deliver(qp, frame)
	case f.state == Ordered:
		hold()
		if f.until != 0 {
			f.until = 0
			m.waits["retry"]++
		}
		f.state, f.port, f.requests, f.silent = ReTx, port, 0, 0
		m.request(now, qp, f)
	case d > 128:
		m.wait(qp, f, &mpkt{frame, port}, n, "span")
	case f.held[n].f != nil: // a duplicate: dropped
	case !room:
		m.wait(qp, f, &mpkt{frame, port}, n, "budget")
	default:
		hold()
	}
}

func (m *model) remote(src netip.Addr) bool {
	if len(m.cfg.Prefixes) == 0 {
		return true
	}
	for _, p := range m.cfg.Prefixes {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// notice is HandleNetRTMessage for an unfulfilled notice.
func (m *model) notice(qp, n uint32) {
	m.heard++
	if f := m.flows[qp]; f != nil && f.state == ReTx && f.epsn == n {
		f.answered = true
		m.wait(qp, f, nil, 0, "unfulfilled")
	}
}

// timers runs the request timers due at now.
func (m *model) timers(now int64) {
	for qp, f := range m.flows {
		if f.state != ReTx || f.due == 0 || now < f.due {
			continue
		}
		if f.heard == m.heard && f.silent < m.cfg.SilentRequests {
			f.silent++ // nothing heard since the last request: not counted
			f.requests--
		}
		if f.requests >= m.cfg.MaxRequests {
			if !f.answered {
				f.until = now + m.cfg.Backoff
			}
			m.wait(qp, f, nil, 0, "gaveup")
			continue
		}
		m.request(now, qp, f)
	}
}

// dflowSender is one RoCEv2 sender of the differential test: PSN k of
// its flow is start+k; frames are cached so that every copy of a PSN
// is the same bytes, of a size that varies with the PSN.
type diffSender struct {
	qp     uint32
	src    netip.Addr
	start  uint32
	next   int // offsets below it have been sent once
	rnic   int // the receiving RNIC's expected offset
	frames map[int][]byte
}

func (s *diffSender) psn(k int) uint32 { return (s.start + uint32(k)) & psn.Mask }

func (s *diffSender) frame(t testing.TB, k int) []byte {
	if f, ok := s.frames[k]; ok {
		return f
	}
	size := 16 + (k*37+int(s.qp)*11)%480
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(k + i + int(s.qp))
	}
	f := build(t, &rocev2.Spec{Src: hostMAC, Dst: peerMAC, SrcIP: s.src, DstIP: dstIP,
		Opcode: rocev2.RCWriteMiddle, DestQP: s.qp, PSN: psn.New(s.psn(k)), Payload: payload})
	s.frames[k] = f
	return f
}

// TestDstDifferential drives DstToR and the model with the same random
// traffic over several flows — loss, reordering, duplicates, bursts
// beyond the bitmap, the senders' go-back-N — and random answers to its
// requests (retransmission, unfulfilled, silence), and compares after
// every step what each flow delivered toward its host (order and bytes),
// the requests sent, and every flow's state, ePSN and bitmap.
func TestDstDifferential(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { differential(t, seed, 2500) })
	}
}

func differential(t *testing.T, seed uint64, steps int) {
	const ri = 10_000
	frame := 100 // about a frame's bytes; sizes vary from ~90 to ~570
	cfg := Config{BufferBytes: 12 * frame * 3, BufferFrames: 24, RequestInterval: ri, MaxRequests: 3,
		Backoff: 6 * ri, Flows: 64, IdleTimeout: 1 << 40,
		Prefixes: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}}
	r, d := newDstRig(t, 2, cfg)
	cfg.Fabric = 1
	mo := newModel(cfg)
	rng := rand.New(rand.NewPCG(seed, 0xd1ff))

	var senders []*diffSender
	for qp := uint32(1); qp <= 6; qp++ {
		s := &diffSender{qp: qp, src: srcIP, start: rng.Uint32() & psn.Mask, frames: map[int][]byte{}}
		switch qp {
		case 1, 2:
			s.start = psn.Mask - uint32(rng.IntN(40)) // wraps soon
		case 6:
			s.src = netip.MustParseAddr("10.0.9.1") // outside Prefixes: not served
		}
		senders = append(senders, s)
	}
	byQP := func(qp uint32) *diffSender { return senders[qp-1] }
	type pkt struct {
		s *diffSender
		k int
	}
	var delayed []pkt
	var asked []mmsg // requests sent, not yet answered
	// The frames of one step, in order; at most a batch, so that the
	// worker sees them as one.
	var batch [][]byte
	var apply []func(now int64)
	send := func(s *diffSender, k int) {
		if len(batch) == dataplane.BatchSize {
			return // lost on the way: the step is one batch
		}
		f := s.frame(t, k)
		batch = append(batch, f)
		port := uint16(1 + s.qp%2)
		n := s.psn(k)
		apply = append(apply, func(now int64) { mo.data(now, s.qp, n, f, port, s.src) })
	}
	// fate sends, loses or delays offset k of s.
	fate := func(s *diffSender, k int, loss float64) {
		switch x := rng.Float64(); {
		case x < loss:
		case x < loss+0.12:
			delayed = append(delayed, pkt{s, k})
		case x < loss+0.16:
			send(s, k)
			delayed = append(delayed, pkt{s, k})
		default:
			send(s, k)
		}
	}
	for step := 0; step < steps; step++ {
		batch, apply = batch[:0], apply[:0]
		for ev := rng.IntN(6); ev >= 0 && len(batch) < 40; ev-- {
			s := senders[rng.IntN(len(senders))]
			switch x := rng.Float64(); {
			case x < 0.5:
				fate(s, s.next, 0.06)
				s.next++
			case x < 0.62 && len(delayed) > 0:
				i := rng.IntN(len(delayed))
				p := delayed[i]
				delayed = slices.Delete(delayed, i, i+1)
				send(p.s, p.k)
			case x < 0.7:
				// The sender's go-back-N from what the RNIC expects.
				for k := s.rnic; k < s.next && k < s.rnic+16; k++ {
					fate(s, k, 0.05)
				}
			case x < 0.85 && len(asked) > 0:
				q := asked[0]
				asked = asked[1:]
				s := byQP(q.qp)
				switch y := rng.Float64(); {
				case y < 0.55: // the source ToR resends the missing ones
					base := mdiff(q.epsn, s.start)
					hi := 0
					for i := 0; i < 128; i++ {
						if q.bm.Has(i) {
							hi = i + 1
						}
					}
					for i := -1; i < hi; i++ {
						if k := base + 1 + i; (i < 0 || !q.bm.Has(i)) && k < s.next {
							fate(s, k, 0.1)
						}
					}
				case y < 0.75:
					f := unfulfilled(t, q.qp, q.epsn)
					batch = append(batch, f)
					apply = append(apply, func(int64) { mo.notice(q.qp, q.epsn) })
				}
			case x < 0.865:
				// A burst lost: the next packet lands at ePSN+127 to
				// ePSN+130, the bitmap's edge, if the flow is behind.
				k := s.next + 124 + rng.IntN(8)
				if mf := mo.flows[s.qp]; mf != nil {
					k = max(s.next, mdiff(mf.epsn, s.start)+127+rng.IntN(4))
				}
				s.next = k
			case x < 0.9:
				// A stale notice.
				n := s.psn(s.rnic + rng.IntN(3))
				f := unfulfilled(t, s.qp, n)
				batch = append(batch, f)
				apply = append(apply, func(int64) { mo.notice(s.qp, n) })
			}
		}
		dt := []int64{1000, 1000, 3000, ri}[rng.IntN(4)]
		for _, f := range batch {
			r.inject(f)
		}
		r.step(dt)
		mo.msgs = mo.msgs[:0]
		for _, a := range apply {
			a(r.now)
		}
		mo.timers(r.now)

		// Deliveries, by flow.
		got := map[uint32][][]byte{}
		for port := 1; port < len(r.ports); port++ {
			for _, f := range r.take(port) {
				m := meta(t, f)
				if m.Opcode == rocev2.NetRTOpcode {
					t.Fatalf("step %d: a NetRT message reached host port %d", step, port)
				}
				if want := 1 + int(m.Flow.QP%2); port != want {
					t.Fatalf("step %d: QP %d left by port %d", step, m.Flow.QP, port)
				}
				got[m.Flow.QP] = append(got[m.Flow.QP], f)
			}
		}
		for qp := uint32(1); qp <= 6; qp++ {
			g, w := got[qp], mo.out[qp]
			if len(g) != len(w) || !slices.EqualFunc(g, w, bytes.Equal) {
				t.Fatalf("step %d: QP %d delivered %v, model %v", step, qp, psnsOf(t, g), psnsOf(t, w))
			}
			s := byQP(qp)
			for _, f := range g {
				if m := meta(t, f); uint32(m.PSN) == s.psn(s.rnic) {
					s.rnic++
				}
			}
		}
		clear(mo.out)

		// Requests.
		var sent []mmsg
		for _, f := range r.take(0) {
			m, n := message(t, f)
			if n.Type() != rocev2.NetRTRequest || m.Flow.QP == 0 {
				t.Fatalf("step %d: message type %d", step, n.Type())
			}
			sent = append(sent, mmsg{m.Flow.QP, uint32(n.PSN()), n.Bitmap()})
		}
		byq := func(a, b mmsg) int { return int(a.qp) - int(b.qp) }
		slices.SortFunc(sent, byq)
		slices.SortFunc(mo.msgs, byq)
		if !slices.Equal(sent, mo.msgs) {
			t.Fatalf("step %d: requests %v, model %v", step, sent, mo.msgs)
		}
		asked = append(asked, sent...)

		// States.
		for qp, mf := range mo.flows {
			if !mf.serve {
				continue
			}
			f := d.flow(t, qp)
			if f.state != mf.state || uint32(f.epsn) != mf.epsn || f.bm != mo.bitmap(mf) {
				t.Fatalf("step %d: QP %d state %d ePSN %d bitmap %+v, model %d %d %+v",
					step, qp, f.state, f.epsn, f.bm, mf.state, mf.epsn, mo.bitmap(mf))
			}
		}
		st := d.Stats()
		for i := range st.Ports {
			if st.Ports[i].Bytes > cfg.BufferBytes || st.Ports[i].Bytes != mo.bytes[uint16(i)] {
				t.Fatalf("step %d: port %d holds %d bytes, model %d, budget %d", step, i, st.Ports[i].Bytes, mo.bytes[uint16(i)], cfg.BufferBytes)
			}
		}
		if st.Frames > cfg.BufferFrames || st.Frames != mo.frames {
			t.Fatalf("step %d: %d frames held, model %d", step, st.Frames, mo.frames)
		}
		checkPartition(t, &st)
	}
	st := d.Stats()
	s := st.Sum()
	w := mo.waits
	if int(s.WaitUnfulfilled) != w["unfulfilled"] || int(s.WaitGaveUp) != w["gaveup"] || int(s.WaitBudget) != w["budget"] ||
		int(s.WaitSpan) != w["span"] || int(s.WaitBackoff) != w["backoff"] || int(s.Retries) != w["retry"] {
		t.Fatalf("waits %+v, model %v", s, w)
	}
	t.Logf("%d packets: %d in order, %d held, %d released, %d flushed, %d late, %d passed, %d beyond, %d full, %d duplicates, %d foreign; waits %v; %d requests",
		st.Packets, s.InOrder, s.Held, s.Released, s.Flushed, s.Late, s.Passed, s.Beyond, s.Full, s.Duplicates, st.Foreign, w, s.Requests)
	r.noLeak(d)
}

func psnsOf(t testing.TB, fs [][]byte) []uint32 {
	var out []uint32
	for _, f := range fs {
		out = append(out, uint32(meta(t, f).PSN))
	}
	return out
}
