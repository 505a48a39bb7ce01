package pipeline

import (
	"net/netip"
	"slices"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
	"rocetor/tor/fwd"
	"rocetor/tor/netrt"
)

// NetRTConfig is the netrt: section: in-network retransmission between
// this ToR and the ToRs of the remote prefixes (tor/netrt). No fabric
// ports, no NetRT stages. Zero fields take tor/netrt's defaults.
//
// The byte budgets (pool_bytes, buffer_bytes), the requested bytes
// k_low and k_high are compared with, the pace between rate_max and
// rate_min, and the retransmission bucket (retx_rate, retx_burst) are
// per port whatever the number of workers:
// the workers' stages count them together (netrt.Budgets, made by
// NewPlan). The frame budgets (pool_frames, buffer_frames) and flows
// are per worker: they size each worker's tables and bound the frames
// it holds of its own memory.
type NetRTConfig struct {
	Fabric   []string       `yaml:"fabric"`   // ports facing the fabric; the others face hosts
	Prefixes []netip.Prefix `yaml:"prefixes"` // remote prefixes whose ToRs run NetRT, the only sources NetRT messages from the fabric are accepted from; empty: all
	Flows    int            `yaml:"flows"`    // flow entries per stage and worker

	PoolBytes  dataplane.Bytes `yaml:"pool_bytes"`  // duplicate pool per fabric port, all workers' together (about one BDP)
	PoolFrames int             `yaml:"pool_frames"` // duplicates per worker, all ports (each worker's own frames)
	Hold       time.Duration   `yaml:"hold"`        // longest a duplicate is kept (about one RTT)
	TailProbe  time.Duration   `yaml:"tail_probe"`  // resend a flow's unACKed last duplicate this long after it left the port, then every tail_probe while held; 0: off

	BufferBytes     dataplane.Bytes `yaml:"buffer_bytes"`     // reordering buffer per host port, all workers' together
	BufferFrames    int             `yaml:"buffer_frames"`    // held frames per worker, all ports (each worker's own frames)
	RequestDelay    time.Duration   `yaml:"request_delay"`    // first request of a gap held back this long; 0: at once (the paper). With forwarding.multipath spray or adaptive: a few µs, longer than most reordering takes to fill, well below the time a host takes to send 128 packets (the bitmap a request names), e.g. 5us at 50 Gbit/s and 1 KB packets; longer, a flow outruns the bitmap before its gap is asked for. With ecmp: 0. tord warns of 0 with spray or adaptive (docs/experiments.md, netrt-multipath-fabric)
	RequestInterval time.Duration   `yaml:"request_interval"` // request re-sent this often while a hole lasts
	MaxRequests     int             `yaml:"max_requests"`     // unanswered requests before falling back to the hosts' GBN
	SilentRequests  int             `yaml:"silent_requests"`  // further requests while nothing comes from the fabric (a peer off its CPU)
	IdleTimeout     time.Duration   `yaml:"idle_timeout"`     // idle time before a flow entry may be reused
	Backoff         time.Duration   `yaml:"backoff"`          // how long a flow whose peer never answered stays out of NetRT

	// Congestion avoidance of retransmissions (§III-C-3).
	KLow          dataplane.Bytes `yaml:"k_low"`          // requested bytes per window on a fabric port, all workers', above which retransmissions are paced
	KHigh         dataplane.Bytes `yaml:"k_high"`         // requested bytes at which the pace reaches rate_min
	RateMax       dataplane.Rate  `yaml:"rate_max"`       // pace at k_low
	RateMin       dataplane.Rate  `yaml:"rate_min"`       // pace at and above k_high
	Window        time.Duration   `yaml:"window"`         // time over which requested bytes count
	PausePriority int             `yaml:"pause_priority"` // PFC priority paused on senders above k_low; -1: no pause
	PauseQuanta   uint16          `yaml:"pause_quanta"`   // PFC pause time in 512-bit quanta

	// The amplification bound: retransmissions requests may draw, per
	// fabric port, whoever sends them (tor/netrt Config.RetxRate).
	RetxRate  dataplane.Rate  `yaml:"retx_rate"`  // sustained, all workers' together; 0: rate_max
	RetxBurst dataplane.Bytes `yaml:"retx_burst"` // at once; 0: pool_bytes
}

// On reports whether the section turns NetRT on.
func (n *NetRTConfig) On() bool { return len(n.Fabric) > 0 }

