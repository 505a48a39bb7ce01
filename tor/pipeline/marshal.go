package pipeline

import (
	"bytes"
	"cmp"
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Writing a Config as YAML: ParseConfig(c.Marshal(…)) gives c back, for
// every configuration ParseConfig returns. The file reads like one an
// operator wrote:
//
//   - units as configuration files spell them: rates 1G, sizes 64KiB
//     (dataplane.Rate, dataplane.Bytes), durations 100us, 20ms;
//   - a field at its default is left out: at the top level tord's
//     default (DefaultConfig), inside a section, list or map the zero
//     value ParseConfig would leave there. A section present but all
//     default is written "{}" (trim: {}, ecn: {}), as it turns the
//     stage on; empty lists that differ from absent ones stay ([]);
//   - except alwaysWritten: every file says how many workers the switch
//     runs, how they poll, where its metrics and admin API listen and
//     what it logs, which an operator looks up first;
//   - lists of scalars on one line ([h1, core]), everything else in
//     block style, two spaces deep.

// alwaysWritten are the top-level keys Marshal writes at their default
// too.
var alwaysWritten = []string{"workers", "poll", "metrics_addr", "admin_addr", "log_level"}

// MarshalYAML implements yaml.Marshaler: the configuration as Marshal
// writes it, so yaml.Marshal of a Config gives the same file.
func (c Config) MarshalYAML() (any, error) {
	return encodeStruct(reflect.ValueOf(c), reflect.ValueOf(DefaultConfig()), alwaysWritten)
}

// Marshal returns the configuration as a YAML file tord reads; header,
// when not empty, opens it as comment lines.
func (c *Config) Marshal(header string) ([]byte, error) {
	n, err := c.MarshalYAML()
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	var b bytes.Buffer
	if header != "" {
		for _, l := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
			b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
		}
	}
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if err := e.Close(); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return b.Bytes(), nil
}

var (
	durationType      = reflect.TypeFor[time.Duration]()
	yamlMarshalerType = reflect.TypeFor[yaml.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// encodeStruct writes the fields of struct v that differ from those of
// def (what the decoder leaves in a field the file does not name), and
// the fields named in always whatever their value.
func encodeStruct(v, def reflect.Value, always []string) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported() || key == "-":
			continue
		case key == "":
			key = strings.ToLower(f.Name) // as the decoder names it
		}
		fv, dv := v.Field(i), def.Field(i)
		if reflect.DeepEqual(fv.Interface(), dv.Interface()) && !slices.Contains(always, key) {
			continue
		}
		val, err := encodeValue(fv, dv)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, val)
	}
	return n, nil
}

// encodeValue writes v; def is the value the decoder starts from, whose
// fields at their value a struct leaves out.
func encodeValue(v, def reflect.Value) (*yaml.Node, error) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
		d := reflect.Zero(v.Elem().Type())
		if def.Kind() == v.Kind() && !def.IsNil() && def.Elem().Type() == d.Type() {
			d = def.Elem()
		}
		return encodeValue(v.Elem(), d)
	case reflect.Slice, reflect.Map:
		if v.IsNil() && !def.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
		}
	}
	if v.Type() == durationType {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: formatDuration(time.Duration(v.Int()))}, nil
	}
	if v.Type().Implements(yamlMarshalerType) {
		// None of the configuration's own types but Config; a type
		// that writes itself is written its way.
		out, err := v.Interface().(yaml.Marshaler).MarshalYAML()
		if err != nil {
			return nil, err
		}
		n := &yaml.Node{}
		return n, n.Encode(out)
	}
	if v.Type().Implements(textMarshalerType) {
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			return nil, err
		}
		// Plain, as an operator writes it (64KiB, 0, 10.0.0.0/8):
		// UnmarshalText reads any scalar but null, which is quoted.
		n := &yaml.Node{Kind: yaml.ScalarNode, Value: string(b)}
		switch n.Value {
		case "", "~", "null", "Null", "NULL":
			n.Tag = "!!str"
		}
		return n, nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return encodeStruct(v, def, nil)
	case reflect.Slice, reflect.Array:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		zero := reflect.Zero(v.Type().Elem())
		for i := range v.Len() {
			e, err := encodeValue(v.Index(i), zero)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if e.Kind != yaml.ScalarNode {
				n.Style = 0 // lists of sections in block style
			}
			n.Content = append(n.Content, e)
		}
		return n, nil
	case reflect.Map:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		slices.SortFunc(keys, compareKeys)
		zero := reflect.Zero(v.Type().Elem())
		for _, k := range keys {
			kn, err := encodeValue(k, reflect.Zero(k.Type()))
			if err != nil {
				return nil, err
			}
			e, err := encodeValue(v.MapIndex(k), zero)
			if err != nil {
				return nil, fmt.Errorf("%v: %w", k.Interface(), err)
			}
			n.Content = append(n.Content, kn, e)
		}
		return n, nil
	}
	// Strings, numbers and booleans as the YAML package writes them
	// (a string that would read as something else is quoted).
	n := &yaml.Node{}
	return n, n.Encode(v.Interface())
}

// compareKeys orders map keys: by number for integer keys, else by text.
func compareKeys(a, b reflect.Value) int {
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp.Compare(a.Int(), b.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return cmp.Compare(a.Uint(), b.Uint())
	}
	return strings.Compare(fmt.Sprint(a.Interface()), fmt.Sprint(b.Interface()))
}

// formatDuration spells a duration as configuration files do, in the
// largest unit that keeps it a whole number: 100us, 20ms, 2s, 90m; 0s
// for none (time.ParseDuration reads every one back exactly, and YAML
// would take a bare 0 for an integer).
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	for _, u := range []struct {
		suffix string
		d      time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
