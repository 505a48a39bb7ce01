package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"rocetor/tor/lab"
	"rocetor/tor/pipeline"
)

// Testbed is a topology that is up (or being built): its namespaces,
// links and routes, and a tord per switch. It is not safe for concurrent
// use.
type Testbed struct {
	st       *lab.State
	stateDir string
	out      io.Writer // progress, one line per step

	mu       sync.Mutex
	children map[string]*child // tord processes this process started
}

// child is a process this process started and reaps.
type child struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it has exited and been reaped
	err  error         // Wait's result, set before done closes
}

// Timeouts of the bounded waits.
const (
	readyTimeout  = 30 * time.Second // tord's /readyz after start
	stopGrace     = 5 * time.Second  // SIGTERM to SIGKILL
	warmUpTimeout = 15 * time.Second // first ping reply through a path
)

// UpConfig is how to bring a testbed up, beyond its Options.
type UpConfig struct {
	StateDir string
	Bin      string // folder holding tord; empty: build it
	Src      string // module root to build from; empty: found from the working directory
	Out      io.Writer
}

// Up builds the topology, starts a tord on every switch, waits until
// each is ready and traffic passes from every sender to every receiver.
// On any error or cancellation it removes everything it created.
func Up(ctx context.Context, o lab.Options, uc UpConfig) (tb *Testbed, err error) {
	plan, err := lab.NewPlan(o)
	if err != nil {
		return nil, err
	}
	if err := checkFree(ctx, uc.StateDir, plan); err != nil {
		return nil, err
	}
	name := StateName(o.Prefix)
	st := &lab.State{Version: stateVersion, Name: name, Phase: lab.PhaseCreating, Created: time.Now().UTC(),
		Owner: os.Getpid(), Dir: filepath.Join(uc.StateDir, name), Plan: plan,
		Impairment: o.Impairment(), Switches: map[string]*lab.SwitchState{}}
	if err := createState(uc.StateDir, st); err != nil {
		return nil, err
	}
	tb = &Testbed{st: st, stateDir: uc.StateDir, out: uc.Out, children: map[string]*child{}}
	defer func() {
		if err != nil {
			tb.logf("setup failed; removing testbed %s", name)
			if derr := tb.Down(); derr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, derr)
			}
			tb = nil
		}
	}()
	if err := os.MkdirAll(filepath.Join(st.Dir, "logs"), 0o755); err != nil {
		return tb, fmt.Errorf("testbed folder: %w", err)
	}
	if st.Bin, err = Binaries(ctx, uc.Bin, uc.Src, filepath.Join(st.Dir, "bin"), tb.out, "tord"); err != nil {
		return tb, err
	}
	if err := saveState(uc.StateDir, st); err != nil {
		return tb, err
	}

	tb.logf("building %s: %s", name, plan.Shape())
	for _, c := range append(SetupCommands(plan), MgmtCommands(plan)...) {
		if err := ctx.Err(); err != nil {
			return tb, err
		}
		if _, err := runCommand(ctx, c); err != nil {
			return tb, err
		}
	}
	for node, cfg := range plan.TordConfigs() {
		n := plan.Node(node)
		sw := &lab.SwitchState{Netns: n.Netns, Config: filepath.Join(st.Dir, node+".yaml"),
			Log: filepath.Join(st.Dir, "logs", "tord-"+node+".log"), MetricsURL: "http://" + cfg.MetricsAddr + "/metrics"}
		b, err := lab.MarshalTordConfig(node, cfg)
		if err != nil {
			return tb, err
		}
		if err := os.WriteFile(sw.Config, b, 0o644); err != nil {
			return tb, fmt.Errorf("write tord config of %s: %w", node, err)
		}
		st.Switches[node] = sw
	}
	if err := saveState(uc.StateDir, st); err != nil {
		return tb, err
	}
	if err := tb.startAll(ctx, tb.switchNames()); err != nil {
		return tb, err
	}
	if err := tb.WarmUp(ctx); err != nil {
		return tb, err
	}
	st.Phase = lab.PhaseUp
	if err := saveState(uc.StateDir, st); err != nil {
		return tb, err
	}
	tb.logf("%s is up", name)
	return tb, nil
}

