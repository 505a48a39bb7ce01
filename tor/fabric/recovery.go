package fabric

import (
	"reflect"

	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/fasr"
	"rocetor/nic/irn"
	"rocetor/tor/topo"
)

// SRResult is the hosts' selective-repeat memory, counted the project's
// one way (nic.SRState, docs/experiments.md "SR memory, one
// accounting"), and FaSR's use of its shared pool: what FaSR's Figs.
// 8(b) and 10 (seed 001 §V-C, §V-D 3) plot, at the fabric's scale.
type SRResult struct {
	// PerQPBytes and SharedBytes are one endpoint's SR state per QP and
	// once for all its QPs; QPs the QPs each endpoint is sized for
	// (Options.MaxQPs), HostBytes PerQPBytes × QPs + SharedBytes.
	PerQPBytes  int `json:"per_qp_bytes"`
	SharedBytes int `json:"shared_bytes"`
	QPs         int `json:"qps_per_host"`
	HostBytes   int `json:"host_bytes"`
	// FaSR is fasr's counters (nic/fasr.Stats) summed over the hosts,
	// but PeakUnits and PeakBlocks, the most any one host's pool had in
	// use at once; Units and Blocks are each host's pool. Absent for the
	// other transports.
	FaSR map[string]int64 `json:"fasr,omitempty"`
}

// srResult reads the hosts' SR state and FaSR's counters.
func (n *Network) srResult() SRResult {
	var r SRResult
	for i, h := range n.Hosts {
		s, qps := h.EP.SRState()
		if i == 0 {
			r = SRResult{PerQPBytes: s.PerQP, SharedBytes: s.Shared, QPs: qps, HostBytes: s.Bytes(qps)}
		}
		t, ok := h.EP.Transport().(*fasr.Transport)
		if !ok {
			continue
		}
		if r.FaSR == nil {
			cfg := t.Config()
			r.FaSR = map[string]int64{"Units": int64(cfg.Units), "Blocks": int64(cfg.Blocks)}
		}
		st := t.Stats()
		peakU, peakB := r.FaSR["PeakUnits"], r.FaSR["PeakBlocks"]
		sumStats(r.FaSR, "", reflect.ValueOf(st))
		r.FaSR["PeakUnits"], r.FaSR["PeakBlocks"] = max(peakU, int64(st.PeakUnits)), max(peakB, int64(st.PeakBlocks))
	}
	return r
}

// transportCounters adds to m the transport's counters that the
// endpoint's Timeouts does not split: IRN's expiries of RTO_low (at most
// N packets in flight) and of RTO_high (seed 004 §3.1), as TimeoutsLow
// and TimeoutsHigh, which sum to Timeouts. Absent for the other
// transports (FaSR's are in SRResult.FaSR).
func transportCounters(m map[string]int64, t nic.Transport) {
	if t, ok := t.(*irn.Transport); ok {
		st := t.Stats()
		m["TimeoutsLow"] += int64(st.TimeoutsLow)
		m["TimeoutsHigh"] += int64(st.TimeoutsHigh)
	}
}

// ccCounters adds to m the congestion control's counters, summed over
// the hosts: TIMELY's rate updates by kind (which of Algorithm 1's
// branches each RTT sample took) and its probes, as Timely.*, with the
// lowest and highest sample of any host (Timely.RTTMin, Timely.RTTMax,
// ns). Absent for the others, whose reactions the switches' marks and
// the hosts' CNP counters show.
func ccCounters(m map[string]int64, c nic.CC) {
	t, ok := c.(*cc.Timely)
	if !ok {
		return
	}
	st := t.Stats()
	lo, hi := m["Timely.RTTMin"], m["Timely.RTTMax"]
	if st.RTTMin > 0 && (lo == 0 || st.RTTMin < lo) {
		lo = st.RTTMin
	}
	sumStats(m, "Timely.", reflect.ValueOf(st))
	m["Timely.RTTMin"], m["Timely.RTTMax"] = lo, max(hi, st.RTTMax)
}

// LinkResult is one impaired link (Options.LinkLoss): its two nodes,
// its rate, lost or corrupted, and the llr ports at its ends.
type LinkResult struct {
	A       string  `json:"a"`
	B       string  `json:"b"`
	Rate    float64 `json:"rate"`
	Corrupt bool    `json:"corrupt,omitempty"`
}

