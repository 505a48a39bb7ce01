package netrt

import (
	"errors"
	"fmt"
	"net/netip"

	"rocetor/rocev2"
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("netrt: config")

// Config configures both stages. Sizes (Flows) and frame budgets
// (PoolFrames, BufferFrames) are per stage, that is per worker. The
// byte budgets of a port (PoolBytes, BufferBytes), the requested bytes
// N of congestion avoidance, its pace R_r and the retransmission bucket
// are per stage too, unless Budgets shares them among the workers of a
// switch, which makes them the port's. The zero value of each field selects its
// default.
type Config struct {
	// Fabric is the set of ports facing the fabric, bit i for port i
	// (ports 0–63); the others face hosts. DstToR serves data packets
	// that arrive from the fabric and leave toward a host; SrcToR pools
	// data packets that arrive from a host and leave toward the fabric.
	// It must not be zero.
	Fabric uint64
	// Flows bounds the per-flow state of each stage; default 16384, room
	// for the 10,000 concurrent QPs of seed 000's Table II. When the table
	// is full (and no idle entry can be reclaimed) new flows are forwarded
	// untouched and counted.
	Flows int
	// BufferBytes is DstToR's reordering buffer budget per host port,
	// counted on the port the held packets will leave by; default 1 MiB.
	// With Budgets it bounds what every worker holds for the port
	// together. BufferFrames bounds the frames it holds over all ports;
	// default 1024, always per worker (its table and its share of the
	// frames).
	BufferBytes, BufferFrames int
	// RequestInterval is how often DstToR re-sends a retransmission
	// request while a flow is in ReTx; default 20 µs.
	RequestInterval int64
	// RequestDelay holds back the first request of a gap (default 0,
	// at once, as in the paper): on fabrics that spray packets over paths
	// of unequal delay most gaps are reordering, which fills the hole by
	// itself within the paths' delay spread; a request sent at once makes
	// the source ToR resend packets that are only late, and their copies
	// reach the host as duplicates. Set it to a few µs, longer than most
	// reordering takes to fill but well below the time a host takes to
	// send the 128 packets a request's bitmap names: a gap still open
	// then (a loss, or a packet behind a full queue, as adaptive choice
	// makes them) is given up once its flow runs past the bitmap, where
	// a request at once, with the senders' pause above KLow, would have
	// held the flow (docs/experiments.md, netrt-multipath-fabric: 5 µs,
	// not 20, under adaptive choice).
	RequestDelay int64
	// MaxRequests is how many requests DstToR sends for one ePSN before
	// it gives up as if told "unfulfilled" (a SrcToR that never answers
	// must not block the flow forever); default 8.
	MaxRequests int
	// SilentRequests is how many more requests DstToR may send for one
	// ePSN, beyond MaxRequests, while nothing comes from the fabric
	// between one request and the next: a peer off its CPU is not a
	// peer that refuses (DstToR.Timer). Default MaxRequests, so that a
	// flow asks for at most (MaxRequests+SilentRequests)×RequestInterval.
	SilentRequests int
	// IdleTimeout is how long a flow with nothing held (DstToR: Ordered
	// or Waiting) must be idle before its entry may be reclaimed for a new
	// flow; default 1 ms.
	IdleTimeout int64
	// DstToR.
	//
	// Backoff is how long a flow whose requests went unanswered
	// (MaxRequests of them) and whose peer never answered it (the peer
	// ToR may not run NetRT) stays out of
	// in-network recovery: its gaps pass to the host (the flow goes to
	// Waiting; nothing is held, no request sent) until Backoff has passed,
	// then its next gap is held and requested again. Best effort
	// (§III-A): a peer that does not answer must not cost every gap
	// MaxRequests×RequestInterval of delay. Default 1 s; at most 24 h.
	Backoff int64
	// PoolBytes is SrcToR's duplicate pool budget per egress port;
	// default 256 KiB. With Budgets it bounds what every worker pools
	// on the port together. PoolFrames bounds the duplicates it holds
	// over all ports; default 4096, always per worker (its table and
	// its share of the frames).
	PoolBytes, PoolFrames int
	// InPlace keeps a duplicate as the host's frame itself, held in the
	// worker's memory (dataplane.Mem.Hold) while it goes on, rather
	// than a copy, where the worker that pools a frame also sends it
	// (dataplane.Ctx.OwnsPort: always with one worker), so that it is
	// released on the memory that holds it; and only if no stage after
	// SrcToR rewrites it beyond what resend restores (no INT; trim, llr
	// and the impairment copy a held frame before they change more than
	// its Ethernet header and ECN field).
	InPlace bool
	// Hold is how long SrcToR keeps a duplicate after its original left
	// the egress port (its queueing there excluded), up to twice that;
	// default 100 µs.
	Hold int64
	// TailProbe, when not zero, is how long after a flow's newest
	// duplicate left the egress port (its queueing there excluded),
	// still unacknowledged and with nothing sent after it, SrcToR sends
	// it again, and again every TailProbe while its Hold lasts: a lost
	// last packet leaves the destination ToR no later packet to detect
	// the gap by, and a probe or the ACK it draws may be lost too. It
	// should exceed the RTT beyond this port (or the copy is mostly a
	// duplicate) and stay below Hold and the hosts' RTO. Default 0: off,
	// as in the paper.
	TailProbe int64
	// Congestion avoidance (SrcToR, §III-C-3).
	//
	// Per fabric port, N is the bytes of retransmission the pool was
	// asked for on that port within the last Window ns (default Hold).
	// While N < KLow (default 20 KiB) requested duplicates go at once;
	// from KLow on they are paced at
	// R_r = max(RateMax − (N−KLow)(RateMax−RateMin)/(KHigh−KLow), RateMin)
	// (KHigh default 100 KiB), and the host ports whose flows were asked
	// for are paused with 802.1Qbb PFC frames (PausePriority, default 3,
	// the data class; -1 sends none; priority 0 cannot be chosen) of
	// PauseQuanta quanta (default 0xffff), refreshed while N ≥ KLow and
	// resumed when it falls below. RateMax and RateMin are in bit/s; zero
	// means 50% and 1% of the egress port's shaped rate, or 5 Gbit/s and
	// 100 Mbit/s on an unshaped port.
	KLow, KHigh      int
	RateMax, RateMin uint64
	Window           int64
	PausePriority    int
	PauseQuanta      uint16
	// Amplification bound (SrcToR), going beyond the paper: the
	// congestion avoidance above paces what is asked for the first
	// time, so a request repeated (its answer lost, or forged) would
	// send the same duplicates again each time, unpaced. RetxRate
	// (bit/s) and RetxBurst (bytes) bound, per fabric port, the
	// retransmissions requests can draw from the pool: a token bucket
	// that a duplicate's bytes take when a request sends or queues it.
	// A duplicate the bucket has no room for is treated as missing
	// (the first such PSN gets the unfulfilled notice, so that a flow
	// blocked on it falls back to the hosts at once) and counted
	// (SrcPortStats.Limited). Zero means RateMax of the port (50% of
	// its shaped rate, DefaultRateMax unshaped) and PoolBytes (at least
	// MaxFrame): the whole pool once, then half the link at most. Tail probes, which
	// no request draws, are not charged.
	RetxRate  uint64
	RetxBurst int
	// Route tells where a NetRT message to dst goes: the egress port and
	// the next hop's MAC, as the forwarding table would send it. Messages
	// are addressed to the far ToR's host, so they follow the fabric's
	// routes like any RoCEv2 packet and the far ToR consumes them. When
	// Route is nil or has no answer, a message leaves by the port the
	// prompting frame came in on, to that frame's source MAC: right when
	// the stage sees frames before fwd rewrote them, as in unit tests.
	// tord sets it from its FIB. It must not allocate or block.
	Route func(dst netip.Addr) (port uint16, mac rocev2.MAC, ok bool)
	// Budgets, when not nil, is the per-port accounting shared by the
	// stages of every worker of one switch: PoolBytes, BufferBytes, N,
	// the pace R_r and the retransmission bucket then bound each port
	// whatever the number of workers (Budgets says how). Give every worker's
	// stages the same one. Nil, as with one worker: each stage counts
	// for itself.
	Budgets *Budgets
	// Prefixes are the remote prefixes that run NetRT: SrcToR pools only
	// flows whose destination lies in one, DstToR serves only flows whose
	// source does. Empty means every flow. A flow's membership is decided
	// once, when its entry is made.
	Prefixes []netip.Prefix
}

// MaxFrame is the longest frame RetxBurst must let through: a jumbo
// frame.
const MaxFrame = 9216

// MaxRequestFrames bounds what one retransmission request makes SrcToR
// send: it names at most 128 PSNs (ePSN and the 127 below the bitmap's
// highest set bit), each answered by at most one frame — its
// retransmission, or, for the first one the pool lacks, the
// unfulfilled notice. Beyond these, with congestion avoidance on, a
// request may add one PFC frame per host port (pause, refresh or
// resume), and release duplicates earlier requests queued for pacing,
// which those requests were charged for.
const MaxRequestFrames = 128

// Defaults.
const (
	DefaultFlows           = 16384
	DefaultBufferBytes     = 1 << 20
	DefaultBufferFrames    = 1024
	DefaultRequestInterval = 20_000
	DefaultMaxRequests     = 8
	DefaultIdleTimeout     = 1_000_000
	DefaultBackoff         = 1_000_000_000
	DefaultPoolBytes       = 256 << 10
	DefaultPoolFrames      = 4096
	DefaultHold            = 100_000
	DefaultKLow            = 20 << 10  // §IV-A: 20 KB
	DefaultKHigh           = 100 << 10 // §IV-A: 100 KB
	DefaultPausePriority   = 3
	DefaultPauseQuanta     = 0xffff
	// Retransmission rate bounds on an unshaped port, bit/s; a shaped
	// one uses 50% and 1% of its rate (§IV-A).
	DefaultRateMax = 5e9
	DefaultRateMin = 100e6
)

// Validate reports the first error in c, as NewSrcToR and NewDstToR
// would.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults validates c and fills in defaults.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def64 := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Flows, DefaultFlows)
	def(&c.BufferBytes, DefaultBufferBytes)
	def(&c.BufferFrames, DefaultBufferFrames)
	def(&c.MaxRequests, DefaultMaxRequests)
	def(&c.SilentRequests, c.MaxRequests)
	def(&c.PoolBytes, DefaultPoolBytes)
	def(&c.PoolFrames, DefaultPoolFrames)
	def64(&c.RequestInterval, DefaultRequestInterval)
	def64(&c.IdleTimeout, DefaultIdleTimeout)
	def64(&c.Backoff, DefaultBackoff)
	def64(&c.Hold, DefaultHold)
	def(&c.KLow, DefaultKLow)
	def(&c.KHigh, DefaultKHigh)
	def(&c.PausePriority, DefaultPausePriority)
	def64(&c.Window, c.Hold)
	if c.PauseQuanta == 0 {
		c.PauseQuanta = DefaultPauseQuanta
	}
	switch {
	case c.KLow < 0 || c.KHigh <= c.KLow:
		return c, fmt.Errorf("%w: thresholds KLow %d, KHigh %d bytes, want 0 ≤ KLow < KHigh", ErrConfig, c.KLow, c.KHigh)
	case c.RateMax != 0 && c.RateMin > c.RateMax:
		return c, fmt.Errorf("%w: retransmission rate min %d above max %d bit/s", ErrConfig, c.RateMin, c.RateMax)
	case c.Window < 0:
		return c, fmt.Errorf("%w: negative window", ErrConfig)
	case c.RetxBurst < 0 || c.RetxBurst != 0 && c.RetxBurst < MaxFrame:
		return c, fmt.Errorf("%w: retransmission burst %d bytes, want 0 (pool_bytes) or at least %d (a frame)", ErrConfig, c.RetxBurst, MaxFrame)
	case c.PausePriority < -1 || c.PausePriority > 7:
		return c, fmt.Errorf("%w: pause priority %d, want 1–7 or -1", ErrConfig, c.PausePriority)
	}
	switch {
	case c.Fabric == 0:
		return c, fmt.Errorf("%w: fabric: no port faces the fabric", ErrConfig)
	case c.Flows < 0 || c.Flows > 1<<24:
		return c, fmt.Errorf("%w: flows %d, want 1 to 2^24", ErrConfig, c.Flows)
	case c.BufferBytes < 0 || c.BufferFrames < 0 || c.BufferFrames > 1<<24:
		return c, fmt.Errorf("%w: buffer %d bytes, %d frames", ErrConfig, c.BufferBytes, c.BufferFrames)
	case c.PoolBytes < 0 || c.PoolFrames < 0 || c.PoolFrames > 1<<24:
		return c, fmt.Errorf("%w: pool %d bytes, %d frames", ErrConfig, c.PoolBytes, c.PoolFrames)
	case c.TailProbe < 0 || c.TailProbe >= c.Hold && c.TailProbe != 0:
		return c, fmt.Errorf("%w: tail probe %d ns, want 0 (off) or below hold (%d ns)", ErrConfig, c.TailProbe, c.Hold)
	case c.RequestDelay < 0 || c.RequestDelay > 1e9:
		return c, fmt.Errorf("%w: request delay %d ns, want 0 to 1 s", ErrConfig, c.RequestDelay)
	case c.RequestInterval < 0 || c.IdleTimeout < 0 || c.Hold < 0 || c.MaxRequests < 0:
		return c, fmt.Errorf("%w: negative interval, timeout, hold or request count", ErrConfig)
	case c.MaxRequests > 255 || c.SilentRequests < 0 || c.SilentRequests > 255 || c.Backoff < 0 || c.Backoff > 24*3600e9:
		return c, fmt.Errorf("%w: max requests %d, silent requests %d (0 to 255 each), backoff %d ns (at most 24 h)",
			ErrConfig, c.MaxRequests, c.SilentRequests, c.Backoff)
	}
	for _, p := range c.Prefixes {
		if !p.IsValid() {
			return c, fmt.Errorf("%w: prefixes: invalid prefix %v", ErrConfig, p)
		}
	}
	return c, nil
}

// remote reports whether a (a flow's far end) runs NetRT.
func (c *Config) remote(a [16]byte) bool {
	if len(c.Prefixes) == 0 {
		return true
	}
	ip := addr(a)
	for _, p := range c.Prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// fabric reports whether port i faces the fabric.
func (c *Config) fabric(i uint16) bool { return i < 64 && c.Fabric&(1<<i) != 0 }

// host reports whether port i is a routed port facing a host.
func (c *Config) host(i uint16) bool { return i != 0xffff && !c.fabric(i) }
