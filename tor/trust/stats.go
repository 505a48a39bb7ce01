package trust

// PortStats count the frames refused on one ingress port, one field
// per drop reason.
type PortStats struct {
	LLR        uint64 // trust_llr: link-shim frames
	NetRTHost  uint64 // trust_netrt_host: NetRT messages from a host port
	NetRTPeer  uint64 // trust_netrt_peer: NetRT messages from a fabric source not a peer
	DCPPayload uint64 // trust_dcp_payload: header-only packets with payload
}

// Add adds p's counters to t's: the collector sums workers with it.
func (t *PortStats) Add(p *PortStats) {
	t.LLR += p.LLR
	t.NetRTHost += p.NetRTHost
	t.NetRTPeer += p.NetRTPeer
	t.DCPPayload += p.DCPPayload
}

// Total returns every refusal of the port.
func (t PortStats) Total() uint64 { return t.LLR + t.NetRTHost + t.NetRTPeer + t.DCPPayload }

// Stats are a Stage's counters, by ingress port index.
type Stats struct {
	Ports [MaxPorts]PortStats
}

// Sum returns the counters of all ports together.
func (st *Stats) Sum() PortStats {
	var t PortStats
	for i := range st.Ports {
		t.Add(&st.Ports[i])
	}
	return t
}
