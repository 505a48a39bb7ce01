package lab

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// resultsSchema is the version of the results JSON.
const resultsSchema = 1

// Results is what an experiment wrote: every run in full, the table it
// shows, and enough context to repeat it.
type Results struct {
	Schema     int    `json:"schema"`
	Experiment string `json:"experiment"`
	// Backend is what ran it: testbed (namespaces) or torsim (the
	// simulator); empty in records from before there were two.
	Backend  string            `json:"backend,omitempty"`
	Command  string            `json:"command"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Machine  Machine           `json:"machine"`
	Topology string            `json:"topology"` // the plan's shape
	Options  Options           `json:"options"`
	Params   map[string]string `json:"params"` // the experiment's flags
	Runs     []Run             `json:"runs"`
	Table    Table             `json:"table"`
	// Cells is the experiment's summary, one object per cell of its
	// parameter space, as --json writes it; nil: one per run (RunCells).
	Cells any      `json:"cells,omitempty"`
	Notes []string `json:"notes,omitempty"`
}

// Machine describes where the results were measured.
type Machine struct {
	Kernel string `json:"kernel"`
	CPUs   int    `json:"cpus"`
	Go     string `json:"go"`
}

func thisMachine() Machine {
	k, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return Machine{Kernel: strings.TrimSpace(string(k)), CPUs: runtime.NumCPU(), Go: runtime.Version()}
}

// Run is one measurement: one point of the experiment's parameter space
// (Point), what roceperf said, and what each switch counted meanwhile.
type Run struct {
	Point    map[string]string `json:"point"` // e.g. transport=gbn, loss=0.01
	Repeat   int               `json:"repeat"`
	Started  time.Time         `json:"started"`
	Perf     *PerfResult       `json:"perf,omitempty"`
	Flows    []*PerfResult     `json:"flows,omitempty"`    // concurrent transfers (MeasureAll), in the order given
	Switches map[string]Sample `json:"switches,omitempty"` // counter deltas and gauges, nonzero only
	// Series is one switch scraped through the run (MeasureSeries).
	Series *Series `json:"series,omitempty"`
	// TCP and Ping are what iperf3 and ping reported beside the
	// transfers (Env.Apps), if they ran.
	TCP  *TCPResult  `json:"tcp,omitempty"`
	Ping *PingResult `json:"ping,omitempty"`
	// Fabric is a fabric-scale cell's simulation (FabricScale).
	Fabric *FabricRun `json:"fabric,omitempty"`
	Error  string     `json:"error,omitempty"`
}

// ImpairDrops sums the impair drops over all switches.
func (r *Run) ImpairDrops() float64 {
	var t float64
	for _, s := range r.Switches {
		t += s.ImpairDrops()
	}
	return t
}

// Destroyed sums over all switches the frames of a class the impaired
// ports destroyed ("" for all).
func (r *Run) Destroyed(class string) float64 {
	var t float64
	for _, s := range r.Switches {
		t += s.Destroyed(class)
	}
	return t
}

// WireLoss is what the impaired links destroyed during a run, by class:
// whether a recovery mechanism's own frames met the loss it recovers
// from (tor/impair impairs every frame on the wire, not only the data).
type WireLoss struct {
	Data float64 `json:"data"` // originals (NetRT's pool retransmissions look the same)
	// Retransmitted are link-shim retransmitted copies (llr).
	Retransmitted float64 `json:"retransmitted"`
	// Control are llr dummies, ACKs, notices; NetRT requests and
	// notices; DCP header-only packets and ACKs; RoCE ACK/NAK/CNP; PFC.
	Control float64 `json:"control"`
}

func wireLoss(r *Run) WireLoss {
	return WireLoss{Data: r.Destroyed("data"), Retransmitted: r.Destroyed("retransmission"), Control: r.Destroyed("control")}
}

// wireColumns are the table columns of a WireLoss.
var wireColumns = []string{"ctl destroyed", "retx destroyed"}

func (w WireLoss) cells() []string { return []string{fmtInt(w.Control), fmtInt(w.Retransmitted)} }

// OtherDrops sums the other drops over all switches.
func (r *Run) OtherDrops() float64 {
	var t float64
	for _, s := range r.Switches {
		t += s.OtherDrops()
	}
	return t
}

// Group is the runs of one point (repeats), in order.
type Group struct {
	Point map[string]string
	Runs  []*Run
}

// GroupRuns groups runs by their point, keeping the order in which each
// point first appears.
func GroupRuns(runs []Run) []Group {
	var out []Group
	idx := map[string]int{}
	for i := range runs {
		k := pointKey(runs[i].Point)
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, Group{Point: runs[i].Point})
		}
		out[j].Runs = append(out[j].Runs, &runs[i])
	}
	return out
}

func pointKey(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

// OK returns the runs of the group that succeeded.
func (g *Group) OK() []*Run {
	var out []*Run
	for _, r := range g.Runs {
		if r.Error == "" && (r.Perf != nil || len(r.Flows) > 0 || r.Fabric != nil) {
			out = append(out, r)
		}
	}
	return out
}

// Median returns the median of f over the group's successful runs, NaN
// if none succeeded.
func (g *Group) Median(f func(*Run) float64) float64 {
	ok := g.OK()
	if len(ok) == 0 {
		return math.NaN()
	}
	v := make([]float64, len(ok))
	for i, r := range ok {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	} else {
		return (v[n/2-1] + v[n/2]) / 2
	}
}

// Sum returns the sum of f over the group's successful runs.
func (g *Group) Sum(f func(*Run) float64) float64 {
	var t float64
	for _, r := range g.OK() {
		t += f(r)
	}
	return t
}

// Column is one column of an experiment's table.
type Column struct {
	Header string
	Value  func(*Group) string
}

// Table is a rendered table: one row per group.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// MakeTable renders one row per group.
func MakeTable(groups []Group, cols []Column) Table {
	t := Table{}
	for _, c := range cols {
		t.Columns = append(t.Columns, c.Header)
	}
	for i := range groups {
		row := make([]string, len(cols))
		for j, c := range cols {
			row[j] = c.Value(&groups[i])
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// Markdown writes the table in GitHub-flavoured Markdown, numbers
// right-aligned, columns padded so it also reads as plain text.
func (t Table) Markdown(w io.Writer) {
	width := make([]int, len(t.Columns))
	right := make([]bool, len(t.Columns))
	for j, c := range t.Columns {
		width[j] = max(len([]rune(c)), 3)
		right[j] = true
	}
	for _, row := range t.Rows {
		for j, v := range row {
			width[j] = max(width[j], len([]rune(v)))
			if _, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64); err != nil && v != "–" {
				right[j] = false
			}
		}
	}
	pad := func(s string, j int) string {
		n := width[j] - len([]rune(s))
		if right[j] {
			return strings.Repeat(" ", n) + s
		}
		return s + strings.Repeat(" ", n)
	}
	line := func(cells []string) {
		fmt.Fprint(w, "|")
		for j, c := range cells {
			fmt.Fprintf(w, " %s |", pad(c, j))
		}
		fmt.Fprintln(w)
	}
	line(t.Columns)
	fmt.Fprint(w, "|")
	for j := range t.Columns {
		if right[j] {
			fmt.Fprintf(w, " %s: |", strings.Repeat("-", width[j]-1))
		} else {
			fmt.Fprintf(w, " %s |", strings.Repeat("-", width[j]))
		}
	}
	fmt.Fprintln(w)
	for _, row := range t.Rows {
		line(row)
	}
}

// Markdown writes the whole results as a Markdown document: a heading,
// the context, the table, and any notes and failed runs.
func (r *Results) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# %s\n\n", r.Experiment)
	fmt.Fprintf(w, "`%s`\n\n", r.Command)
	where := fmt.Sprintf("prefix %s), switch egress %s, poll %s", r.Options.Prefix, r.Options.Rate, r.Options.Poll)
	if r.Backend == "torsim" {
		where = fmt.Sprintf("simulated: torsim), links %s", r.Options.Rate)
	}
	if r.Options.Topology == "" && r.Backend == "torsim" {
		fmt.Fprintf(w, "- fabric (simulated: torsim): %s\n", r.Topology) // a FabricScale experiment's own
	} else {
		fmt.Fprintf(w, "- topology: %s (%s, multipath %s%s\n", r.Topology, where, r.Options.Multipath, r.Options.Congestion())
	}
	var keys []string
	for k := range r.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []string
	for _, k := range keys {
		ps = append(ps, k+"="+r.Params[k])
	}
	fmt.Fprintf(w, "- parameters: %s\n", strings.Join(ps, " "))
	fmt.Fprintf(w, "- machine: Linux %s, %d CPUs, %s; %s, %v\n\n", r.Machine.Kernel, r.Machine.CPUs, r.Machine.Go,
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), r.Finished.Sub(r.Started).Round(time.Second))
	r.Table.Markdown(w)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\n%s\n", n)
	}
	var failed []string
	for _, run := range r.Runs {
		if run.Error != "" {
			failed = append(failed, fmt.Sprintf("- %s (repeat %d): %s", pointKey(run.Point), run.Repeat, firstLine(run.Error)))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "\nFailed runs:\n\n%s\n", strings.Join(failed, "\n"))
	}
}

// Congestion describes the options' bottleneck, queue limit and ECN
// marking for the Markdown's context line; "" when none is set.
func (o Options) Congestion() string {
	var parts []string
	if o.BottleneckRate != "" {
		parts = append(parts, "bottleneck "+o.BottleneckRate)
	}
	if o.QueueLimit != "" {
		parts = append(parts, "queue limit "+o.QueueLimit)
	}
	if o.ECN {
		prof := "tord's rate-derived profile"
		if o.ECNMin != "" || o.ECNMax != "" || o.ECNPMax != 0 {
			pmax := "default"
			if o.ECNPMax != 0 {
				pmax = strconv.FormatFloat(o.ECNPMax, 'g', -1, 64) + "%"
			}
			prof = fmt.Sprintf("Kmin %s, Kmax %s, Pmax %s", or(o.ECNMin, "default"), or(o.ECNMax, "default"), pmax)
		}
		parts = append(parts, "ECN marking ("+prof+")")
	}
	if o.QoS {
		parts = append(parts, "traffic classes (qos: {})")
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// RunCell is a cell of an experiment that defines none of its own: one
// run, its point and roceperf's summary.
type RunCell struct {
	Point  map[string]string `json:"point"`
	Repeat int               `json:"repeat"`
	*Summary
	Error string `json:"error,omitempty"`
}

// cells returns the experiment's cells, or one RunCell per run.
func (r *Results) cells() any {
	if r.Cells != nil {
		return r.Cells
	}
	out := []RunCell{}
	for _, run := range r.Runs {
		c := RunCell{Point: run.Point, Repeat: run.Repeat, Error: run.Error}
		if run.Perf != nil {
			c.Summary = &run.Perf.Client
		}
		out = append(out, c)
	}
	return out
}

// WriteCells writes the cells as one JSON array to path, or to stdout
// when path is "-".
func (r *Results) WriteCells(path string, stdout io.Writer) error {
	b, err := json.MarshalIndent(r.cells(), "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadResults reads a record that WriteJSON wrote (testbed run
// --record).
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &res, nil
}

// WriteJSON writes the whole record, indented.
func (r *Results) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// WriteMarkdown writes the Markdown document.
func (r *Results) WriteMarkdown(path string) error {
	var b strings.Builder
	r.Markdown(&b)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write Markdown: %w", err)
	}
	return nil
}

// Number formats for tables: "–" for NaN (no successful run).
func fmtFloat(v float64, prec int) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func fmtInt(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}
