package lab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/tor/fabric"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// A fabric-scale experiment's cells are independent simulations that
// its Simulate asks for in an order fixed by its flags alone (every
// FabricScale goes through simulateCellKeep, one call per cell), so
// they can be split over processes or pods without any experiment's
// code knowing (issue 29: the paper-scale cells in parallel):
//
//   - a shard (CellShard) simulates the calls whose index i has
//     i % N == K and writes each one's Run — the FabricRun the
//     experiment keeps of the fabric.Result, which is all its tables
//     and plots read — to DIR/cell-i.json; the other calls fail with
//     a "simulated by shard j/N" error, the way a failed simulation
//     does, which every experiment already tolerates;
//   - a merge (CellMerge) runs the experiment again with a Simulator
//     that simulates nothing and replays cell-i.json for call i, so
//     the experiment builds its tables, notes and plots from the same
//     Runs a single run would have recorded.
//
// Each cell file names the experiment, the run's flags, the build, the
// cell's point and seed and a hash of the simulation's inputs
// (topology, options, flows): a merge refuses a cell made with other
// flags, for another cell, by another build or from other inputs, and
// a missing one. Round-robin (rather than blocks of consecutive cells)
// spreads each scheme's and each load's cells — consecutive cells
// differ little in cost — over the shards; with N the number of cells
// (CellCount) each pod runs one.

// CellMode is what a Cells backend does with an experiment's cells.
type CellMode int

const (
	// CellShard simulates shard K of N and writes its cells.
	CellShard CellMode = iota
	// CellMerge replays the cells the shards wrote.
	CellMerge
	// CellCount simulates nothing and counts the cells.
	CellCount
)

// Cells is a Backend (the simulator's, wrapped) that shards, merges or
// counts a FabricScale experiment's cells (another experiment would run
// on the wrapped backend as if unwrapped: torsim refuses that).
type Cells struct {
	Backend
	sim  Simulator
	mode CellMode
	k, n int
	dirs []string
	// flags are the run's flags that decide its cells ("--name=value",
	// all of them, defaults too), build the binary's VCS revision.
	flags []string
	build string

	exp      string
	next     int           // the index of the next call
	ran      []int         // the cells a shard simulated
	missing  []int         // the cells a merge found in no directory
	problems []cellProblem // cells a merge refuses, and why
	span     [2]time.Time
}

// NewCells wraps b, which must be a Simulator. For CellShard, k and n
// are the shard and dirs[0] the directory it writes; for CellMerge,
// dirs are where the shards wrote (the first holding a cell wins).
// flags are the run's flags that decide its cells.
func NewCells(b Backend, mode CellMode, k, n int, dirs []string, flags []string) (*Cells, error) {
	sim, ok := b.(Simulator)
	if !ok {
		return nil, Usagef("--shard and --cells need the simulator")
	}
	switch {
	case mode == CellShard && (n < 1 || k < 0 || k >= n):
		return nil, Usagef("--shard %d/%d: want K/N with 0 ≤ K < N", k, n)
	case mode != CellCount && (len(dirs) == 0 || slices.Contains(dirs, "")):
		return nil, Usagef("--cells: want a directory (several, comma-separated, to merge)")
	case mode == CellShard && len(dirs) != 1:
		return nil, Usagef("--cells %s: a shard writes one directory", strings.Join(dirs, ","))
	}
	return &Cells{Backend: b, sim: sim, mode: mode, k: k, n: n, dirs: dirs, flags: flags, build: buildID()}, nil
}

// Simulate implements Simulator: the wrapped one's.
func (c *Cells) Simulate(ctx context.Context, tp topo.Topology, o fabric.Options, flows []workload.Flow, ro fabric.RunOptions) (*fabric.Result, error) {
	return c.sim.Simulate(ctx, tp, o, flows, ro)
}

// errElsewhere is a cell another shard simulates.
var errElsewhere = errors.New("simulated by another shard")

// cellFile is DIR/cell-I.json.
type cellFile struct {
	Experiment string   `json:"experiment"`
	Index      int      `json:"index"`
	Shard      string   `json:"shard"` // K/N
	Flags      []string `json:"flags"`
	Build      string   `json:"build,omitempty"`
	// Inputs is the SHA-256 of the simulation's topology, options,
	// flows and run options as JSON.
	Inputs string `json:"inputs"`
	Run    Run    `json:"run"`
}

