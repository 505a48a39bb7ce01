package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"rocetor/tor/lab"
)

// ErrNoSource is returned when a binary must be built but the rocetor
// source tree cannot be found.
var ErrNoSource = errors.New("rocetor source tree not found")

// Binaries returns a folder holding the named commands (tord, roceperf):
// bin itself when the user gave one (each must be there), else dst,
// where they are built from the source tree at src (or the one the
// working directory is in). A command already in dst is not rebuilt.
func Binaries(ctx context.Context, bin, src, dst string, out io.Writer, names ...string) (string, error) {
	if bin != "" {
		for _, n := range names {
			if fi, err := os.Stat(filepath.Join(bin, n)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				return "", lab.Usagef("--bin %s: no executable %s there", bin, n)
			}
		}
		return filepath.Abs(bin)
	}
	if src == "" {
		var err error
		if src, err = FindModuleRoot(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", fmt.Errorf("binaries folder: %w", err)
	}
	for _, n := range names {
		target := filepath.Join(dst, n)
		if _, err := os.Stat(target); err == nil {
			continue
		}
		pkg := "./cmd/" + n
		if _, err := os.Stat(filepath.Join(src, "cmd", n)); err != nil {
			return "", fmt.Errorf("build %s: %s has no cmd/%s (pass --bin DIR with a built %s)", n, src, n, n)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", target, pkg)
		cmd.Dir = src
		o, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return "", fmt.Errorf("go build -o %s %s (in %s): %w\n%s", target, pkg, src, err, o)
		}
		if out != nil {
			fmt.Fprintf(out, "testbed: built %s in %v\n", n, time.Since(start).Round(100*time.Millisecond))
		}
	}
	return filepath.Abs(dst)
}

// FindModuleRoot walks up from the working directory to the go.mod of
// module rocetor.
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
					if strings.TrimSpace(strings.TrimPrefix(line, "module ")) == "rocetor" {
						f.Close()
						return dir, nil
					}
					break
				}
			}
			f.Close()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w above the working directory: run testbed from the rocetor tree, or pass --src DIR or --bin DIR", ErrNoSource)
		}
		dir = parent
	}
}
