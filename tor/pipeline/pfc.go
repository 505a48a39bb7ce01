package pipeline

import (
	"fmt"
	"math"
	"time"

	"rocetor/dataplane"
)

// PFC headroom: the bytes a port must still take on a paused priority
// after it decided to pause its peer, until the peer's last frame has
// arrived. Lossless holds when xoff + headroom fits the priority's
// buffer. The worst case, in bit times (BT) of the link, is the sum of
// the delays of IEEE 802.1Qbb-2011 Annex N ("Buffer requirements"), as
// Cisco's PFC white paper ("Priority Flow Control: Build Reliable Layer
// 2 Infrastructure", c11-542809, "PFC and buffer requirements") and
// Cisco Press's analysis of it (Gupta and Mazurek, "Detecting,
// Troubleshooting, and Preventing Congestion in Storage Networks",
// §7-3, Figure 7-2) spell them out:
//
//	D-Max-Frame    MTU×8 + 160  the pause waits behind a frame this port just began (IFG 96 + preamble 64)
//	D-Pause        672          the PFC frame itself, 64 bytes, with IFG and preamble
//	D-Cable        2 × L × 5 ns/m × rate   the pause travels to the peer, its frames back (fibre, ~5 ns/m)
//	D-Response     2 × D-Intf + D-Resp     both interfaces' delays and the peer's reaction
//	D-Max-Frame    MTU×8 + 160  the peer cannot stop a frame it began
//
// D-Resp is IEEE 802.3 Annex 31B's pause_reaction bound (Table 31B-1;
// 60, 80, 118, 394 and 905 quanta of 512 BT at 10, 25, 40, 100 and
// 400 Gbit/s) and D-Intf the interface delay the same analysis takes
// (8192, 6144, 24576, 122880 BT; 400G: 100G's). response_time
// replaces D-Response where the peer is known to react faster or slower.
// Worked example (10 GbE, 100 m, MTU 9216, the source's figures):
// 73888 + 672 + 10000 + 2×8192 + 30720 + 73888 = 205552 BT = 25694 bytes
// (TestHeadroom).

// responseBT is the default D-Response (2 × D-Intf + D-Resp) in bit
// times, by the slowest rate it covers.
var responseBT = []struct {
	rate     uint64
	intf, rx uint64
}{
	{10e9, 8192, 60 * 512},
	{25e9, 6144, 80 * 512},
	{40e9, 24576, 118 * 512},
	{100e9, 122880, 394 * 512},
	{400e9, 122880, 905 * 512},
}

// HeadroomInput is what the headroom of one port's lossless priority
// depends on.
type HeadroomInput struct {
	RateBps     uint64  // the link's rate
	CableMeters float64 // the cable's length
	MTU         int     // the largest frame either side may send, bytes
	// Response is the peer's response time with both interfaces'
	// delays; 0 takes the bound for the rate (responseBT).
	Response time.Duration
}

// Headroom returns the bytes a lossless priority needs above xoff: the
// Annex N worst case above, rounded up to whole bytes.
func Headroom(in HeadroomInput) int {
	frame := uint64(in.MTU)*8 + 160
	bits := 2*frame + 672
	bits += uint64(math.Ceil(2 * in.CableMeters * 5e-9 * float64(in.RateBps)))
	if in.Response > 0 {
		bits += uint64(math.Ceil(in.Response.Seconds() * float64(in.RateBps)))
	} else {
		r := responseBT[len(responseBT)-1]
		for _, e := range responseBT {
			if in.RateBps <= e.rate {
				r = e
				break
			}
		}
		bits += 2*r.intf + r.rx
	}
	return int((bits + 7) / 8)
}

// PFCWatchdogConfig is the pfc section's watchdog (dataplane.PFCWatchdog,
// SONiC's pfcwd):
//
//	watchdog:
//	  detection: 200ms    # paused with frames waiting and none sent this long: a storm
//	  restoration: 200ms  # no pause this long: the queue is restored
//	  action: drop        # drop the stormed queue's frames, or forward them ignoring the pauses
type PFCWatchdogConfig struct {
	Detection   time.Duration `yaml:"detection"`   // paused, frames waiting, none sent this long: a storm; 0: 200ms, as SONiC's
	Restoration time.Duration `yaml:"restoration"` // no pause received on the stormed priority this long: restored; 0: 200ms
	Action      string        `yaml:"action"`      // drop: the stormed queue's frames are dropped (pfc_watchdog); forward: sent in spite of the pauses. Default drop
}

// PGThresholds are one priority group's xoff and xon (pfc.priority_groups).
type PGThresholds struct {
	XOff dataplane.Bytes `yaml:"xoff"` // the priority's peer is paused when the bytes it queued here pass this
	XOn  dataplane.Bytes `yaml:"xon"`  // ... and resumed when they fall to this
}

// validateGroups checks pfc.priority_groups: lossless priorities, and
// thresholds that pause before the queue drops, headroom included.
func (p *PFCConfig) validateGroups(c *Config) error {
	lossless := p.lossless()
	for q, g := range p.PriorityGroups {
		field := fmt.Sprintf("pfc.priority_groups.%d", q)
		switch {
		case q < 0 || q > 7:
			return bad(field, "want a priority 0–7")
		case lossless != 0 && lossless&(1<<q) == 0:
			return bad(field, "priority %d is not lossless (pfc.priorities %v)", q, p.Priorities)
		case g.XOff <= 0 || g.XOn < 0 || g.XOn >= g.XOff:
			return bad(field, "xoff %d, xon %d bytes: want 0 ≤ xon < xoff", g.XOff, g.XOn)
		case int(g.XOff)+p.headroom(c) > int(c.Egress.QueueLimit):
			return bad(field, "xoff %d + headroom %d bytes pass egress.queue_limit (%d): the queue would drop before the peer stops", g.XOff, p.headroom(c), c.Egress.QueueLimit)
		}
	}
	return nil
}