// checkFree refuses a plan whose namespaces exist, whose prefix
// overlaps another testbed's (down finds namespaces by prefix), or whose
// management network overlaps another testbed's or the host's.
func checkFree(ctx context.Context, stateDir string, plan *lab.Plan) error {
	prefix := plan.Options.Prefix
	sts, _ := ListStates(stateDir)
	for _, st := range sts {
		other := st.Name + "-"
		if strings.HasPrefix(other, prefix) || strings.HasPrefix(prefix, other) {
			return lab.Usagef("testbed %s is up (state in %s) and its prefix %q overlaps %q: testbed down --prefix %s removes it, "+
				"testbed run … --reuse runs on it, or choose another --prefix", st.Name, stateDir, other, prefix, other)
		}
	}
	for _, n := range plan.Nodes {
		if _, err := os.Stat(filepath.Join(netnsDir, n.Netns)); err == nil {
			return lab.Usagef("network namespace %s exists already: testbed down --prefix %s removes what a testbed left", n.Netns, prefix)
		}
	}
	return checkMgmtFree(ctx, plan, sts)
}

// Open returns the testbed with this prefix that is up.
func Open(stateDir, prefix string, out io.Writer) (*Testbed, error) {
	st, err := LoadState(stateDir, StateName(prefix))
	if err != nil {
		return nil, err
	}
	if st.Phase != lab.PhaseUp {
		return nil, fmt.Errorf("testbed %s is %s, not up (a crashed testbed up? testbed down --prefix %s)", st.Name, st.Phase, prefix)
	}
	tb := &Testbed{st: st, stateDir: stateDir, out: out, children: map[string]*child{}}
	for node, sw := range st.Switches {
		if sw.PID == 0 || !Alive(sw.PID) || !inNamespaces(sw.PID, []string{sw.Netns}) {
			return nil, fmt.Errorf("testbed %s: tord of %s (pid %d) is not running; see %s", st.Name, node, sw.PID, sw.Log)
		}
	}
	return tb, nil
}

// Env returns what an experiment runs with on the testbed: the testbed
// as its Fabric; as its Perf, roceperf from folder bin, or built from
// the source tree src (or the one the working directory is in) into the
// testbed's folder; as its Apps, iperf3 and ping from PATH.
func (tb *Testbed) Env(ctx context.Context, bin, src string) (*lab.Env, error) {
	dir, err := Binaries(ctx, bin, src, filepath.Join(tb.st.Dir, "bin"), tb.out, "roceperf")
	if err != nil {
		return nil, err
	}
	perf := &roceperf{bin: filepath.Join(dir, "roceperf"), plan: tb.Plan(), logDir: filepath.Join(tb.st.Dir, "logs"), port: roceperfPort}
	apps := &apps{plan: tb.Plan(), logDir: filepath.Join(tb.st.Dir, "logs"), port: iperf3Port}
	return &lab.Env{Fabric: tb, Perf: perf, Out: tb.out, Apps: apps}, nil
}

// Plan returns the testbed's plan.
func (tb *Testbed) Plan() *lab.Plan { return tb.st.Plan }

// State returns the testbed's state.
func (tb *Testbed) State() *lab.State { return tb.st }

func (tb *Testbed) logf(format string, args ...any) {
	if tb.out != nil {
		fmt.Fprintf(tb.out, "testbed: "+format+"\n", args...)
	}
}

func (tb *Testbed) switchNames() []string {
	var out []string
	for _, n := range tb.st.Plan.Switches() {
		out = append(out, n.Name)
	}
	return out
}

