package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"rocetor/tor/lab"
	"rocetor/tor/lab/netns"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

const usage = `usage:
  testbed up TOPOLOGY [flags]      build chain, dumbbell, multipath or link and leave it up
  testbed status [--json]          list testbeds: namespaces, tord pids, metrics URLs
  testbed metrics [--prefix P] NODE [FILTER]
                                   print a switch's nonzero rocetor_ metrics
  testbed down [--prefix P]        remove testbeds (default: all, and every rtb-* namespace)
  testbed run EXPERIMENT [flags]   run an experiment (testbed list names and describes them)
  testbed blast [--prefix P] --from h1 --to h2 --rate 1000 --duration 1m --seed 1
                                   forge malformed and hostile frames from a host (a soak's blaster)
  testbed plot RECORD DIR          draw an experiment's plots again from its --record file
  testbed list                     describe the experiments
  testbed sim EXPERIMENT|ARGS...   the fabric simulator (torsim): an experiment of the catalogue
                                   (torsim run EXPERIMENT), or any torsim run
  testbed help COMMAND             the flags of up, run EXPERIMENT, ...
`

// run is main without the exit: 0 on success, 1 on a runtime failure, 2
// on bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// Ctrl-C and SIGTERM cancel ctx; whatever was created is removed
	// before testbed exits. Further signals while that runs are ignored
	// (the clean-up is bounded), so a second Ctrl-C cannot leave half a
	// testbed behind.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	go func() {
		first := true
		for s := range sig {
			if first {
				fmt.Fprintf(stderr, "testbed: %v: stopping and cleaning up\n", s)
				cancel()
				first = false
			} else {
				fmt.Fprintf(stderr, "testbed: %v: still cleaning up (bounded), please wait\n", s)
			}
		}
	}()

	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "up":
		err = cmdUp(ctx, rest, stdout, stderr)
	case "down":
		err = cmdDown(rest, stdout, stderr)
	case "status":
		err = cmdStatus(rest, stdout, stderr)
	case "metrics":
		err = cmdMetrics(ctx, rest, stdout, stderr)
	case "run":
		err = cmdRun(ctx, rest, stdout, stderr)
	case "blast":
		err = cmdBlast(ctx, rest, stdout, stderr)
	case "plot":
		err = cmdPlot(rest, stdout, stderr)
	case "sim":
		err = cmdSim(ctx, rest, stdout, stderr)
	case "list":
		err = lab.WriteCatalogue(stdout)
	case "help", "-h", "--help", "-help":
		err = cmdHelp(rest, stdout)
	default:
		err = lab.Usagef("unknown command %q\n%s", cmd, usage)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, lab.ErrUsage):
		fmt.Fprintln(stderr, "testbed:", strings.TrimPrefix(err.Error(), "usage: "))
		return 2
	default:
		fmt.Fprintln(stderr, "testbed:", err)
		return 1
	}
}

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, veths, XDP): sudo testbed ...")
	}
	return nil
}

// parseWithName parses flags and positional arguments in any order
// ("NAME --flag v", "--flag v NAME") and returns the first positional
// argument ("" if none) and the others.
func parseWithName(fs *flag.FlagSet, args []string) (string, []string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return "", nil, usageOrHelp(err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) == 0 {
		return "", nil, nil
	}
	return pos[0], pos[1:], nil
}

// testbedFlags registers into b the flags every command that finds
// testbeds takes: --state and --prefix, and with build --bin and --src.
func testbedFlags(fs *flag.FlagSet, b *netns.Backend, build bool) {
	fs.StringVar(&b.StateDir, "state", netns.DefaultStateDir, "folder of the testbeds' state files")
	fs.StringVar(&b.Prefix, "prefix", "", "namespace name prefix, ending in '-' (default rtb-TOPOLOGY-)")
	if build {
		fs.StringVar(&b.Bin, "bin", "", "folder with built tord (and roceperf) binaries (default: go build them from the source tree)")
		fs.StringVar(&b.Src, "src", "", "rocetor source tree to build from (default: the one the working directory is in)")
	}
}

