package netnstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"rocetor/tor/lab/netns"
)

// RequireRoot skips a privileged test with the reason.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces, veths and XDP")
	}
	for _, tool := range []string{"ip", "ping", "ethtool", "sysctl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in PATH", tool)
		}
	}
}

// Prefix is a namespace prefix no other test binary or engineer uses.
func Prefix(tag string) string { return fmt.Sprintf("rtbt%d%s-", os.Getpid(), tag) }

// BuildBin builds tord, and roceperf when its package builds, into a
// temporary folder; it reports whether roceperf is there.
func BuildBin(t testing.TB) (dir string, roceperf bool) {
	t.Helper()
	dir = t.TempDir()
	start := time.Now()
	if _, err := netns.Binaries(context.Background(), "", "", dir, nil, "tord"); err != nil {
		t.Fatal(err)
	}
	src, err := netns.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "cmd", "roceperf")); err == nil {
		if _, err := netns.Binaries(context.Background(), "", src, dir, nil, "roceperf"); err != nil {
			t.Logf("roceperf does not build yet, skipping the experiment: %v", err)
		} else {
			roceperf = true
		}
	}
	t.Logf("built binaries in %v", time.Since(start).Round(time.Millisecond))
	return dir, roceperf
}

// Cleanup removes whatever the test left with its prefix, also when it
// failed half way, and checks nothing stays.
func Cleanup(t testing.TB, stateDir, prefix string) {
	t.Cleanup(func() {
		if err := netns.Down(stateDir, prefix, nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if left, _ := netns.ListNetns(prefix); len(left) > 0 {
			t.Errorf("namespaces left after cleanup: %v", left)
		}
	})
}
