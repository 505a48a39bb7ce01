package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

func main() {
	args := os.Args[1:]
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(args) > 0 && args[0] == "merge":
		err = merge(args[1:])
	case len(args) > 0 && args[0] == "list":
		err = cmdList(os.Stdout)
	case len(args) > 0 && args[0] == "run":
		err = cmdRun(ctx, args[1:], os.Stdout, os.Stderr)
	default:
		err = run(args)
	}
	switch {
	case errors.Is(err, lab.ErrUsage):
		fmt.Fprintln(os.Stderr, "torsim:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "torsim:", err)
		os.Exit(1)
	}
}

type rateFlag struct{ v *uint64 }

func (r rateFlag) String() string {
	if r.v == nil {
		return "0"
	}
	return fmt.Sprint(*r.v)
}
func (r rateFlag) Set(s string) error {
	var x dataplane.Rate
	if err := x.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	*r.v = uint64(x)
	return nil
}

type bytesFlag struct{ v *int }

func (b bytesFlag) String() string {
	if b.v == nil {
		return "0"
	}
	return fmt.Sprint(*b.v)
}
func (b bytesFlag) Set(s string) error {
	var x dataplane.Bytes
	if err := x.UnmarshalText([]byte(s)); err != nil {
		return err
	}
	*b.v = int(x)
	return nil
}

