package impair

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/rocev2/psn"
)

// timerSource sends frames out of p1 from a timer, never through
// Process, as llr's retransmissions and dummies, NetRT's requests and
// pool retransmissions leave a switch: Poll arms the timer once, Timer
// emits every frame and, with pfc, a PFC frame.
type timerSource struct {
	frames [][]byte
	pfc    bool
	armed  bool
}

func (*timerSource) Name() string                             { return "timer-source" }
func (*timerSource) Process(*dataplane.Ctx, *dataplane.Batch) {}
func (s *timerSource) Poll(c *dataplane.Ctx) int {
	if !s.armed {
		s.armed = c.After(1000, 0)
	}
	return 0
}
func (s *timerSource) Timer(c *dataplane.Ctx, _ uint64) {
	for _, f := range s.frames {
		addr, room, ok := c.Alloc()
		if !ok {
			panic("no frame")
		}
		copy(room, f)
		p := dataplane.Packet{Addr: addr, Len: uint16(len(f)), Out: 1, Queue: 2}
		c.Emit(&p)
	}
	if s.pfc {
		c.SendPFC(1, 1<<3, [8]uint16{3: 0xffff})
	}
}

// shimCtl returns a link-shim control frame of type typ, as llr's sender
// builds its dummies, ACKs and loss notices.
func shimCtl(typ uint8) []byte {
	f := make([]byte, 60)
	copy(f, []byte{2, 0, 0, 0, 0, 9, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], rocev2.EtherTypeShim)
	rocev2.Shim(f[14:]).Set(psn.LinkOf(5, false), typ, 0, 0)
	return f
}

// shimmed returns f behind a link shim of type typ, as llr sends a
// protected original or retransmitted copy.
func shimmed(f []byte, typ uint8) []byte {
	out := make([]byte, 0, len(f)+rocev2.ShimLen)
	out = append(out, f[:12]...)
	out = binary.BigEndian.AppendUint16(out, rocev2.EtherTypeShim)
	out = append(out, make([]byte, rocev2.ShimLen)...)
	rocev2.Shim(out[14:]).Set(psn.LinkOf(7, false), typ, 0, binary.BigEndian.Uint16(f[12:14]))
	return append(out, f[14:]...)
}

// TestEveryFrameMeetsTheWire: frames a stage emits from a timer, a PFC
// frame the worker sends and the link shim's control frames all leave
// by the impaired port, so an egress rule of match all destroys them
// all, each counted by its class. The impair stage, last in the
// pipeline, saw only the batches Process hands it: none of these.
func TestEveryFrameMeetsTheWire(t *testing.T) {
	data := roce(t, rocev2.RCWriteMiddle, 0, 256)
	src := &timerSource{pfc: true, frames: [][]byte{
		data,
		roce(t, rocev2.RCAck, 0, 0),
		shimCtl(rocev2.ShimDummy), shimCtl(rocev2.ShimAck), shimCtl(rocev2.ShimLoss),
		shimmed(data, rocev2.ShimRetransmit),
		shimmed(data, rocev2.ShimOriginal),
	}}
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Loss: 1}), rigOpt{stages: []dataplane.Stage{src}})
	r.keep = true
	for r.now < 10_000 {
		r.step(500)
	}
	r.drain()
	if len(r.frame[1]) != 0 || !src.armed {
		t.Fatalf("%d frames crossed a link that loses every frame (timer armed %v)", len(r.frame[1]), src.armed)
	}
	d := r.dir(1, Egress)
	want := [NumClasses]uint64{ClassData: 2, ClassRetransmit: 1, ClassControl: 5}
	for k := Class(0); k < NumClasses; k++ {
		if d.Of(k) != want[k] || d.Destroyed[k][CauseLoss] != want[k] {
			t.Errorf("%s: %d destroyed, want %d lost", k, d.Of(k), want[k])
		}
	}
	if d.Matched != 8 {
		t.Errorf("matched %d frames, want 8", d.Matched)
	}
	r.noLeak()
}

// swallow is an outer port wrapper that consumes the link shim's control
// frames, as llr's receiver does, and counts what it saw.
type swallow struct {
	dataplane.Port
	mem  *dataplane.Mem
	seen int
}

func (s *swallow) Inner() dataplane.Port { return s.Port }
func (s *swallow) Receive(b *dataplane.Batch) int {
	n0 := b.N
	s.Port.Receive(b)
	k := n0
	for j := n0; j < b.N; j++ {
		f := s.mem.Frame(&b.Pkts[j])
		if binary.BigEndian.Uint16(f[12:]) == rocev2.EtherTypeShim {
			s.seen++
			s.mem.Release(b.Pkts[j].Addr)
			continue
		}
		b.Pkts[k] = b.Pkts[j]
		k++
	}
	b.N = k
	return k - n0
}

