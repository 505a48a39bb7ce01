package dataplane

import (
	"net/netip"
	"testing"

	"rocetor/rocev2"
)

// reasonStage is the drop reason of dropStage, a stage of these tests.
var reasonStage = NewReason("test_stage_drop")

// dropStage drops every packet with reasonStage; with discard, it takes
// each one and gives it back through Ctx.Discard, as a stage that held
// it would.
type dropStage struct{ discard bool }

func (dropStage) Name() string { return "drop" }
func (s dropStage) Process(c *Ctx, b *Batch) {
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if s.discard {
			p.Verdict = Taken
			c.Discard(p, reasonStage)
		} else {
			p.Drop(reasonStage)
		}
	}
}

// txRefusing is a port whose tx ring takes nothing it said it had room
// for: the worker's tx_full path.
type txRefusing struct{ *MemPort }

func (p txRefusing) TxRoom() int                { return BatchSize }
func (p txRefusing) Transmit(pkts []Packet) int { return p.MemPort.Transmit(pkts[:0]) }

// dcpFrames returns a DCP data packet (tag 10) and the header-only
// packet (tag 11) trimming makes of another.
func dcpFrames(t testing.TB) (data, ho []byte) {
	t.Helper()
	build := func(p uint32) []byte {
		b := make([]byte, 2048)
		n, err := rocev2.Build(b, &rocev2.Spec{
			SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.1.1"), DSCP: 26, DCP: true,
			Opcode: rocev2.RCWriteMiddle, DestQP: 7, PSN: rocev2PSN(p), MSN: 1, VA: 1, RKey: 1, DMALen: 1 << 20,
			Payload: make([]byte, 1024),
		})
		if err != nil {
			t.Fatal(err)
		}
		return b[:n]
	}
	data, ho = build(1), build(2)
	var m rocev2.Meta
	rocev2.Classifier{DCP: true}.Classify(ho, &m)
	n, err := rocev2.Trim(ho, &m)
	if err != nil {
		t.Fatal(err)
	}
	return data, ho[:n]
}

// TestWorkerHODrops kills a DCP data packet and a header-only packet at
// each place the worker frees frames — no egress chosen, a bad port, a
// full queue (data or control), a stage's drop verdict, a stage's
// Discard, a tx ring that refuses — and checks that both count in Drops
// and the header-only one, alone, in HODrops under the same reason,
// allocating nothing.
func TestWorkerHODrops(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stage  Stage
		limit  int
		refuse bool
		reason Reason
	}{
		{"unrouted", dropAll{}, 1 << 20, false, ReasonUnrouted},
		{"bad port", cross{q: 9}, 1 << 20, false, ReasonBadPort},
		{"data queue full", cross{q: 2}, 64, false, ReasonQueueFull},
		{"control queue full", cross{q: 0}, 64, false, ReasonQueueFull},
		{"stage drop", dropStage{}, 1 << 20, false, reasonStage},
		{"stage discard", dropStage{discard: true}, 1 << 20, false, reasonStage},
		{"tx ring full", cross{q: 0}, 1 << 20, true, ReasonTxFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, err := NewMem(make([]byte, 256*2048), 2048)
			if err != nil {
				t.Fatal(err)
			}
			in := NewMemPort("p0", rocev2.MAC{2, 0, 0, 0, 0, 1}, mem, 64)
			var out Port = NewMemPort("p1", rocev2.MAC{2, 0, 0, 0, 0, 2}, mem, 64)
			if tc.refuse {
				out = txRefusing{out.(*MemPort)}
			}
			eg := DefaultEgress(0, tc.limit)
			w, err := NewWorker(WorkerConfig{Mem: mem, Ports: []Port{in, out}, Egress: []EgressConfig{eg, eg},
				Stages: []Stage{tc.stage}, Classifier: rocev2.Classifier{DCP: true, VerifyICRC: true}})
			if err != nil {
				t.Fatal(err)
			}
			data, ho := dcpFrames(t)
			in.Inject(data)
			in.Inject(ho)
			w.Step(0)
			w.Step(1e6)
			s := w.Snapshot()
			if s.Drops[tc.reason] != 2 || s.HODrops[tc.reason] != 1 {
				t.Fatalf("drops %d, header-only drops %d under %v; want 2 and 1", s.Drops[tc.reason], s.HODrops[tc.reason], tc.reason)
			}
			var ho1 uint64
			for _, n := range s.HODrops {
				ho1 += n
			}
			if ho1 != 1 || mem.InUse() != 0 {
				t.Fatalf("%d header-only drops in all, %d frames in use; want 1 and 0", ho1, mem.InUse())
			}
			now := int64(2e6)
			if a := testing.AllocsPerRun(50, func() {
				in.Inject(data)
				in.Inject(ho)
				now += 1000
				w.Step(now)
			}); a != 0 {
				t.Errorf("%.1f allocations per step", a)
			}
		})
	}
}