// LLRPortResult is one protected switch port (llr.ports): the sender
// toward its neighbour and the receiver from it (tor/llr.PortStats),
// with the rate of the link it protects (0: clean). The two ends of a
// switch-to-switch link are two of these, one on each switch.
type LLRPortResult struct {
	Switch string  `json:"switch"`
	Port   string  `json:"port"`
	Rate   float64 `json:"link_rate"`
	// Sender.
	Protected     uint64 `json:"protected"`
	Retransmitted uint64 `json:"retransmitted"`
	Copies        uint64 `json:"copies"`
	TxBytesMax    int    `json:"tx_buffer_peak_bytes"`
	// Receiver: Expected sequences the neighbour sent, LossesDetected of
	// them found missing, Skipped given up on (ackNoTimeout: lost for
	// good, the effective loss), RxBytesMax the reordering buffer's peak
	// (Blocking), PauseSent its pauses (Algorithm 2).
	Expected       uint64 `json:"expected"`
	LossesDetected uint64 `json:"losses_detected"`
	Skipped        uint64 `json:"skipped"`
	Held           uint64 `json:"held"`
	RxBytesMax     int    `json:"rx_buffer_peak_bytes"`
	PauseSent      uint64 `json:"pause_sent"`
	// Why the head of line waited: the notices sent and retried, the
	// longest wait with frames held behind the head and what it was
	// (llr.PortStats.HeadWait*), the frames llr could not release or
	// build for want of frame memory, and the sender's waits for its
	// retransmission budget.
	NoticesSent        uint64 `json:"notices_sent,omitempty"`
	NoticeRetries      uint64 `json:"notice_retries,omitempty"`
	HeadWaitMaxNs      int64  `json:"head_wait_max_ns,omitempty"`
	HeadWaitRetries    uint64 `json:"head_wait_retries,omitempty"`
	HeadWaitPresentNs  int64  `json:"head_wait_present_ns,omitempty"`
	HeadWaitSkipped    uint64 `json:"head_wait_skipped,omitempty"`
	HeadWaitRxBytesMax int    `json:"head_wait_buffer_peak_bytes,omitempty"`
	NoFrame            uint64 `json:"no_frame,omitempty"`
	RetxLimited        uint64 `json:"retx_limited,omitempty"`
}

// links are the impaired links, in topology order.
func (n *Network) links() []LinkResult { return impairedLinks(n.Topo, n.loss) }

func impairedLinks(t topo.Topology, loss []linkImp) []LinkResult {
	var out []LinkResult
	for li, l := range t.Links {
		if li < len(loss) && loss[li].rate > 0 {
			out = append(out, LinkResult{A: t.Nodes[l.A].Name, B: t.Nodes[l.B].Name, Rate: loss[li].rate, Corrupt: loss[li].corrupt})
		}
	}
	return out
}

// Draw is the impaired links a network of t built with ll and seed
// has (Result.Links), without building it: what a cell that impairs
// nothing compares itself against (lab's llr-fabric).
func (ll *LinkLoss) Draw(t topo.Topology, seed uint64) ([]LinkResult, error) {
	loss, err := ll.rates(t, seed)
	return impairedLinks(t, loss), err
}

// llrPorts are the switches' protected ports that carried anything.
func (n *Network) llrPorts() []LLRPortResult {
	adj := n.adjacency()
	var out []LLRPortResult
	for i, nd := range n.Topo.Nodes {
		if nd.Role != topo.Switch {
			continue
		}
		s := n.Switches[n.byNode[i]]
		if s.Pipe.LLR == nil {
			continue
		}
		st := s.Pipe.LLR.Stats()
		for pi, p := range s.Node.Ports {
			if pi >= len(st.Ports) || pi >= len(adj[i]) {
				break
			}
			ps := &st.Ports[pi]
			if ps.Protected == 0 && ps.Expected == 0 {
				continue
			}
			r := LLRPortResult{Switch: s.Name, Port: p.Name(), Protected: ps.Protected, Retransmitted: ps.Retransmitted,
				Copies: ps.Copies, TxBytesMax: ps.TxBytesMax, Expected: ps.Expected, LossesDetected: ps.LossesDetected,
				Skipped: ps.Skipped, Held: ps.Held, RxBytesMax: ps.RxBytesMax, PauseSent: ps.PauseSent,
				NoticesSent: ps.NoticesSent, NoticeRetries: ps.NoticeRetries, HeadWaitMaxNs: ps.HeadWaitMax,
				HeadWaitRetries: ps.HeadWaitRetries, HeadWaitPresentNs: ps.HeadWaitPresent, HeadWaitSkipped: ps.HeadWaitSkipped,
				HeadWaitRxBytesMax: ps.HeadWaitRxBytesMax, NoFrame: ps.NoFrame, RetxLimited: ps.RetxLimited}
			if li := adj[i][pi]; li < len(n.loss) {
				r.Rate = n.loss[li].rate
			}
			out = append(out, r)
		}
	}
	return out
}
