package pipeline

import (
	"fmt"
	"slices"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/inband"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
	"rocetor/tor/trim"
	"rocetor/tor/trust"
)

// Plan is what the workers of one switch share, derived once from a
// validated Config: the FIB the forwarding stages read, the stage
// configurations, and the impairment every worker's ports obey.
type Plan struct {
	cfg    *Config
	fib    *fwd.FIB
	misses *fwd.Misses // nil: misses are not reported to the kernel
	// Fwd is the forwarding stage's configuration (its Multipath is
	// what the kernel mirror spreads routes by).
	Fwd   fwd.Config
	netrt netrt.Config
	llr   llr.Config
	trust trust.Config
	// Impair is the impairment every worker's ports obey; nil without
	// impair rules.
	Impair *impair.Control
	// Owners divides flows and ports among the workers; nil when they
	// hand nothing to each other (Config.Handoff).
	Owners *Owners
	// Buffer is the switch's shared buffer, every worker's; nil
	// without a buffer section.
	Buffer *dataplane.SharedBuffer
	// Yield is every worker's dataplane.WorkerConfig.Yield: tord sets
	// afxdp.Yield; the simulator and in-memory tests leave it nil.
	Yield func()
}

// MTUFunc returns the MTU of the interface behind the named port; ok is
// false where there is none. tord looks its interfaces up; the
// simulator and the in-memory tests have none to look up.
type MTUFunc func(port string) (mtu int, ok bool)

// NewPlan derives the stage configurations of cfg over ports without
// interfaces (the simulator, in-memory tests): it reads nothing from
// the host, so that a simulated port named like one of the machine's
// interfaces ("lo", "eth0") gets the same plan as any other. llr's
// largest frame is its default. NewPlan is NewPlanMTU with a nil
// lookup.
func NewPlan(cfg *Config, fib *fwd.FIB, misses *fwd.Misses) (*Plan, error) {
	return NewPlanMTU(cfg, fib, misses, nil)
}

// NewPlanMTU derives the stage configurations of cfg. llr's largest
// frame comes from mtu, the MTUs of the protected ports' interfaces
// that exist; where none does, or mtu is nil, llr's default holds.
func NewPlanMTU(cfg *Config, fib *fwd.FIB, misses *fwd.Misses, mtu MTUFunc) (*Plan, error) {
	p := &Plan{cfg: cfg, fib: fib, misses: misses, trust: cfg.Trust.StageConfig(cfg), Buffer: cfg.sharedBuffer()}
	if cfg.Handoff() {
		p.Owners = NewOwners(cfg)
	}
	var err error
	if p.Fwd, err = FwdConfig(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Impair.Rules) > 0 {
		if p.Impair, err = impair.NewControl(cfg.Impair, cfg.Ports); err != nil {
			return nil, err
		}
	}
	if cfg.NetRT.On() {
		if p.netrt, err = cfg.NetRT.StageConfig(cfg.Ports, fib); err != nil {
			return nil, err
		}
		if p.Owners != nil {
			// A port's byte budgets are the port's: the workers'
			// stages, each serving the flows it owns, count them
			// together (netrt.Budgets).
			p.netrt.Budgets = new(netrt.Budgets)
		}
		// The pool keeps the host's frame itself where no stage after
		// it rewrites more than resend restores (netrt.Config.InPlace):
		// INT stamps records into the frame.
		p.netrt.InPlace = cfg.INT == nil
	}
	if cfg.LLR.On() {
		if p.llr, err = cfg.LLR.StageConfig(cfg.Ports); err != nil {
			return nil, err
		}
		p.llr.TxBuffer, p.llr.TxFrames = cfg.llrTxBuffer(), cfg.llrTxFrames()
		// A frame grown by the shim must still fit the link: the
		// smallest MTU of the protected ports, plus Ethernet.
		for i, name := range cfg.Ports {
			if mtu == nil || p.llr.Ports&(1<<i) == 0 {
				continue
			}
			if m, ok := mtu(name); ok {
				if f := m + 14; p.llr.MaxFrame == 0 || f < p.llr.MaxFrame {
					p.llr.MaxFrame = f
				}
			}
		}
	}
	return p, nil
}