// TestIngressBeforeOuterWrapper: an ingress rule acts on the wire, so on
// the frames an outer wrapper (llr's receiver) would consume before the
// pipeline: lost ones never reach it, delayed ones reach it late.
func TestIngressBeforeOuterWrapper(t *testing.T) {
	const n = 50
	for _, c := range []struct {
		name string
		rule Rule
	}{
		{"loss", Rule{Port: "p0", Direction: "ingress", Loss: 1}},
		{"delay", Rule{Port: "p0", Direction: "ingress", Delay: &Delay{Mean: 100 * time.Microsecond}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var outer []*swallow
			r := newRig(t, single(c.rule), rigOpt{outer: func(p dataplane.Port) dataplane.Port {
				outer = append(outer, &swallow{Port: p})
				return outer[len(outer)-1]
			}})
			for _, o := range outer {
				o.mem = r.mem
			}
			ack := shimCtl(rocev2.ShimAck)
			for i := 0; i < n; i++ {
				r.ports[0].Inject(ack)
			}
			r.step(1000)
			if outer[0].seen != 0 {
				t.Fatalf("the outer wrapper saw %d frames before the ingress rule's verdict", outer[0].seen)
			}
			r.drain()
			d := r.dir(0, Ingress)
			switch c.name {
			case "loss":
				if outer[0].seen != 0 || d.Destroyed[ClassControl][CauseLoss] != n {
					t.Fatalf("outer saw %d, %d control frames lost; want 0 and %d", outer[0].seen, d.Of(ClassControl), n)
				}
			case "delay":
				if outer[0].seen != n || d.Delayed != n || r.ip[0].Counters().Released != n {
					t.Fatalf("outer saw %d, delayed %d; want %d", outer[0].seen, d.Delayed, n)
				}
			}
			r.noLeak()
		})
	}
}

// TestTxRefusedWaits: copies need more tx room than the worker asked
// for; what the inner port refuses waits, due at once, and leaves with
// the next call: every frame arrives twice, none destroyed.
func TestTxRefusedWaits(t *testing.T) {
	const n = 500
	r := newRig(t, single(Rule{Port: "p1", Direction: "egress", Duplicate: 1}), rigOpt{})
	r.ports[1].SetTxRoom(8)
	r.stream(roce(t, rocev2.RCWriteMiddle, 0, 64), n, 32, 1000)
	got := slices.Clone(r.seq[1])
	slices.Sort(got)
	for i, s := range got {
		if s != uint32(i/2) {
			t.Fatalf("frame %d is seq %d: not every frame arrived twice", i, s)
		}
	}
	if d := r.dir(1, Egress); len(got) != 2*n || d.Duplicated != n || d.Of(ClassData) != 0 {
		t.Fatalf("%d frames arrived, %+v", len(got), d)
	}
	r.noLeak()
}

// TestDeadline: the worker's sleep wakes for the earliest held frame,
// which Deadline reports in either direction.
func TestDeadline(t *testing.T) {
	r := newRig(t, Config{Seed: 1, Rules: []Rule{
		{Port: "p0", Direction: "ingress", Delay: &Delay{Mean: 30 * time.Microsecond}},
		{Port: "p1", Direction: "egress", Delay: &Delay{Mean: 20 * time.Microsecond}},
	}}, rigOpt{})
	if _, ok := r.ip[0].Deadline(); ok {
		t.Fatal("a deadline with nothing held")
	}
	r.inject(0, roce(t, rocev2.RCWriteMiddle, 0, 64), 0)
	r.step(1000)
	if at, ok := r.ip[0].Deadline(); !ok || at != 31_000 {
		t.Fatalf("ingress deadline %d %v, want 31000", at, ok)
	}
	for r.now < 31_000 {
		r.step(1000)
	}
	if at, ok := r.ip[1].Deadline(); !ok || at != 51_000 {
		t.Fatalf("egress deadline %d %v, want 51000", at, ok)
	}
	r.noLeak()
}

// TestLinksDrawApart: each port draws its own stream, so what one link
// decides does not depend on the traffic of another.
func TestLinksDrawApart(t *testing.T) {
	cfg := Config{Seed: 3, Rules: []Rule{
		{Port: "p1", Direction: "egress", Loss: 0.1, Duplicate: 0.05},
		{Port: "p0", Direction: "egress", Loss: 0.1},
	}}
	f := roce(t, rocev2.RCWriteMiddle, 0, 64)
	run := func(reverse bool) []uint32 {
		r := newRig(t, cfg, rigOpt{})
		for s := 0; s < 2000; s++ {
			r.inject(0, f, uint32(s))
			if reverse {
				r.inject(1, f, uint32(s))
			}
			if s%16 == 15 {
				r.step(1000)
			}
		}
		r.drain()
		r.noLeak()
		return r.seq[1]
	}
	if !slices.Equal(run(false), run(true)) {
		t.Fatal("traffic on p0's link changed what p1's link decided")
	}
}
