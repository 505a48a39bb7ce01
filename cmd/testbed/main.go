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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
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
  testbed sim EXPERIMENT|ARGS...   the fabric simulator (torsim): an experiment at the testbed's
                                   parameters (netrt-loss, dcp-loss, llr-loss, sr-loss), or any run
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
		for _, n := range experimentNames() {
			fmt.Fprintf(stdout, "%-12s %s\n", n, experiments[n]().Synopsis())
		}
	case "help", "-h", "--help", "-help":
		err = cmdHelp(rest, stdout)
	default:
		err = usagef("unknown command %q\n%s", cmd, usage)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
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

// fabricFlags registers the flags that shape a testbed's switches. With
// impair, also --loss, --corrupt and --skew (experiments that sweep loss
// set it themselves).
func fabricFlags(fs *flag.FlagSet, o *Options, impair bool) {
	fs.StringVar(&o.Rate, "rate", o.Rate, "egress rate of every switch port, e.g. 1G, 100M (0: unshaped)")
	if impair {
		fs.Float64Var(&o.Loss, "loss", o.Loss, "loss probability of the fabric's frames (RoCEv2, link shim, PFC) at the impair sites (chain: core's link with tor2)")
		fs.Float64Var(&o.Corrupt, "corrupt", o.Corrupt, "FCS-corruption probability of the fabric's frames at the impair sites")
		fs.DurationVar(&o.Skew, "skew", o.Skew, "extra delay of the fabric's frames per impair site: site k (multipath: core k+1) delays k × skew")
	}
	fs.BoolVar(&o.OneWay, "one-way", o.OneWay, "loss and corruption only on the frames an impair site sends; by default what it receives on that port loses as much, recovery's requests, notices and ACKs included")
	fs.Float64Var(&o.Burst, "burst", o.Burst, "mean loss burst length in packets: Gilbert–Elliott loss at the --loss rate (0: independent losses)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the impairment's random decisions")
	fs.StringVar(&o.Multipath, "multipath", o.Multipath, "tord's multipath mode: ecmp, spray or adaptive")
	fs.BoolVar(&o.NetRT, "netrt", o.NetRT, "tor1 and tor2 run NetRT: in-network retransmission between the ToRs")
	fs.StringVar(&o.LLR, "llr", o.LLR, "link-local retransmission on every switch-to-switch link: off, nb or blocking")
	fs.BoolVar(&o.LLRMonitor, "llr-monitor", o.LLRMonitor, "with --llr: links start dormant and the corruption monitor turns protection on")
	fs.BoolVar(&o.Trust, "trust", o.Trust, "every switch's trust section names its host ports and honours PFC and PAUSE from switch ports only (docs/operations.md, Trust boundaries)")
	fs.BoolVar(&o.Trim, "trim", o.Trim, "every switch trims DCP data to header-only packets above --trim-threshold (DCP's lossless control plane)")
	fs.StringVar(&o.TrimThreshold, "trim-threshold", o.TrimThreshold, "data-queue depth above which DCP data is trimmed (default: tord's)")
	fs.IntVar(&o.IncastDegree, "incast-degree", o.IncastDegree, "incast degree N the control queue's WRR weight is set for (default: tord's)")
	fs.StringVar(&o.BottleneckRate, "bottleneck-rate", o.BottleneckRate, "egress rate of tor1's port toward the fabric (tor2 on the dumbbell and the link, core on the chain), where the senders' flows meet (empty: --rate)")
	fs.StringVar(&o.QueueLimit, "queue-limit", o.QueueLimit, "byte budget of every egress queue, e.g. 256KiB (empty: tord's, 1MiB)")
	fs.BoolVar(&o.ECN, "ecn", o.ECN, "every switch marks ECN on its data queues (DCQCN's congestion point; tord's ecn section)")
	fs.StringVar(&o.ECNMin, "ecn-min", o.ECNMin, "with --ecn: Kmin, the depth up to which nothing is marked (empty: tord's, 4 KB per Gbit/s of the port's rate, at least 5 KB)")
	fs.StringVar(&o.ECNMax, "ecn-max", o.ECNMax, "with --ecn: Kmax, the depth beyond which every ECN-capable packet is marked (empty: tord's, 16 KB per Gbit/s, at least 4 × Kmin)")
	fs.Float64Var(&o.ECNPMax, "ecn-pmax", o.ECNPMax, "with --ecn: Pmax, the marking probability at Kmax in percent (0: tord's, 20)")
	fs.StringVar(&o.Poll, "poll", o.Poll, "tord's worker polling: adaptive (right for a few cores), busy or interrupt")
	fs.IntVar(&o.Workers, "workers", o.Workers, "tord's workers on every switch; the veths between switches and the switch ends of the host links get as many queues (hosts keep one)")
	fs.BoolVar(&o.IPv6, "ipv6", o.IPv6, "IPv6 addresses and routes beside IPv4")
	fs.IntVar(&o.MetricsPort, "metrics-port", o.MetricsPort, "tord's /metrics port in each switch namespace, on loopback or with --mgmt the management address (pprof on the next, on loopback)")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "tord's log level")
	fs.Var(mgmtFlag{&o.Mgmt}, "mgmt", "a management network: a veth from the host to each switch, a /30 each out of "+DefaultMgmtNet.String()+
		" (--mgmt=NET/24 for another), tord's metrics on the switch's address there")
}

