package lab

import "testing"

// A flow whose QP gave up has no FCT, so the FCT columns leave it out:
// the table must say how many there were, or lossy RoCE's worst flows
// vanish from its row.
func TestIRNColumnsFlowsFailed(t *testing.T) {
	g := &Group{Point: map[string]string{"scheme": "roce", "cc": "none", "gbn_window": "110"}}
	for _, done := range []int{980, 974, 990} {
		g.Runs = append(g.Runs, &Run{Fabric: &FabricRun{Flows: 1000, Completed: done}})
	}
	for _, c := range irnColumns() {
		if c.Header != "flows failed" {
			continue
		}
		if got, want := c.Value(g), "20 (10–26)"; got != want {
			t.Fatalf("flows failed: %q, want %q", got, want)
		}
		return
	}
	t.Fatal("irn-fabric's table has no flows-failed column")
}