// DefaultMTU is the MTU the headroom takes when the pfc section names
// none: the largest frame tord's UMEM frames carry in a jumbo setup.
const DefaultMTU = 9216

// lossless returns the PFC enable vector: the priorities bit by bit, 0
// for every priority.
func (p *PFCConfig) lossless() uint8 {
	var v uint8
	for _, q := range p.Priorities {
		v |= 1 << q
	}
	return v
}

// headroom returns the headroom of the section: explicit, else the
// largest of the ports' from cable_length, 0 without either.
func (p *PFCConfig) headroom(c *Config) int {
	if p.Headroom > 0 {
		return int(p.Headroom)
	}
	if p.CableLength <= 0 {
		return 0
	}
	mtu := p.MTU
	if mtu == 0 {
		mtu = DefaultMTU
	}
	h := 0
	for i := range c.Ports {
		h = max(h, Headroom(HeadroomInput{RateBps: c.portRate(i), CableMeters: p.CableLength, MTU: int(mtu), Response: p.ResponseTime}))
	}
	return h
}

// thresholds returns xoff and xon: as given, or, without xoff, derived
// from the queue limit less the headroom (xon half of xoff).
func (p *PFCConfig) thresholds(c *Config) (xoff, xon int) {
	xoff, xon = int(p.XOff), int(p.XOn)
	if xoff == 0 {
		xoff = int(c.Egress.QueueLimit) - p.headroom(c)
		if xon == 0 {
			xon = xoff / 2
		}
	}
	return xoff, xon
}

// HeadroomReserve returns the bytes the shared buffer keeps aside for
// PFC headroom: a headroom per lossless priority of every port that
// pauses its peer, as the ns-3 RDMA switch MMU (switch-mmu.cc) and
// switch ASICs keep headroom beside the shared pool.
func (c *Config) HeadroomReserve() int64 {
	p := c.PFC
	if p == nil || c.Buffer == nil {
		return 0
	}
	h := int64(p.headroom(c))
	if h == 0 {
		return 0
	}
	ports := len(c.Ports)
	if len(p.Ports) > 0 {
		ports = len(p.Ports)
	}
	prios := len(p.Priorities)
	if prios == 0 {
		prios = 1 // the data queue's priority: DefaultEgress has one lossless queue
	}
	return h * int64(ports*prios)
}

// sharedBuffer returns the switch's pool, less the PFC headroom
// reserve; nil without a buffer section.
func (c *Config) sharedBuffer() *dataplane.SharedBuffer {
	if c.Buffer == nil {
		return nil
	}
	return dataplane.NewSharedBuffer(c.Buffer.Pool(len(c.Ports), c.queues()) - c.HeadroomReserve())
}

// watchdog returns the worker's watchdog, nil without one.
func (p *PFCConfig) watchdog() *dataplane.PFCWatchdog {
	if p == nil || p.Watchdog == nil {
		return nil
	}
	w := p.Watchdog
	c := &dataplane.PFCWatchdog{Detection: int64(w.Detection), Restoration: int64(w.Restoration),
		Forward: w.Action == "forward", Priorities: p.lossless()}
	if c.Detection == 0 {
		c.Detection = int64(200 * time.Millisecond)
	}
	if c.Restoration == 0 {
		c.Restoration = int64(200 * time.Millisecond)
	}
	return c
}

// validateLossless checks the priorities, headroom and watchdog.
func (p *PFCConfig) validateLossless(c *Config) error {
	for _, q := range p.Priorities {
		if q < 0 || q > 7 {
			return bad("pfc.priorities", "%d, want 0–7", q)
		}
	}
	switch {
	case p.Headroom < 0 || p.CableLength < 0 || p.ResponseTime < 0 || p.MTU < 0:
		return bad("pfc", "negative headroom, cable_length, response_time or mtu")
	case p.Headroom > 0 && p.CableLength > 0:
		return bad("pfc.headroom", "given with cable_length, which derives it: give one")
	case p.CableLength > 0:
		for i, n := range c.Ports {
			if c.portRate(i) == 0 {
				return bad("pfc.cable_length", "port %s has no rate (egress.rate, egress.port_rates): the headroom is the link's bytes in flight", n)
			}
		}
	}
	if h := p.headroom(c); h > 0 {
		xoff, _ := p.thresholds(c)
		if xoff+h > int(c.Egress.QueueLimit) {
			return bad("pfc", "xoff %d + headroom %d bytes pass egress.queue_limit (%d): a paused peer's frames in flight would be dropped", xoff, h, c.Egress.QueueLimit)
		}
		if c.Buffer != nil && c.Buffer.Pool(len(c.Ports), c.queues())-c.HeadroomReserve() <= 0 {
			return bad("pfc", "headroom %d bytes × lossless ports and priorities (%d bytes) leave nothing of buffer.size to share", h, c.HeadroomReserve())
		}
	}
	if w := p.Watchdog; w != nil {
		switch {
		case w.Detection < 0 || w.Restoration < 0:
			return bad("pfc.watchdog", "negative detection or restoration")
		case w.Action != "" && w.Action != "drop" && w.Action != "forward":
			return bad("pfc.watchdog.action", "%q, want drop or forward", w.Action)
		}
	}
	return nil
}
