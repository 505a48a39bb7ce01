package trust

import (
	"net/netip"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// Drop reasons, one per boundary (see the package doc).
var (
	// ReasonLLR: a frame carrying a link shim reached the pipeline, so
	// llr's receiver did not take it: its port is not protected.
	ReasonLLR = dataplane.NewReason("trust_llr")
	// ReasonNetRTHost: a NetRT message came from a host port.
	ReasonNetRTHost = dataplane.NewReason("trust_netrt_host")
	// ReasonNetRTPeer: a NetRT message came from a fabric port with a
	// source address outside the NetRT peers.
	ReasonNetRTPeer = dataplane.NewReason("trust_netrt_peer")
	// ReasonDCPPayload: a DCP header-only packet carried payload.
	ReasonDCPPayload = dataplane.NewReason("trust_dcp_payload")
)

// MaxPorts bounds the ports Config.Hosts can name and Stats counts.
const MaxPorts = 64

// Config says which ports face hosts and whom NetRT messages may come
// from. The zero value trusts every port as a fabric port and refuses
// only link shims and header-only packets with payload.
type Config struct {
	// Hosts is the set of host-facing ports, bit i for port i; the
	// others face switches.
	Hosts uint64
	// NetRT says the switch runs NetRT, so that it consumes NetRT
	// messages from the fabric and checks their source against Peers.
	// A switch without NetRT forwards them like any packet.
	NetRT bool
	// Peers are the prefixes of the hosts behind the ToRs this one runs
	// NetRT with (tord: netrt.prefixes); empty accepts every source.
	Peers []netip.Prefix
}

// Stage is the trust boundary check; see the package doc. One Stage per
// worker; it is not safe for concurrent use except Snapshot. The zero
// value is not ready: build it with NewStage.
type Stage struct {
	cfg   Config
	st    Stats
	spare PortStats // ports ≥ MaxPorts
	pub   dataplane.Published[Stats]
}

// NewStage returns a Stage enforcing c. Peers are copied.
func NewStage(c Config) *Stage {
	c.Peers = append([]netip.Prefix(nil), c.Peers...)
	return &Stage{cfg: c}
}

// Config returns the configuration in force.
func (s *Stage) Config() Config { return s.cfg }

// Name implements dataplane.Stage.
func (s *Stage) Name() string { return "trust" }

// host reports whether port i faces hosts.
func (s *Stage) host(i uint16) bool { return i < MaxPorts && s.cfg.Hosts&(1<<i) != 0 }

// peer reports whether a is the address of a host behind a NetRT peer.
func (s *Stage) peer(a [16]byte) bool {
	if len(s.cfg.Peers) == 0 {
		return true
	}
	ip := netip.AddrFrom16(a).Unmap()
	for _, p := range s.cfg.Peers {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

func (s *Stage) ps(i uint16) *PortStats {
	if i < MaxPorts {
		return &s.st.Ports[i]
	}
	return &s.spare
}

// Process implements dataplane.Stage: it drops what crosses a trust
// boundary and leaves the rest to the stages after it.
func (s *Stage) Process(c *dataplane.Ctx, b *dataplane.Batch) {
	for i := 0; i < b.N; i++ {
		p := &b.Pkts[i]
		if p.Verdict != dataplane.Forward {
			continue
		}
		m := &p.Meta
		switch {
		case m.ShimOff != 0 || m.Kind == rocev2.KindLinkCtrl:
			s.ps(p.In).LLR++
			p.Drop(ReasonLLR)
		case m.Kind != rocev2.KindRoCE:
			// Nothing else to check: the other rules are about RoCEv2.
		case m.Opcode == rocev2.NetRTOpcode:
			switch {
			case s.host(p.In):
				s.ps(p.In).NetRTHost++
				p.Drop(ReasonNetRTHost)
			case s.cfg.NetRT && !s.peer(m.Flow.Src):
				s.ps(p.In).NetRTPeer++
				p.Drop(ReasonNetRTPeer)
			}
		case m.HeaderOnly() && m.PayloadLen() > 0:
			s.ps(p.In).DCPPayload++
			p.Drop(ReasonDCPPayload)
		}
	}
	s.pub.Maybe(c.Now, &s.st)
}

// Poll implements dataplane.Source only to publish the counters when no
// traffic comes; it originates nothing.
func (s *Stage) Poll(c *dataplane.Ctx) int {
	s.pub.Maybe(c.Now, &s.st)
	return 0
}

// Stats returns the live counters; call it from the worker's goroutine
// only (others use Snapshot).
func (s *Stage) Stats() Stats { return s.st }

// Snapshot returns the counters as last published, about once a
// millisecond of worker time. It is safe from any goroutine.
func (s *Stage) Snapshot() Stats { return s.pub.Load() }

// Publish stores the counters for Snapshot now, at worker time now. Call
// it from the worker's goroutine, or after the worker stopped (a
// simulator at the end of a run).
func (s *Stage) Publish(now int64) { s.pub.Store(now, &s.st) }

var (
	_ dataplane.Stage  = (*Stage)(nil)
	_ dataplane.Source = (*Stage)(nil)
)