// Pipeline is one worker of a switch as its Config describes it: the
// stages in order, the ports wrapped for the wire (impair) and the link
// (llr's receiver), and the worker over them. tord builds one per
// worker over AF_XDP ports; tests and the fabric simulator build it over
// in-memory ports, so all run the same pipeline.
type Pipeline struct {
	Worker  *dataplane.Worker
	Trust   *trust.Stage
	Fwd     *fwd.Stage
	Src     *netrt.SrcToR  // nil without netrt:
	Dst     *netrt.DstToR  // nil without netrt:
	Trim    *trim.Stage    // nil without trim:
	LLR     *llr.Stage     // nil without llr:
	INT     *inband.Stage  // nil without int:
	Impairs []*impair.Port // every port, wrapped when impair: has rules
	// Ports are the worker's ports as the worker sees them: the ports
	// Build was given, wrapped by impair and llr where the
	// configuration says.
	Ports []dataplane.Port
	// Stages are the worker's stages in order, for a caller that
	// compares or reports pipelines.
	Stages []dataplane.Stage
}

// Publish stores the counters of the worker, its stages and its
// impaired ports for their Snapshots now, at worker time now; the
// collectors (tor/telemetry) read those. Each publishes about once a
// millisecond of worker time by itself, which serves a running switch;
// a simulator, which stops at any instant, calls Publish at the end of
// a run. Call it from the worker's goroutine, or after it stopped.
func (pl *Pipeline) Publish(now int64) {
	pl.Worker.Publish(now)
	pl.Trust.Publish(now)
	pl.Fwd.Publish(now)
	if pl.Src != nil {
		pl.Src.Publish(now)
		pl.Dst.Publish(now)
	}
	if pl.Trim != nil {
		pl.Trim.Publish(now)
	}
	if pl.LLR != nil {
		pl.LLR.Publish(now)
	}
	if pl.INT != nil {
		pl.INT.Publish(now)
	}
	for _, ip := range pl.Impairs {
		ip.Publish(now)
	}
}

// Build makes worker w's pipeline over ports (one per cfg.Ports, in
// order), whose frames live in mem, on clock (nil: the runtime's), for a
// switch whose workers hand nothing to each other (Config.Handoff is
// false).
func (p *Plan) Build(w int, mem *dataplane.Mem, ports []dataplane.Port, clock func() int64) (*Pipeline, error) {
	return p.BuildHanded(w, mem, ports, clock, nil)
}

