package simnet

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/nic/cc"
	"rocetor/nic/perf"
	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// run is one simulation: the network the plan describes, the flows of
// the transfers, and which flows and hosts are whose.
type run struct {
	net   *fabric.Network
	flows []workload.Flow
	ro    fabric.RunOptions
	first []int // transfer i's flows are flows[first[i]:first[i+1]]
	src   []int // transfer i's sending and receiving host, among net.Hosts
	dst   []int
}

// build lays out one simulation of the plan for ts: the plan's nodes
// and links (the testbed's names, so the switch configurations' port
// names hold), each switch built from the configuration the testbed
// would give its tord, and the transfers as flows, count messages each
// with depth × QPs in flight.
func (f *Fabric) build(ts []lab.Transfer) (*run, error) {
	if len(ts) == 0 {
		return nil, fmt.Errorf("no transfer")
	}
	t0 := ts[0]
	for _, t := range ts[1:] {
		if t.Transport != t0.Transport || t.CC != t0.CC || t.MTU != t0.MTU || t.QPs != t0.QPs || t.Op != t0.Op || t.BDP != t0.BDP || t.RTO != t0.RTO {
			return nil, fmt.Errorf("%w: the simulator runs one transport, congestion control, MTU, verb, QP count and RTO for every host of a round", lab.ErrUsage)
		}
	}
	if t0.LineRate != "" && t0.LineRate != t0.Rate {
		return nil, fmt.Errorf("%w: --line-rate %s: a simulated host's DCQCN starts at its link's rate, the transfer's %s", lab.ErrUsage, t0.LineRate, t0.Rate)
	}
	dcqcn, err := dcqcnConfig(t0.DCQCN)
	if err != nil {
		return nil, err
	}
	var op nic.Op
	switch t0.Op {
	case "write", "":
		op = nic.OpWrite
	case "send":
		op = nic.OpSend
	default:
		return nil, fmt.Errorf("%w: %s: the simulator posts WRITE and SEND", lab.ErrUsage, t0.Op)
	}
	topo, err := f.topology(ts)
	if err != nil {
		return nil, err
	}
	o := fabric.Options{Seed: sim.Seed(f.seed, 7, f.runs), Transport: t0.Transport, BDP: t0.BDP, RTO: t0.RTO, CC: t0.CC, DCQCN: dcqcn,
		MTU: t0.MTU, SwitchConfigs: f.plan.TordConfigs(), Jitter: f.b.Jitter.Nanoseconds()}
	for name, c := range o.SwitchConfigs {
		c.Impair = f.plan.ImpairOf(name, f.imp)
	}
	r := &run{ro: fabric.RunOptions{QPs: max(t0.QPs, 1), Op: op}}
	for _, t := range ts {
		o.MaxMessage = max(o.MaxMessage, t.Size)
		r.ro.Until = max(r.ro.Until, sim.Time(t.Timeout)*sim.Nanosecond)
	}
	o.MaxQPs = r.ro.QPs * len(ts)
	if r.net, err = fabric.Build(topo, o); err != nil {
		return nil, err
	}
	if _, err := f.b.Stall.Apply(r.net); err != nil {
		return nil, fmt.Errorf("%w: %v", lab.ErrUsage, err)
	}
	for _, t := range ts {
		s, d := r.host(t.From), r.host(t.To)
		if s < 0 || d < 0 {
			return nil, fmt.Errorf("%w: %s → %s: no such hosts in %s", lab.ErrUsage, t.From, t.To, f.plan.Shape())
		}
		depth := t.Depth
		if depth == 0 {
			depth = perf.AutoDepth(t.Size, r.ro.QPs)
		}
		fl := workload.Sequence(s, d, t.Size, t.Count, depth*r.ro.QPs)
		for i := range fl {
			if fl[i].After >= 0 {
				fl[i].After += len(r.flows)
			}
		}
		r.first = append(r.first, len(r.flows))
		r.src, r.dst = append(r.src, s), append(r.dst, d)
		r.flows = append(r.flows, fl...)
	}
	r.first = append(r.first, len(r.flows))
	return r, nil
}

// topology is the plan's topology (lab.Plan.Topo: the testbed's nodes
// and links, in its order) with every link at the plan's rate (the
// switches' port rates and the bottleneck are in their configurations,
// as on the testbed) and the backend's delay of its tier, a sending
// host's link at its transfer's rate (roceperf paces the client there).
func (f *Fabric) topology(ts []lab.Transfer) (topo.Topology, error) {
	p := f.plan
	rate, err := parseRate(p.Options.Rate)
	if err != nil {
		return topo.Topology{}, err
	}
	hostRate := map[string]uint64{}
	for _, t := range ts {
		if t.Rate != "" && t.Rate != "0" {
			r, err := parseRate(t.Rate)
			if err != nil {
				return topo.Topology{}, err
			}
			hostRate[t.From] = r
		}
	}
	t := p.Topo.WithTiers(topo.Tiers{HostRate: rate, FabricRate: rate,
		HostDelay: sim.Time(f.b.HostDelay) * sim.Nanosecond, FabricDelay: sim.Time(f.b.FabricDelay) * sim.Nanosecond})
	for i, l := range t.Links {
		for _, n := range []int{l.A, l.B} {
			if r, ok := hostRate[t.Nodes[n].Name]; ok && t.Nodes[n].Role == topo.Host {
				t.Links[i].RateBps = r
			}
		}
	}
	return t, nil
}