// topologyFlags are the flags that shape a dumbbell or multipath.
func topologyFlags(fs *flag.FlagSet, o *lab.Options) {
	fs.IntVar(&o.Senders, "senders", o.Senders, "dumbbell, multipath: hosts behind tor1 (default 2 on dumbbell, 1 on multipath)")
	fs.IntVar(&o.Receivers, "receivers", o.Receivers, "dumbbell, multipath: hosts behind tor2")
	fs.IntVar(&o.Paths, "paths", o.Paths, "multipath: parallel core switches between tor1 and tor2")
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func cmdUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	topo := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		topo = args[0]
	}
	o := lab.DefaultOptions(topo)
	var c netns.Backend
	fs := newFlagSet("testbed up", stderr)
	testbedFlags(fs, &c, true)
	lab.FabricFlags(fs, &o, true)
	topologyFlags(fs, &o)
	name, rest, err := parseWithName(fs, args)
	if err != nil {
		return err
	}
	if name == "" || len(rest) > 0 {
		return lab.Usagef("testbed up TOPOLOGY [flags]: TOPOLOGY is one of %s", strings.Join(lab.Topologies, ", "))
	}
	o.Topology = name
	o.Prefix = c.Prefix
	if o.Prefix == "" {
		o.Prefix = lab.DefaultPrefix(name)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if err := needRoot(); err != nil {
		return err
	}
	tb, err := netns.Up(ctx, o, netns.UpConfig{StateDir: c.StateDir, Bin: c.Bin, Src: c.Src, Out: stdout})
	if err != nil {
		return err
	}
	netns.Describe(stdout, tb.State())
	fmt.Fprintf(stdout, "testbed down --prefix %s removes it.\n", o.Prefix)
	return nil
}

func cmdDown(args []string, stdout, stderr io.Writer) error {
	var c netns.Backend
	fs := newFlagSet("testbed down", stderr)
	testbedFlags(fs, &c, false)
	if err := fs.Parse(args); err != nil {
		return usageOrHelp(err)
	}
	if fs.NArg() > 0 {
		return lab.Usagef("testbed down takes no arguments (--prefix P for one testbed)")
	}
	if err := needRoot(); err != nil {
		return err
	}
	if c.Prefix != "" {
		if !lab.ValidPrefix(c.Prefix) {
			return lab.Usagef("--prefix %q: want a prefix ending in '-'", c.Prefix)
		}
		return netns.Down(c.StateDir, c.Prefix, stdout)
	}
	// Everything: each known testbed, then any rtb-* namespace left.
	sts, errs := netns.ListStates(c.StateDir)
	for _, st := range sts {
		errs = append(errs, netns.Down(c.StateDir, st.Name+"-", stdout))
	}
	errs = append(errs, netns.Down(c.StateDir, "rtb-", stdout))
	return errors.Join(errs...)
}

func usageOrHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return lab.Usagef("%v", err)
}

