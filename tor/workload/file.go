package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"rocetor/dataplane"
)

// ReadSpecs reads a workload file: JSON, an object whose "workloads" is
// a list of generators, each an object of torsim's workload flags by
// name without dashes' prefix ("workload", "size", "incast",
// "incast-from", "incast-to", "incast-size", "incast-period",
// "incast-load", "count", "depth", "cdf", "load", "duration",
// "max-size", "traffic") and "start", the time its flows start from:
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
func ReadSpecs(path string, base Spec) (Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return base, err
	}
	var doc struct {
		Workloads []map[string]json.RawMessage `json:"workloads"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&doc); err != nil {
		return base, fmt.Errorf("workload file %s: %w", path, err)
	}
	if len(doc.Workloads) == 0 {
		return base, fmt.Errorf("workload file %s: no workloads", path)
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

// set sets the field a workload file's key names.
func (s *Spec) set(k string, v json.RawMessage) error {
	switch k {
	case "workload":
		return json.Unmarshal(v, &s.Name)
	case "incast-from":
		return json.Unmarshal(v, &s.IncastFrom)
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
