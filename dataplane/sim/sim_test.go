package sim

import (
	"net/netip"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

type rec struct {
	got []Time
}

func (r *rec) Fire(now Time) { r.got = append(r.got, now) }

// TestEventOrder: events fire in time order, ties by id, an actor has
// one entry at its earliest time, and Run stops at its horizon.
func TestEventOrder(t *testing.T) {
	s := New()
	var rs [3]*rec
	var order []int
	for i := range rs {
		rs[i] = &rec{}
		i := i
		s.Add(ActorFunc(func(now Time) { rs[i].Fire(now); order = append(order, i) }))
	}
	s.Wake(2, 50)
	s.Wake(1, 50)
	s.Wake(0, 70)
	s.Wake(0, 20) // earlier: moves
	s.Wake(1, 90) // later: ignored
	if s.Pending() != 3 {
		t.Fatalf("%d pending, want 3", s.Pending())
	}
	if more := s.Run(60); more || s.Now() != 60 {
		t.Fatalf("Run(60): more %v now %d", more, s.Now())
	}
	if len(order) != 3 || order[0] != 0 || order[1] != 1 || order[2] != 2 {
		t.Fatalf("order %v, want [0 1 2] (time, then id)", order)
	}
	if rs[0].got[0] != 20 || rs[1].got[0] != 50 {
		t.Fatalf("times %v %v", rs[0].got, rs[1].got)
	}
	if s.Run(Never) || s.Events != 3 {
		t.Fatalf("events %d, want 3 and none left", s.Events)
	}
}

// ActorFunc adapts a function to Actor.
type ActorFunc func(now Time)

// Fire implements Actor.
func (f ActorFunc) Fire(now Time) { f(now) }

// sender is a Source that queues n frames of size bytes at its first
// Poll (on port 0, data queue), and records what it receives.
type sender struct {
	n, size int
	seq     uint32
	got     []int64 // receive times, ns
	pfc     bool    // send a PFC pause of priority 3 at the first Poll
}

func (s *sender) Name() string { return "sender" }
func (s *sender) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		s.got = append(s.got, c.Now)
		b.Pkts[i].Verdict = dataplane.Taken
		c.Mem.Release(b.Pkts[i].Addr)
	}
}
func (s *sender) Poll(c *dataplane.Ctx) int {
	if s.pfc {
		s.pfc = false
		c.SendPFC(0, 1<<3, [8]uint16{3: 0xffff})
		return 1
	}
	made := 0
	for ; s.n > 0 && made < dataplane.BatchSize; s.n-- {
		addr, room, ok := c.Alloc()
		if !ok {
			break
		}
		k, err := rocev2.Build(room, &rocev2.Spec{SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"),
			Opcode: rocev2.RCWriteMiddle, DestQP: 0x100, PSN: psn.New(s.seq), Payload: make([]byte, s.size-frameHeaders)})
		if err != nil {
			panic(err)
		}
		s.seq++
		p := dataplane.Packet{Addr: addr, Len: uint16(k), Out: 0, Queue: 2}
		c.Emit(&p)
		made++
	}
	return made
}

// frameHeaders is what Build adds to a WRITE middle's payload:
// Ethernet, IPv4, UDP, BTH, ICRC.
const frameHeaders = 14 + 20 + 8 + 12 + 4 // and a payload padded to 4 bytes

// pair is two nodes, each a worker with one port and a sender stage.
func pair(t *testing.T, c LinkConfig, a, b *sender) (*Sim, [2]*Node) {
	t.Helper()
	s := New()
	var nodes [2]*Node
	var ports [2]*Port
	for i, st := range []*sender{a, b} {
		mem, err := dataplane.NewMem(make([]byte, 1024*2048), 2048)
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = NewPort(s, []string{"a", "b"}[i], rocev2.MAC{2, 0, 0, 0, 0, byte(i)}, mem, 0)
		w, err := dataplane.NewWorker(dataplane.WorkerConfig{ID: i, Mem: mem, Ports: []dataplane.Port{ports[i]},
			Egress: []dataplane.EgressConfig{dataplane.DefaultEgress(0, 1<<20)}, Stages: []dataplane.Stage{st}})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = AddNode(s, w, []*Port{ports[i]})
	}
	if err := Connect(s, ports[0], ports[1], c); err != nil {
		t.Fatal(err)
	}
	return s, nodes
}

