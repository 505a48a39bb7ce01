package sweep

import (
	"encoding/json"
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

// Pack writes a self-contained copy of the sweep at path into the
// directory out: sweep.json and every file a cell names through a
// file-valued flag of fs (KindOf), flat, each under a ConfigMap key of
// its own, with the cells' paths rewritten to those keys and the sweep
// marked Relative, so that it runs wherever the directory is mounted
// (torsim --sweep DIR/sweep.json). A file named twice is copied once.
// Paths in the source sweep are relative to the working directory, as
// torsim runs them, or to the sweep's directory if it is itself
// packed. A file a cell names that does not exist is an error here,
// not in a pod.
func Pack(fs *flag.FlagSet, path, out string) (*Packed, error) {
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
	add := func(fl, src string) (string, error) {
		abs, err := filepath.Abs(src)
		if err != nil {
			return "", err
		}
		if k, ok := byAbs[abs]; ok {
			return k, nil
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("%w: --%s %s: %w", ErrSweep, fl, src, err)
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
	packed := File{Relative: true}
	if packed.Common, err = Rewrite(fs, s.Common, fileExists, add); err != nil {
		return nil, fmt.Errorf("common: %w", err)
	}
	for i := range s.Cells {
		c, err := Rewrite(fs, s.Cells[i], fileExists, add)
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
