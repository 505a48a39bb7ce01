package trim

import (
	"fmt"
	"testing"

	"rocetor/dataplane"
)

// wrrCases are (N, r) pairs: the default, §4.2's formula on both sides of
// w = 1, and the min_weight fallbacks for r ≤ N−1.
var wrrCases = []Config{
	{},                                  // N 8, r 16.76: w 0.717
	{IncastDegree: 4, Ratio: 16},        // w 3/13
	{IncastDegree: 16, Ratio: 20},       // w 3
	{IncastDegree: 8, Ratio: 7.5},       // w 14
	{IncastDegree: 22},                  // r ≤ 21: min_weight 0.1
	{IncastDegree: 18, MinWeight: 0.02}, // r ≤ 17: min_weight 0.02
}

// TestWRRRatio keeps both queues of a trimming port's egress backlogged
// (every frame served is queued again) and checks that over 16 MB the
// control:data bytes served are w to within 2 %, and that no window of
// 16 DRR rounds (at least 256 KiB) strays more than 10 % from it: the
// small quantum makes the ratio hold over a few frames, not only over
// megabytes. HO frames are 66 bytes, data frames r·66.
func TestWRRRatio(t *testing.T) {
	for _, c := range wrrCases {
		w := c.Weight()
		t.Run(fmt.Sprintf("N%d_r%.2f_w%.3f", c.withDefaults().IncastDegree, c.withDefaults().Ratio, w), func(t *testing.T) {
			eg, err := c.WRR(dataplane.DefaultEgress(0, 256<<10))
			if err != nil {
				t.Fatal(err)
			}
			e, err := dataplane.NewEgress(eg)
			if err != nil {
				t.Fatal(err)
			}
			ci, di := eg.QueueIndexByName(ControlQueue), eg.QueueIndexByName(DataQueue)
			dataLen := min(9000, int(c.withDefaults().Ratio*HOLen))
			cw, dw := Weights(w)
			window := max(256<<10, 16*(cw+dw)*eg.Quantum)
			for e.Enqueue(ci, 0, HOLen) {
			}
			for e.Enqueue(di, 0, dataLen) {
			}
			var total, win [16]int
			windows := 0
			out := make([]dataplane.Packet, dataplane.BatchSize)
			for served := 0; served < 16<<20; {
				n := e.Dequeue(0, out)
				for _, p := range out[:n] {
					total[p.Queue] += int(p.Len)
					win[p.Queue] += int(p.Len)
					served += int(p.Len)
					e.Enqueue(int(p.Queue), 0, int(p.Len))
				}
				if win[ci]+win[di] >= window {
					if got := float64(win[ci]) / float64(win[di]); got < w*0.9 || got > w*1.1 {
						t.Fatalf("window %d of %d bytes: control:data = %d:%d = %.4f, want %.4f ± 10 %%", windows, window, win[ci], win[di], got, w)
					}
					win = [16]int{}
					windows++
				}
			}
			got := float64(total[ci]) / float64(total[di])
			if got < w*0.98 || got > w*1.02 {
				t.Fatalf("control:data = %d:%d = %.4f, want %.4f ± 2 %%", total[ci], total[di], got, w)
			}
			t.Logf("control:data = %.4f (w %.4f, DRR %d:%d), %d windows of %d bytes", got, w, cw, dw, windows, window)
		})
	}
}

// TestWRRLayout checks what WRR changes in DefaultEgress: control joins
// data's level with weights w:1, the quantum is 1 byte per unit, and the
// other queues keep their levels and their quanta.
func TestWRRLayout(t *testing.T) {
	def := dataplane.DefaultEgress(0, 1<<20)
	eg, err := Config{}.WRR(def)
	if err != nil {
		t.Fatal(err)
	}
	q := func(c dataplane.EgressConfig, name string) dataplane.QueueConfig {
		return c.Queues[c.QueueIndexByName(name)]
	}
	cw, dw := Weights(Config{}.Weight())
	if c, d := q(eg, "control"), q(eg, "data"); c.Level != d.Level || d.Level != q(def, "data").Level || c.Weight != cw || d.Weight != dw {
		t.Errorf("control %+v, data %+v; want both at data's level %d, weights %d:%d", c, d, q(def, "data").Level, cw, dw)
	}
	for _, name := range []string{"retransmit", "idle"} {
		if a, b := q(eg, name), q(def, name); a.Level != b.Level || a.Weight*eg.Quantum != b.Weight*1500 {
			t.Errorf("%s: %+v (quantum %d), was %+v (quantum 1500)", name, a, eg.Quantum, b)
		}
	}
	if q(def, "control").Level != 3 {
		t.Error("WRR changed its argument's queues")
	}
	for _, w := range []float64{0.001, 0.1, 0.7168, 1, 3, 14, 70, 700, 1e5} {
		c, d := Weights(w)
		if got := float64(c) / float64(d); c < 1 || d < 1 || c > maxWeight || d > maxWeight || (w < 65536 && (got < w*0.9995 || got > w*1.0005)) {
			t.Errorf("Weights(%v) = %d:%d = %v", w, c, d, got)
		}
	}
}