// BuildHanded is Build for any switch: with more than one worker and a
// stage that keeps state (Config.Handoff), h connects the switch's
// workers and mem is w's of dataplane.SharedMems over h; otherwise h is
// nil.
func (p *Plan) BuildHanded(w int, mem *dataplane.Mem, ports []dataplane.Port, clock func() int64, h *dataplane.Handoff) (*Pipeline, error) {
	cfg := p.cfg
	pl := &Pipeline{}
	ports = append([]dataplane.Port(nil), ports...)
	if clock == nil {
		clock = dataplane.MonotonicClock()
	}
	// DCP headers are parsed only in a DCP fabric: elsewhere the DSCP
	// bits they would read are an ordinary traffic class.
	cls := rocev2.Classifier{VerifyICRC: cfg.VerifyICRC, DCP: cfg.ParsesDCP()}
	if p.Impair != nil {
		// Impairment is the wire's: every port is wrapped right on its
		// socket, under llr's receiver (wrapped below), so every frame
		// that leaves or arrives meets the rules, whichever stage or
		// timer sent it. Ports without rules pass frames straight
		// through, and a reload may give them rules. The ports share
		// the worker's clock: their deadlines and policers run on the
		// time the worker steps at.
		for i := range ports {
			ip := p.Impair.Wrap(ports[i], impair.PortConfig{Worker: w, Mem: mem, Clock: clock, Classifier: cls})
			pl.Impairs = append(pl.Impairs, ip)
			ports[i] = ip
		}
	}
	var err error
	var linkOwner []int // with a handoff and llr: the owner of each protected link
	fc := p.Fwd
	if p.Owners != nil && cfg.Forwarding.OwnerECMP {
		// fwd runs on the flow's owner: its ecmp keeps the flow on
		// uplinks that worker owns (Owners).
		fc.Owned = p.Owners.Owned(w)
	}
	if pl.Fwd, err = fwd.NewStage(fc, p.fib, p.misses); err != nil {
		return nil, err
	}
	// First: what crosses a trust boundary must reach no stage, not
	// even fwd, which would forward a shimmed frame onto a protected
	// link. What stages emit later is the switch's own and skips it.
	pl.Trust = trust.NewStage(p.trust)
	stages := []dataplane.Stage{pl.Trust, pl.Fwd}
	if cfg.NetRT.On() {
		// After fwd, which picks the ports both stages key on; before
		// trim and llr, which the packets NetRT emits later
		// (retransmissions, released packets) pass through like any
		// other (dataplane.Ctx.Emit).
		if pl.Src, err = netrt.NewSrcToR(p.netrt); err != nil {
			return nil, err
		}
		if pl.Dst, err = netrt.NewDstToR(p.netrt); err != nil {
			return nil, err
		}
		if p.netrt.InPlace {
			mem.EnableHolds()
		}
		stages = append(stages, pl.Src, pl.Dst)
	}
	if cfg.Trim != nil {
		// After fwd, which chooses the port and queue the trimming
		// decision reads. After NetRT: SrcToR pools a host's packet
		// whole before this ToR may trim it (a pooled copy must carry
		// the payload a retransmission restores). An HO packet made
		// here still meets an impaired port's loss.
		if pl.Trim, err = trim.NewStage(*cfg.Trim); err != nil {
			return nil, err
		}
		stages = append(stages, pl.Trim)
	}
	if cfg.INT != nil {
		// After every stage that picks ports and queues (and after
		// trim, which would cut a tail off with the payload), before
		// llr's sender, whose copies must carry the records.
		if pl.INT, err = cfg.INT.stage(cfg); err != nil {
			return nil, err
		}
		stages = append(stages, pl.INT)
	}
	if cfg.LLR.On() {
		// The sender half, after every stage that picks ports and
		// queues (it numbers what the data queue of a protected port
		// will carry). The receiver half wraps the protected ports,
		// outside any impairment, so frames reach the pipeline
		// de-duplicated, in order and unshimmed, and everything llr
		// sends, copies and control alike, meets the impaired wire.
		lc := p.llr
		if h != nil {
			// A link has one llr state, on its owner (Owners, which
			// deals the links round the workers): the other
			// workers do not protect it and hand what they receive
			// on it to the owner raw (LinkOwner), whose receiver
			// reads it through an Inbox under it.
			linkOwner = make([]int, len(ports))
			for i := range ports {
				linkOwner[i] = -1
				if lc.Ports&(1<<i) != 0 {
					linkOwner[i] = p.Owners.Port(i)
					if linkOwner[i] != w {
						lc.Ports &^= 1 << i
					}
				}
			}
		}
		if pl.LLR, err = llr.NewStage(lc); err != nil {
			return nil, err
		}
		for i := range ports {
			if pl.LLR.Protected(i) {
				in := ports[i]
				if h != nil {
					in = dataplane.NewInbox(in, h.Workers()*dataplane.HandoffRing)
				}
				if ports[i], err = pl.LLR.Wrap(i, in, mem); err != nil {
					return nil, err
				}
			}
		}
		stages = append(stages, pl.LLR)
	}
	egs, err := cfg.EgressConfigs()
	if err != nil {
		return nil, err
	}
	cfg.Buffer.apply(egs, p.Buffer, cfg.shares())
	var seed uint64
	if cfg.ECN != nil {
		seed = cfg.ECN.Seed
	}
	pm, _ := dataplane.ParsePollMode(cfg.Poll)
	wc := dataplane.WorkerConfig{ID: w, Mem: mem, Ports: ports, Egress: egs,
		Stages: stages, Mode: pm, Classifier: cls, Clock: clock, Seed: seed, RefusePFC: cfg.Trust.RefusePFC(cfg.Ports),
		PFC: cfg.PFC.ingress(cfg), PFCWatchdog: cfg.PFC.watchdog(), Thread: cfg.CPU.Thread(w), Yield: p.Yield,
		InputLimit: int(cfg.Egress.InputLimit)}
	if (h != nil) != (p.Owners != nil) {
		return nil, fmt.Errorf("%w: worker %d: a handoff is needed exactly with more than one worker and netrt, trim or llr", ErrConfig, w)
	}
	if h != nil {
		// trust, fwd and NetRT run on the flow's owner; trimming and
		// llr's sender, which read and number the egress queue, on
		// the port's.
		wc.Handoff, wc.Owner, wc.PortOwner, wc.EgressStage = h, p.Owners.Owner(), p.Owners.Ports(), len(stages)
		wc.LinkOwner = linkOwner
		if pl.Trim != nil {
			wc.EgressStage = slices.Index(stages, dataplane.Stage(pl.Trim))
		} else if pl.INT != nil {
			wc.EgressStage = slices.Index(stages, dataplane.Stage(pl.INT))
		} else if pl.LLR != nil {
			wc.EgressStage = slices.Index(stages, dataplane.Stage(pl.LLR))
		}
	}
	pl.Worker, err = dataplane.NewWorker(wc)
	if err != nil {
		return nil, err
	}
	pl.Ports, pl.Stages = ports, stages
	return pl, nil
}

