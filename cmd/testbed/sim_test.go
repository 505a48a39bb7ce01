package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rocetor/tor/lab"
)

// TestSimPassesArgs: testbed sim hands torsim its arguments as they
// are, after its own --bin, an experiment of the catalogue as torsim
// run, and without arguments is a usage error.
func TestSimPassesArgs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "torsim"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := cmdSim(context.Background(), []string{"--bin", dir, "--topo", "fattree:k=4", "--out=x"}, &out, &errb)
	if err != nil || out.String() != "--topo fattree:k=4 --out=x\n" {
		t.Fatalf("torsim got %q (%v), want its arguments as given", out.String(), err)
	}
	if err := cmdSim(context.Background(), []string{"--bin=" + dir}, &out, &errb); !errors.Is(err, lab.ErrUsage) {
		t.Fatalf("no arguments: %v, want a usage error", err)
	}
	out.Reset()
	if err := cmdSim(context.Background(), []string{"--bin", dir, "dcp-loss", "--losses", "0.01"}, &out, &errb); err != nil ||
		out.String() != "run dcp-loss --losses 0.01\n" {
		t.Fatalf("an experiment: torsim got %q (%v), want torsim run and the experiment's arguments", out.String(), err)
	}
	if err := cmdSim(context.Background(), []string{"--bin", dir, "dcp-loss", "out", "rec.json"}, &out, &errb); !errors.Is(err, lab.ErrUsage) ||
		!strings.Contains(err.Error(), "--against RECORD") {
		t.Fatalf("the old OUT RECORD form: %v, want a usage error naming its replacement", err)
	}
}
