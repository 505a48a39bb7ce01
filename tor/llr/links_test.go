package llr

import "testing"

// TestLinks: each call on a port reaches the stage that protects it,
// and Snapshot and Config gather every stage's ports, as when
// pipeline.Owners deals a switch's links round its workers.
func TestLinks(t *testing.T) {
	a, err := NewStage(Config{Ports: 1<<0 | 1<<2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewStage(Config{Ports: 1 << 1})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLinks(a, b)
	for i, want := range []*Stage{a, b, a, nil} {
		if l.Stage(i) != want || l.Protected(i) != (want != nil) {
			t.Errorf("port %d: stage %p, want %p", i, l.Stage(i), want)
		}
	}
	if !l.SetActive(1, false) || b.Active(1) || !b.Pinned(1) || l.Active(1) {
		t.Error("SetActive(1, off) did not reach b")
	}
	if l.SetActive(3, true) || l.Release(3) || l.RequestProtection(3, 1e-3) {
		t.Error("an unprotected port took a call")
	}
	if !l.Release(1) || b.Pinned(1) {
		t.Error("Release(1) did not reach b")
	}
	a.st.Ports[2].Protected, a.st.Ports[1].Protected, b.st.Ports[1].Protected = 7, 99, 5
	a.Publish(1)
	b.Publish(1)
	st := l.Snapshot()
	if st.Ports[2].Protected != 7 || st.Ports[1].Protected != 5 {
		t.Errorf("snapshot: port 1 %d, port 2 %d protected, want 5 and 7, each from its stage", st.Ports[1].Protected, st.Ports[2].Protected)
	}
	if c := l.Config(); c.Ports != 0b111 {
		t.Errorf("config ports %b, want 111", c.Ports)
	}
}