// TestIncastLossless runs the §4.2 worst case through a worker: N−1 = 7
// ports each send DCP data at the line rate of the 1 Gb/s egress port,
// for 20 ms. Every packet is either passed or trimmed, the data queue
// never exceeds the threshold, and the control queue drops nothing. With
// 15 senders, twice the incast the weight is sized for, the control queue
// overflows its budget (16 KiB here), and its drops are counted: the test
// can fail. Either way the data queue keeps its 1/(1+w) share.
func TestIncastLossless(t *testing.T) {
	for _, c := range []struct {
		senders int
		lossy   bool
	}{{7, false}, {15, true}} {
		t.Run(fmt.Sprintf("%d-to-1", c.senders), func(t *testing.T) {
			const rate, T = 1e9, 8 << 10
			r := newRig(t, Config{Threshold: T, Ports: []string{portName(c.senders)}},
				rigOpt{ports: c.senders + 1, rate: rate, limit: 16 << 10})
			r.keep = false
			f := dcpData(t, 1, 1024)
			const dt = 10_000 // ns per step
			credit := make([]float64, c.senders)
			sent := 0
			for step := 0; step < 2000; step++ {
				for i := range credit {
					credit[i] += rate / 8 * dt / 1e9
					for credit[i] >= float64(len(f)) {
						credit[i] -= float64(len(f))
						if !r.ports[i].Inject(f) {
							t.Fatalf("port %d refused a frame: the worker falls behind", i)
						}
						sent++
					}
				}
				r.step(dt)
			}
			r.step(2e6)
			ps := r.port()
			cs, ds := r.out().Stats(r.ctrl), r.out().Stats(r.data)
			if ps.Passed+ps.Trimmed != uint64(sent) {
				t.Fatalf("%d sent, %d passed + %d trimmed", sent, ps.Passed, ps.Trimmed)
			}
			if ds.MaxDepthBytes > T || ds.Drops != 0 {
				t.Fatalf("data queue peaked at %d bytes with %d drops, threshold %d", ds.MaxDepthBytes, ds.Drops, T)
			}
			t.Logf("%d sent: %d passed, %d trimmed; control queue peak %d bytes, %d drops; served control:data %d:%d bytes",
				sent, ps.Passed, ps.Trimmed, cs.MaxDepthBytes, cs.Drops, cs.Bytes, ds.Bytes)
			// No starvation of the data plane: data gets at least its
			// 1/(1+w) share of what the port sent.
			if w := (Config{}).Weight(); float64(ds.Bytes) < 0.95*float64(cs.Bytes+ds.Bytes)/(1+w) {
				t.Fatalf("data served %d of %d bytes, want at least 1/(1+w) = %.3f of them", ds.Bytes, cs.Bytes+ds.Bytes, 1/(1+w))
			}
			if c.lossy != (cs.Drops > 0) {
				t.Fatalf("control queue drops %d, want lossy=%v", cs.Drops, c.lossy)
			}
			if q := r.w.Snapshot().Queues[c.senders][r.ctrl]; q.Drops != cs.Drops {
				t.Fatalf("the worker's snapshot shows %d control drops, the queue %d", q.Drops, cs.Drops)
			}
		})
	}
}

// TestWRRControlLimit checks that control_limit bounds the control
// queue of a trimming port, and only it: header-only packets past the
// bound are refused while the data queue keeps its own budget.
func TestWRRControlLimit(t *testing.T) {
	const limit = 10 * HOLen
	eg, err := Config{ControlLimit: limit}.WRR(dataplane.DefaultEgress(0, 256<<10))
	if err != nil {
		t.Fatal(err)
	}
	e, err := dataplane.NewEgress(eg)
	if err != nil {
		t.Fatal(err)
	}
	ci, di := eg.QueueIndexByName(ControlQueue), eg.QueueIndexByName(DataQueue)
	n := 0
	for e.Enqueue(ci, 0, HOLen) {
		n++
	}
	if n != 10 {
		t.Errorf("control queue took %d header-only packets, want 10 (control_limit %d bytes)", n, limit)
	}
	if got := e.Limit(di); got != 256<<10 {
		t.Errorf("data queue's limit %d, want the egress's %d", got, 256<<10)
	}
	if bad := (Config{ControlLimit: HOLen - 1}); bad.Validate(nil) == nil {
		t.Errorf("control_limit %d (below one header-only packet) accepted", HOLen-1)
	}
}