func cmdStatus(args []string, stdout, stderr io.Writer) error {
	var c netns.Backend
	fs := newFlagSet("testbed status", stderr)
	testbedFlags(fs, &c, false)
	asJSON := fs.Bool("json", false, "print the state files as JSON")
	if err := fs.Parse(args); err != nil {
		return usageOrHelp(err)
	}
	st, err := netns.ReadStatus(c.StateDir, c.Prefix)
	if !*asJSON {
		st.Print(stdout, c.StateDir)
		return err
	}
	b, jerr := json.MarshalIndent(st, "", "  ")
	if jerr != nil {
		return jerr
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return err
}

func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c netns.Backend
	fs := newFlagSet("testbed metrics", stderr)
	testbedFlags(fs, &c, false)
	node, rest, err := parseWithName(fs, args)
	if err != nil {
		return err
	}
	filter := ""
	if len(rest) > 0 {
		filter = rest[0]
	}
	if node == "" || len(rest) > 1 {
		return lab.Usagef("testbed metrics [--prefix P] NODE [FILTER]")
	}
	if err := needRoot(); err != nil {
		return err
	}
	st, err := netns.PickState(c.StateDir, c.Prefix)
	if err != nil {
		return err
	}
	s, err := netns.ScrapeSwitch(ctx, st, node)
	if err != nil {
		return err
	}
	for _, l := range s.Nonzero(filter) {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// cmdBlast runs the blaster on a host of a testbed that is up and prints
// its report.
func cmdBlast(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("testbed blast", stderr)
	var c netns.Backend
	testbedFlags(fs, &c, false)
	var bc netns.BlastConfig
	fs.StringVar(&bc.From, "from", "h1", "the host that forges")
	fs.StringVar(&bc.To, "to", "h2", "the victim host whose address and flows the frames name")
	fs.IntVar(&bc.Rate, "rate", 1000, "frames per second, all kinds together")
	fs.DurationVar(&bc.Duration, "duration", time.Minute, "how long to blast (SIGINT ends it early, with the report)")
	fs.Uint64Var(&bc.Seed, "seed", 1, "seed of the mix and of every random field")
	if name, _, err := parseWithName(fs, args); err != nil {
		return err
	} else if name != "" || bc.Rate <= 0 {
		return lab.Usagef("testbed blast [--prefix P] --from HOST --to HOST --rate N --duration D --seed S")
	}
	if err := needRoot(); err != nil {
		return err
	}
	st, err := netns.PickState(c.StateDir, c.Prefix)
	if err != nil {
		return err
	}
	rep, err := netns.Blast(ctx, st, bc)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// cmdPlot draws the plots of a --record file again: the experiment is
// made anew with the flags of the recorded command line, so that plots
// that depend on them (netrt-loss's per size) come out as the run's did.
func cmdPlot(args []string, stdout, stderr io.Writer) error {
	if len(args) != 2 {
		return lab.Usagef("testbed plot RECORD DIR")
	}
	res, err := lab.ReadResults(args[0])
	if err != nil {
		return err
	}
	exp, ok := lab.Lookup(res.Experiment)
	if !ok {
		return lab.Usagef("%s: unknown experiment %q", args[0], res.Experiment)
	}
	fs := newFlagSet("testbed plot", stderr)
	var b netns.Backend
	var out lab.Output
	runFlags(fs, &b, &out)
	exp.Flags(fs)
	cmd := strings.Fields(res.Command)
	if len(cmd) >= 3 && cmd[0] == "testbed" && cmd[1] == "run" {
		if _, _, err := parseWithName(fs, cmd[3:]); err != nil {
			return fmt.Errorf("the recorded command line: %w", err)
		}
	}
	if _, err := exp.Setup(); err != nil {
		return err
	}
	if err := os.MkdirAll(args[1], 0o755); err != nil {
		return err
	}
	files, err := lab.WritePlots(args[1], exp.Plots(), lab.GroupRuns(res.Runs))
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return err
}

// runFlags registers testbed run's own flags: the namespace testbed's
// into b, what to write into out.
func runFlags(fs *flag.FlagSet, b *netns.Backend, out *lab.Output) {
	testbedFlags(fs, b, true)
	out.Flags(fs)
	fs.BoolVar(&b.Reuse, "reuse", false, "run on the testbed with the prefix that is up instead of building one (left up)")
	fs.BoolVar(&b.Keep, "keep", false, "leave the testbed up afterwards")
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return lab.Usagef("testbed run EXPERIMENT [flags]; EXPERIMENT is one of %s", strings.Join(lab.Names(), ", "))
	}
	exp, ok := lab.Lookup(args[0])
	if !ok {
		return lab.Usagef("unknown experiment %q; testbed list shows %s", args[0], strings.Join(lab.Names(), ", "))
	}
	if e, _ := lab.Find(args[0]); e.NoTestbed != "" {
		return lab.Usagef("%s runs in the simulator only (torsim run %s): %s", e.Name, e.Name, e.NoTestbed)
	}
	b := netns.Backend{Experiment: exp.Name()}
	out := lab.Output{Out: stdout, Stdout: stdout, Command: "testbed run " + strings.Join(args, " ")}
	fs := newFlagSet("testbed run "+exp.Name(), stderr)
	runFlags(fs, &b, &out)
	exp.Flags(fs)
	if stray, _, err := parseWithName(fs, args[1:]); err != nil {
		return err
	} else if stray != "" {
		return lab.Usagef("unexpected argument %q", stray)
	}
	if b.Prefix != "" && !lab.ValidPrefix(b.Prefix) {
		return lab.Usagef("--prefix %q: want letters, digits, '_', '.' or '-', ending in '-'", b.Prefix)
	}
	// Check the experiment's flags before anything needs root.
	if _, err := exp.Setup(); err != nil {
		return err
	}
	if out.Plot != "" {
		if err := os.MkdirAll(out.Plot, 0o755); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if err := needRoot(); err != nil {
		return err
	}
	if out.JSON == "-" {
		// Standard output carries the JSON alone; progress and tables
		// go to standard error.
		out.Out = stderr
	}
	_, err := lab.RunExperiment(ctx, exp, &b, out)
	return err
}

func cmdHelp(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch args[0] {
	case "up":
		o := lab.DefaultOptions("")
		var c netns.Backend
		fs := newFlagSet("testbed up", stdout)
		testbedFlags(fs, &c, true)
		lab.FabricFlags(fs, &o, true)
		topologyFlags(fs, &o)
		fmt.Fprintf(stdout, "testbed up %s [flags]\n", strings.Join(lab.Topologies, "|"))
		fs.PrintDefaults()
	case "run":
		if len(args) < 2 {
			return lab.Usagef("testbed help run EXPERIMENT")
		}
		exp, ok := lab.Lookup(args[1])
		if !ok {
			return lab.Usagef("unknown experiment %q", args[1])
		}
		var b netns.Backend
		var out lab.Output
		fs := newFlagSet("testbed run "+exp.Name(), stdout)
		runFlags(fs, &b, &out)
		exp.Flags(fs)
		fmt.Fprintf(stdout, "testbed run %s [flags]: %s\n", exp.Name(), exp.Synopsis())
		fs.PrintDefaults()
	case "sim":
		fmt.Fprintf(stdout, simUsage, strings.Join(simNames(), ", "))
	default:
		fmt.Fprint(stdout, usage)
	}
	return nil
}
