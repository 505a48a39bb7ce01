package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"go.uber.org/zap"

	"rocetor/afxdp"
	"rocetor/bpf"
	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
	"rocetor/tor/pipeline"
	"rocetor/tor/trim"
)

// Switch is a running tord: one XDP program per port, one worker per
// worker index, each worker owning queue w of every port, and the kernel
// mirror feeding the forwarding stages. Each worker has a UMEM of its
// own, except when the workers hand frames to their owners
// (Config.Handoff): then every socket of the switch shares one UMEM
// (XDP_SHARED_UMEM, each socket with its own fill and completion
// rings), cut into one frame range per worker (dataplane.SharedMems), so
// a frame received on worker A's socket is transmitted on worker B's
// without a copy; B's completion ring gives it back to B, which returns
// it to A over the handoff (A alone refills its fill rings from its
// range).
type Switch struct {
	log     *zap.Logger
	cfg     Config
	progs   []*bpf.Program
	umems   []*afxdp.UMEM
	handoff *dataplane.Handoff     // nil unless cfg.Handoff()
	ports   [][]*dataplane.XDPPort // [worker][port]
	workers []*dataplane.Worker
	pls     []*pipeline.Pipeline // by worker
	impairs []*impair.Port       // every worker's ports, wrapped when impair has rules
	impair  *impair.Control      // nil without impair rules
	trims   []*trim.Stage
	llr     *llr.Links // every worker's llr stage, each link by its owner (pipeline.Owners)
	llrs    []*llr.Stage
	monitor *llr.Monitor
	srcs    []*netrt.SrcToR
	dsts    []*netrt.DstToR
	fib     *fwd.FIB
	misses  *fwd.Misses
	mirror  *fwd.Mirror
	modes   []bpf.Mode
}

// OpenSwitch attaches to the configured ports and builds the workers. On
// error, everything made so far is released.
func OpenSwitch(cfg Config, log *zap.Logger) (*Switch, error) {
	s := &Switch{log: log, cfg: cfg, fib: &fwd.FIB{}, misses: fwd.NewMisses(1024)}
	done := false
	defer func() {
		if !done {
			s.Close()
		}
	}()
	if err := preflight(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	// Kernels before 5.11 charge BPF maps and AF_XDP UMEM to RLIMIT_MEMLOCK.
	// The probe behind it calls bpf(2), so a missing CAP_BPF or a seccomp
	// filter shows here first.
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("%w: bpf(2) refused: CAP_BPF missing or bpf blocked by a seccomp filter (or, before Linux 5.11, a memlock limit too low without CAP_SYS_RESOURCE): %w", ErrPreflight, err)
	}
	macs, err := s.attach()
	if err != nil {
		return nil, err
	}
	pn, err := pipeline.NewPlanMTU(&cfg, s.fib, s.misses, interfaceMTU)
	if err != nil {
		return nil, err
	}
	pn.Yield = afxdp.Yield // the ports are AF_XDP sockets (poll: busy)
	s.impair = pn.Impair
	mems, err := s.sharedMems()
	if err != nil {
		return nil, err
	}
	for w := 0; w < cfg.Workers; w++ {
		var mem *dataplane.Mem
		if mems != nil {
			mem = mems[w]
		}
		if err := s.openWorker(w, pn, macs, mem); err != nil {
			return nil, err
		}
	}
	if err := s.openLLR(); err != nil {
		return nil, err
	}
	if err := s.logStages(); err != nil {
		return nil, err
	}
	s.mirror, err = fwd.NewMirror(fwd.MirrorConfig{Ports: cfg.Ports, FIB: s.fib, Misses: s.misses,
		Multipath: pn.Fwd.Multipath, Logger: log.Named("mirror")})
	if err != nil {
		return nil, fmt.Errorf("kernel mirror: %w", err)
	}
	done = true
	return s, nil
}

// attach loads an XDP program for every port, which passes the traffic
// of the namespace's addresses to the kernel, attaches it, and returns
// the ports' MACs.
func (s *Switch) attach() ([]rocev2.MAC, error) {
	cfg := &s.cfg
	local, err := localAddrs()
	if err != nil {
		return nil, err
	}
	mode := map[string]bpf.Mode{"auto": bpf.ModeAuto, "native": bpf.ModeNative, "generic": bpf.ModeGeneric}[cfg.XDP.Mode]
	macs := make([]rocev2.MAC, len(cfg.Ports))
	for i, name := range cfg.Ports {
		ifi, _ := net.InterfaceByName(name) // preflight checked it exists
		copy(macs[i][:], ifi.HardwareAddr)
		p, err := bpf.Load(bpf.Options{MaxQueues: max(cfg.Workers, bpf.DefaultMaxQueues), LocalAddrs: local})
		if err != nil {
			return nil, fmt.Errorf("load XDP program for %s: %w", name, err)
		}
		s.progs = append(s.progs, p)
		got, err := p.Attach(name, mode)
		if err != nil {
			return nil, err // bpf's errors name the interface and any program in the way
		}
		s.modes = append(s.modes, got)
		s.log.Info("attached XDP program", zap.String("port", name), zap.Stringer("mode", got))
	}
	return macs, nil
}

