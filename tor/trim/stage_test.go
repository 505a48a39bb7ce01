package trim

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// TestThreshold sends one DCP data packet to a data queue preloaded so
// that the packet ends one byte below, exactly at and one byte above the
// threshold: the first two pass on the data queue, the third is trimmed
// onto the control queue.
func TestThreshold(t *testing.T) {
	f := dcpData(t, 1, 1024)
	L := len(f)
	if L != DataLen {
		t.Fatalf("a 1024-byte DCP WRITE is %d bytes, DataLen says %d", L, DataLen)
	}
	const T = 64 << 10
	for _, c := range []struct {
		name    string
		over    int // depth + packet − threshold
		trimmed bool
	}{{"below", -1, false}, {"at", 0, false}, {"above", 1, true}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, Config{}, rigOpt{}) // threshold: the 64 KiB default
			r.hold(true)
			pre := T - L + c.over
			r.preload(r.data, pre)
			r.send(f)
			ps := r.port()
			if !c.trimmed {
				if r.depth(r.data) != pre+L || r.depth(r.ctrl) != 0 || ps.Passed != 1 || ps.Trimmed != 0 {
					t.Fatalf("depth %d+%d: data %d, control %d bytes, stats %+v; want it on the data queue",
						pre, L, r.depth(r.data), r.depth(r.ctrl), ps)
				}
				return
			}
			if r.depth(r.data) != pre || r.depth(r.ctrl) != HOLen {
				t.Fatalf("depth %d+%d: data %d, control %d bytes; want a %d-byte HO packet on control",
					pre, L, r.depth(r.data), r.depth(r.ctrl), HOLen)
			}
			if ps.Trimmed != 1 || ps.TrimmedBytes != uint64(L-HOLen) || ps.HeaderOnly != 1 || ps.Passed != 0 {
				t.Fatalf("stats %+v, want 1 trimmed, %d bytes removed, 1 HO", ps, L-HOLen)
			}
			// Released, the control queue's frame is a valid HO packet
			// of the same PSN.
			r.hold(false)
			r.step(1000)
			var ho []byte
			for _, s := range r.sent {
				if m := classify(s); m.Kind == rocev2.KindRoCE {
					ho = s
				}
			}
			m := classify(ho)
			if len(ho) != HOLen || m.Reason != rocev2.ReasonNone || m.Tag != rocev2.DCPHeaderOnly || m.PSN != 1 || m.Flow.QP != 0xd0d {
				t.Fatalf("sent %d bytes, %+v; want a valid %d-byte HO packet of PSN 1", len(ho), m, HOLen)
			}
		})
	}
}

// TestTags puts one packet of each DCP tag on a full data queue and one
// of each on an empty one.
func TestTags(t *testing.T) {
	frames := map[rocev2.DCPTag][]byte{
		rocev2.DCPNone: plain(t, 512), rocev2.DCPAck: dcpAck(t),
		rocev2.DCPData: dcpData(t, 2, 512), rocev2.DCPHeaderOnly: headerOnly(t),
	}
	all := [][]byte{frames[0], frames[1], frames[2], frames[3]}

	t.Run("over", func(t *testing.T) {
		r := newRig(t, Config{Threshold: 4096}, rigOpt{})
		r.hold(true)
		r.preload(r.data, 4096)
		r.send(all...)
		ps := r.port()
		want := PortStats{Trimmed: 1, TrimmedBytes: uint64(len(frames[2]) - HOLen), HeaderOnly: 2, DropNonDCP: 1, DropAck: 1}
		if ps != want {
			t.Errorf("stats %+v, want %+v", ps, want)
		}
		if r.depth(r.data) != 4096 || r.depth(r.ctrl) != 2*HOLen {
			t.Errorf("data %d, control %d bytes; want 4096 and two HO packets", r.depth(r.data), r.depth(r.ctrl))
		}
		if d := r.drops(ReasonNonDCP); d != 1 {
			t.Errorf("trim_non_dcp %d, want 1", d)
		}
		if d := r.drops(ReasonAck); d != 1 {
			t.Errorf("trim_ack %d, want 1", d)
		}
	})
	t.Run("under", func(t *testing.T) {
		r := newRig(t, Config{Threshold: 4096}, rigOpt{})
		r.hold(true)
		r.send(all...)
		ps := r.port()
		if ps.Passed != 3 || ps.HeaderOnly != 1 || ps.Trimmed != 0 || ps.DropNonDCP+ps.DropAck != 0 {
			t.Errorf("stats %+v, want 3 passed and the HO packet on control", ps)
		}
		if r.depth(r.ctrl) != len(frames[3]) || r.depth(r.data) != len(frames[0])+len(frames[1])+len(frames[2]) {
			t.Errorf("data %d, control %d bytes", r.depth(r.data), r.depth(r.ctrl))
		}
	})
}

