package lab

import (
	"cmp"
	"slices"

	"rocetor/tor/fabric"
	"rocetor/tor/topo"
)

// Where an incast cell's flows spend their time (docs/experiments.md,
// dcp-fabric, "Why DCP's 255-to-1 P50 is not the lowest"): the incast
// flows against the background ones, each burst's flows in the order
// they finish, how often an incast packet was sent again, and what the
// receivers' ToR ports sent by queue. Kept in FabricRun.Classes,
// ClassRetransmits and Extra under these names.
const (
	classIncast     = "incast"     // a flow of an incast burst
	classBackground = "background" // a WebSearch flow

	// Extra's keys: medians over the cell's bursts of the burst's
	// first, median and last FCT in µs, of median over last, and of
	// the burst's bytes over its last FCT.
	xBursts      = "incast_bursts"
	xFirstUs     = "burst_first_fct_us"
	xMedianUs    = "burst_p50_fct_us"
	xLastUs      = "burst_last_fct_us"
	xMedOverLast = "burst_p50_over_last"
	xBurstGbps   = "burst_gbps"
	// The flow at the all-flow P50 slowdown is an incast one (1) or
	// not (0); the incast flows' share of all.
	xP50Incast   = "p50_flow_incast"
	xIncastShare = "incast_flow_share"
	// Request packets sent again per packet of the flows' messages.
	xIncastRetx = "incast_retx_per_packet"
	xBgRetx     = "background_retx_per_packet"
	// Over the ToR ports toward the bursts' receivers: every byte they
	// sent, those of the data queue and of the control (header-only)
	// queue, and the payload of every flow to those receivers.
	xRxBytes    = "rx_port_bytes"
	xRxData     = "rx_port_data_bytes"
	xRxControl  = "rx_port_control_bytes"
	xRxDelivery = "rx_port_payload_bytes"
	// The incast flows' median FCT in µs, of those whose sender is in
	// the receiver's rack (its ToR's own ports) and of the others.
	xLocalUs  = "incast_local_p50_fct_us"
	xRemoteUs = "incast_remote_p50_fct_us"
	// The deepest data and control queue of those ports, in bytes.
	xRxDataPeak    = "rx_port_data_peak_bytes"
	xRxControlPeak = "rx_port_control_peak_bytes"
)

// incastDetail is the keep function of an incast cell whose bursts'
// flows are size bytes each (all of a burst posted at once to one host).
func incastDetail(tp topo.Topology, size, mtu int) func(*fabric.Result, *FabricRun) {
	return func(r *fabric.Result, fr *FabricRun) {
		type key struct {
			dst   int
			start int64
		}
		// A burst is the flows of size bytes posted at once to one
		// host; a WebSearch flow of that size alone is background.
		count := map[key]int{}
		for _, f := range r.Records {
			if f.Size == size {
				count[key{f.Dst, f.StartNs}]++
			}
		}
		incast := func(f *fabric.FlowRecord) bool { return f.Size == size && count[key{f.Dst, f.StartNs}] > 1 }
		bursts := map[key][]int64{}
		by := map[string][]fabric.FlowRecord{}
		packets := map[string]int64{}
		fr.ClassRetransmits = map[string]int64{}
		receivers := map[int]bool{}
		racks := fabric.Racks(tp)
		var local, remote []float64
		for i := range r.Records {
			f := &r.Records[i]
			c := classBackground
			if incast(f) {
				c = classIncast
				receivers[f.Dst] = true
				if f.OK {
					k := key{f.Dst, f.StartNs}
					bursts[k] = append(bursts[k], f.FCTNs)
					if racks[f.Src] == racks[f.Dst] {
						local = append(local, float64(f.FCTNs)/1e3)
					} else {
						remote = append(remote, float64(f.FCTNs)/1e3)
					}
				}
			}
			by[c] = append(by[c], *f)
			packets[c] += int64((f.Size + mtu - 1) / mtu)
			fr.ClassRetransmits[c] += int64(f.Retransmits)
		}
		fr.setClasses(by)
		x := map[string]float64{xIncastShare: float64(len(by[classIncast])) / float64(max(1, len(r.Records)))}
		x[xIncastRetx] = float64(fr.ClassRetransmits[classIncast]) / float64(max(1, packets[classIncast]))
		x[xBgRetx] = float64(fr.ClassRetransmits[classBackground]) / float64(max(1, packets[classBackground]))
		burstFigures(x, bursts, size)
		for k, v := range map[string][]float64{xLocalUs: local, xRemoteUs: remote} {
			if len(v) > 0 {
				slices.Sort(v)
				x[k] = v[len(v)/2]
			}
		}
		x[xP50Incast] = p50FlowIncast(r.Records, incast)
		rxPorts(x, r, tp, receivers)
		fr.Extra = x
	}
}