// sharedMems makes the handoff and the one UMEM every socket shares
// when the workers hand frames to their owners (Config.Handoff), and
// returns each worker's frame memory in it; nil otherwise.
func (s *Switch) sharedMems() ([]*dataplane.Mem, error) {
	cfg := &s.cfg
	if !cfg.Handoff() {
		return nil, nil
	}
	var err error
	if s.handoff, err = dataplane.NewHandoff(cfg.Workers, 0); err != nil {
		return nil, err
	}
	// xdp.frames per worker, in one UMEM of a power of two.
	n := 1
	for n < cfg.XDP.Frames*cfg.Workers {
		n *= 2
	}
	u, err := afxdp.NewUMEM(afxdp.UMEMOptions{FrameSize: cfg.XDP.FrameSize, NumFrames: n})
	if err != nil {
		return nil, fmt.Errorf("shared UMEM of %d workers: %w", cfg.Workers, err)
	}
	s.umems = append(s.umems, u)
	mems, err := dataplane.SharedMems(u.Bytes(), u.FrameSize(), s.handoff)
	if err != nil {
		return nil, err
	}
	s.log.Info("workers hand frames to their owners", zap.Int("workers", cfg.Workers), zap.Int("umem_frames", n))
	return mems, nil
}

// openWorker opens worker w's socket on every port, over mem in the
// shared UMEM or, when mem is nil, over a UMEM of its own, and builds
// its pipeline by pn.
func (s *Switch) openWorker(w int, pn *pipeline.Plan, macs []rocev2.MAC, mem *dataplane.Mem) error {
	cfg := &s.cfg
	var u *afxdp.UMEM
	var err error
	if s.handoff != nil {
		u = s.umems[0]
	} else {
		if u, err = afxdp.NewUMEM(afxdp.UMEMOptions{FrameSize: cfg.XDP.FrameSize, NumFrames: cfg.XDP.Frames}); err != nil {
			return fmt.Errorf("worker %d: %w", w, err)
		}
		s.umems = append(s.umems, u)
		if mem, err = dataplane.MemOfUMEM(u); err != nil {
			return err
		}
	}
	bind := map[string]afxdp.BindMode{"auto": afxdp.BindAuto, "zerocopy": afxdp.BindZeroCopy, "copy": afxdp.BindCopy}[cfg.XDP.Bind]
	var ports []dataplane.Port
	var xports []*dataplane.XDPPort
	for i, name := range cfg.Ports {
		sock, err := openSocket(name, w, u, bind, cfg)
		if err != nil {
			return err
		}
		xp, err := dataplane.NewXDPPort(sock, mem, macs[i], cfg.XDP.RingSize, s.modes[i] == bpf.ModeNative)
		if err != nil {
			sock.Close()
			return err
		}
		if err := s.progs[i].Register(w, sock.FD()); err != nil {
			sock.Close()
			return fmt.Errorf("register socket of %s queue %d: %w", name, w, err)
		}
		ports = append(ports, xp)
		xports = append(xports, xp)
		if w == 0 {
			s.log.Info("opened AF_XDP socket", zap.String("port", name), zap.Int("queue", w),
				zap.Stringer("bind", sock.BindMode()))
		}
	}
	s.ports = append(s.ports, xports)
	pl, err := pn.BuildHanded(w, mem, ports, nil, s.handoff)
	if err != nil {
		return err
	}
	s.adopt(w, pl)
	return nil
}

// openLLR addresses the workers' llr stages, each link by the worker
// that owns it (pipeline.Owners deals the links round the workers), for
// the admin API, the collector and the corruption monitor, which it
// makes when the configuration asks.
func (s *Switch) openLLR() error {
	if len(s.llrs) == 0 {
		return nil
	}
	s.llr = llr.NewLinks(s.llrs...)
	if m := s.cfg.LLR.Monitor; m != nil {
		var err error
		if s.monitor, err = llr.NewMonitor(m.Config(), s.llr, s.cfg.Ports, ifCounters, s.log.Named("llr-monitor")); err != nil {
			return err
		}
	}
	return nil
}