// NetRTAdvice is what tord warns of at start about c's netrt section,
// or "". With forwarding.multipath spray or adaptive most gaps are
// packets on a slower path, and NetRT asking for each at once
// (request_delay 0, the paper's Algorithm 2) makes the source ToR
// resend them and its congestion avoidance pause the senders as for
// congestion: on netrt-multipath-fabric's fabric, holding the first
// request 5 µs made GBN + NetRT's average FCT 29-39 % (spray) and
// 12-19 % (adaptive) shorter than ECMP GBN's, where at once it was
// 16-38 % and 5-6 % longer (docs/experiments.md, netrt-multipath-fabric). No
// default follows multipath instead, because the right delay depends
// on the fabric (longer than most reordering takes to fill, well below
// the time a host sends the 128 packets a request names) and with ECMP
// no delay helps.
func (c *Config) NetRTAdvice() string {
	if !c.NetRT.On() || c.NetRT.RequestDelay != 0 {
		return ""
	}
	switch c.Forwarding.Multipath {
	case "spray", "adaptive":
		return "netrt requests every gap at once (request_delay 0) while forwarding.multipath reorders packets: " +
			"most gaps are only late, and their requests resend them and pause the senders; " +
			"set netrt.request_delay to a few µs: longer than most reordering takes to fill, well below the time a host sends 128 packets " +
			"(docs/operations.md, netrt.request_delay)"
	}
	return ""
}

// validate checks the section against the port list.
func (n *NetRTConfig) validate(ports []string) error {
	if !n.On() {
		return nil
	}
	seen := map[string]bool{}
	for _, f := range n.Fabric {
		if !slices.Contains(ports, f) {
			return bad("netrt.fabric", "%q is not one of ports", f)
		}
		if seen[f] {
			return bad("netrt.fabric", "%q named twice", f)
		}
		seen[f] = true
	}
	if len(n.Fabric) == len(ports) {
		return bad("netrt.fabric", "every port faces the fabric; NetRT needs a host port")
	}
	if len(ports) > 64 {
		return bad("netrt.fabric", "NetRT serves at most 64 ports, have %d", len(ports))
	}
	if _, err := n.StageConfig(ports, nil); err != nil {
		return bad("netrt", "%v", err)
	}
	return nil
}

// Frames is how many UMEM frames the stages may hold at once, per
// worker: the pool's and the reordering buffer's.
func (n *NetRTConfig) Frames() int {
	pool, buf := n.PoolFrames, n.BufferFrames
	if pool == 0 {
		pool = netrt.DefaultPoolFrames
	}
	if buf == 0 {
		buf = netrt.DefaultBufferFrames
	}
	return pool + buf
}

// stageConfig turns the section into the stages' configuration; route
// answers where NetRT messages go.
func (n *NetRTConfig) StageConfig(ports []string, fib *fwd.FIB) (netrt.Config, error) {
	c := netrt.Config{
		Prefixes:        n.Prefixes,
		Flows:           n.Flows,
		PoolBytes:       int(n.PoolBytes),
		PoolFrames:      n.PoolFrames,
		Hold:            int64(n.Hold),
		TailProbe:       int64(n.TailProbe),
		BufferBytes:     int(n.BufferBytes),
		BufferFrames:    n.BufferFrames,
		RequestDelay:    int64(n.RequestDelay),
		RequestInterval: int64(n.RequestInterval),
		MaxRequests:     n.MaxRequests,
		SilentRequests:  n.SilentRequests,
		IdleTimeout:     int64(n.IdleTimeout),
		Backoff:         int64(n.Backoff),
		KLow:            int(n.KLow),
		KHigh:           int(n.KHigh),
		RateMax:         uint64(n.RateMax),
		RateMin:         uint64(n.RateMin),
		Window:          int64(n.Window),
		PausePriority:   n.PausePriority,
		PauseQuanta:     n.PauseQuanta,
		RetxRate:        uint64(n.RetxRate),
		RetxBurst:       int(n.RetxBurst),
	}
	for _, f := range n.Fabric {
		c.Fabric |= 1 << slices.Index(ports, f)
	}
	if fib != nil {
		c.Route = func(dst netip.Addr) (uint16, rocev2.MAC, bool) {
			if t := fib.Load(); t != nil {
				return t.NextHop(dst)
			}
			return 0, rocev2.MAC{}, false
		}
	}
	return c, c.Validate()
}