// burstFigures puts the medians over the bursts of their flows' FCT
// order statistics into x.
func burstFigures[K comparable](x map[string]float64, bursts map[K][]int64, size int) {
	var first, mid, last, ratio, gbps []float64
	for _, fcts := range bursts {
		if len(fcts) < 2 {
			continue
		}
		slices.Sort(fcts)
		m := fcts[len(fcts)/2]
		l := fcts[len(fcts)-1]
		first, mid, last = append(first, float64(fcts[0])/1e3), append(mid, float64(m)/1e3), append(last, float64(l)/1e3)
		ratio = append(ratio, float64(m)/float64(l))
		gbps = append(gbps, float64(len(fcts)*size*8)/float64(l))
	}
	x[xBursts] = float64(len(first))
	for k, v := range map[string][]float64{xFirstUs: first, xMedianUs: mid, xLastUs: last, xMedOverLast: ratio, xBurstGbps: gbps} {
		if len(v) > 0 {
			slices.Sort(v)
			x[k] = v[len(v)/2]
		}
	}
}

// p50FlowIncast is 1 if the completed flow at the median slowdown is an
// incast flow, else 0.
func p50FlowIncast(recs []fabric.FlowRecord, incast func(*fabric.FlowRecord) bool) float64 {
	var ok []*fabric.FlowRecord
	for i := range recs {
		if recs[i].OK {
			ok = append(ok, &recs[i])
		}
	}
	if len(ok) == 0 {
		return 0
	}
	slices.SortStableFunc(ok, func(a, b *fabric.FlowRecord) int { return cmp.Compare(a.Slowdown(), b.Slowdown()) })
	if incast(ok[(len(ok)-1)/2]) {
		return 1
	}
	return 0
}

// rxPorts sums, over the ToR ports toward the receivers, the bytes they
// sent in all and by queue, and the payload of every flow to those
// receivers.
func rxPorts(x map[string]float64, r *fabric.Result, tp topo.Topology, receivers map[int]bool) {
	hosts := hostNames(tp)
	names := map[string]bool{}
	for h := range receivers {
		names[hosts[h]] = true
	}
	for _, f := range r.Records {
		if receivers[f.Dst] && f.OK {
			x[xRxDelivery] += float64(f.Size)
		}
	}
	for _, s := range r.SwitchResults {
		for _, p := range s.Ports {
			if !names[p.Port] {
				continue
			}
			x[xRxBytes] += float64(p.TxBytes)
			for _, q := range p.Queues {
				switch q.Name {
				case "control":
					x[xRxControl] += float64(q.Bytes)
					x[xRxControlPeak] = max(x[xRxControlPeak], float64(q.PeakBytes))
				case "data":
					x[xRxData] += float64(q.Bytes)
					x[xRxDataPeak] = max(x[xRxDataPeak], float64(q.PeakBytes))
				}
			}
		}
	}
}