// cell is simulateCellKeep's call i = c.next: simulate, or not, or
// replay. simulate fills run.
func (c *Cells) cell(ctx context.Context, run *Run, in cellInputs, simulate func() error) error {
	i := c.next
	c.next++
	if c.mode == CellCount {
		return fmt.Errorf("cell %d: %w", i, errElsewhere)
	}
	sum, err := in.hash()
	if err != nil {
		return fmt.Errorf("cell %d: hashing its inputs: %w", i, err)
	}
	if c.mode == CellMerge {
		return c.replay(i, run, sum)
	}
	if i%c.n != c.k {
		return fmt.Errorf("cell %d: %w (%d/%d)", i, errElsewhere, i%c.n, c.n)
	}
	err = simulate()
	if err != nil && ctx.Err() != nil {
		return err // interrupted: no result to keep
	}
	if err != nil {
		run.Error = err.Error()
	}
	cf := cellFile{Experiment: c.exp, Index: i, Shard: fmt.Sprintf("%d/%d", c.k, c.n), Flags: c.flags, Build: c.build, Inputs: sum, Run: *run}
	if werr := writeCell(filepath.Join(c.dirs[0], cellName(i)), &cf); werr != nil {
		return errors.Join(err, werr)
	}
	c.ran = append(c.ran, i)
	return err
}

func cellName(i int) string { return "cell-" + strconv.Itoa(i) + ".json" }

// writeCell writes cf whole or not at all (a pod killed mid-write
// leaves a temporary file, not half a cell).
func writeCell(path string, cf *cellFile) error {
	b, err := json.MarshalIndent(cf, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// replay fills run from cell i's file, or notes why it cannot.
func (c *Cells) replay(i int, run *Run, sum string) error {
	cf, path, err := c.readCell(i)
	if err != nil {
		c.refuse(path, err.Error())
		return err
	}
	if cf == nil {
		c.missing = append(c.missing, i)
		return fmt.Errorf("cell %d: missing", i)
	}
	if why := c.mismatch(cf, i, run, sum); why != "" {
		c.refuse(path, why)
		return fmt.Errorf("%s: %s", path, why)
	}
	*run = cf.Run
	if c.span[0].IsZero() || run.Started.Before(c.span[0]) {
		c.span[0] = run.Started
	}
	end := run.Started
	if run.Fabric != nil {
		end = end.Add(time.Duration(run.Fabric.WallNs))
	}
	if end.After(c.span[1]) {
		c.span[1] = end
	}
	if run.Error != "" {
		return errors.New(run.Error)
	}
	return nil
}

// refuse notes why the merge refuses the cell at path: once per
// reason, with every cell it applies to.
func (c *Cells) refuse(path, why string) {
	for i := range c.problems {
		if c.problems[i].why == why {
			c.problems[i].paths = append(c.problems[i].paths, path)
			return
		}
	}
	c.problems = append(c.problems, cellProblem{why, []string{path}})
}

// cellProblem is why a merge refuses the cells at paths.
type cellProblem struct {
	why   string
	paths []string
}

// readCell reads cell i from the first directory holding it; nil if
// none does.
func (c *Cells) readCell(i int) (*cellFile, string, error) {
	for _, d := range c.dirs {
		path := filepath.Join(d, cellName(i))
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, path, err
		}
		var cf cellFile
		if err := json.Unmarshal(b, &cf); err != nil {
			return nil, path, err
		}
		return &cf, path, nil
	}
	return nil, "", nil
}

// mismatch says why cf is not call i of this run, "" if it is.
func (c *Cells) mismatch(cf *cellFile, i int, run *Run, sum string) string {
	switch {
	case cf.Experiment != c.exp:
		return fmt.Sprintf("a cell of %s, not %s", cf.Experiment, c.exp)
	case cf.Index != i:
		return fmt.Sprintf("cell %d's file says it is cell %d", i, cf.Index)
	case !slices.Equal(sharedFlags(cf.Flags, c.flags), sharedFlags(c.flags, cf.Flags)):
		return "made with other flags: " + flagsDiff(sharedFlags(cf.Flags, c.flags), sharedFlags(c.flags, cf.Flags))
	case cf.Build != "" && c.build != "" && cf.Build != c.build:
		return fmt.Sprintf("made by build %s, this is %s (merge with the shards' binary)", cf.Build, c.build)
	case pointKey(cf.Run.Point) != pointKey(run.Point) || cf.Run.Repeat != run.Repeat:
		return fmt.Sprintf("cell %d is %s seed %d here, %s seed %d in the file", i, pointKey(run.Point), run.Repeat,
			pointKey(cf.Run.Point), cf.Run.Repeat)
	case cf.Inputs != sum:
		return "its simulation's inputs (topology, options, flows) differ from this binary's: made by another version?"
	}
	return ""
}

// sharedFlags are the flags of a whose name b has too. A flag only one
// side's binary had (added to the experiment since the cell was made)
// is left out of the comparison: what it changes in a simulation
// reaches the cell's inputs, which mismatch compares by their hash, so
// cells made before a new flag merge with a binary that has it, at any
// value that leaves their inputs as they were.
func sharedFlags(a, b []string) []string {
	name := func(f string) string { n, _, _ := strings.Cut(f, "="); return n }
	var out []string
	for _, f := range a {
		if slices.ContainsFunc(b, func(g string) bool { return name(g) == name(f) }) {
			out = append(out, f)
		}
	}
	return out
}

// flagsDiff names the flags a and b set differently.
func flagsDiff(a, b []string) string {
	var d []string
	for _, f := range a {
		if !slices.Contains(b, f) {
			d = append(d, "the cell's "+f)
		}
	}
	for _, f := range b {
		if !slices.Contains(a, f) {
			d = append(d, "this run's "+f)
		}
	}
	return strings.Join(d, ", ")
}

// cellInputs are what one simulation is made of.
type cellInputs struct {
	tp    topo.Topology
	o     fabric.Options
	flows []workload.Flow
	ro    fabric.RunOptions
}

// hash is the SHA-256 of the inputs as JSON, less what does not change
// the result (the threads, the progress callback).
func (in cellInputs) hash() (string, error) {
	o := in.o
	o.Threads = 0
	ro := in.ro
	ro.Progress = nil
	h := sha256.New()
	err := json.NewEncoder(h).Encode(struct {
		Topology topo.Topology
		Options  fabric.Options
		Flows    []workload.Flow
		QPs      int
		Op       any
		Until    any
		Sample   any
		Stats    fabric.StatsOptions
	}{in.tp, o, in.flows, ro.QPs, ro.Op, ro.Until, ro.Sample, ro.Stats})
	return hex.EncodeToString(h.Sum(nil)), err
}

// buildID is the binary's VCS revision, "+modified" for a dirty tree;
// "" when it was not built from a repository (tests, a plain image).
func buildID() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, mod string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				mod = "+modified"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + mod
}

