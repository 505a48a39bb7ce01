package main

import (
	"net"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/impair"
	"rocetor/tor/llr"
	"rocetor/tor/netrt"
	"rocetor/tor/trim"
)

// plan is what the workers of one switch share, derived once from a
// validated Config: the FIB the forwarding stages read, the stage
// configurations, and the impairment every worker's ports obey.
type plan struct {
	cfg    *Config
	fib    *fwd.FIB
	misses *fwd.Misses // nil: misses are not reported to the kernel
	fwd    fwd.Config
	netrt  netrt.Config
	llr    llr.Config
	impair *impair.Control // nil without impair rules
}

// newPlan derives the stage configurations of cfg. llr's largest frame
// comes from the MTU of the protected interfaces that exist; where none
// does (in-memory ports), llr's default holds.
func newPlan(cfg *Config, fib *fwd.FIB, misses *fwd.Misses) (*plan, error) {
	p := &plan{cfg: cfg, fib: fib, misses: misses}
	var err error
	if p.fwd, err = fwdConfig(cfg); err != nil {
		return nil, err
	}
	if len(cfg.Impair.Rules) > 0 {
		if p.impair, err = impair.NewControl(cfg.Impair, cfg.Ports); err != nil {
			return nil, err
		}
	}
	if cfg.NetRT.On() {
		if p.netrt, err = cfg.NetRT.stageConfig(cfg.Ports, fib); err != nil {
			return nil, err
		}
	}
	if cfg.LLR.On() {
		if p.llr, err = cfg.LLR.stageConfig(cfg.Ports); err != nil {
			return nil, err
		}
		if p.llr.TxBuffer == 0 {
			// Frames are numbered, and kept, as they are queued: the
			// Tx buffer must hold the data queue and a round trip, or
			// frames past it cross unprotected.
			p.llr.TxBuffer = max(2*int(cfg.Egress.QueueLimit), llr.DefaultTxBuffer)
		}
		// A frame grown by the shim must still fit the link: the
		// smallest MTU of the protected ports, plus Ethernet.
		for i, name := range cfg.Ports {
			if ifi, err := net.InterfaceByName(name); err == nil && p.llr.Ports&(1<<i) != 0 {
				if f := ifi.MTU + 14; p.llr.MaxFrame == 0 || f < p.llr.MaxFrame {
					p.llr.MaxFrame = f
				}
			}
		}
	}
	return p, nil
}

// pipeline is one worker of a switch as its Config describes it: the
// stages in order, the ports wrapped for the wire (impair) and the link
// (llr's receiver), and the worker over them. OpenSwitch builds one per
// worker over AF_XDP ports; tests build it over in-memory ports, so both
// run the same pipeline.
type pipeline struct {
	worker  *dataplane.Worker
	fwd     *fwd.Stage
	src     *netrt.SrcToR  // nil without netrt:
	dst     *netrt.DstToR  // nil without netrt:
	trim    *trim.Stage    // nil without trim:
	llr     *llr.Stage     // nil without llr:
	impairs []*impair.Port // every port, wrapped when impair: has rules
}