// TestLinkTiming: back-to-back frames arrive one serialization time
// apart, the first after its serialization plus the delay, to the
// nanosecond; the engine steps the nodes only when something happens.
func TestLinkTiming(t *testing.T) {
	for _, c := range []struct {
		rate     uint64
		overhead int
		size     int
		delay    Time
	}{
		{10e9, 24, 1002, Microsecond},
		{100e9, 24, 1078, 500 * Nanosecond},
		{400e9, 0, 998, 3 * Microsecond},
		{1e9, 24, 1022, 2 * Microsecond},
	} {
		a, b := &sender{n: 10, size: c.size}, &sender{}
		s, nodes := pair(t, LinkConfig{RateBps: c.rate, Delay: c.delay, Overhead: c.overhead}, a, b)
		nodes[0].Wake(0)
		s.Run(Never)
		ws := nodes[0].Ports[0].WireStats()
		flen := int(ws.TxBytes / ws.TxFrames)
		if flen != c.size {
			t.Fatalf("%+v: frames of %d bytes", c, flen)
		}
		ser := Time(uint64(c.size+c.overhead) * 8 * 1e12 / c.rate)
		if len(b.got) != 10 {
			t.Fatalf("%+v: %d frames arrived, want 10", c, len(b.got))
		}
		for k, at := range b.got {
			want := (Time(k+1)*ser + c.delay) / Nanosecond
			if at != want {
				t.Errorf("%+v: frame %d at %d ns, want %d", c, k, at, want)
			}
		}
		if p := nodes[0].Ports[0].WireStats(); p.TxFrames != 10 || p.BusyTime != 10*ser {
			t.Errorf("%+v: wire stats %+v", c, p)
		}
		if steps := nodes[0].Steps + nodes[1].Steps; steps > 40 {
			t.Errorf("%+v: %d steps for 10 frames", c, steps)
		}
	}
}

// TestLinkPFC: a PFC pause from the receiver stops the sender's data
// queue for the pause time (0xffff quanta of 512 bit times), then the
// frames flow.
func TestLinkPFC(t *testing.T) {
	a, b := &sender{}, &sender{pfc: true}
	s, nodes := pair(t, LinkConfig{RateBps: 10e9, Delay: Microsecond, Overhead: 24}, a, b)
	nodes[1].Wake(0)
	s.Run(10 * Microsecond) // the pause has arrived
	a.n, a.size = 5, 1002
	nodes[0].Wake(s.Now())
	s.Run(Never)
	pause := Time(0xffff) * 512 * 100 // ps: 512 bit times of 100 ps at 10 Gbit/s
	ser := Time(1026 * 8 * 1e12 / 10e9)
	if len(b.got) != 5 {
		t.Fatalf("%d frames arrived, want 5", len(b.got))
	}
	// The pause starts when the PFC frame reaches a, about a
	// microsecond in: the frames go after it ends, one serialization
	// and the delay later.
	if first := Time(b.got[0]) * Nanosecond; first < pause {
		t.Fatalf("first frame at %d ps, before the pause of %d ps ended", first, pause)
	}
	if first := Time(b.got[0]) * Nanosecond; first > pause+2*Microsecond+ser+Microsecond {
		t.Fatalf("first frame at %d ps, long after the pause of %d ps ended", first, pause)
	}
	if st := nodes[0].W.Snapshot(); st.Ports[0].PFCRx != 1 {
		t.Fatalf("PFC frames received %d, want 1", st.Ports[0].PFCRx)
	}
}

// rewaker is an actor that wakes itself again after a pseudo-random
// delay, as nodes and wires do.
type rewaker struct {
	s  *Sim
	id int
	x  uint64
}

func (r *rewaker) Fire(now Time) {
	r.x = r.x*6364136223846793005 + 1442695040888963407
	r.s.Wake(r.id, now+Time(r.x>>54)*Nanosecond)
}

// BenchmarkEventList is the event list's cost per event with as many
// actors as a k = 16 fat tree has (1,344 nodes, 6,144 wire directions),
// each due once.
func BenchmarkEventList(b *testing.B) {
	s := New()
	for i := 0; i < 9000; i++ {
		r := &rewaker{s: s, x: uint64(i)}
		r.id = s.Add(r)
		s.Wake(r.id, Time(i))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s.Step()
	}
}