// hostNames are the hosts' node names by host index as tor/fabric's
// Build numbers hosts (fabric.Racks): switch by switch, each switch's
// hosts in link order.
func hostNames(tp topo.Topology) []string {
	peers := make([][]int, len(tp.Nodes))
	for _, l := range tp.Links {
		peers[l.A] = append(peers[l.A], l.B)
		peers[l.B] = append(peers[l.B], l.A)
	}
	var out []string
	for i, nd := range tp.Nodes {
		if nd.Role != topo.Switch {
			continue
		}
		for _, p := range peers[i] {
			if tp.Nodes[p].Role == topo.Host {
				out = append(out, tp.Nodes[p].Name)
			}
		}
	}
	return out
}

// incastDetailHeading heads the record's table of incastDetailColumns,
// present when a cell kept them (the records made before have none).
const incastDetailHeading = "Where the incast flows' time goes (median over the seeds, range): the incast and background flows' P50 slowdown, " +
	"the incast flows' share of all and whether the all-flow P50's flow is one (1: in every seed); per burst (median over the cell's bursts) " +
	"its first, median and last flow's FCT, median over last, the incast flows' median FCT by sender's rack (the receiver's, the others), and a burst's bytes over its last FCT; request packets sent again per packet; " +
	"the receivers' ToR ports: the flows' payload to the receivers over the bytes the ports sent, the control (header-only) queue's share of them, and the deepest data and control queue:"

// hasIncastDetail reports whether a cell of groups kept incastDetail's
// figures.
func hasIncastDetail(groups []Group) bool {
	for i := range groups {
		for _, r := range groups[i].OK() {
			if _, ok := r.Fabric.Extra[xBursts]; ok {
				return true
			}
		}
	}
	return false
}

// incastDetailColumns are the table of incastDetail's figures.
func incastDetailColumns() []Column {
	ex := func(k string) func(*FabricRun) float64 { return func(f *FabricRun) float64 { return f.Extra[k] } }
	class := func(c string) func(*FabricRun) float64 {
		return func(f *FabricRun) float64 { return f.Classes[c].P50Slowdown }
	}
	ratio := func(a, b string) func(*FabricRun) float64 {
		return func(f *FabricRun) float64 { return f.Extra[a] / max(1, f.Extra[b]) }
	}
	return []Column{
		{"scheme", pointCell("scheme")}, {"cc", pointCell("cc")},
		{"incast P50 slowdown", spreadCell(class(classIncast), 2)},
		{"background P50", spreadCell(class(classBackground), 2)},
		{"incast share", spreadCell(ex(xIncastShare), 3)},
		{"P50 flow incast", spreadCell(ex(xP50Incast), 0)},
		{"bursts", spreadCell(ex(xBursts), 0)},
		{"burst first FCT µs", spreadCell(ex(xFirstUs), 1)},
		{"burst median FCT µs", spreadCell(ex(xMedianUs), 1)},
		{"burst last FCT µs", spreadCell(ex(xLastUs), 1)},
		{"median / last", spreadCell(ex(xMedOverLast), 3)},
		{"incast P50 FCT µs, sender in the receiver's rack", spreadCell(ex(xLocalUs), 1)},
		{"other racks", spreadCell(ex(xRemoteUs), 1)},
		{"burst Gbit/s", spreadCell(ex(xBurstGbps), 1)},
		{"resent per incast packet", spreadCell(ex(xIncastRetx), 3)},
		{"resent per background packet", spreadCell(ex(xBgRetx), 3)},
		{"rx ports: payload share", spreadCell(ratio(xRxDelivery, xRxBytes), 3)},
		{"rx ports: control share", spreadCell(ratio(xRxControl, xRxBytes), 4)},
		{"rx ports: data queue peak KB", spreadCell(func(f *FabricRun) float64 { return f.Extra[xRxDataPeak] / 1e3 }, 1)},
		{"control queue peak KB", spreadCell(func(f *FabricRun) float64 { return f.Extra[xRxControlPeak] / 1e3 }, 1)},
	}
}