// build makes worker w's pipeline over ports (one per cfg.Ports, in
// order), whose frames live in mem, on clock (nil: the runtime's).
func (p *plan) build(w int, mem *dataplane.Mem, ports []dataplane.Port, clock func() int64) (*pipeline, error) {
	cfg := p.cfg
	pl := &pipeline{}
	ports = append([]dataplane.Port(nil), ports...)
	if clock == nil {
		clock = dataplane.MonotonicClock()
	}
	// DCP headers are parsed only in a DCP fabric: elsewhere the DSCP
	// bits they would read are an ordinary traffic class.
	cls := rocev2.Classifier{VerifyICRC: cfg.VerifyICRC, DCP: cfg.dcp()}
	if p.impair != nil {
		// Impairment is the wire's: every port is wrapped right on its
		// socket, under llr's receiver (wrapped below), so every frame
		// that leaves or arrives meets the rules, whichever stage or
		// timer sent it. Ports without rules pass frames straight
		// through, and a reload may give them rules. The ports share
		// the worker's clock: their deadlines and policers run on the
		// time the worker steps at.
		for i := range ports {
			ip := p.impair.Wrap(ports[i], impair.PortConfig{Worker: w, Mem: mem, Clock: clock, Classifier: cls})
			pl.impairs = append(pl.impairs, ip)
			ports[i] = ip
		}
	}
	var err error
	if pl.fwd, err = fwd.NewStage(p.fwd, p.fib, p.misses); err != nil {
		return nil, err
	}
	stages := []dataplane.Stage{pl.fwd}
	if cfg.NetRT.On() {
		// After fwd, which picks the ports both stages key on; before
		// trim and llr, which the packets NetRT emits later
		// (retransmissions, released packets) pass through like any
		// other (dataplane.Ctx.Emit).
		if pl.src, err = netrt.NewSrcToR(p.netrt); err != nil {
			return nil, err
		}
		if pl.dst, err = netrt.NewDstToR(p.netrt); err != nil {
			return nil, err
		}
		stages = append(stages, pl.src, pl.dst)
	}
	if cfg.Trim != nil {
		// After fwd, which chooses the port and queue the trimming
		// decision reads. After NetRT: SrcToR pools a host's packet
		// whole before this ToR may trim it (a pooled copy must carry
		// the payload a retransmission restores). An HO packet made
		// here still meets an impaired port's loss.
		if pl.trim, err = trim.NewStage(*cfg.Trim); err != nil {
			return nil, err
		}
		stages = append(stages, pl.trim)
	}
	if cfg.LLR.On() {
		// The sender half, after every stage that picks ports and
		// queues (it numbers what the data queue of a protected port
		// will carry). The receiver half wraps the protected ports,
		// outside any impairment, so frames reach the pipeline
		// de-duplicated, in order and unshimmed, and everything llr
		// sends, copies and control alike, meets the impaired wire.
		if pl.llr, err = llr.NewStage(p.llr); err != nil {
			return nil, err
		}
		for i := range ports {
			if pl.llr.Protected(i) {
				if ports[i], err = pl.llr.Wrap(i, ports[i], mem); err != nil {
					return nil, err
				}
			}
		}
		stages = append(stages, pl.llr)
	}
	egs, err := cfg.egressConfigs()
	if err != nil {
		return nil, err
	}
	var seed uint64
	if cfg.ECN != nil {
		seed = cfg.ECN.Seed
	}
	pm, _ := dataplane.ParsePollMode(cfg.Poll)
	pl.worker, err = dataplane.NewWorker(dataplane.WorkerConfig{ID: w, Mem: mem, Ports: ports, Egress: egs,
		Stages: stages, Mode: pm, Classifier: cls, Clock: clock, Seed: seed})
	if err != nil {
		return nil, err
	}
	return pl, nil
}

// egressConfigs returns the egress of each port of a worker: the
// default queues, each worker's share of the port's rate, trimming's
// WRR on the trimming ports and the ECN marking.
func (cfg *Config) egressConfigs() ([]dataplane.EgressConfig, error) {
	// Each worker shapes its share of the link: with W workers, W
	// shapers at rate/W add up to the configured rate.
	eg := dataplane.DefaultEgress(uint64(cfg.Egress.Rate)/uint64(cfg.Workers), int(cfg.Egress.QueueLimit))
	egs := make([]dataplane.EgressConfig, len(cfg.Ports))
	for i := range egs {
		egs[i] = eg
		if r, ok := cfg.Egress.PortRates[cfg.Ports[i]]; ok {
			egs[i].RateBps = uint64(r) / uint64(cfg.Workers)
		}
		if cfg.Trim != nil && cfg.Trim.Trims(cfg.Ports[i]) {
			// The trimming ports' control and data queues share a
			// level by WRR, weighted w:1 (tor/trim).
			var err error
			if egs[i], err = cfg.Trim.WRR(egs[i]); err != nil {
				return nil, err
			}
		}
	}
	applyMarking(egs, cfg.ECN.marking(cfg, egs))
	return egs, nil
}
