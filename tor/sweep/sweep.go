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

// ErrSweep is what every error of a sweep file wraps.
var ErrSweep = errors.New("sweep")

// File is the sweep file, JSON: {"common": [flags every cell takes],
// "cells": [[flags of cell 0], [flags of cell 1], …]}. Relative is set
// by Pack: the cells' relative paths are relative to the sweep file's
// directory (Resolve), not to where torsim runs.
type File struct {
	Common   []string   `json:"common"`
	Cells    [][]string `json:"cells"`
	Relative bool       `json:"relative_paths,omitempty"`
}

// Read reads the sweep file at path.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSweep, err)
	}
	var s File
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrSweep, path, err)
	}
	if len(s.Cells) == 0 {
		return nil, fmt.Errorf("%w %s: no cells", ErrSweep, path)
	}
	return &s, nil
}

// Args returns cell i's command line: the common flags, then the
// cell's.
func (s *File) Args(i int) []string {
	return append(append([]string(nil), s.Common...), s.Cells[i]...)
}

// Kind is what a flag's value names, read from the argument name its
// usage back-quotes.
type Kind uint8

// Kinds.
const (
	None       Kind = iota // no file, or an output (`DIR`, `OUT`)
	Path                   // `FILE`: the value is a path
	NameOrPath             // `NAME|FILE`: a path when a file of that name exists, else a built-in name
	KeyPath                // `NAME=FILE`: the path after the first '='
	Prefixed               // `SHAPE|file:PATH`: the path after "file:" or "ns3:"
)

// KindOf returns what fl's value names, by its usage's back-quoted
// argument name.
func KindOf(fl *flag.Flag) Kind {
	name, _ := flag.UnquoteUsage(fl)
	switch {
	case strings.Contains(name, "file:PATH"):
		return Prefixed
	case strings.Contains(name, "=FILE"):
		return KeyPath
	case strings.Contains(name, "|FILE"):
		return NameOrPath
	case name == "FILE":
		return Path
	}
	return None
}

// Marked reports whether fl's usage says what its value is: an input
// kind, an output named `DIR` or `OUT`, or `NAME`, a value that is
// never a file (--workload's "file" is a name).
func Marked(fl *flag.Flag) bool {
	name, _ := flag.UnquoteUsage(fl)
	return KindOf(fl) != None || name == "DIR" || name == "OUT" || name == "NAME"
}

// mentionsFile matches a usage that speaks of a file, a path or YAML:
// such a flag must be Marked.
var mentionsFile = regexp.MustCompile(`(?i)\b(file|path|yaml|directory|dir)\b`)

// Unmarked returns the flags of fs whose usage speaks of a file but
// does not say what their value is: the flags Pack would miss.
func Unmarked(fs *flag.FlagSet) []string {
	var out []string
	fs.VisitAll(func(fl *flag.Flag) {
		if mentionsFile.MatchString(fl.Usage) && !Marked(fl) {
			out = append(out, fl.Name)
		}
	})
	return out
}

// pathOf splits v, a value of kind k, into what comes before its path,
// the path, and ok false when v names no file. exists tells NameOrPath
// a file from a name.
func pathOf(k Kind, v string, exists func(string) bool) (prefix, path string, ok bool) {
	switch k {
	case Path:
		return "", v, v != ""
	case NameOrPath:
		return "", v, v != "" && exists(v)
	case KeyPath:
		key, p, ok := strings.Cut(v, "=")
		return key + "=", p, ok && p != ""
	case Prefixed:
		for _, pre := range []string{"file:", "ns3:"} {
			if p, ok := strings.CutPrefix(v, pre); ok && p != "" {
				return pre, p, true
			}
		}
	}
	return "", "", false
}

// Rewrite returns args with the path in every file-valued flag's value
// replaced by f(flag, path). A flag is --name=value, --name value or
// the single-dash forms; boolean flags take no separate value; a flag
// fs does not know is an error, as torsim would refuse it.
func Rewrite(fs *flag.FlagSet, args []string, exists func(string) bool, f func(flag, path string) (string, error)) ([]string, error) {
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			continue
		}
		name, v, inline := strings.Cut(strings.TrimLeft(a, "-"), "=")
		fl := fs.Lookup(name)
		if fl == nil {
			return nil, fmt.Errorf("%w: %s: no such flag", ErrSweep, a)
		}
		vi := i
		if !inline {
			if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			if i+1 >= len(out) {
				return nil, fmt.Errorf("%w: %s: no value", ErrSweep, a)
			}
			vi, v = i+1, out[i+1]
			i++
		}
		pre, p, ok := pathOf(KindOf(fl), v, exists)
		if !ok {
			continue
		}
		np, err := f(name, p)
		if err != nil {
			return nil, err
		}
		if inline {
			out[vi] = a[:len(a)-len(v)] + pre + np
		} else {
			out[vi] = pre + np
		}
	}
	return out, nil
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Resolve makes a packed sweep's relative paths relative to dir, the
// sweep file's directory; a sweep that is not Relative is left alone.
func (s *File) Resolve(fs *flag.FlagSet, dir string) error {
	if !s.Relative {
		return nil
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	exists := func(p string) bool { return fileExists(abs(p)) }
	to := func(_, p string) (string, error) { return abs(p), nil }
	var err error
	if s.Common, err = Rewrite(fs, s.Common, exists, to); err != nil {
		return err
	}
	for i := range s.Cells {
		if s.Cells[i], err = Rewrite(fs, s.Cells[i], exists, to); err != nil {
			return fmt.Errorf("cell %d: %w", i, err)
		}
	}
	s.Relative = false
	return nil
}