// TestBatch sends 64 packets in one batch to an empty queue: the worker
// queues them only after the last stage, so the stage must count what
// the batch already put on the data queue. With room for 10, 10 pass and
// 54 are trimmed.
func TestBatch(t *testing.T) {
	f := dcpData(t, 3, 1024)
	r := newRig(t, Config{Threshold: dataplane.Bytes(10 * len(f))}, rigOpt{})
	r.hold(true)
	for i := 0; i < dataplane.BatchSize; i++ {
		r.ports[0].Inject(f)
	}
	r.step(1000)
	ps := r.port()
	if ps.Passed != 10 || ps.Trimmed != 54 {
		t.Fatalf("stats %+v, want 10 passed and 54 trimmed", ps)
	}
	if r.depth(r.data) != 10*len(f) || r.depth(r.ctrl) != 54*HOLen {
		t.Fatalf("data %d, control %d bytes", r.depth(r.data), r.depth(r.ctrl))
	}
}

// TestPassesUntouched: packets to a port that does not trim, and packets
// fwd put on another queue than data, are left alone over the threshold.
func TestPassesUntouched(t *testing.T) {
	t.Run("port", func(t *testing.T) {
		r := newRig(t, Config{Threshold: 1000, Ports: []string{"p0"}}, rigOpt{})
		r.hold(true)
		r.preload(r.data, 1000)
		r.send(dcpData(t, 4, 1024), plain(t, 100))
		if st := r.st.Stats(); st.Sum() != (PortStats{}) || r.depth(r.data) != 1000+DataLen+len(plain(t, 100)) {
			t.Fatalf("stats %+v, data %d bytes; want both packets on p1's data queue untouched", st.Sum(), r.depth(r.data))
		}
		if r.st.Trimming(1) || !r.st.Trimming(0) {
			t.Fatal("Trimming: want p0 only")
		}
	})
	t.Run("queue", func(t *testing.T) {
		r := newRig(t, Config{Threshold: 1000}, rigOpt{})
		r.route.q = 1 // retransmit
		r.hold(true)
		r.preload(r.data, 1000)
		r.send(dcpData(t, 5, 1024))
		if ps := r.port(); ps != (PortStats{}) || r.depth(1) != DataLen {
			t.Fatalf("stats %+v, retransmit %d bytes; want the packet on retransmit untouched", ps, r.depth(1))
		}
	})
}

// TestHOBytes trims the data packet of docs/wire-formats.md's example
// and compares the frame the port sends with the bytes the document
// shows.
func TestHOBytes(t *testing.T) {
	want := docHO(t)
	r := newRig(t, Config{Threshold: 1}, rigOpt{})
	r.send(dcpData(t, 203, 1024))
	r.step(1000)
	if len(r.sent) != 1 {
		t.Fatalf("sent %d frames, want 1", len(r.sent))
	}
	if !bytes.Equal(r.sent[0], want) {
		t.Fatalf("HO packet\n%x\nwant (docs/wire-formats.md)\n%x", r.sent[0], want)
	}
}

// docHO reads the hex dump that follows "The IPv4 HO packet of a WRITE
// middle" in docs/wire-formats.md.
func docHO(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/wire-formats.md")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte("The IPv4 HO packet of a WRITE middle"))
	if i < 0 {
		t.Fatal("docs/wire-formats.md: the HO example is gone")
	}
	sc := bufio.NewScanner(bytes.NewReader(doc[i:]))
	var out []byte
	fences := 0
	for sc.Scan() && fences < 2 {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fences++
			continue
		}
		if fences != 1 {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) > 0 && len(fs[0]) == 4 { // an offset
			fs = fs[1:]
		}
		for _, f := range fs {
			b, err := hex.DecodeString(f)
			if err != nil || len(b) != 1 {
				break
			}
			out = append(out, b[0])
		}
	}
	if len(out) != HOLen {
		t.Fatalf("docs/wire-formats.md's HO example has %d bytes, want %d", len(out), HOLen)
	}
	return out
}

func TestConfig(t *testing.T) {
	var c Config
	if err := c.Validate([]string{"s1"}); err != nil {
		t.Fatal(err)
	}
	d := c.withDefaults()
	if d.Threshold != 64<<10 || d.IncastDegree != 8 || d.MinWeight != 0.1 || d.Ratio != DefaultRatio {
		t.Fatalf("defaults %+v", d)
	}
	if DataLen != 1106 || HOLen != 66 {
		t.Fatalf("DataLen %d, HOLen %d; want 1106 and 66", DataLen, HOLen)
	}
	for _, b := range []struct {
		c     Config
		field string
	}{
		{Config{Threshold: -1}, "threshold"},
		{Config{IncastDegree: 1}, "incast_degree"},
		{Config{Ratio: 0.5}, "ratio"},
		{Config{MinWeight: -1}, "min_weight"},
		{Config{Ports: []string{"s1", "s1"}}, "ports[1]"},
		{Config{Ports: []string{"s9"}}, "ports[0]"},
	} {
		if err := b.c.Validate([]string{"s1", "s2"}); err == nil || !strings.Contains(err.Error(), b.field+":") {
			t.Errorf("%+v: %v, want an error naming %s", b.c, err, b.field)
		}
	}
	if _, err := NewStage(Config{Ratio: -3}); err == nil {
		t.Error("NewStage accepted a negative ratio")
	}
	if _, err := (Config{}).WRR(dataplane.EgressConfig{Queues: []dataplane.QueueConfig{{Name: "data", Weight: 1, Limit: 1000}}}); err == nil {
		t.Error("WRR accepted an egress without a control queue")
	}
}

