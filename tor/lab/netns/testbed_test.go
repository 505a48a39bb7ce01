package netns_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rocetor/tor/lab"
	"rocetor/tor/lab/netns"
	"rocetor/tor/lab/netns/netnstest"
)

// TestUpFailureCleansUp: when a switch never becomes ready, up removes
// the namespaces it made and its state.
func TestUpFailureCleansUp(t *testing.T) {
	netnstest.RequireRoot(t)
	bin := t.TempDir()
	// A "tord" that fails at once, as one with a bad config would.
	if err := os.WriteFile(filepath.Join(bin, "tord"), []byte("#!/bin/sh\necho 'tord: invalid config' >&2\nexit 2\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	prefix := netnstest.Prefix("f")
	netnstest.Cleanup(t, stateDir, prefix)
	o := lab.DefaultOptions("chain")
	o.Prefix = prefix
	_, err := netns.Up(context.Background(), o, netns.UpConfig{StateDir: stateDir, Bin: bin})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "invalid config") {
		t.Fatalf("Up with a failing tord = %v, want its exit and log", err)
	}
	if left, _ := netns.ListNetns(prefix); len(left) > 0 {
		t.Errorf("namespaces left after a failed up: %v", left)
	}
	if sts, _ := netns.ListStates(stateDir); len(sts) > 0 {
		t.Errorf("state left after a failed up: %s", sts[0].Name)
	}
}

// TestUpCancelled: a cancelled up (Ctrl-C) removes what it made.
func TestUpCancelled(t *testing.T) {
	netnstest.RequireRoot(t)
	bin, _ := netnstest.BuildBin(t)
	stateDir := t.TempDir()
	prefix := netnstest.Prefix("x")
	netnstest.Cleanup(t, stateDir, prefix)
	o := lab.DefaultOptions("chain")
	o.Prefix = prefix
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel as soon as the first namespace exists.
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if n, _ := netns.ListNetns(prefix); len(n) > 0 {
				break
			}
		}
		cancel()
	}()
	_, err := netns.Up(ctx, o, netns.UpConfig{StateDir: stateDir, Bin: bin})
	if err == nil {
		t.Fatal("Up succeeded despite the cancel")
	}
	if left, _ := netns.ListNetns(prefix); len(left) > 0 {
		t.Errorf("namespaces left after a cancelled up: %v", left)
	}
}