func parseRate(s string) (uint64, error) {
	var r dataplane.Rate
	if err := r.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%w: rate %q: %v", lab.ErrUsage, s, err)
	}
	return uint64(r), nil
}

// host returns the index among the network's hosts of the named one,
// -1 if there is none.
func (r *run) host(name string) int {
	for i, h := range r.net.Hosts {
		if h.Name == name {
			return i
		}
	}
	return -1
}

// dcqcnConfig is ConnectX's defaults with the transfer's DCQCN
// parameters, named as roceperf's --dcqcn- flags (rpg-time-reset: 300),
// set; nil with none.
func dcqcnConfig(params map[string]string) (*cc.DCQCNConfig, error) {
	if len(params) == 0 {
		return nil, nil
	}
	var obj []string
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := strings.TrimSpace(params[k])
		if _, err := strconv.ParseUint(v, 10, 32); err != nil && v != "true" && v != "false" {
			return nil, fmt.Errorf("%w: DCQCN %s=%q: want a number or true/false", lab.ErrUsage, k, v)
		}
		obj = append(obj, strconv.Quote(strings.ReplaceAll(k, "-", "_"))+":"+v)
	}
	c := cc.DefaultDCQCNConfig()
	dec := json.NewDecoder(strings.NewReader("{" + strings.Join(obj, ",") + "}"))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%w: DCQCN parameters: %v", lab.ErrUsage, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%w: DCQCN: %v", lab.ErrUsage, err)
	}
	return &c, nil
}

// epoch is the simulation's time zero on the clock Summary's Start and
// End are read on: what lines up the transfers of one round.
var epoch = time.Unix(0, 0).UTC()

// summary is transfer i's result as roceperf's client would report it:
// its messages' completion times, its sending host's endpoint counters,
// and as verified bytes what the receiving host's endpoint placed (the
// simulator moves no payload to compare).
func (r *run) summary(i int, t lab.Transfer, res *fabric.Result) *lab.PerfResult {
	s := lab.Summary{Transport: t.Transport, Op: cmp.Or(t.Op, "write"), Size: int64(t.Size), Count: int64(t.Count), QPs: int64(r.ro.QPs)}
	var lats []int64
	first, last := int64(math.MaxInt64), int64(0)
	for _, fr := range res.Records[r.first[i]:r.first[i+1]] {
		if !fr.OK {
			continue
		}
		lats = append(lats, fr.FCTNs)
		first, last = min(first, fr.StartNs), max(last, fr.EndNs)
	}
	s.Messages, s.Bytes = int64(len(lats)), int64(len(lats))*int64(t.Size)
	if len(lats) > 0 && last > first {
		s.DurationS = float64(last-first) / 1e9
		s.GoodputGbps = float64(s.Bytes) * 8 / s.DurationS / 1e9
		s.Start, s.End = epoch.Add(time.Duration(first)), epoch.Add(time.Duration(last))
		s.FCT = perf.FCTOf(lats)
	}
	st := r.net.Hosts[r.src[i]].EP.LiveStats()
	s.RetxPackets, s.Timeouts = int64(st.Retransmits), int64(st.Timeouts)
	s.NaksReceived, s.NaksSent = int64(st.NAKsRecv), int64(st.NAKsSent)
	s.PacketsSent, s.PacketsReceived = int64(st.TxPackets), int64(st.RxPackets)
	s.VerifiedBytes = min(s.Bytes, int64(r.net.Hosts[r.dst[i]].EP.LiveStats().DeliveredBytes))
	raw, _ := json.Marshal(ccReportOf(r.net.Hosts[r.src[i]].EP, ccReportOf(r.net.Hosts[r.dst[i]].EP, nil)))
	return &lab.PerfResult{Client: s, ClientRaw: raw}
}

// ccReport is the congestion part of roceperf's JSON report, the
// client's with the server's under "server" (perf.Counters' names),
// which the congestion experiments read (lab's ccOf).
type ccReport struct {
	CEReceived   uint64           `json:"ce_received"`
	CNPsSent     uint64           `json:"cnps_sent"`
	CNPsReceived uint64           `json:"cnps_received"`
	CC           *perf.CCCounters `json:"cc,omitempty"`
	Server       *ccReport        `json:"server,omitempty"`
}

func ccReportOf(ep *nic.Endpoint, server *ccReport) *ccReport {
	st := ep.LiveStats()
	return &ccReport{CEReceived: st.ECNMarked, CNPsSent: st.CNPsSent, CNPsReceived: st.CNPsRecv,
		CC: perf.CCCountersOf(ep.CC()), Server: server}
}
