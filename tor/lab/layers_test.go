package lab

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLayers keeps the tree's layers (docs/architecture.md, "The lab"):
// the switch stages, their assembly and their metrics import neither the
// NIC nor the simulator's fabric nor the lab; the lab imports neither of
// its backends; only commands import commands' packages.
func TestLayers(t *testing.T) {
	above := map[string]bool{"tor/fabric": true, "tor/workload": true, "tor/topo": true}
	imports := map[string][]string{} // package folder → rocetor imports
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel("../..", filepath.Dir(path))
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if rest, ok := strings.CutPrefix(p, "rocetor/"); ok {
				imports[filepath.ToSlash(dir)] = append(imports[filepath.ToSlash(dir)], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	under := func(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }
	if len(imports["tor/pipeline"]) == 0 {
		t.Fatal("read no imports of tor/pipeline: wrong module root?")
	}
	for pkg, ims := range imports {
		for _, im := range ims {
			switch {
			case under(im, "cmd") && !under(pkg, "cmd"):
				t.Errorf("%s imports %s: only commands import commands' packages", pkg, im)
			case under(pkg, "tor") && !under(pkg, "tor/lab") && !above[pkg] &&
				(under(im, "nic") || under(im, "tor/lab") || above[im]):
				t.Errorf("%s imports %s: switch stages, tor/pipeline and tor/telemetry stay below the NIC, the simulator's fabric and the lab", pkg, im)
			case pkg == "tor/lab" && under(im, "tor/lab/"):
				t.Errorf("tor/lab imports its backend %s", im)
			}
		}
	}
}
