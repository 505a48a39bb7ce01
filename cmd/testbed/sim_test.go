package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"rocetor/tor/lab"
)

// TestSimPassesArgs: testbed sim hands torsim its arguments as they
// are, after its own --bin, and without arguments is a usage error.
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
	if err := cmdSim(context.Background(), []string{"--bin", dir, "dcp-loss"}, &out, &errb); !errors.Is(err, lab.ErrUsage) {
		t.Fatalf("an experiment with --bin: %v, want a usage error (it runs from the source tree)", err)
	}
}
