package fabric

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/tor/impair"
)

// Result is what a run measured, in the testbed's shape: JSON with the
// command and seed (the caller fills those; Machine, where the run
// happened, goes to the Markdown only, as JSON that differed between
// machines would not be byte-identical), flow completion
// times and slowdowns per size bucket, goodput, the hosts' recovery and
// congestion counters, every switch port's PFC, pause time, queue peaks
// and ECN marks, every stage's counters summed over the switches, and
// the buffer occupancy over time. A run's Result depends only on its
// inputs and seed: nothing in it reads the wall clock.
type Result struct {
	Command   string `json:"command,omitempty"`
	Seed      uint64 `json:"seed"`
	Machine   string `json:"-"`
	Topology  string `json:"topology"`
	Hosts     int    `json:"hosts"`
	Switches  int    `json:"switches"`
	Transport string `json:"transport"`
	CC        string `json:"cc"`
	MTU       int    `json:"mtu"`
	QPs       int    `json:"qps_per_pair"`

	SimTimeNs int64  `json:"sim_time_ns"`
	Events    uint64 `json:"events"`
	Steps     uint64 `json:"worker_steps"`
	IdleSteps uint64 `json:"idle_steps"`
	// PacketHops is the frames all ports put on the wire.
	PacketHops uint64 `json:"packet_hops"`

	Flows     int `json:"flows"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// The statistics below count the completed flows posted at or after
	// WarmupNs and, when MeasureNs is not 0, before WarmupNs +
	// MeasureNs, Measured of them (StatsOptions, Summarize); Bins are
	// the upper bounds of FCT's size bins, ShortBelow the size that
	// splits Short from Long.
	WarmupNs   int64 `json:"warmup_ns"`
	MeasureNs  int64 `json:"measure_ns,omitempty"`
	Bins       []int `json:"bins,omitempty"`
	ShortBelow int   `json:"short_below,omitempty"`
	Measured   int   `json:"measured"`
	// FCT per size bin, every bin even when empty; Short, Long and All
	// over the flows below ShortBelow, from it, and all.
	FCT   []Bucket `json:"fct"`
	All   Bucket   `json:"fct_all"`
	Short Bucket   `json:"fct_short"`
	Long  Bucket   `json:"fct_long"`
	// GoodputGbps is the measured flows' bytes over the time from the
	// first one's post to the last one's completion.
	GoodputGbps float64 `json:"goodput_gbps"`

	HostCounters map[string]int64 `json:"host_counters"`
	// Stages sums each stage's own counters over every switch, by
	// stage (trust, fwd, netrt_src, netrt_dst, trim, llr, impair).
	Stages map[string]map[string]int64 `json:"stages"`
	// HostStages sums the counters of the stages the hosts' NICs run
	// besides the RNIC, over the hosts, by stage: llr, on the host
	// links their ToRs protect (the same counters as Stages' llr).
	HostStages map[string]map[string]int64 `json:"host_stages,omitempty"`
	Drops      map[string]uint64           `json:"switch_drops"`
	PFCPauseNs int64                       `json:"pfc_pause_ns"`
	PFCFrames  uint64                      `json:"pfc_frames"`
	// HostPFCPauseNs is the PFC pause time the hosts' NICs were given,
	// summed: a lossless fabric's backpressure reaching the senders.
	HostPFCPauseNs int64 `json:"host_pfc_pause_ns"`
	// NetRT is NetRT's pools and reordering buffers, when the switches
	// run it.
	NetRT         *NetRTOccupancy `json:"netrt,omitempty"`
	ECNMarked     uint64          `json:"ecn_marked"`
	SwitchResults []SwitchResult  `json:"switch_detail"`
	Buffer        BufferResult    `json:"buffer"`
	// Books account for every frame at the end of the run (Books):
	// balanced, or the imbalances named.
	Books *Books `json:"books"`
	// SR is the hosts' selective-repeat memory and FaSR's pool use;
	// Links the impaired links (Options.LinkLoss); LLRPorts the
	// switches' protected ports.
	SR       SRResult        `json:"sr"`
	Links    []LinkResult    `json:"links,omitempty"`
	LLRPorts []LLRPortResult `json:"llr_ports,omitempty"`
	// Records are the flows in the order Run was given them, for a
	// caller that summarises some of them (the lab's transfers) and for
	// the flow file (WriteFlows).
	Records []FlowRecord `json:"-"`
}

// SwitchResult is one switch's ports that carried anything.
type SwitchResult struct {
	Name        string       `json:"name"`
	BufferPeak  int          `json:"buffer_peak_bytes"`
	BufferMean  int          `json:"buffer_mean_bytes"`
	Ports       []PortResult `json:"ports"`
	Drops       uint64       `json:"drops"`
	PFCPauseNs  int64        `json:"pfc_pause_ns"`
	ECNMarked   uint64       `json:"ecn_marked"`
	RxRefused   uint64       `json:"rx_ring_refused"`
	TimersArmed int          `json:"timers_armed"`
}

// PortResult is one switch port.
type PortResult struct {
	Port      string  `json:"port"`
	TxPackets uint64  `json:"tx_packets"`
	TxBytes   uint64  `json:"tx_bytes"`
	Busy      float64 `json:"busy"` // fraction of the run the wire was serializing
	PFCTx     uint64  `json:"pfc_tx"`
	PFCRx     uint64  `json:"pfc_rx"`
	PausedNs  int64   `json:"paused_ns"`
	// WDStorms and WDRestores are the PFC watchdog's storms and
	// restorations on the port (pfc.watchdog); absent when 0.
	WDStorms   uint64         `json:"pfc_watchdog_storms,omitempty"`
	WDRestores uint64         `json:"pfc_watchdog_restores,omitempty"`
	Queues     []QueueResult  `json:"queues,omitempty"`
	Extra      map[string]int `json:"-"`
}

// QueueResult is one egress queue that carried anything.
type QueueResult struct {
	Name      string `json:"name"`
	Dequeued  uint64 `json:"dequeued"`
	PeakBytes int    `json:"peak_bytes"`
	Drops     uint64 `json:"drops"`
	Marked    uint64 `json:"ecn_marked"`
	// Bytes are the bytes dequeued: what the queue put on the wire
	// (an experiment splits a port's bytes by queue with it; not in
	// result.json, whose fields stay as recorded).
	Bytes uint64 `json:"-"`
}

// BufferResult is the switches' buffered bytes over time.
type BufferResult struct {
	IntervalNs int64    `json:"interval_ns"`
	PeakBytes  int      `json:"peak_switch_bytes"`
	Series     []Sample `json:"series"`
}

func (r *runner) result() (*Result, error) {
	n := r.n
	res := &Result{Seed: n.Opts.Seed, Topology: n.Topo.Name, Hosts: len(n.Hosts), Switches: len(n.Switches),
		Transport: n.Opts.Transport, CC: n.Opts.CC, MTU: n.Opts.MTU, QPs: r.o.QPs, SimTimeNs: n.Now() / sim.Nanosecond,
		Events: n.group.Events(), Flows: len(r.flows)}
	now := n.Now() / sim.Nanosecond
	res.Records = r.records()
	if err := res.Summarize(r.o.Stats); err != nil {
		return nil, err
	}
	for _, f := range res.Records {
		switch {
		case f.OK:
			res.Completed++
		case f.EndNs > 0:
			res.Failed++
		}
	}
	// Hosts.
	res.HostCounters = map[string]int64{}
	for _, h := range n.Hosts {
		sumStats(res.HostCounters, "", reflect.ValueOf(h.EP.LiveStats()))
		transportCounters(res.HostCounters, h.EP.Transport())
		ccCounters(res.HostCounters, h.EP.CC())
		if h.LLR != nil {
			if res.HostStages == nil {
				res.HostStages = map[string]map[string]int64{"llr": {}}
			}
			sumStats(res.HostStages["llr"], "", reflect.ValueOf(h.LLR.Stats()))
		}
		res.Steps += h.Node.Steps
		res.IdleSteps += h.Node.Idle
		for i, p := range h.Node.Ports {
			res.PacketHops += p.WireStats().TxFrames
			res.HostPFCPauseNs += h.Node.W.Egress(i).PausedNs()
		}
	}
	// Switches.
	res.Stages = map[string]map[string]int64{}
	res.Drops = map[string]uint64{}
	stage := func(name string, v any) {
		if res.Stages[name] == nil {
			res.Stages[name] = map[string]int64{}
		}
		sumStats(res.Stages[name], "", reflect.ValueOf(v))
	}
	res.Buffer = BufferResult{IntervalNs: r.o.Sample / sim.Nanosecond, Series: decimate(r.samp.series, 200)}
	for i, s := range n.Switches {
		w := s.Node.W
		w.Publish(now)
		snap := w.Published() // read only, before the next step
		res.Steps += s.Node.Steps
		res.IdleSteps += s.Node.Idle
		sr := SwitchResult{Name: s.Name, BufferPeak: r.samp.peak[i], TimersArmed: snap.Timers}
		if r.samp.k > 0 {
			sr.BufferMean = int(r.samp.sum[i] / r.samp.k)
		}
		res.Buffer.PeakBytes = max(res.Buffer.PeakBytes, sr.BufferPeak)
		for k, d := range snap.Drops {
			if d > 0 {
				res.Drops[dataplane.Reason(k).String()] += d
				sr.Drops += d
			}
		}
		for pi, p := range s.Node.Ports {
			ws := p.WireStats()
			res.PacketHops += ws.TxFrames
			sr.RxRefused += ws.RxRefused
			pc := snap.Ports[pi]
			e := w.Egress(pi)
			pr := PortResult{Port: p.Name(), TxPackets: pc.TxPackets, TxBytes: pc.TxBytes, PFCTx: pc.PFCTx, PFCRx: pc.PFCRx,
				PausedNs: e.PausedNs(), WDStorms: pc.WDStorms, WDRestores: pc.WDRestores}
			if now > 0 {
				pr.Busy = round3(float64(ws.BusyTime/sim.Nanosecond) / float64(now))
			}
			for _, q := range snap.Queues[pi] {
				res.ECNMarked += q.Marked
				sr.ECNMarked += q.Marked
				if q.Dequeued > 0 || q.Drops > 0 {
					pr.Queues = append(pr.Queues, QueueResult{Name: q.Name, Dequeued: q.Dequeued, PeakBytes: q.MaxDepthBytes,
						Drops: q.Drops, Marked: q.Marked, Bytes: q.Bytes})
				}
			}
			res.PFCPauseNs += pr.PausedNs
			sr.PFCPauseNs += pr.PausedNs
			res.PFCFrames += pr.PFCTx
			if pr.TxPackets > 0 {
				sr.Ports = append(sr.Ports, pr)
			}
		}
		res.SwitchResults = append(res.SwitchResults, sr)
		pl := s.Pipe
		stage("trust", pl.Trust.Stats())
		stage("fwd", pl.Fwd.Stats())
		if pl.Src != nil {
			stage("netrt_src", pl.Src.Stats())
			stage("netrt_dst", pl.Dst.Stats())
			if res.NetRT == nil {
				res.NetRT = &NetRTOccupancy{}
			}
			res.NetRT.add(pl.Src.Stats(), pl.Dst.Stats())
		}
		if pl.Trim != nil {
			stage("trim", pl.Trim.Stats())
		}
		if pl.LLR != nil {
			stage("llr", pl.LLR.Stats())
		}
		for _, ip := range pl.Impairs {
			st := ip.Counters()
			stage("impair", st)
			// Destroyed is a table by class and cause, which sumStats
			// leaves out: by class is what tells a recovery
			// mechanism's own frames (control) from the data.
			for d := range st.Dir {
				for k := impair.Class(0); k < impair.NumClasses; k++ {
					res.Stages["impair"]["Destroyed."+k.String()] += int64(st.Dir[d].Of(k))
				}
			}
		}
	}
	if res.NetRT != nil {
		res.NetRT.finish(float64(now) * 1e-9)
	}
	res.Books = n.books()
	res.SR, res.Links, res.LLRPorts = n.srResult(), n.links(), n.llrPorts()
	pruneStages(res.Stages)
	pruneStages(res.HostStages)
	return res, nil
}

// pruneStages leaves out the counters at zero, and the stages with none
// left.
func pruneStages(stages map[string]map[string]int64) {
	for name, m := range stages {
		for k, v := range m {
			if v == 0 {
				delete(m, k)
			}
		}
		if len(m) == 0 {
			delete(stages, name)
		}
	}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// decimate keeps at most k samples, the largest of each run of samples
// it folds (so peaks survive).
func decimate(s []Sample, k int) []Sample {
	if len(s) <= k {
		return s
	}
	step := (len(s) + k - 1) / k
	var out []Sample
	for i := 0; i < len(s); i += step {
		m := s[i]
		for j := i; j < min(i+step, len(s)); j++ {
			if s[j].Bytes > m.Bytes {
				m.Bytes = s[j].Bytes
			}
			m.Max = max(m.Max, s[j].Max)
		}
		out = append(out, m)
	}
	return out
}

// Markdown writes the result as the testbed's tables.
func (res *Result) Markdown(w io.Writer) {
	fmt.Fprintf(w, "## %s, %d hosts, %s", res.Topology, res.Hosts, res.Transport)
	if res.CC != "none" {
		fmt.Fprintf(w, " + %s", res.CC)
	}
	fmt.Fprintf(w, "\n\n")
	if res.Command != "" {
		fmt.Fprintf(w, "`%s` (seed %d)\n\n", res.Command, res.Seed)
	}
	// A result.json written before the statistics had bins (Bins nil)
	// has p50 and p99 and the mean slowdown only: the rest shows as –.
	legacy := res.Bins == nil
	fmt.Fprintf(w, "%d of %d flows completed (%d failed) in %.3f ms of simulated time", res.Completed, res.Flows, res.Failed,
		float64(res.SimTimeNs)/1e6)
	if !legacy {
		fmt.Fprintf(w, "; %d measured", res.Measured)
	}
	switch {
	case res.MeasureNs > 0:
		fmt.Fprintf(w, " (posted from %.1f µs to %.1f µs)", float64(res.WarmupNs)/1e3, float64(res.WarmupNs+res.MeasureNs)/1e3)
	case res.WarmupNs > 0:
		fmt.Fprintf(w, " (posted from %.1f µs on)", float64(res.WarmupNs)/1e3)
	}
	fmt.Fprintf(w, "; goodput %.2f Gbit/s; %d events, %d packet-hops.\n\n", res.GoodputGbps, res.Events, res.PacketHops)
	rows := slices.Concat(res.FCT, []Bucket{res.Short, res.Long, res.All})
	cell := func(format string, v float64, known bool) string {
		if !known {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	us := func(ns int64, known bool) string { return cell("%.1f", float64(ns)/1e3, known) }
	fmt.Fprintf(w, "| size | flows | mean FCT (µs) | p50 | p90 | p95 | p99 | p99.9 |\n| --- | --: | --: | --: | --: | --: | --: | --: |\n")
	for _, b := range rows {
		if b.Flows > 0 {
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", b.Range, b.Flows, cell("%.1f", b.MeanFCTNs/1e3, !legacy),
				us(b.P50FCTNs, true), us(b.P90FCTNs, !legacy), us(b.P95FCTNs, !legacy), us(b.P99FCTNs, true), us(b.P999FCTNs, !legacy))
		}
	}
	fmt.Fprintf(w, "\n| size | flows | mean slowdown | p50 | p90 | p95 | p99 | p99.9 |\n| --- | --: | --: | --: | --: | --: | --: | --: |\n")
	for _, b := range rows {
		if b.Flows > 0 {
			sd := func(v float64, known bool) string { return cell("%.2f", v, known) }
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", b.Range, b.Flows, sd(b.MeanSlowdown, true), sd(b.P50Slowdown, true),
				sd(b.P90Slowdown, !legacy), sd(b.P95Slowdown, !legacy), sd(b.P99Slowdown, true), sd(b.P999Slowdown, !legacy))
		}
	}
	h := res.HostCounters
	split := ""
	if lo, ok := h["TimeoutsLow"]; ok {
		split = fmt.Sprintf(" (%d of RTO_low, %d of RTO_high)", lo, h["TimeoutsHigh"])
	}
	fmt.Fprintf(w, "\nHosts: %d retransmitted packets, %d timeouts%s, %d NAKs sent, %d ECN-marked packets received, %d CNPs sent.\n",
		h["Retransmits"], h["Timeouts"], split, h["NAKsSent"], h["ECNMarked"], h["CNPsSent"])
	fmt.Fprintf(w, "Switches: %d PFC frames, %.1f µs of PFC pause in all (the hosts' NICs %.1f µs), %d ECN marks, peak buffer %d bytes on one switch.\n",
		res.PFCFrames, float64(res.PFCPauseNs)/1e3, float64(res.HostPFCPauseNs)/1e3, res.ECNMarked, res.Buffer.PeakBytes)
	if len(res.Drops) > 0 {
		var ds []string
		for _, k := range sortedKeys(res.Drops) {
			ds = append(ds, fmt.Sprintf("%s %d", k, res.Drops[k]))
		}
		fmt.Fprintf(w, "Switch drops: %s.\n", strings.Join(ds, ", "))
	}
	if b := res.Books; b != nil {
		b.markdown(w)
	}
	for _, st := range []struct {
		m    map[string]map[string]int64
		what string
	}{{res.Stages, ""}, {res.HostStages, " (hosts' NICs)"}} {
		for _, name := range sortedKeys(st.m) {
			m := st.m[name]
			var ks []string
			for _, k := range sortedKeys(m) {
				ks = append(ks, fmt.Sprintf("%s %d", k, m[k]))
			}
			fmt.Fprintf(w, "\n- %s%s: %s", name, st.what, strings.Join(ks, ", "))
		}
	}
	fmt.Fprintln(w)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