// TestWeight checks §4.2's formula and its fallback.
func TestWeight(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want float64
	}{
		{Config{}, 7 / (DefaultRatio - 7)},
		{Config{IncastDegree: 4, Ratio: 16}, 3.0 / 13},
		{Config{IncastDegree: 16, Ratio: 20}, 15.0 / 5},
		{Config{IncastDegree: 22}, 0.1},                            // r ≈ 16.8 ≤ 21
		{Config{IncastDegree: 8, Ratio: 7, MinWeight: 0.05}, 0.05}, // r = N−1
	} {
		if got := c.cfg.Weight(); got < c.want*0.999999 || got > c.want*1.000001 {
			t.Errorf("%+v: w = %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestAllocs asserts the stage allocates nothing per packet: passing,
// trimming and dropping.
func TestAllocs(t *testing.T) {
	r := newRig(t, Config{Threshold: 8 << 10}, rigOpt{})
	r.keep = false
	frames := [][]byte{dcpData(t, 1, 1024), dcpData(t, 2, 1024), plain(t, 1024), dcpAck(t), headerOnly(t)}
	round := func() {
		for i := 0; i < 12; i++ {
			for _, f := range frames {
				r.ports[0].Inject(f)
			}
		}
		r.step(1000)
	}
	for i := 0; i < 100; i++ {
		round()
	}
	if a := testing.AllocsPerRun(500, round); a != 0 {
		t.Errorf("%.1f allocations per batch", a)
	}
	if ps := r.port(); ps.Trimmed == 0 || ps.Passed == 0 || ps.DropAck == 0 || ps.DropNonDCP == 0 {
		t.Errorf("stats %+v: some path never ran", ps)
	}
}

// An operator's SetPort switches trimming off at a port: above the
// threshold the data queue then takes the packet (or tail-drops it) as a
// plain switch's would; switched on again, it trims.
func TestSetPort(t *testing.T) {
	f := dcpData(t, 1, 1024)
	r := newRig(t, Config{}, rigOpt{})
	r.hold(true)
	r.preload(r.data, 64<<10)
	if !r.st.SetPort(1, false) || r.st.PortOn(1) || r.st.SetPort(MaxPorts, false) {
		t.Fatal("SetPort")
	}
	r.send(f)
	if ps := r.port(); ps.Trimmed != 0 || r.depth(r.ctrl) != 0 {
		t.Fatalf("switched off: %+v, control %d bytes; want no trim", ps, r.depth(r.ctrl))
	}
	r.st.SetPort(1, true)
	r.send(f)
	if ps := r.port(); ps.Trimmed != 1 || !r.st.PortOn(1) {
		t.Fatalf("switched on: %+v; want one trim", ps)
	}
}

// holder holds every frame it sees, as NetRT's source ToR keeps a
// duplicate in place (netrt.Config.InPlace).
type holder struct{ addrs []uint64 }

func (*holder) Name() string { return "holder" }
func (h *holder) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		if c.Mem.Hold(b.Pkts[i].Addr) {
			h.addrs = append(h.addrs, b.Pkts[i].Addr)
		}
	}
}

// A frame another holder keeps is trimmed in a copy: the header-only
// packet goes out, the held frame stays whole, and each frame goes back
// to the memory with its last holder.
func TestTrimHeld(t *testing.T) {
	h := &holder{}
	r := newRig(t, Config{}, rigOpt{before: h})
	r.mem.EnableHolds()
	f := dcpData(t, 1, 1024)
	r.hold(true)
	r.preload(r.data, 64<<10)
	r.send(f)
	if ps := r.port(); ps.Trimmed != 1 || len(h.addrs) != 1 {
		t.Fatalf("stats %+v, %d held; want one trimmed, held", ps, len(h.addrs))
	}
	if got := r.mem.Bytes(h.addrs[0], len(f)); !bytes.Equal(got, f) {
		t.Fatal("the held frame was trimmed in place")
	}
	r.hold(false)
	r.step(1000)
	ho := 0
	for _, s := range r.sent {
		if m := classify(s); m.Kind == rocev2.KindRoCE && m.Tag == rocev2.DCPHeaderOnly && len(s) == HOLen {
			ho++
		}
	}
	if ho != 1 {
		t.Fatalf("%d header-only packets sent, want 1", ho)
	}
	r.mem.Release(h.addrs[0])
	if n := r.mem.InUse(); n != 0 {
		t.Fatalf("%d frames in use after the holder's release", n)
	}
}
