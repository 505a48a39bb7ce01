package impair

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Control publishes the rule set that every impaired Port applies. It is
// safe for concurrent use: the control plane (tord at start, the admin
// API at run time) calls Update from its own goroutine, and each Port
// loads the current set with one atomic load per call of the worker. Its zero
// value is not usable; see NewControl.
type Control struct {
	ports []string
	mu    sync.Mutex // orders Updates, so generations increase
	gen   uint64
	cfg   Config          // the configuration in force, with every rule
	off   map[string]bool // ports whose rules are switched off (SetPort)
	cur   atomic.Pointer[plan]
}

// NewControl validates c, compiles it and publishes it. ports are the
// switch's interface names, which rules must use (nil skips that check;
// a rule naming a port a worker lacks then never matches).
func NewControl(c Config, ports []string) (*Control, error) {
	x := &Control{ports: append([]string(nil), ports...)}
	if err := x.Update(c); err != nil {
		return nil, err
	}
	return x, nil
}

// Update replaces the rule set. It validates c first and changes nothing
// when c is invalid. Each Port adopts the new set at its worker's next
// call: per-rule state (Gilbert–Elliott state, policer buckets) starts
// afresh and the random stream is reseeded, so the same seed and frames
// after an Update give the same decisions; the counters keep counting.
// Frames already held keep their deadlines.
func (x *Control) Update(c Config) error {
	if err := c.Validate(x.ports); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.cfg = c.clone()
	x.publish()
	return nil
}

// SetPort switches the rules of port (ingress and egress) off or back on
// at run time, an operator's toggle that later Updates keep; false when
// port is not one of the switch's. Like Update, it restarts the per-rule
// state of every rule.
func (x *Control) SetPort(port string, on bool) bool {
	if x.ports != nil && !slices.Contains(x.ports, port) {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.off == nil {
		x.off = map[string]bool{}
	}
	if on {
		delete(x.off, port)
	} else {
		x.off[port] = true
	}
	x.publish()
	return true
}

// PortOn reports whether port's rules apply (SetPort).
func (x *Control) PortOn(port string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return !x.off[port]
}

// publish compiles the configuration without the rules of switched-off
// ports; x.mu is held.
func (x *Control) publish() {
	c := x.cfg.clone()
	c.Rules = slices.DeleteFunc(c.Rules, func(r Rule) bool { return x.off[r.Port] })
	x.gen++
	x.cur.Store(compile(c, x.gen))
}

// Config returns a copy of the configuration in force, with the rules
// of switched-off ports.
func (x *Control) Config() Config {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.cfg.clone()
}

func (x *Control) load() *plan { return x.cur.Load() }

// plan is a compiled, immutable rule set shared by all workers. Mutable
// per-rule state lives in each Port, indexed like rules.
type plan struct {
	cfg       Config
	gen       uint64
	holdBytes int
	rules     []rule
}

// rule is a compiled Rule: probabilities as thresholds on 53 random bits
// (see chance), durations in nanoseconds.
type rule struct {
	port   string
	dir    Direction
	roce   bool
	fabric bool
	data   bool       // the data plane only (classOf: data or retransmission)
	ops    *[4]uint64 // opcode bitmap; nil matches every opcode
	dscp   int16      // -1 matches any

	loss, corrupt, dup uint64
	trim               bool // DCP data picked by loss or burst is trimmed, not dropped

	ge                        bool
	geP, geR, geLoss, geLossB uint64 // transitions, loss when good, loss when bad

	reorder      uint64
	reorderDelay int64
	delay        int64 // mean − jitter: the least hold
	jitter       int64 // width of the uniform spread: 2 × jitter
	holds        bool  // delay configured

	rate   uint64 // bits per second, 0 unpoliced
	bucket int64  // policer depth in bytes
	fill   uint64 // ns an empty bucket takes to fill
}

func compile(c Config, gen uint64) *plan {
	p := &plan{cfg: c, gen: gen, holdBytes: int(c.HoldBytes), rules: make([]rule, len(c.Rules))}
	if p.holdBytes == 0 {
		p.holdBytes = DefaultHoldBytes
	}
	for i := range c.Rules {
		p.rules[i] = compileRule(&c.Rules[i])
	}
	return p
}

func compileRule(r *Rule) rule {
	d, _ := parseDirection(r.Direction)
	k := rule{port: r.Port, dir: d, roce: r.Match == "roce", fabric: r.Match == "fabric", data: r.Match == "data", dscp: -1,
		loss: threshold(r.Loss), corrupt: threshold(r.Corrupt), dup: threshold(r.Duplicate), trim: r.Trim}
	if len(r.Opcodes) > 0 {
		k.ops = new([4]uint64)
		for _, s := range r.Opcodes {
			op, _ := parseOpcode(s) // validated
			k.ops[op>>6] |= 1 << (op & 63)
		}
	}
	if r.DSCP != nil {
		k.dscp = int16(*r.DSCP)
	}
	if b := r.Burst; b != nil {
		p, q, lg, lb := b.gilbert()
		k.ge = true
		k.geP, k.geR, k.geLoss, k.geLossB = threshold(p), threshold(q), threshold(lg), threshold(lb)
	}
	if o := r.Reorder; o != nil && o.P > 0 {
		k.reorder, k.reorderDelay = threshold(o.P), int64(o.Delay)
	}
	if dl := r.Delay; dl != nil && dl.Mean > 0 {
		k.holds, k.delay, k.jitter = true, int64(dl.Mean-dl.Jitter), int64(2*dl.Jitter)
	}
	if r.Rate > 0 {
		k.rate = uint64(r.Rate)
		k.bucket = int64(r.RateBurst)
		if k.bucket == 0 {
			// A millisecond at the rate absorbs the worker's batching
			// (64 frames handed over at one instant); two jumbo frames
			// keep slow policers from refusing every large frame. The
			// cap (Validate's for rate_burst) keeps bucket·8e9 in 64 bits.
			k.bucket = int64(min(max(k.rate/8/1000, 2*9216), 1<<30))
		}
		k.fill = uint64(k.bucket) * 8e9 / k.rate
	}
	return k
}
