package lab

import (
	"slices"
	"strings"
	"testing"
)

// TestRecordedFlags: a recorded command line gives back the experiment's
// own flags, in order, and none of the backends' or the output's.
func TestRecordedFlags(t *testing.T) {
	exp, _ := Lookup("netrt-loss")
	got := RecordedFlags(exp, "testbed run netrt-loss --bin /x/bin --reuse --losses 0.01,0.05 --json cells.json --netrt=false --count 20 --keep --prefix rtb-a- --sizes=1000")
	want := []string{"--losses", "0.01,0.05", "--netrt=false", "--count", "20", "--sizes=1000"}
	if !slices.Equal(got, want) {
		t.Errorf("RecordedFlags = %q, want %q", got, want)
	}
}

// TestCompare: cells are matched by their keys whatever their order,
// each figure is set beside its twin, and a cell only one side has is
// listed with "–" for the other.
func TestCompare(t *testing.T) {
	type mode struct {
		Retx int `json:"e2e_retx"`
	}
	type cell struct {
		Loss  float64 `json:"loss"`
		Size  int     `json:"size"`
		NetRT mode    `json:"netrt"`
	}
	sim := &Results{Experiment: "netrt-loss", Backend: "torsim", Cells: []cell{{0.01, 1000, mode{0}}, {0.05, 1000, mode{1}}}}
	tb := &Results{Experiment: "netrt-loss", Cells: []cell{{0.05, 1000, mode{3}}, {0.01, 1000, mode{2}}, {0.1, 1000, mode{9}}}}
	tab, err := Compare(sim, tb, []string{"netrt.e2e_retx"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"loss", "size", "netrt.e2e_retx torsim", "netrt.e2e_retx testbed"}; !slices.Equal(tab.Columns, want) {
		t.Errorf("columns %q, want %q", tab.Columns, want)
	}
	var rows []string
	for _, r := range tab.Rows {
		rows = append(rows, strings.Join(r, " "))
	}
	if want := []string{"0.01 1000 0 2", "0.05 1000 1 3", "0.1 1000 – 9"}; !slices.Equal(rows, want) {
		t.Errorf("rows %q, want %q", rows, want)
	}
	if _, err := Compare(sim, &Results{Experiment: "sr-loss", Cells: []cell{}}, nil); err == nil {
		t.Error("two experiments compared")
	}
	// Without columns: every number both have.
	if tab, _ = Compare(sim, tb, nil); !slices.Contains(tab.Columns, "netrt.e2e_retx torsim") {
		t.Errorf("columns %q lack netrt.e2e_retx", tab.Columns)
	}
}