// logStages logs what trimming, ECN marking and the trust boundaries
// do, for the operator.
func (s *Switch) logStages() error {
	cfg, log := &s.cfg, s.log
	if cfg.Trim != nil {
		tc := s.trims[0].Config()
		cw, dw := trim.Weights(tc.Weight())
		var on []string
		for _, p := range cfg.Ports {
			if tc.Trims(p) {
				on = append(on, p)
			}
		}
		log.Info("trimming", zap.Strings("ports", on), zap.Int("threshold", int(tc.Threshold)),
			zap.Int("incast_degree", tc.IncastDegree), zap.Float64("ratio", tc.Ratio),
			zap.Float64("weight", tc.Weight()), zap.Int("drr_control", cw), zap.Int("drr_data", dw))
	}
	if cfg.ECN != nil {
		egs, err := cfg.EgressConfigs()
		if err != nil {
			return err
		}
		for i, name := range cfg.Ports {
			var qs []string
			for _, q := range egs[i].Queues {
				if q.ECN.On() {
					qs = append(qs, q.Name+" "+ecnString(q.ECN))
				}
			}
			log.Info("ecn marking", zap.String("port", name), zap.Stringer("at", egs[i].MarkAt),
				zap.Strings("queues", qs), zap.Int("workers", cfg.Workers))
		}
	}
	log.Info("trust boundaries", zap.String("trust", describeTrust(cfg)))
	if a := cfg.NetRTAdvice(); a != "" {
		log.Warn(a, zap.String("multipath", cfg.Forwarding.Multipath))
	}
	return nil
}

// adopt adds worker w's pipeline to the switch's lists of workers and
// stages.
func (s *Switch) adopt(w int, pl *pipeline.Pipeline) {
	s.workers = append(s.workers, pl.Worker)
	s.pls = append(s.pls, pl)
	s.impairs = append(s.impairs, pl.Impairs...)
	if pl.Src != nil {
		s.srcs, s.dsts = append(s.srcs, pl.Src), append(s.dsts, pl.Dst)
	}
	if pl.Trim != nil {
		s.trims = append(s.trims, pl.Trim)
	}
	if pl.LLR != nil {
		s.llrs = append(s.llrs, pl.LLR)
	}
}

// openSocket opens one AF_XDP socket, asking the kernel for a large tx
// budget where it has one (Linux 6.17) so that copy mode sends a whole
// batch per syscall.
func openSocket(name string, queue int, u *afxdp.UMEM, bind afxdp.BindMode, cfg *pipeline.Config) (*afxdp.Socket, error) {
	ring := cfg.XDP.RingSize
	o := afxdp.Options{RxSize: ring, TxSize: ring, FillSize: ring, CompletionSize: ring, Bind: bind, TxBudget: 256,
		BusyPoll: cfg.XDP.BusyPoll, BusyPollBudget: cfg.XDP.BusyPollBudget}
	sock, err := afxdp.Open(name, queue, u, o)
	if errors.Is(err, afxdp.ErrTxBudget) {
		o.TxBudget = 0
		sock, err = afxdp.Open(name, queue, u, o)
	}
	if err != nil {
		return nil, fmt.Errorf("open AF_XDP socket on %s queue %d: %w", name, queue, err)
	}
	return sock, nil
}