// EgressConfigs returns the egress of each port of a worker: the
// default queues, each worker's share of the port's rate, trimming's
// WRR on the trimming ports and the ECN marking.
func (cfg *Config) EgressConfigs() ([]dataplane.EgressConfig, error) {
	// Each worker shapes its share of the link: with W workers, W
	// shapers at rate/W add up to the configured rate. With a handoff
	// (Config.Handoff) the port's owner alone queues on it, at the
	// whole rate (a shared port is unshaped: Config.SharedPorts).
	shares := cfg.shares()
	eg := cfg.Layout() // DefaultEgress, with the qos section's classes
	eg.Ring = cfg.Egress.Ring
	egs := make([]dataplane.EgressConfig, len(cfg.Ports))
	for i := range egs {
		egs[i] = eg
		egs[i].RateBps = uint64(cfg.Egress.Rate) / uint64(shares[i])
		if r, ok := cfg.Egress.PortRates[cfg.Ports[i]]; ok {
			egs[i].RateBps = uint64(r) / uint64(shares[i])
		}
		if cfg.Trim != nil && cfg.Trim.Trims(cfg.Ports[i]) {
			// The trimming ports' control and data queues share a
			// level by WRR, weighted w:1 (tor/trim).
			var err error
			before := egs[i]
			if egs[i], err = cfg.Trim.WRR(egs[i]); err != nil {
				return nil, err
			}
			keepDWRRShares(before, egs[i])
		}
	}
	ApplyMarking(egs, cfg.ECN.Marking(cfg, egs))
	return egs, nil
}

// FwdConfig derives the forwarding stage's configuration from cfg.
func FwdConfig(cfg *Config) (fwd.Config, error) {
	fc := fwd.DefaultConfig()
	eg := cfg.Layout()
	fc.Queue = eg.QueueIndexByName(cfg.Forwarding.Queue)
	fc.DSCPQueue = map[uint8]int{}
	for d, q := range cfg.Forwarding.DSCPQueues {
		fc.DSCPQueue[uint8(d)] = eg.QueueIndexByName(q)
	}
	if cfg.QoS != nil {
		// Every DSCP by the traffic classes (fwd's table is the
		// DSCP → queue composition of the two maps).
		fc.DSCPQueue = cfg.dscpQueues()
	}
	// Every switch that parses DCP keeps header-only packets on the
	// control queue of every port, trimming or not (tor/fwd).
	fc.DCP, fc.HOQueue = cfg.ParsesDCP(), eg.QueueIndexByName(trim.ControlQueue)
	fc.Multipath = fwd.Multipath{Bias: int(cfg.Forwarding.AdaptiveBias)}
	fc.HashSeed = cfg.Forwarding.HashSeed
	if cfg.Egress.ByInput {
		fc.ByInput = len(cfg.Ports)
	}
	var err error
	fc.Multipath.Mode, err = fwd.ParseMode(cfg.Forwarding.Multipath)
	return fc, err
}
