package dataplane

import (
	"bytes"
	"errors"
	"testing"
)

// A capture takes the frames of its point and port, up to its count, at
// their snap length, while the worker forwards everything as before.
func TestCapture(t *testing.T) {
	for _, c := range []struct {
		name  string
		port  int
		point CapturePoint
	}{{"rx", 0, CaptureRx}, {"tx", 1, CaptureTx}, {"stage", 1, CaptureStage}, {"other-port", 0, CaptureTx}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, DefaultEgress(0, 1<<20), cross{q: 2})
			cp, err := NewCapture(c.port, c.point, 0, 3, 100)
			if err != nil {
				t.Fatal(err)
			}
			if old := r.w.Capture(cp); old != nil {
				t.Fatal("a capture was armed already")
			}
			var want [][]byte
			for i := 0; i < 5; i++ {
				f := roceFrame(t, uint32(i), 200)
				want = append(want, f)
				r.ports[0].Inject(f)
			}
			for now := int64(0); r.ports[0].Pending() > 0 || r.w.Egress(1).Backlog() > 0; now += 1000 {
				r.w.Step(now)
			}
			if len(r.sent[1]) != 5 {
				t.Fatalf("forwarded %d of 5 while capturing", len(r.sent[1]))
			}
			got := cp.Frames()
			if c.name == "other-port" {
				if len(got) != 0 {
					t.Fatalf("captured %d frames transmitted on a port that sent none", len(got))
				}
				return
			}
			if len(got) != 3 || !cp.Full() {
				t.Fatalf("captured %d, full %v; want 3 and full", len(got), cp.Full())
			}
			for i, g := range got {
				if g.OrigLen != len(want[i]) || len(g.Data) != 100 || !bytes.Equal(g.Data, want[i][:100]) || g.Time.IsZero() {
					t.Errorf("frame %d: %d of %d bytes, time %v", i, len(g.Data), g.OrigLen, g.Time)
				}
			}
			if r.w.Capture(nil) != cp {
				t.Error("disarming did not return the capture")
			}
		})
	}
}

// Frames a stage emits from its poll or timers are captured as the
// stage's too.
func TestCaptureEmitted(t *testing.T) {
	src := &counter{n: 4}
	r := newRig(t, DefaultEgress(0, 1<<20), src)
	cp, _ := NewCapture(1, CaptureStage, 0, 10, 2048)
	r.w.Capture(cp)
	for now := int64(0); now < 1e6; now += 1000 {
		r.w.Step(now)
	}
	if cp.Count() != 4 || len(r.sent[1]) != 4 {
		t.Fatalf("captured %d of the %d frames the source emitted", cp.Count(), len(r.sent[1]))
	}
}

func TestCaptureLimits(t *testing.T) {
	for _, c := range [][5]int{{0, 0, 0, 0, 100}, {0, 0, 0, 10, 10}, {0, 0, 0, MaxCaptureFrames + 1, 64},
		{0, 0, 0, 1 << 16, 2048}, {-1, 0, 0, 1, 64}, {0, 7, 0, 1, 64}, {0, 2, -1, 1, 64}} {
		if _, err := NewCapture(c[0], CapturePoint(c[1]), c[2], c[3], c[4]); !errors.Is(err, ErrCapture) {
			t.Errorf("NewCapture%v: %v, want ErrCapture", c, err)
		}
	}
	for s, want := range map[string]CapturePoint{"rx": CaptureRx, "tx": CaptureTx, "stage": CaptureStage} {
		if p, err := ParseCapturePoint(s); err != nil || p != want {
			t.Errorf("%s: %v %v", s, p, err)
		}
	}
	if _, err := ParseCapturePoint("ingress"); err == nil {
		t.Error("ingress accepted")
	}
}

// A full capture costs the worker nothing more: no allocation per batch.
func TestCaptureAllocs(t *testing.T) {
	r := newRig(t, DefaultEgress(0, 1<<20), cross{q: 2})
	r.ports[1].OnTransmit = nil
	cp, _ := NewCapture(0, CaptureRx, 0, 64, 128)
	r.w.Capture(cp)
	f := roceFrame(t, 1, 1000)
	now := int64(0)
	allocs := testing.AllocsPerRun(100, func() {
		for i := 0; i < 32; i++ {
			r.ports[0].Inject(f)
		}
		now += 1000
		r.w.Step(now)
	})
	if allocs != 0 {
		t.Fatalf("Step allocates %.1f times per batch while capturing", allocs)
	}
}