// commonFlags are the flags every command that finds testbeds takes.
type commonFlags struct {
	stateDir string
	prefix   string
	bin      string
	src      string
}

func (c *commonFlags) register(fs *flag.FlagSet, build bool) {
	fs.StringVar(&c.stateDir, "state", DefaultStateDir, "folder of the testbeds' state files")
	fs.StringVar(&c.prefix, "prefix", "", "namespace name prefix, ending in '-' (default rtb-TOPOLOGY-)")
	if build {
		fs.StringVar(&c.bin, "bin", "", "folder with built tord (and roceperf) binaries (default: go build them from the source tree)")
		fs.StringVar(&c.src, "src", "", "rocetor source tree to build from (default: the one the working directory is in)")
	}
}

// topologyFlags are the flags that shape a dumbbell or multipath.
func topologyFlags(fs *flag.FlagSet, o *Options) {
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
	o := DefaultOptions(topo)
	var c commonFlags
	fs := newFlagSet("testbed up", stderr)
	c.register(fs, true)
	fabricFlags(fs, &o, true)
	topologyFlags(fs, &o)
	name, rest, err := parseWithName(fs, args)
	if err != nil {
		return err
	}
	if name == "" || len(rest) > 0 {
		return usagef("testbed up TOPOLOGY [flags]: TOPOLOGY is one of %s", strings.Join(topologies, ", "))
	}
	o.Topology = name
	o.Prefix = c.prefix
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix(name)
	}
	if err := o.Validate(); err != nil {
		return err
	}
	if err := needRoot(); err != nil {
		return err
	}
	tb, err := Up(ctx, o, UpConfig{StateDir: c.stateDir, Bin: c.bin, Src: c.src, Out: stdout})
	if err != nil {
		return err
	}
	printTestbed(stdout, tb.st)
	fmt.Fprintf(stdout, "testbed down --prefix %s removes it.\n", o.Prefix)
	return nil
}

func cmdDown(args []string, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("testbed down", stderr)
	c.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return usageOrHelp(err)
	}
	if fs.NArg() > 0 {
		return usagef("testbed down takes no arguments (--prefix P for one testbed)")
	}
	if err := needRoot(); err != nil {
		return err
	}
	if c.prefix != "" {
		if !prefixRE.MatchString(c.prefix) {
			return usagef("--prefix %q: want a prefix ending in '-'", c.prefix)
		}
		return down(c.stateDir, c.prefix, stdout)
	}
	// Everything: each known testbed, then any rtb-* namespace left.
	sts, errs := listStates(c.stateDir)
	for _, st := range sts {
		errs = append(errs, down(c.stateDir, st.Name+"-", stdout))
	}
	errs = append(errs, down(c.stateDir, "rtb-", stdout))
	return errors.Join(errs...)
}