// Run starts the mirror, the local-address follower and the workers and
// returns when ctx is done and all of them have stopped.
func (s *Switch) Run(ctx context.Context, ready func()) error {
	if err := s.mirror.Start(ctx); err != nil {
		return fmt.Errorf("kernel mirror: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.followLocalAddrs(ctx)
	}()
	// A worker that cannot start (its thread's scheduling refused:
	// cpu:) stops the switch; the others see ctx end.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var failed atomic.Pointer[error]
	for _, w := range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(ctx); err != nil {
				failed.CompareAndSwap(nil, &err)
				stop(err)
			}
		}()
	}
	if s.monitor != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.monitor.Run(ctx)
		}()
	}
	if _, ok := s.workers[0].PFCWatchdog(); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stormAlerts(ctx, s.log, s.cfg.Ports, s.workers, stormAlertEvery)
		}()
	}
	ready()
	wg.Wait()
	// The workers have stopped: frames handed between them and not yet
	// taken are counted as drops (shutdown), and frames the stages and
	// impaired ports still hold go back to frame memory.
	if s.handoff != nil {
		if n := dataplane.DrainHandoff(s.workers); n > 0 {
			s.log.Info("frames handed between workers and not taken at the stop, dropped as shutdown", zap.Uint64("frames", n))
		}
	}
	for _, ip := range s.impairs {
		ip.Flush()
	}
	for i := range s.srcs {
		s.srcs[i].Close()
		s.dsts[i].Close()
	}
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// followLocalAddrs keeps every port's XDP program's set of local
// addresses, whose traffic it passes to the kernel, equal to the
// namespace's addresses until ctx is done. The set loaded at start is not
// enough: an address added later (a peering or management address) would
// reach the workers, which drop it as local, and stay unreachable until
// tord restarts. A failed subscription is retried every second, with a
// full resync each time.
func (s *Switch) followLocalAddrs(ctx context.Context) {
	for {
		ch, done := make(chan netlink.AddrUpdate, 64), make(chan struct{})
		err := netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{
			ErrorCallback: func(err error) { s.log.Warn("address notifications", zap.Error(err)) },
		})
		if err != nil {
			s.log.Warn("subscribe to address changes; retrying", zap.Error(err))
		} else {
			// Addresses may have changed since the programs were loaded.
			s.syncLocalAddrs()
			for open := true; open && ctx.Err() == nil; {
				select {
				case <-ctx.Done():
				case _, open = <-ch:
					if open {
						s.syncLocalAddrs()
					}
				}
			}
			close(done)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// syncLocalAddrs gives every XDP program the namespace's current
// addresses.
func (s *Switch) syncLocalAddrs() {
	local, err := localAddrs()
	if err != nil {
		s.log.Warn("update local addresses", zap.Error(err))
		return
	}
	for i, p := range s.progs {
		if err := p.SetLocalAddrs(local); err != nil {
			s.log.Warn("update local addresses", zap.String("port", s.cfg.Ports[i]), zap.Error(err))
		}
	}
	s.log.Debug("local addresses", zap.Int("count", len(local)))
}

// Close detaches the XDP programs and frees sockets and UMEMs. The
// workers must have stopped.
func (s *Switch) Close() {
	if s.mirror != nil {
		s.mirror.Close()
	}
	for _, p := range s.progs {
		if err := p.Close(); err != nil { // detaches
			s.log.Warn("detach XDP", zap.Error(err))
		}
	}
	for _, ps := range s.ports {
		for _, p := range ps {
			p.Close()
		}
	}
	for _, u := range s.umems {
		u.Close()
	}
	if s.handoff != nil {
		s.handoff.Close()
	}
}

// StageNames names the stages of every worker's pipeline, in order.
func (s *Switch) StageNames() []string {
	names := []string{"trust", "fwd"}
	if len(s.srcs) > 0 {
		names = append(names, "netrt-src", "netrt-dst")
	}
	if len(s.trims) > 0 {
		names = append(names, "trim")
	}
	if s.llr != nil {
		names = append(names, "llr")
	}
	return names
}

// Workers returns the workers, for the metrics collector.
func (s *Switch) Workers() []*dataplane.Worker { return s.workers }

// ErrPreflight marks a start refused for want of privileges or ports: a
// restart will not help (tord exits 2, which deploy/systemd/tord.service
// does not restart).
var ErrPreflight = errors.New("cannot run here")

// preflight turns the usual failures into messages that say what to do.
func preflight(cfg Config) error {
	if os.Geteuid() != 0 && !hasCaps() {
		return errors.New("tord needs root or the capabilities CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF, and CAP_IPC_LOCK or a memlock limit above the UMEM (see deploy/README.md)")
	}
	for _, name := range cfg.Ports {
		if _, err := net.InterfaceByName(name); err != nil {
			return fmt.Errorf("port %s: no such interface in this network namespace", name)
		}
		if q := rxQueues(name); q > 0 && q < cfg.Workers {
			return fmt.Errorf("port %s has %d rx queues but %d workers need one each; lower --workers or add queues (ethtool -L %s combined %d; veth: ip link add ... numrxqueues %d)",
				name, q, cfg.Workers, name, cfg.Workers, cfg.Workers)
		}
	}
	return nil
}

func rxQueues(name string) int {
	m, _ := filepath.Glob("/sys/class/net/" + name + "/queues/rx-*")
	return len(m)
}

// hasCaps reports whether the process holds CAP_NET_ADMIN (12), CAP_NET_RAW
// (13) and CAP_BPF (39) in its effective set.
func hasCaps() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	var eff uint64
	for _, line := range strings.Split(string(b), "\n") {
		if n, _ := fmt.Sscanf(line, "CapEff:\t%x", &eff); n == 1 {
			break
		}
	}
	// CAP_NET_ADMIN, CAP_NET_RAW, CAP_BPF: what deploy/README.md found
	// needed, one capability removed at a time. CAP_IPC_LOCK (or a
	// memlock limit above the UMEM) is checked where the UMEM registers.
	const need = 1<<12 | 1<<13 | 1<<39
	return eff&need == need
}

// localAddrs lists the addresses of every interface in this namespace:
// traffic to them belongs to the kernel, not to the switch.
func localAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list local addresses: %w", err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr())
		}
	}
	return out, nil
}

// interfaceMTU is the MTU of the named interface, for llr's largest
// frame (pipeline.NewPlanMTU).
func interfaceMTU(name string) (int, bool) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return 0, false
	}
	return ifi.MTU, true
}
