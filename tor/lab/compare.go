package lab

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Comparable is an experiment that names the figures of its cells that
// say most — what a reader holds the simulator against the testbed by
// (Compare). Without it Compare sets every number side by side.
type Comparable interface {
	// Compared are paths into a cell, dots between the JSON names of
	// nested objects: "netrt.fct_us.mean".
	Compared() []string
}

// cellKeys are the fields that tell an experiment's cells apart, in the
// order they appear in every experiment's cells: what Compare matches
// cells by.
var cellKeys = []string{"transport", "mode", "loss", "size", "qps", "senders", "degree"}

// Compare sets the cells of two results of one experiment side by side,
// matched by their key fields (transport, mode, loss, size, …): for each
// figure in columns (nil: every number both have), a's value then b's.
// Cells that only one of them has are listed with "–" for the other.
// It is what `torsim run NAME --against RECORD` prints: the simulator's
// cells beside a testbed record's, column for column.
func Compare(a, b *Results, columns []string) (Table, error) {
	if a.Experiment != b.Experiment {
		return Table{}, Usagef("cannot compare %s with a record of %s", a.Experiment, b.Experiment)
	}
	ca, err := cellMaps(a)
	if err != nil {
		return Table{}, err
	}
	cb, err := cellMaps(b)
	if err != nil {
		return Table{}, err
	}
	if len(ca) == 0 || len(cb) == 0 {
		return Table{}, fmt.Errorf("compare %s: a result has no cells", a.Experiment)
	}
	keys := presentKeys(append(slices.Clone(ca), cb...))
	byKey := map[string]map[string]any{}
	for _, c := range cb {
		byKey[cellKey(c, keys)] = c
	}
	if columns == nil {
		columns = sharedNumbers(ca[0], cb[0], keys)
	}
	na, nb := cmp.Or(a.Backend, "testbed"), cmp.Or(b.Backend, "testbed")
	if na == nb {
		na, nb = na+" (a)", nb+" (b)"
	}
	t := Table{Columns: slices.Clone(keys)}
	for _, c := range columns {
		t.Columns = append(t.Columns, c+" "+na, c+" "+nb)
	}
	seen := map[string]bool{}
	row := func(x, y map[string]any) {
		var r []string
		either := x
		if either == nil {
			either = y
		}
		for _, k := range keys {
			r = append(r, keyString(either[k]))
		}
		for _, c := range columns {
			r = append(r, figure(x, c), figure(y, c))
		}
		t.Rows = append(t.Rows, r)
	}
	for _, c := range ca {
		k := cellKey(c, keys)
		seen[k] = true
		row(c, byKey[k])
	}
	for _, c := range cb {
		if !seen[cellKey(c, keys)] {
			row(nil, c)
		}
	}
	return t, nil
}

// cellMaps returns a result's cells as JSON objects, whatever type the
// experiment kept them in.
func cellMaps(r *Results) ([]map[string]any, error) {
	b, err := json.Marshal(r.Cells)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s: cells are not a list of objects: %w", r.Experiment, err)
	}
	return out, nil
}

func presentKeys(cells []map[string]any) []string {
	var out []string
	for _, k := range cellKeys {
		for _, c := range cells {
			if _, ok := c[k]; ok {
				out = append(out, k)
				break
			}
		}
	}
	return out
}

func cellKey(c map[string]any, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(keyString(c[k]))
		b.WriteByte(0)
	}
	return b.String()
}

func keyString(v any) string {
	switch v := v.(type) {
	case nil:
		return "–"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// lookup follows a dotted path into a cell.
func lookup(c map[string]any, path string) (any, bool) {
	var v any = c
	for _, p := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[p]; !ok {
			return nil, false
		}
	}
	return v, true
}

// figure formats a number of a cell with four significant digits; "–"
// where the cell or the figure is missing.
func figure(c map[string]any, path string) string {
	if c == nil {
		return "–"
	}
	v, ok := lookup(c, path)
	f, isNum := v.(float64)
	switch {
	case !ok:
		return "–"
	case !isNum:
		return fmt.Sprint(v)
	case math.Abs(f) >= 1e4 || f == math.Trunc(f):
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// sharedNumbers lists the paths of the numbers both cells have, in
// sorted order, keys left out.
func sharedNumbers(a, b map[string]any, keys []string) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := prefix + k
			switch v := v.(type) {
			case float64:
				if prefix == "" && slices.Contains(keys, k) {
					continue
				}
				if w, ok := lookup(b, p); ok {
					if _, num := w.(float64); num {
						out = append(out, p)
					}
				}
			case map[string]any:
				walk(p+".", v)
			}
		}
	}
	walk("", a)
	slices.Sort(out)
	return out
}

// The figures each experiment's simulator runs are held against the
// testbed's by.

func (e *netrtLoss) Compared() []string {
	return []string{"baseline.fct_us.mean", "netrt.fct_us.mean", "baseline.e2e_retx", "netrt.e2e_retx", "fct_reduction",
		"netrt.timeouts", "requests", "retransmits"}
}

func (e *srLoss) Compared() []string {
	return []string{"goodput_ratio", "retx_packets", "lost_packets", "timeouts"}
}

func (e *dcpLoss) Compared() []string {
	return []string{"dcp_over_gbn", "dcp_of_lossless", "dcp_retx_packets", "gbn_retx_packets", "trimmed", "ho_drops", "dcp_timeouts"}
}

func (e *llrLoss) Compared() []string {
	return []string{"unrecovered", "effective_loss", "e2e_retx", "goodput_ratio", "copies"}
}

// RecordedFlags returns, from a recorded command line (Results.Command:
// "testbed run netrt-loss --bin bin --losses 0.01 --json c.json"), the
// flags that are exp's own, in order: what runs the same cells again on
// another backend. The backends' and the output's flags are left out.
func RecordedFlags(exp Experiment, command string) []string {
	fs := flag.NewFlagSet(exp.Name(), flag.ContinueOnError)
	exp.Flags(fs)
	words := strings.Fields(command)
	if i := slices.Index(words, exp.Name()); i >= 0 {
		words = words[i+1:]
	}
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name, _, eq := strings.Cut(strings.TrimLeft(w, "-"), "=")
		f := fs.Lookup(name)
		takesValue := !eq && i+1 < len(words)
		if f == nil {
			// Another layer's flag; its value, if it takes one, is the
			// next word (the namespace backend's booleans take none).
			if takesValue && name != "reuse" && name != "keep" && !strings.HasPrefix(words[i+1], "-") {
				i++
			}
			continue
		}
		out = append(out, w)
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); takesValue && !(ok && b.IsBoolFlag()) {
			out = append(out, words[i+1])
			i++
		}
	}
	return out
}