// begin readies c for exp's Simulate.
func (c *Cells) begin(exp string) { c.exp, c.next = exp, 0 }

// finish is what a sharded, merged or counted run adds to its results
// once exp.Simulate returned err: whether to write them, and the error
// to return.
func (c *Cells) finish(res *Results, w io.Writer, err error) (write bool, _ error) {
	switch c.mode {
	case CellCount:
		fmt.Fprintf(w, "%s: %d cells\n", c.exp, c.next)
		return false, err
	case CellShard:
		res.Notes = append(res.Notes, c.shardNote())
		fmt.Fprintf(w, "%s\n", c.shardNote())
		return true, err
	}
	if len(c.missing) == 0 && len(c.problems) == 0 {
		if !c.span[0].IsZero() {
			res.Started, res.Finished = c.span[0], c.span[1]
		}
		return true, err
	}
	var why []string
	if len(c.missing) > 0 {
		why = append(why, fmt.Sprintf("%d of %d cells missing from %s: %s%s", len(c.missing), c.next,
			strings.Join(c.dirs, ","), intsList(c.missing), c.whichShards()))
	}
	for _, p := range c.problems {
		why = append(why, strings.Join(p.paths, ", ")+": "+p.why)
	}
	return false, errors.Join(err, fmt.Errorf("merge refused: %s", strings.Join(why, "; ")))
}

// shardNote says what a shard's record holds.
func (c *Cells) shardNote() string {
	return fmt.Sprintf("Shard %d/%d: this run simulated %d of the experiment's %d cells (%s), written to %s; "+
		"the others are marked failed here, so its table is not the experiment's. "+
		"torsim merge-run with the same flags and --cells %s makes the experiment's record from every shard's cells.",
		c.k, c.n, len(c.ran), c.next, intsList(c.ran), c.dirs[0], c.dirs[0])
}

// whichShards names the shards whose cells are missing, when the
// cells found agree on N.
func (c *Cells) whichShards() string {
	n := 0
	for i := 0; i < c.next && n >= 0; i++ {
		cf, _, err := c.readCell(i)
		if err != nil || cf == nil {
			continue
		}
		var k, m int
		if _, err := fmt.Sscanf(cf.Shard, "%d/%d", &k, &m); err != nil || (n != 0 && m != n) {
			return ""
		}
		n = m
	}
	if n == 0 {
		return ""
	}
	var ks []int
	for _, i := range c.missing {
		if !slices.Contains(ks, i%n) {
			ks = append(ks, i%n)
		}
	}
	return fmt.Sprintf(" (run shards %s of %d again)", intsList(ks), n)
}

func intsList(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
