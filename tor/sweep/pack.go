package sweep

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ConfigMapLimit is the most a ConfigMap holds: etcd's 1 MiB object
// limit, keys and values together.
const ConfigMapLimit = 1 << 20

// Packed is what Pack wrote: the bundle's files by key (the name in
// the bundle, a ConfigMap key) with the path each came from, and their
// size with the sweep file's.
type Packed struct {
	Sweep string            // the packed sweep file
	Files map[string]string // key → source path
	Bytes int64
}

var badKey = regexp.MustCompile(`[^-._a-zA-Z0-9]`)

// Follow makes the bundled copy of a file that itself names files (a
// torsim workload file's CDF and traffic files): given the file's path
// and add, which bundles the file at a path (what names it, for
// errors) and returns its key, it returns the copy's content, its
// paths rewritten to those keys, which lie in the copy's directory.
type Follow func(path string, add func(what, path string) (string, error)) ([]byte, error)

// Pack writes a self-contained copy of the sweep at path into the
// directory out: sweep.json and every file a cell names through a
// file-valued flag of fs (KindOf), flat, each under a ConfigMap key of
// its own, with the cells' paths rewritten to those keys and the sweep
// marked Relative, so that it runs wherever the directory is mounted
// (torsim --sweep DIR/sweep.json). A file named twice is copied once.
// Paths in the source sweep are relative to the working directory, as
// torsim runs them, or to the sweep's directory if it is itself
// packed. A file a cell names that does not exist is an error here,
// not in a pod. The file of a flag in follow is bundled as its Follow
// makes it, with the files it names.
func Pack(fs *flag.FlagSet, path, out string, follow map[string]Follow) (*Packed, error) {
	s, err := Read(path)
	if err != nil {
		return nil, err
	}
	if err := s.Resolve(fs, filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	p := &Packed{Sweep: filepath.Join(out, "sweep.json"), Files: map[string]string{}}
	byAbs := map[string]string{}
	// add bundles src, which what (a flag, or a file's key) names;
	// follow is how to copy it, nil for as it is.
	var add func(what, src string, follow Follow) (string, error)
	add = func(what, src string, follow Follow) (string, error) {
		abs, err := filepath.Abs(src)
		if err != nil {
			return "", err
		}
		if k, ok := byAbs[abs]; ok {
			return k, nil
		}
		var b []byte
		if follow == nil {
			b, err = os.ReadFile(src)
		} else {
			b, err = follow(src, func(inner, p string) (string, error) {
				return add(what+" "+src+": "+inner, p, nil)
			})
		}
		if err != nil {
			if errors.Is(err, ErrSweep) {
				return "", err
			}
			return "", fmt.Errorf("%w: %s %s: %w", ErrSweep, what, src, err)
		}
		base := strings.TrimLeft(badKey.ReplaceAllString(filepath.Base(src), "_"), ".")
		if base == "" {
			base = "file"
		}
		key := base
		for n := 2; p.Files[key] != "" || key == "sweep.json"; n++ {
			ext := filepath.Ext(base)
			key = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(base, ext), n, ext)
		}
		if err := os.WriteFile(filepath.Join(out, key), b, 0o644); err != nil {
			return "", err
		}
		p.Files[key], byAbs[abs] = src, key
		p.Bytes += int64(len(key) + len(b))
		return key, nil
	}
	flagAdd := func(fl, src string) (string, error) { return add("--"+fl, src, follow[fl]) }
	packed := File{Relative: true}
	if packed.Common, err = Rewrite(fs, s.Common, fileExists, flagAdd); err != nil {
		return nil, fmt.Errorf("common: %w", err)
	}
	for i := range s.Cells {
		c, err := Rewrite(fs, s.Cells[i], fileExists, flagAdd)
		if err != nil {
			return nil, fmt.Errorf("cell %d: %w", i, err)
		}
		packed.Cells = append(packed.Cells, c)
	}
	b, err := json.MarshalIndent(packed, "", " ")
	if err != nil {
		return nil, err
	}
	p.Bytes += int64(len("sweep.json") + len(b) + 1)
	return p, os.WriteFile(p.Sweep, append(b, '\n'), 0o644)
}
