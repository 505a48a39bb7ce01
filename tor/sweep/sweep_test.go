package sweep

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func testFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("topo", "chain", "topology `SHAPE|file:PATH`")
	fs.String("switch", "", "switch YAML `FILE`")
	fs.Func("switch-for", "`NAME=FILE`: switch NAME from FILE", func(string) error { return nil })
	fs.String("cdf", "websearch", "sizes (`NAME|FILE`)")
	fs.String("out", "", "`DIR` for the results")
	fs.String("transport", "gbn", "loss recovery")
	fs.Bool("quiet", false, "no progress")
	return fs
}

// TestKinds: the back-quoted argument name says what a flag's value
// names; Unmarked finds a flag that speaks of a file without saying.
func TestKinds(t *testing.T) {
	fs := testFlags()
	want := map[string]Kind{"topo": Prefixed, "switch": Path, "switch-for": KeyPath, "cdf": NameOrPath, "out": None, "transport": None}
	for name, k := range want {
		if got := KindOf(fs.Lookup(name)); got != k {
			t.Errorf("--%s: kind %d, want %d", name, got, k)
		}
	}
	if u := Unmarked(fs); len(u) != 0 {
		t.Errorf("unmarked %v", u)
	}
	fs.String("link-loss", "", "per-link loss rates from a file")
	if u := Unmarked(fs); !slices.Equal(u, []string{"link-loss"}) {
		t.Errorf("unmarked %v, want [link-loss]", u)
	}
}

// TestPack: every file a cell names is copied once, flat, under a key
// of its own; the packed sweep runs from wherever the bundle is, the
// originals gone; a missing file is an error at packing.
func TestPack(t *testing.T) {
	src := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(src, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sw := write("sw.yaml", "ecn: {}\n")
	sw2 := write("other/sw.yaml", "pfc: {}\n")
	tp := write("my topo.topo", "node h1 host\n")
	cdf := write("sizes.cdf", "1 1\n")
	sweepPath := write("sweep.json", `{"common": ["--switch", "`+sw+`", "--quiet"],
	 "cells": [["--topo=file:`+tp+`", "--cdf", "websearch"], ["--switch-for", "tor*=`+sw2+`", "--cdf=`+cdf+`"], ["--topo", "fattree:k=4", "--switch", "`+sw+`"]]}`)
	out := filepath.Join(t.TempDir(), "bundle")
	p, err := Pack(testFlags(), sweepPath, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range p.Files {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(keys, []string{"my_topo.topo", "sizes.cdf", "sw-2.yaml", "sw.yaml"}) {
		t.Fatalf("bundle %v", p.Files)
	}
	s, err := Read(p.Sweep)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Args(0), " ") + " | " + strings.Join(s.Args(1), " ") + " | " + strings.Join(s.Args(2), " "); got !=
		"--switch sw.yaml --quiet --topo=file:my_topo.topo --cdf websearch | --switch sw.yaml --quiet --switch-for tor*=sw-2.yaml --cdf=sizes.cdf | "+
			"--switch sw.yaml --quiet --topo fattree:k=4 --switch sw.yaml" {
		t.Errorf("packed cells %s", got)
	}
	// Moved elsewhere, the originals gone: the paths resolve to the
	// bundle.
	moved := filepath.Join(t.TempDir(), "mnt")
	if err := os.Rename(out, moved); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(src)
	s, err = Read(filepath.Join(moved, "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Resolve(testFlags(), moved); err != nil {
		t.Fatal(err)
	}
	a := s.Args(1)
	if a[1] != filepath.Join(moved, "sw.yaml") || a[4] != "tor*="+filepath.Join(moved, "sw-2.yaml") || a[5] != "--cdf="+filepath.Join(moved, "sizes.cdf") {
		t.Errorf("resolved %q", a)
	}
	if s.Args(0)[4] != "--cdf" || s.Args(0)[5] != "websearch" {
		t.Errorf("a built-in name became a path: %q", s.Args(0))
	}
	bad := write("bad.json", `{"cells": [["--switch", "`+filepath.Join(src, "none.yaml")+`"]]}`)
	if _, err := Pack(testFlags(), bad, t.TempDir(), nil); !errors.Is(err, ErrSweep) || !strings.Contains(err.Error(), "cell 0: sweep: --switch") {
		t.Errorf("missing file: %v", err)
	}
}

// TestNaturalCompare: cell-10 after cell-9, as people number.
func TestNaturalCompare(t *testing.T) {
	s := []string{"r/cell-10/result.json", "r/cell-9/result.json", "r/cell-1/result.json", "r/cell-0/result.json", "r/cell-02/x", "a"}
	slices.SortFunc(s, NaturalCompare)
	want := []string{"a", "r/cell-0/result.json", "r/cell-1/result.json", "r/cell-02/x", "r/cell-9/result.json", "r/cell-10/result.json"}
	if !slices.Equal(s, want) {
		t.Errorf("got %q", s)
	}
}

// TestLabels: a command line is named by what sets it apart.
func TestLabels(t *testing.T) {
	cmds := []string{"torsim --topo chain --load 0.3 --transport irn --out d/cell-0",
		"torsim --topo chain --load=0.5 --transport irn --out d/cell-1",
		"torsim --topo chain --load 0.3 --transport gbn --quiet --out d/cell-2"}
	if got := Labels(cmds, "out", "quiet"); !slices.Equal(got, []string{"load=0.3 transport=irn", "load=0.5 transport=irn", "load=0.3 transport=gbn"}) {
		t.Errorf("labels %q", got)
	}
	if got := Labels(cmds, "out", "quiet", "load"); !slices.Equal(got, []string{"transport=irn", "transport=irn", "transport=gbn"}) {
		t.Errorf("labels without load %q", got)
	}
	if v, ok := FlagValue(cmds[1], "load"); !ok || v != 0.5 {
		t.Errorf("load %v %v", v, ok)
	}
}
