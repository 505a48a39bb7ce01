package fabric

import (
	"cmp"
	"fmt"
	"slices"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/rocev2"
	"rocetor/tor/llr"
)

// llr on host links. Protego runs between two switches (seed 003 §3:
// a "sender" and a "receiver" switch; §5: it "works locally on the link
// between adjacent switches"), and is deployed link by link (§5,
// Incremental Deployment). Nothing in the protocol needs a switch: each
// end numbers what it sends, keeps copies and acknowledges what it
// receives (§3.1), the same at both ends. So when a ToR protects a host
// port (llr.ports names it), the host's end of the link runs tor/llr
// too — the same Stage and Port a switch runs, not a model of them —
// as an llr-capable NIC would, or a shim on the NIC's port: the RNIC
// endpoint's frames pass llr's sender stage on their way to the port,
// and the port is wrapped by llr's receiver, which hands the endpoint
// the switch's frames de-duplicated, in order and unshimmed. This goes
// beyond Protego, whose ends are both switches.
//
// llr protects one FIFO, the data queue (tor/llr: sequence numbers
// follow wire order only there). A switch forwards every RoCE frame on
// it, ACKs included; an RNIC puts its ACKs, NAKs and CNPs on its
// control queue, where llr would leave them unprotected and the hosts
// would recover their losses end to end. The llr NIC puts them on the
// data queue, as its ToR does, with room of their own beyond the
// requests' budget (hostResponseRoom), so that a data queue the
// requests filled does not refuse them.

// hostResponseRoom is the bytes an llr NIC's data queue holds beyond
// Options.HostQueue, the budget the endpoint fills with requests: room
// for the ACKs, NAKs and CNPs that share the protected queue with them
// (one per QP per batch at most, each well under 128 bytes), at least
// 16 KiB.
func (n *Network) hostResponseRoom() int { return max(16<<10, 128*n.Opts.MaxQPs) }

// hostProtected reports whether host h's ToR protects the link to h.
func (n *Network) hostProtected(h *HostNode) bool {
	return slices.Contains(n.Switches[h.ToR].Cfg.LLR.Ports, h.port)
}

// hostLLR is the llr configuration of host h's NIC: its ToR's llr
// section (mode, buffers, timeouts, Eq. 1, dormant and watch), which
// protects the ToR's side of the link, on the host's one port. The
// corruption monitor is left out: the simulator runs none, at the
// switches either. The Tx buffer's default is the switch's rule (twice
// the data queue, at least llr's default) over the NIC's queue.
func (n *Network) hostLLR(h *HostNode) (llr.Config, error) {
	sec := n.Switches[h.ToR].Cfg.LLR
	sec.Ports, sec.Monitor = []string{"eth0"}, nil
	c, err := sec.StageConfig(sec.Ports)
	if err != nil {
		return c, fmt.Errorf("host %s: llr: %w", h.Name, err)
	}
	if c.TxBuffer == 0 {
		c.TxBuffer = max(2*(n.Opts.HostQueue+n.hostResponseRoom()), llr.DefaultTxBuffer)
	}
	return c, nil
}

// hostEgress returns the egress of host h's port, as the worker runs it,
// and as the endpoint is told it: the same but for an llr NIC's data
// queue, whose worker budget has hostResponseRoom beyond the
// endpoint's.
func (n *Network) hostEgress(h *HostNode, protected bool) (worker, endpoint dataplane.EgressConfig) {
	eg := dataplane.DefaultEgress(0, n.Opts.HostQueue)
	eg.Ring = queueRing
	// A PFC quantum is 512 bit times of the link: unshaped, the egress
	// would time it at 10 Gbit/s, and a 1 Gbit/s host would wake from
	// a pause ten times too soon, before its ToR means to send it again.
	eg.PauseRateBps = h.Line
	if !protected {
		return eg, eg
	}
	w := eg
	w.Queues = slices.Clone(eg.Queues)
	w.Queues[eg.QueueIndexByName("data")].Limit += n.hostResponseRoom()
	return w, eg
}