func run(args []string) error {
	fs := flag.NewFlagSet("torsim", flag.ContinueOnError)
	ti := topo.DefaultTiers()
	var (
		shape     = fs.String("topo", "chain", "topology: "+topo.Syntax+" (tor/topo)")
		hostDelay = fs.Duration("delay", time.Microsecond, "propagation delay of host links")
		fabDelay  = fs.Duration("fabric-delay", time.Microsecond, "propagation delay of switch-to-switch links")
		coreDelay = fs.Duration("core-delay", 0, "propagation delay of a fat tree's core links (0: --fabric-delay)")
		swFile    = fs.String("switch", "", "tord YAML every switch is built from, without ports (\"fabric\", \"hosts\", \"all\" in port lists)")
		transport = fs.String("transport", "gbn", "hosts' loss recovery: gbn, irn, fasr or dcp")
		ccName    = fs.String("cc", "none", "hosts' congestion control: none, fixed or dcqcn")
		rto       = fs.Duration("rto", 0, "first retransmission timeout (0: the transport's default)")
		bdp       = fs.Int("bdp", 0, "packets Go-Back-N's, IRN's and FaSR's windows span (0: 128)")
		mtu       = fs.Int("mtu", 1024, "QP MTU")
		overhead  = fs.Int("overhead", 24, "bytes the wire adds to a frame (preamble, FCS, gap); 0 as htsim")
		rxRing    = fs.Int("rx-ring", 1024, "frames a port's receive ring holds")
		wl        = fs.String("workload", "permutation", "permutation, incast, alltoall, allreduce, sequence, poisson or file")
		traffic   = fs.String("traffic", "", "traffic file for --workload file (src dst size start_ns [after])")
		cdf       = fs.String("cdf", "websearch", "flow sizes for poisson: websearch, datamining, hadoop or a file")
		load      = fs.Float64("load", 0.5, "poisson: offered load per host, of its link rate")
		duration  = fs.Duration("duration", time.Millisecond, "poisson: how long flows arrive")
		incast    = fs.Int("incast", 8, "incast: senders (to host 0)")
		count     = fs.Int("count", 100, "sequence: messages from host 0 to the last host")
		depth     = fs.Int("depth", 1, "sequence: messages in flight")
		qps       = fs.Int("qps", 1, "QPs per host pair")
		op        = fs.String("op", "write", "verb: write or send")
		seed      = fs.Uint64("seed", 1, "seed of every random stream")
		until     = fs.Duration("until", 0, "stop at this simulated time (0: when every flow completed, at most 10s)")
		out       = fs.String("out", "", "directory for result.json and result.md (empty: Markdown on stdout)")
		quiet     = fs.Bool("quiet", false, "no progress line")
		cpuprof   = fs.String("cpuprofile", "", "write a CPU profile here")
		dump      = fs.String("dump-traffic", "", "write the flows to this traffic file too")
		memprof   = fs.String("memprofile", "", "write a heap profile here at the end")
		sweep     = fs.String("sweep", "", "run the cells of this sweep file (JSON: common flags and a list of cells' flags) into --out/cell-N")
		cell      = fs.Int("cell", -1, "with --sweep: run only this cell (default: $JOB_COMPLETION_INDEX, else every cell)")
	)
	size, maxSize := 1<<20, 0
	switchFor := map[string]string{}
	fs.Func("switch-for", "NAME=FILE: build switch NAME (or the switches a pattern such as tor* matches) from FILE instead of --switch (repeatable)", func(v string) error {
		name, file, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("want NAME=FILE")
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		switchFor[name] = string(b)
		return nil
	})
	fs.Var(rateFlag{&ti.HostRate}, "rate", "host link rate, e.g. 100G")
	fs.Var(rateFlag{&ti.FabricRate}, "fabric-rate", "switch-to-switch link rate (default: --rate)")
	fs.Var(rateFlag{&ti.CoreRate}, "core-rate", "a fat tree's core link rate (default: --fabric-rate)")
	fs.Var(bytesFlag{&size}, "size", "flow size of permutation, incast, alltoall, allreduce")
	fs.Var(bytesFlag{&maxSize}, "max-size", "poisson: cap on flow sizes (0: none)")
	ti.FabricRate = 0
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sweep != "" {
		if *out == "" {
			return fmt.Errorf("--sweep needs --out")
		}
		// Flags given beside --sweep apply to every cell.
		var extra []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "sweep" && f.Name != "cell" && f.Name != "out" && f.Name != "switch-for" {
				extra = append(extra, "--"+f.Name+"="+f.Value.String())
			}
		})
		return runSweep(*sweep, *cell, *out, extra)
	}
	if ti.FabricRate == 0 {
		ti.FabricRate = ti.HostRate
	}
	ti.HostDelay, ti.FabricDelay, ti.CoreDelay = sim.Time(*hostDelay)*sim.Nanosecond, sim.Time(*fabDelay)*sim.Nanosecond, sim.Time(*coreDelay)*sim.Nanosecond
	tp, err := topo.Parse(*shape, ti)
	if err != nil {
		return err
	}
	var sw []byte
	if *swFile != "" {
		if sw, err = os.ReadFile(*swFile); err != nil {
			return err
		}
	}
	hosts := len(tp.Hosts())
	r := rand.New(rand.NewPCG(*seed, sim.Seed(*seed, 6)))
	var flows []workload.Flow
	switch *wl {
	case "permutation":
		flows = workload.Permutation(hosts, size, r)
	case "incast":
		var s []int
		for i := 1; i <= min(*incast, hosts-1); i++ {
			s = append(s, i)
		}
		flows = workload.Incast(s, 0, size)
	case "alltoall":
		flows = workload.AllToAll(hosts, size)
	case "sequence":
		flows = workload.Sequence(0, hosts-1, size, *count, *depth)
	case "allreduce":
		flows = workload.RingAllReduce(hosts, size)
	case "poisson":
		d, err := workload.LoadCDF(*cdf)
		if err != nil {
			return err
		}
		flows = workload.Poisson(hosts, d, *load, ti.HostRate, int64(*duration), maxSize, r)
	case "file":
		f, err := os.Open(*traffic)
		if err != nil {
			return err
		}
		flows, err = workload.Read(f)
		f.Close()
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("--workload %q: want permutation, incast, alltoall, allreduce, sequence, poisson or file", *wl)
	}
	if *dump != "" {
		f, err := os.Create(*dump)
		if err != nil {
			return err
		}
		if err := workload.Write(f, flows); err != nil {
			return err
		}
		f.Close()
	}
	largest := 1
	for _, f := range flows {
		largest = max(largest, f.Size)
	}
	o := fabric.Options{Seed: *seed, Switch: string(sw), SwitchFor: switchFor, Transport: *transport, RTO: *rto, BDP: *bdp, CC: *ccName,
		MTU: *mtu, Overhead: *overhead, MaxMessage: largest, RxRing: *rxRing, MaxQPs: fabric.QPsNeeded(flows, *qps)}
	if *overhead == 0 {
		o.Overhead = -1
	}
	verb := nic.OpWrite
	switch *op {
	case "write":
	case "send":
		verb = nic.OpSend
	default:
		return fmt.Errorf("--op %q: want write or send", *op)
	}
	wall := time.Now()
	n, err := fabric.Build(tp, o)
	if err != nil {
		return err
	}
	build := time.Since(wall)
	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	ro := fabric.RunOptions{QPs: *qps, Op: verb, Until: sim.Time(*until) * sim.Nanosecond}
	if !*quiet {
		ro.Progress = func(p fabric.Progress) {
			fmt.Fprintf(os.Stderr, "\rtorsim: %.3f ms simulated, %d/%d flows, %.2fM events/s, %s wall, ETA %s   ",
				float64(p.Now)/float64(sim.Millisecond), p.Done, p.Flows, p.EventsPerSec/1e6, p.Wall.Round(time.Second), p.ETA.Round(time.Second))
		}
	}
	start := time.Now()
	res, err := n.Run(flows, ro)
	if err != nil {
		return err
	}
	el := time.Since(start)
	if *memprof != "" {
		f, err := os.Create(*memprof)
		if err != nil {
			return err
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
		f.Close()
	}
	if !*quiet {
		fmt.Fprintln(os.Stderr)
	}
	res.Command = "torsim " + strings.Join(args, " ")
	res.Machine = machine()
	perf := fmt.Sprintf("wall %.2f s (build %.2f s); %.2fM events/s; %.0f ns per packet-hop",
		el.Seconds(), build.Seconds(), float64(res.Events)/el.Seconds()/1e6, float64(el.Nanoseconds())/float64(max(res.PacketHops, 1)))
	fmt.Fprintln(os.Stderr, "torsim:", perf)
	var md strings.Builder
	res.Markdown(&md)
	fmt.Fprintf(&md, "\nSpeed on %s: %s (not in result.json, which depends only on the inputs and seed).\n", res.Machine, perf)
	if *out == "" {
		fmt.Print(md.String())
		return nil
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "result.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(*out, "result.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	return writePlots(*out, res)
}

// machine describes where the run happened: the CPU model and count
// and Go's version.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s %s/%s", model, runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
