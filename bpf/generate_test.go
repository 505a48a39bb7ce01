package bpf

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedUpToDate regenerates the XDP object with bpf2go, as
// `go generate ./bpf` does, and checks it equals the committed one, so
// the committed object cannot drift from xdp.c. It needs clang.
func TestGeneratedUpToDate(t *testing.T) {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Skip("clang not installed (apt-get install clang libbpf-dev): cannot regenerate the XDP object")
	}
	src, err := os.ReadFile("gen.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate go run "); ok {
			args = splitArgs(rest)
		}
	}
	if len(args) == 0 {
		t.Fatal("no //go:generate line in gen.go")
	}
	dir := t.TempDir()
	// Insert -output-dir before the positional identifier and source.
	n := len(args)
	cmd := append([]string{"run"}, args[:n-2]...)
	cmd = append(cmd, "-output-dir", dir, args[n-2], args[n-1])
	c := exec.Command("go", cmd...)
	c.Env = append(os.Environ(), "GOPACKAGE=bpf", "GOFILE=gen.go")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("bpf2go: %v\n%s", err, out)
	}
	for _, f := range []string{"xdp_bpfel.o", "xdp_bpfel.go"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from a fresh `go generate ./bpf`: regenerate and commit it", f)
		}
	}
}

// splitArgs splits a go:generate line on spaces, keeping quoted strings
// together without their quotes.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, have = !quoted, true
		case r == ' ' && !quoted:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}
