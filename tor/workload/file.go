package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"rocetor/dataplane"
)

// ReadSpecs reads a workload file: JSON, an object whose "workloads" is
// a list of generators, each an object of torsim's workload flags by
// name without dashes' prefix ("workload", "size", "incast",
// "incast-from", "incast-to", "incast-size", "incast-period",
// "incast-load", "count", "depth", "cdf", "load", "duration",
// "max-size", "traffic"; "groups", Spec.Groups, the file's alone) and
// "start", the time its flows start from:
//
//	{"workloads": [
//	  {"workload": "poisson", "cdf": "websearch", "load": 0.5, "duration": "1ms"},
//	  {"workload": "incast", "start": "200us", "incast": 8, "incast-from": "racks",
//	   "incast-size": "64KB", "incast-period": "100us", "duration": "800us"}
//	]}
//
// Sizes are numbers of bytes or strings with units ("64KB", "1MiB"),
// durations strings as Go writes them ("10us", "1ms"), "incast-to" a
// host index or "random". What an entry leaves out it takes from base
// (the command line's flags). The result runs the entries in order
// (Spec.Parts).
//
// The files an entry names ("traffic", and "cdf" when it is not a
// built-in distribution) are relative to the working directory, as on
// the command line, unless the file says "relative_paths": true beside
// "workloads": then they are relative to the workload file's
// directory. torsim sweep-pack writes its copies so (Pack), that they
// read their files wherever the bundle is mounted.
func ReadSpecs(path string, base Spec) (Spec, error) {
	doc, err := readFile(path)
	if err != nil {
		return base, err
	}
	if doc.Relative {
		for i, e := range doc.Workloads {
			if err := entryPaths(e, doc.resolve(path), func(_, p string) (string, error) { return p, nil }); err != nil {
				return base, fmt.Errorf("workload file %s: entry %d: %w", path, i+1, err)
			}
		}
	}
	out := base
	out.Parts = nil
	for i, e := range doc.Workloads {
		p := base
		p.Parts, p.Start, p.Background = nil, 0, false
		for k, v := range e {
			if err := p.set(k, v); err != nil {
				return base, fmt.Errorf("workload file %s: entry %d: %s: %w", path, i+1, k, err)
			}
		}
		if _, ok := e["workload"]; !ok {
			return base, fmt.Errorf("workload file %s: entry %d: no \"workload\"", path, i+1)
		}
		out.Parts = append(out.Parts, p)
	}
	return out, nil
}

// fileDoc is a workload file.
type fileDoc struct {
	// Relative says the paths the entries name are relative to the
	// file's directory; without it, to the working directory.
	Relative  bool                         `json:"relative_paths,omitempty"`
	Workloads []map[string]json.RawMessage `json:"workloads"`
}

// readFile reads the workload file at path.
func readFile(path string) (fileDoc, error) {
	var doc fileDoc
	b, err := os.ReadFile(path)
	if err != nil {
		return doc, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&doc); err != nil {
		return doc, fmt.Errorf("workload file %s: %w", path, err)
	}
	if len(doc.Workloads) == 0 {
		return doc, fmt.Errorf("workload file %s: no workloads", path)
	}
	return doc, nil
}

// resolve returns where a path the file at path names lies from the
// working directory.
func (d *fileDoc) resolve(path string) func(string) string {
	return func(p string) string {
		if !d.Relative || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(path), p)
	}
}

// entryPaths replaces each file entry e names, resolved, by f(key, the
// file): "traffic", and "cdf" when it is not a built-in distribution's
// name (LoadCDF's order).
func entryPaths(e map[string]json.RawMessage, resolve func(string) string, f func(key, path string) (string, error)) error {
	for _, k := range []string{"cdf", "traffic"} {
		var v string
		if raw, ok := e[k]; !ok || json.Unmarshal(raw, &v) != nil || v == "" {
			continue
		}
		if _, err := cdfs.ReadFile("cdf/" + v + ".txt"); k == "cdf" && err == nil {
			continue
		}
		np, err := f(k, resolve(v))
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		e[k], _ = json.Marshal(np)
	}
	return nil
}

// Pack returns a copy of the workload file at path that names each
// file its entries name (the traffic and CDF files) by add(key, the
// file's path), and says "relative_paths": true: torsim sweep-pack
// bundles each such file beside the copy and add returns its name
// there, so the copy reads them wherever the bundle lies (ReadSpecs).
func Pack(path string, add func(key, path string) (string, error)) ([]byte, error) {
	doc, err := readFile(path)
	if err != nil {
		return nil, err
	}
	for i, e := range doc.Workloads {
		if err := entryPaths(e, doc.resolve(path), add); err != nil {
			return nil, fmt.Errorf("workload file %s: entry %d: %w", path, i+1, err)
		}
	}
	doc.Relative = true
	b, err := json.MarshalIndent(doc, "", " ")
	return append(b, '\n'), err
}

// set sets the field a workload file's key names.
func (s *Spec) set(k string, v json.RawMessage) error {
	switch k {
	case "workload":
		return json.Unmarshal(v, &s.Name)
	case "incast-from":
		return json.Unmarshal(v, &s.IncastFrom)
	case "groups":
		return json.Unmarshal(v, &s.Groups)
	case "cdf":
		return json.Unmarshal(v, &s.CDF)
	case "traffic":
		return json.Unmarshal(v, &s.Traffic)
	case "incast":
		return json.Unmarshal(v, &s.Incast)
	case "count":
		return json.Unmarshal(v, &s.Count)
	case "depth":
		return json.Unmarshal(v, &s.Depth)
	case "load":
		return json.Unmarshal(v, &s.Load)
	case "incast-load":
		return json.Unmarshal(v, &s.IncastLoad)
	case "size":
		return jsonBytes(v, &s.Size)
	case "incast-size":
		return jsonBytes(v, &s.IncastSize)
	case "max-size":
		return jsonBytes(v, &s.MaxSize)
	case "start":
		return jsonDuration(v, &s.Start)
	case "duration":
		return jsonDuration(v, &s.Duration)
	case "incast-period":
		return jsonDuration(v, &s.IncastPeriod)
	case "incast-to":
		var str string
		if json.Unmarshal(v, &str) == nil {
			return s.SetIncastTo(str)
		}
		return json.Unmarshal(v, &s.IncastTo)
	}
	return fmt.Errorf("unknown key")
}

// SetIncastTo sets IncastTo from a host index or "random".
func (s *Spec) SetIncastTo(v string) error {
	if v == "random" {
		s.IncastTo = -1
		return nil
	}
	h, err := strconv.Atoi(v)
	if err != nil || h < 0 {
		return fmt.Errorf("incast-to %q: want a host index or random", v)
	}
	s.IncastTo = h
	return nil
}

func jsonBytes(v json.RawMessage, p *int) error {
	var n int
	if json.Unmarshal(v, &n) == nil {
		*p = n
		return nil
	}
	var str string
	if err := json.Unmarshal(v, &str); err != nil {
		return fmt.Errorf("want bytes, a number or a string such as \"64KB\"")
	}
	var b dataplane.Bytes
	if err := b.UnmarshalText([]byte(str)); err != nil {
		return err
	}
	*p = int(b)
	return nil
}

func jsonDuration(v json.RawMessage, p *time.Duration) error {
	var str string
	if err := json.Unmarshal(v, &str); err != nil {
		return fmt.Errorf("want a duration such as \"10us\"")
	}
	d, err := time.ParseDuration(str)
	if err != nil {
		return err
	}
	*p = d
	return nil
}