// hostSQ and hostRQ are the depths of a host's QPs' send and receive
// queues (nic.Config; nic's default receive queue).
const (
	hostSQ = 256
	hostRQ = 32
)

func (n *Network) buildHost(h *HostNode, mem *dataplane.Mem, sp []*sim.Port, clock func() int64) error {
	t, err := n.transport()
	if err != nil {
		return err
	}
	c, err := n.cc(h.Line)
	if err != nil {
		return err
	}
	protected := n.hostProtected(h)
	weg, eeg := n.hostEgress(h, protected)
	// The completion queue never holds more than every QP's send and
	// receive queues together (nic's Post and PollCQ count one against
	// the other), so a deeper one changes nothing but the memory: nic's
	// default of 4,096 cost a host 450 KB of rings, 450 MB of Go heap
	// for htsim's 1,024-host permutation (untouched, but the collector
	// paces itself by it).
	// At least one per QP, though: a flow the full queue refused waits
	// for one of its own QP's flows to complete (runner.submit), so at
	// more QPs than 4,096 the QPs left with none in flight never sent
	// (fasr-scale at 5,000 QPs a host).
	cq := min(cmp.Or(n.Opts.HostCQ, max(4096, n.Opts.MaxQPs)), n.Opts.MaxQPs*(hostSQ+hostRQ))
	// A host registers one memory region (n.scratch), where nic's
	// default room for 64 was 2.5 MB of a k = 16 fat tree's memory.
	nc := nic.Config{MAC: h.MAC, IP: h.IP, Egress: eeg, Transport: t, CC: c, MaxQPs: n.Opts.MaxQPs,
		SQDepth: hostSQ, RQDepth: hostRQ, CQDepth: cq, MaxMRs: 1, MTU: n.Opts.MTU, FrameSize: hostFrameSize, Clock: clock, Observer: &n.tally,
		DSCP: n.Opts.DSCP, CNPDSCP: n.Opts.CNPDSCP, QPCache: n.Opts.QPCache, Burst: n.Opts.HostBurst}
	if protected {
		nc.ControlQueue = "data" // llr protects the data queue alone
	}
	ep, err := nic.NewEndpoint(nc)
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	port, stages := dataplane.Port(sp[0]), []dataplane.Stage{ep}
	if protected {
		lc, err := n.hostLLR(h)
		if err != nil {
			return err
		}
		if h.LLR, err = llr.NewStage(lc); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		// After the endpoint, which emits through it; its receiver
		// under the endpoint, as on a switch.
		if port, err = h.LLR.Wrap(0, sp[0], mem); err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		stages = append(stages, h.LLR)
	}
	w, err := dataplane.NewWorker(dataplane.WorkerConfig{ID: h.Index, Mem: mem, Ports: []dataplane.Port{port},
		Egress: []dataplane.EgressConfig{weg}, Stages: stages,
		Classifier: ep.Classifier(rocev2.Classifier{DCP: n.Opts.Transport == "dcp"}), Clock: clock, TimerCap: 4*n.Opts.MaxQPs + 1024})
	if err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	h.EP = ep
	h.part = n.part[n.hostNode(h.Index)]
	h.Node = sim.AddNode(n.parts[h.part], w, sp)
	if n.Opts.QPCache.Bytes > 0 {
		// The NIC's pipeline waits for the QP contexts it fetches
		// (nic.QPCache): the host steps again when they are in.
		h.Node.Stall = func(sim.Time) sim.Time { return ep.StalledUntil() * sim.Nanosecond }
	}
	if protected {
		// The NIC opens its llr session as it starts (tor/llr,
		// Sessions), not with its first frame, which would then
		// cross unprotected: a node steps only when it has work.
		h.Node.Wake(0)
	}
	// Every host of a partition registers the same scratch buffer: a
	// partition runs on one goroutine, and what a WRITE carries is not
	// looked at.
	if h.MR, err = ep.RegisterMR(n.scratch[h.part], nic.AccessRemote); err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	return nil
}