// startAll starts tord on the named switches and waits until every one
// is ready.
func (tb *Testbed) startAll(ctx context.Context, nodes []string) error {
	for _, node := range nodes {
		if err := tb.startTord(node); err != nil {
			return err
		}
	}
	if err := saveState(tb.stateDir, tb.st); err != nil {
		return err
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = tb.waitReady(ctx, node)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startTord starts one switch's tord in its namespace, in a session of
// its own so that a Ctrl-C at the terminal reaches testbed, which stops
// the switches in order, and a testbed up leaves them running.
func (tb *Testbed) startTord(node string) error {
	sw := tb.st.Switches[node]
	logf, err := os.OpenFile(sw.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("tord log of %s: %w", node, err)
	}
	defer logf.Close()
	// ip netns exec execs tord in place (same pid, so signals reach it)
	// and mounts the namespace's own /sys, which tord's preflight reads.
	cmd := exec.Command("ip", "netns", "exec", sw.Netns, filepath.Join(tb.st.Bin, "tord"), "--config", sw.Config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start tord on %s: %w", node, err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	tb.mu.Lock()
	tb.children[node] = c
	tb.mu.Unlock()
	sw.PID = cmd.Process.Pid
	tb.logf("started tord on %s (pid %d, config %s)", node, sw.PID, sw.Config)
	return nil
}

// waitReady polls the switch's /readyz until it answers 200, tord exits,
// ctx ends or readyTimeout passes.
func (tb *Testbed) waitReady(ctx context.Context, node string) error {
	sw := tb.st.Switches[node]
	url := strings.TrimSuffix(sw.MetricsURL, "/metrics") + "/readyz"
	client := netnsClient(sw.Netns, time.Second)
	tb.mu.Lock()
	c := tb.children[node]
	tb.mu.Unlock()
	var last error
	for deadline := time.Now().Add(readyTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if c != nil {
			select {
			case <-c.done:
				return fmt.Errorf("tord on %s exited before it was ready (%v); its log %s:\n%s", node, c.err, sw.Log, tail(sw.Log, 20))
			default:
			}
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
	}
	return fmt.Errorf("tord on %s not ready within %v: %v; its log %s:\n%s", node, readyTimeout, last, sw.Log, tail(sw.Log, 20))
}

// stopTord stops one switch's tord: SIGTERM, so it detaches its XDP
// programs, then SIGKILL after stopGrace.
func (tb *Testbed) stopTord(node string) error {
	sw := tb.st.Switches[node]
	if sw.PID == 0 {
		return nil
	}
	if Alive(sw.PID) && !inNamespaces(sw.PID, []string{sw.Netns}) {
		return fmt.Errorf("pid %d recorded for tord on %s runs outside %s: not touching it", sw.PID, node, sw.Netns)
	}
	if left := terminate([]int{sw.PID}, stopGrace); len(left) > 0 {
		return fmt.Errorf("tord on %s (pid %d) survived SIGKILL", node, sw.PID)
	}
	tb.mu.Lock()
	c := tb.children[node]
	delete(tb.children, node)
	tb.mu.Unlock()
	if c != nil {
		<-c.done // reaped right after it exits
	}
	sw.PID = 0
	return nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// WarmUp makes every path usable and checks it: a ping across each link
// (both ends resolve each other's addresses, which tord mirrors from the
// kernel), then from every sender to every receiver through the
// switches. Until a neighbour is resolved tord drops the packets to it
// (no_neighbour), so an experiment must not start before this.
func (tb *Testbed) WarmUp(ctx context.Context) error {
	p := tb.st.Plan
	type probe struct{ from, to string }
	var links, paths []probe
	for _, l := range p.Links {
		links = append(links, probe{p.Node(l.A.Node).Netns, l.B.V4.Addr().String()})
		if l.B.V6.IsValid() {
			links = append(links, probe{p.Node(l.A.Node).Netns, l.B.V6.Addr().String()})
		}
	}
	for _, s := range p.ByRole(lab.RoleSender) {
		for _, r := range p.ByRole(lab.RoleReceiver) {
			paths = append(paths, probe{p.Node(s).Netns, p.Addr(r).String()})
			if a := p.Addr6(r); a.IsValid() {
				paths = append(paths, probe{p.Node(s).Netns, a.String()})
			}
		}
	}
	start := time.Now()
	for _, set := range [][]probe{links, paths} {
		errs := make([]error, len(set))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i, pr := range set {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				errs[i] = pingUntil(ctx, pr.from, pr.to, warmUpTimeout)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	tb.logf("warm-up: %d links and %d paths answer ping (%v)", len(links), len(paths), time.Since(start).Round(time.Millisecond))
	return nil
}

// pingUntil pings addr from the namespace every 50 ms until one reply
// comes or timeout passes.
func pingUntil(ctx context.Context, netns, addr string, timeout time.Duration) error {
	secs := fmt.Sprintf("%d", int(timeout.Seconds()+0.5))
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	c := Command{"ip", "netns", "exec", netns, "ping", "-n", "-q", "-c1", "-i0.05", "-w" + secs, addr}
	out, err := exec.CommandContext(ctx, c[0], c[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("no ping reply from %s in %s within %v: %v\n%s", addr, netns, timeout, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// scrapeSettle is how long Scrape lets the switches settle first. A
// worker publishes its counters about once a millisecond of its own
// time and, idle, sleeps up to its MaxSleep (1 ms) at a time; the last
// frames of a run may still sit in a veth or a ring. Scraped right after
// a transfer ended, on two CPUs shared with a spinning process, tor2 of
// TestLinkLLRWorkers (four workers a tord, interrupt polling) had not
// yet shown one frame tor1 had counted out toward it: one "unrecovered"
// with no ackNo timeout (2026-12-01). Two scrapes a run make it 0.1 s.
const scrapeSettle = 50 * time.Millisecond

// Scrape reads every switch's /metrics, after scrapeSettle.
func (tb *Testbed) Scrape(ctx context.Context) (map[string]lab.Sample, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(scrapeSettle):
	}
	out := map[string]lab.Sample{}
	var errs []error
	for _, node := range tb.switchNames() {
		sw := tb.st.Switches[node]
		s, err := scrape(ctx, netnsClient(sw.Netns, 5*time.Second), sw.MetricsURL)
		if err != nil {
			errs = append(errs, fmt.Errorf("switch %s: %w", node, err))
			continue
		}
		out[node] = s
	}
	return out, errors.Join(errs...)
}

// ScrapeNode reads one switch's rocetor_ metrics.
func (tb *Testbed) ScrapeNode(ctx context.Context, node string) (lab.Sample, error) {
	sw := tb.st.Switches[node]
	if sw == nil {
		return nil, fmt.Errorf("no switch %s", node)
	}
	s, err := scrape(ctx, netnsClient(sw.Netns, 5*time.Second), sw.MetricsURL)
	if err != nil {
		return nil, fmt.Errorf("switch %s: %w", node, err)
	}
	return s, nil
}

// Impairment returns what the impair sites do now.
func (tb *Testbed) Impairment() lab.Impairment { return tb.st.Impairment }

// SetImpairment changes what the impair sites do: it rewrites the
// configuration of the switches that hold a site and restarts their tord
// (tord has no live reconfiguration yet), then warms the paths up again.
// Counters of a restarted switch start from zero.
func (tb *Testbed) SetImpairment(ctx context.Context, m lab.Impairment) error {
	if m == tb.st.Impairment {
		return nil
	}
	tb.st.Impairment = m
	restarted, err := tb.reconfigure(ctx, func(node string, c *pipeline.Config) {
		c.Impair = tb.st.Plan.ImpairOf(node, m)
	})
	if err == nil {
		tb.logf("impairment now loss %g, burst %g, corrupt %g, skew %v (restarted tord on %s)", m.Loss, m.Burst, m.Corrupt, m.Skew, strings.Join(restarted, ", "))
	}
	return err
}

// Reconfigure changes what the switches run — NetRT, trimming, rates,
// anything TordConfigs derives from the options other than the topology
// and the impairment — restarting the switches whose configuration
// changes, as SetImpairment does.
func (tb *Testbed) Reconfigure(ctx context.Context, o lab.Options) error {
	cur := tb.st.Plan.Options
	if o.Topology != cur.Topology || o.Prefix != cur.Prefix || o.Senders != cur.Senders ||
		o.Receivers != cur.Receivers || o.Paths != cur.Paths || o.IPv6 != cur.IPv6 || o.MetricsPort != cur.MetricsPort ||
		o.Mgmt != cur.Mgmt {
		return lab.Usagef("reconfigure: the topology cannot change on a running testbed")
	}
	tb.st.Plan.Options = o
	want := tb.st.Plan.TordConfigs()
	restarted, err := tb.reconfigure(ctx, func(node string, c *pipeline.Config) {
		w := *want[node]
		w.Impair = c.Impair // the impairment is SetImpairment's
		*c = w
	})
	if err == nil && len(restarted) > 0 {
		tb.logf("switches reconfigured (restarted tord on %s)", strings.Join(restarted, ", "))
	}
	return err
}

// reconfigure applies edit to every switch's configuration file, as
// tord reads it, restarts the switches whose configuration changed and
// warms the paths up again; it returns the restarted switches.
func (tb *Testbed) reconfigure(ctx context.Context, edit func(node string, c *pipeline.Config)) ([]string, error) {
	var restart []string
	for _, node := range tb.switchNames() {
		sw := tb.st.Switches[node]
		cfg, err := pipeline.LoadConfig(sw.Config)
		if err != nil {
			return nil, fmt.Errorf("tord config of %s: %w", node, err)
		}
		next := cfg
		edit(node, &next)
		b, err := lab.MarshalTordConfig(node, &next)
		if err != nil {
			return nil, err
		}
		// Compared as tord reads them: a value built here and the same
		// value read from the file may differ where tord sees no
		// difference (an empty list or none).
		again, err := pipeline.ParseConfig(b, sw.Config)
		if err != nil {
			return nil, fmt.Errorf("tord config of %s: %w", node, err)
		}
		if reflect.DeepEqual(again, cfg) {
			continue
		}
		if err := os.WriteFile(sw.Config, b, 0o644); err != nil {
			return nil, fmt.Errorf("write tord config of %s: %w", node, err)
		}
		restart = append(restart, node)
	}
	for _, node := range restart {
		if err := tb.stopTord(node); err != nil {
			return nil, err
		}
	}
	if err := tb.startAll(ctx, restart); err != nil {
		return nil, err
	}
	if err := saveState(tb.stateDir, tb.st); err != nil {
		return nil, err
	}
	return restart, tb.WarmUp(ctx)
}

// Down stops the testbed's switches and removes its namespaces and
// state.
func (tb *Testbed) Down() error {
	return Down(tb.stateDir, tb.st.Name+"-", tb.out)
}

// Down removes the testbed with this prefix: every process that runs in
// one of its namespaces (tord, roceperf, a shell someone left), then the
// namespaces — which takes their veths along — then its state. It finds
// namespaces by the state's plan and by name prefix, so it also cleans up
// after a testbed that crashed half way; namespaces with the prefix that
// another testbed's state claims are left alone.
func Down(stateDir, prefix string, out io.Writer) error {
	logf := func(format string, args ...any) {
		if out != nil {
			fmt.Fprintf(out, "testbed: "+format+"\n", args...)
		}
	}
	sts, _ := ListStates(stateDir)
	var mine *lab.State
	claimed := map[string]bool{}
	for _, st := range sts {
		if st.Name+"-" == prefix {
			mine = st
			continue
		}
		for _, n := range st.Netns() {
			claimed[n] = true
		}
	}
	set := map[string]bool{}
	if mine != nil {
		for _, n := range mine.Netns() {
			set[n] = true
		}
	}
	found, err := ListNetns(prefix)
	if err != nil {
		return err
	}
	for _, n := range found {
		if !claimed[n] {
			set[n] = true
		}
	}
	var names []string
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)

	pids, err := pidsIn(names)
	if err != nil {
		return err
	}
	var all []int
	for n, ps := range pids {
		logf("stopping %d process(es) in %s: %v", len(ps), n, ps)
		all = append(all, ps...)
	}
	var errs []error
	if left := terminate(all, stopGrace); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes %v survived SIGKILL", left))
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(netnsDir, n)); err != nil {
			continue
		}
		if _, err := runCommand(context.Background(), Command{"ip", "netns", "del", n}); err != nil {
			errs = append(errs, err)
		}
	}
	// The management veths' host ends go with their namespaces; one
	// left behind (the kernel is slow, or something held it) is removed.
	errs = append(errs, removeMgmtLinks(names)...)
	if len(names) > 0 {
		logf("removed %d namespace(s) with prefix %s", len(names), prefix)
	}
	if len(errs) == 0 {
		if mine == nil {
			// A folder whose state file is gone (removed by hand).
			mine = &lab.State{Name: StateName(prefix), Dir: filepath.Join(stateDir, StateName(prefix))}
		}
		if err := removeState(stateDir, mine); err != nil {
			errs = append(errs, err)
		}
	}
	if left, _ := ListNetns(prefix); len(left) > 0 {
		var ours []string
		for _, n := range left {
			if set[n] {
				ours = append(ours, n)
			}
		}
		if len(ours) > 0 {
			errs = append(errs, fmt.Errorf("namespaces still there: %s", strings.Join(ours, " ")))
		}
	}
	return errors.Join(errs...)
}