func usageOrHelp(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usagef("%v", err)
}

// statusEntry is one testbed in testbed status --json.
type statusEntry struct {
	*State
	Missing []string `json:"missing_netns,omitempty"` // namespaces of the plan that are gone
	Dead    []string `json:"dead_tord,omitempty"`     // switches whose tord is not running
}

func cmdStatus(args []string, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("testbed status", stderr)
	c.register(fs, false)
	asJSON := fs.Bool("json", false, "print the state files as JSON")
	if err := fs.Parse(args); err != nil {
		return usageOrHelp(err)
	}
	sts, errs := listStates(c.stateDir)
	var entries []statusEntry
	claimed := map[string]bool{}
	for _, st := range sts {
		if c.prefix != "" && st.Name+"-" != c.prefix {
			continue
		}
		e := statusEntry{State: st}
		for _, n := range st.Netns() {
			claimed[n] = true
			if _, err := os.Stat(netnsDir + "/" + n); err != nil {
				e.Missing = append(e.Missing, n)
			}
		}
		for node, sw := range st.Switches {
			if sw.PID == 0 || !alive(sw.PID) {
				e.Dead = append(e.Dead, node)
			}
		}
		sort.Strings(e.Dead)
		entries = append(entries, e)
	}
	prefix := c.prefix
	if prefix == "" {
		prefix = "rtb-"
	}
	stray, _ := listNetns(prefix)
	var orphans []string
	for _, n := range stray {
		if !claimed[n] {
			orphans = append(orphans, n)
		}
	}
	if *asJSON {
		b, err := json.MarshalIndent(map[string]any{"testbeds": entries, "orphan_netns": orphans}, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return errors.Join(errs...)
	}
	if len(entries) == 0 {
		fmt.Fprintf(stdout, "no testbed in %s\n", c.stateDir)
	}
	for _, e := range entries {
		printTestbed(stdout, e.State)
		if len(e.Missing) > 0 {
			fmt.Fprintf(stdout, "  MISSING namespaces: %s\n", strings.Join(e.Missing, " "))
		}
		if len(e.Dead) > 0 {
			fmt.Fprintf(stdout, "  tord NOT RUNNING on: %s\n", strings.Join(e.Dead, " "))
		}
		fmt.Fprintln(stdout)
	}
	if len(orphans) > 0 {
		fmt.Fprintf(stdout, "namespaces no state claims (left by a crash? testbed down removes them): %s\n", strings.Join(orphans, " "))
	}
	return errors.Join(errs...)
}

// printTestbed describes one testbed: shape, nodes, addresses, switches.
func printTestbed(w io.Writer, st *State) {
	p := st.Plan
	fmt.Fprintf(w, "%s: %s %s, %s since %s (state %s)\n", st.Name, p.Options.Topology, p.Shape(), st.Phase,
		st.Created.Local().Format(time.DateTime), st.Dir)
	imp := "none"
	if m := st.Impairment; !m.Zero() {
		imp = fmt.Sprintf("loss %g", m.Loss)
		if m.Burst > 0 {
			imp += fmt.Sprintf(" in bursts of %g", m.Burst)
		}
		if m.Corrupt > 0 {
			imp += fmt.Sprintf(", corrupt %g", m.Corrupt)
		}
		if m.Skew > 0 {
			imp += fmt.Sprintf(", delay k × %v at site k", m.Skew)
		}
		arrow := "↔" // loss and corruption both ways
		if m.OneWay || m.Loss == 0 && m.Corrupt == 0 {
			arrow = "→"
		}
		var sites []string
		for _, s := range p.Sites {
			sites = append(sites, s.Node+arrow+s.Port)
		}
		imp += " at " + strings.Join(sites, ", ")
	}
	netrt := ""
	if p.Options.NetRT {
		netrt = "; NetRT on tor1, tor2"
	}
	fmt.Fprintf(w, "  switch egress %s%s, multipath %s, poll %s; impairment: %s%s\n", p.Options.Rate, p.Options.congestion(),
		p.Options.Multipath, p.Options.Poll, imp, netrt)
	if d := p.describeWorkers(); d != "" {
		fmt.Fprintf(w, "  %s\n", d)
	}
	if p.Options.Mgmt != "" {
		fmt.Fprintf(w, "  management network %s: a veth from the host to each switch, tord's metrics on the switch's end\n", p.Options.Mgmt)
	}
	for _, n := range p.Nodes {
		if n.Kind != HostNode {
			continue
		}
		a := p.Addr(n.Name).String()
		if a6 := p.Addr6(n.Name); a6.IsValid() {
			a += " " + a6.String()
		}
		fmt.Fprintf(w, "  host   %-6s netns %-22s %s\n", n.Name, n.Netns, a)
	}
	for _, n := range p.Switches() {
		sw := st.Switches[n.Name]
		if sw == nil {
			fmt.Fprintf(w, "  switch %-6s netns %-22s (no tord yet)\n", n.Name, n.Netns)
			continue
		}
		pid := "not running"
		if sw.PID != 0 && alive(sw.PID) {
			pid = "pid " + strconv.Itoa(sw.PID)
		}
		fmt.Fprintf(w, "  switch %-6s netns %-22s tord %s, ports %s\n", n.Name, n.Netns, pid, strings.Join(p.Ports(n.Name), ","))
		if m := p.MgmtOf(n.Name); m != nil {
			fmt.Fprintf(w, "         mgmt: %s %s (host) — %s %s (switch)\n", m.HostIface, m.HostAddr, m.Iface, m.Addr)
			fmt.Fprintf(w, "         metrics: curl -s %s\n", sw.MetricsURL)
			continue
		}
		fmt.Fprintf(w, "         metrics: %s\n", sw.Curl())
	}
}

func cmdMetrics(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("testbed metrics", stderr)
	c.register(fs, false)
	node, rest, err := parseWithName(fs, args)
	if err != nil {
		return err
	}
	filter := ""
	if len(rest) > 0 {
		filter = rest[0]
	}
	if node == "" || len(rest) > 1 {
		return usagef("testbed metrics [--prefix P] NODE [FILTER]")
	}
	if err := needRoot(); err != nil {
		return err
	}
	st, err := pickState(c)
	if err != nil {
		return err
	}
	sw := st.Switches[node]
	if sw == nil {
		return usagef("testbed %s has no switch %q", st.Name, node)
	}
	s, err := scrape(ctx, netnsClient(sw.Netns, 5*time.Second), sw.MetricsURL)
	if err != nil {
		return fmt.Errorf("%s: %w", node, err)
	}
	for _, l := range s.Nonzero(filter) {
		fmt.Fprintln(stdout, l)
	}
	return nil
}

// cmdPlot draws the plots of a --record file again: the experiment is
// made anew with the flags of the recorded command line, so that plots
// that depend on them (netrt-loss's per size) come out as the run's did.
func cmdPlot(args []string, stdout, stderr io.Writer) error {
	if len(args) != 2 {
		return usagef("testbed plot RECORD DIR")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	mk, ok := experiments[res.Experiment]
	if !ok {
		return usagef("%s: unknown experiment %q", args[0], res.Experiment)
	}
	exp := mk()
	fs := newFlagSet("testbed plot", stderr)
	var c commonFlags
	var rc RunConfig
	runFlags(fs, &c, &rc)
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
	files, err := writePlots(args[1], exp.Plots(), GroupRuns(res.Runs))
	for _, f := range files {
		fmt.Fprintln(stdout, f)
	}
	return err
}

// pickState returns the testbed --prefix names, or the only one there is.
func pickState(c commonFlags) (*State, error) {
	if c.prefix != "" {
		return loadState(c.stateDir, stateName(c.prefix))
	}
	sts, _ := listStates(c.stateDir)
	switch len(sts) {
	case 0:
		return nil, fmt.Errorf("no testbed is up (state in %s)", c.stateDir)
	case 1:
		return sts[0], nil
	}
	var names []string
	for _, st := range sts {
		names = append(names, st.Name+"-")
	}
	return nil, usagef("several testbeds are up; name one with --prefix: %s", strings.Join(names, " "))
}

// runFlags registers testbed run's own flags.
func runFlags(fs *flag.FlagSet, c *commonFlags, rc *RunConfig) {
	c.register(fs, true)
	fs.StringVar(&rc.JSON, "json", "", "write the results as one JSON array, an object per cell, to this file (- for standard output)")
	fs.StringVar(&rc.Record, "record", "", "write the whole record as JSON to this file: every run with roceperf's summary and each switch's counters, command, machine")
	fs.StringVar(&rc.MD, "md", "", "write the results as Markdown to this file")
	fs.StringVar(&rc.Plot, "plot", "", "write PNG plots into this folder")
	fs.BoolVar(&rc.Reuse, "reuse", false, "run on the testbed with the prefix that is up instead of building one (left up)")
	fs.BoolVar(&rc.Keep, "keep", false, "leave the testbed up afterwards")
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usagef("testbed run EXPERIMENT [flags]; EXPERIMENT is one of %s", strings.Join(experimentNames(), ", "))
	}
	mk, ok := experiments[args[0]]
	if !ok {
		return usagef("unknown experiment %q; testbed list shows %s", args[0], strings.Join(experimentNames(), ", "))
	}
	exp := mk()
	var c commonFlags
	var rc RunConfig
	fs := newFlagSet("testbed run "+exp.Name(), stderr)
	runFlags(fs, &c, &rc)
	exp.Flags(fs)
	if stray, _, err := parseWithName(fs, args[1:]); err != nil {
		return err
	} else if stray != "" {
		return usagef("unexpected argument %q", stray)
	}
	if c.prefix != "" && !prefixRE.MatchString(c.prefix) {
		return usagef("--prefix %q: want letters, digits, '_', '.' or '-', ending in '-'", c.prefix)
	}
	// Check the experiment's flags before anything needs root.
	if _, err := exp.Setup(); err != nil {
		return err
	}
	if rc.Plot != "" {
		if err := os.MkdirAll(rc.Plot, 0o755); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if err := needRoot(); err != nil {
		return err
	}
	rc.StateDir, rc.Prefix, rc.Bin, rc.Src, rc.Out = c.stateDir, c.prefix, c.bin, c.src, stdout
	rc.Stdout = stdout
	if rc.JSON == "-" {
		// Standard output carries the JSON alone; progress and tables
		// go to standard error.
		rc.Out = stderr
	}
	rc.Command = "testbed run " + strings.Join(args, " ")
	_, err := runExperiment(ctx, exp, rc)
	return err
}

func cmdHelp(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch args[0] {
	case "up":
		o := DefaultOptions("")
		var c commonFlags
		fs := newFlagSet("testbed up", stdout)
		c.register(fs, true)
		fabricFlags(fs, &o, true)
		topologyFlags(fs, &o)
		fmt.Fprintf(stdout, "testbed up %s [flags]\n", strings.Join(topologies, "|"))
		fs.PrintDefaults()
	case "run":
		if len(args) < 2 {
			return usagef("testbed help run EXPERIMENT")
		}
		mk, ok := experiments[args[1]]
		if !ok {
			return usagef("unknown experiment %q", args[1])
		}
		exp := mk()
		var c commonFlags
		var rc RunConfig
		fs := newFlagSet("testbed run "+exp.Name(), stdout)
		runFlags(fs, &c, &rc)
		exp.Flags(fs)
		fmt.Fprintf(stdout, "testbed run %s [flags]: %s\n", exp.Name(), exp.Synopsis())
		fs.PrintDefaults()
	case "sim":
		fmt.Fprintf(stdout, simUsage, strings.Join(simExperiments, ", "))
	default:
		fmt.Fprint(stdout, usage)
	}
	return nil
}
