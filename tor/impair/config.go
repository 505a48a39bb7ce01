package impair

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/rocev2"
)

// ErrConfig wraps every configuration error; the message names the field.
var ErrConfig = errors.New("impair: invalid config")

// MaxRules bounds the rules of one Config; rules are tried one after
// another, so a long list is a slow one anyway.
const MaxRules = 1024

// DefaultHoldBytes is the hold budget when Config.HoldBytes is 0.
const DefaultHoldBytes = 1 << 20

// Config is the stage's configuration, the value under "impair:" in
// tord's YAML. The zero value impairs nothing.
type Config struct {
	// Seed seeds the random decisions; see the package doc for how each
	// worker derives its own stream from it.
	Seed uint64 `yaml:"seed"`
	// HoldBytes bounds the bytes one port of one worker holds for
	// reorder and delay, both directions together; 0 means
	// DefaultHoldBytes. Frames beyond it are destroyed, cause overflow.
	HoldBytes dataplane.Bytes `yaml:"hold_bytes"`
	// Rules are tried in order; a packet meets at most one ingress rule
	// and one egress rule, the first whose port, direction and filter
	// match.
	Rules []Rule `yaml:"rules"`
}

// Rule impairs the frames of one port in one direction that pass its
// filter. Impairments left zero are off.
type Rule struct {
	// Port is the interface name, as in tord's ports list.
	Port string `yaml:"port"`
	// Direction is "ingress" (frames that arrive on Port) or "egress"
	// (frames that leave by Port), whatever sent them.
	Direction string `yaml:"direction"`
	// Match is "all" (the default: every frame on the wire), "roce"
	// (RoCEv2 packets only), "fabric" (RoCEv2, frames carrying the
	// link shim and PFC/PAUSE: what switches and RNICs exchange, but
	// not ARP, ND, LLDP or other IP) or "data" (the data plane alone:
	// RoCEv2 requests and READ responses, link-shimmed originals and
	// retransmitted copies among them — the frames the data and
	// retransmission classes count; never a DCP header-only packet or
	// ACK, a RoCE ACK, NAK or CNP, a NetRT message, the link shim's
	// control frames or PFC: DCP's testbed loses data this way, its
	// control plane untouched, seed 002 §6.1).
	Match string `yaml:"match"`
	// Opcodes narrows a roce match to these BTH opcodes, by name
	// (RC_RDMA_WRITE_MIDDLE, as rocev2.Opcode.String spells them) or
	// number (0x07).
	Opcodes []string `yaml:"opcodes"`
	// DSCP narrows the match to IP packets with this DSCP.
	DSCP *int `yaml:"dscp"`

	// Loss is the probability of an independent (Bernoulli) drop.
	Loss float64 `yaml:"loss"`
	// Burst is Gilbert–Elliott burst loss.
	Burst *Burst `yaml:"burst"`
	// Corrupt is the probability that a frame arrives with a bad FCS,
	// which the receiving MAC drops.
	Corrupt float64 `yaml:"corrupt"`
	// Duplicate is the probability of sending a frame twice.
	Duplicate float64 `yaml:"duplicate"`
	// Reorder holds a fraction of frames back so later ones overtake.
	Reorder *Reorder `yaml:"reorder"`
	// Delay holds every matching frame.
	Delay *Delay `yaml:"delay"`
	// Trim turns the DCP data packets (tag 10) that loss or burst picks
	// into header-only packets, sent on the wire in their place,
	// instead of destroying them, as DCP's testbed switch did (seed 002
	// §6.1); other packets picked are still destroyed. It needs the
	// classifier's DCP mode (tord turns it on).
	Trim bool `yaml:"trim"`
	// Rate polices the matching frames to this many bits per second (0
	// is no limit); what exceeds it is dropped.
	Rate dataplane.Rate `yaml:"rate"`
	// RateBurst is the policer's bucket depth; 0 means one millisecond
	// at Rate and at least two 9216-byte frames.
	RateBurst dataplane.Bytes `yaml:"rate_burst"`
}

// Burst is the Gilbert–Elliott model: a good and a bad state, P the
// probability of moving good→bad and R bad→good after each packet, 1−K
// the loss probability in the good state and 1−H in the bad one. K
// defaults to 1 and H to 0 (Gilbert's model: no loss when good, all
// lost when bad), giving a mean loss rate P/(P+R) in bursts of mean
// length 1/R.
//
// Instead of P and R one may give Loss, the mean loss rate, and Length,
// the mean burst length in packets; they set K=1, H=0, R=1/Length and
// P=Loss·R/(1−Loss).
type Burst struct {
	P float64  `yaml:"p"`
	R float64  `yaml:"r"`
	K *float64 `yaml:"k"`
	H *float64 `yaml:"h"`

	Loss   float64 `yaml:"loss"`
	Length float64 `yaml:"length"`
}

// Reorder holds a frame with probability P for Delay before sending it.
type Reorder struct {
	P     float64       `yaml:"p"`
	Delay time.Duration `yaml:"delay"`
}

// Delay holds every matching frame for Mean ± Jitter, uniformly
// distributed; frames leave in the order of their deadlines, so a jitter
// larger than the frames' spacing reorders them.
type Delay struct {
	Mean   time.Duration `yaml:"mean"`
	Jitter time.Duration `yaml:"jitter"`
}

// Direction is the side of a port a rule acts on.
type Direction uint8

// Directions.
const (
	Ingress Direction = iota // frames that arrive on the port
	Egress                   // frames that leave by the port
)

func (d Direction) String() string {
	if d == Egress {
		return "egress"
	}
	return "ingress"
}

func parseDirection(s string) (Direction, bool) {
	switch s {
	case "ingress":
		return Ingress, true
	case "egress":
		return Egress, true
	}
	return 0, false
}

// gilbert returns the rule's Gilbert–Elliott parameters p, r and the loss
// probabilities in the good and bad states.
func (b *Burst) gilbert() (p, r, lossGood, lossBad float64) {
	if b.Loss != 0 || b.Length != 0 {
		r = 1 / b.Length
		return b.Loss * r / (1 - b.Loss), r, 0, 1
	}
	k, h := 1.0, 0.0
	if b.K != nil {
		k = *b.K
	}
	if b.H != nil {
		h = *b.H
	}
	return b.P, b.R, 1 - k, 1 - h
}

func bad(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

func prob(field string, p float64) error {
	if !(p >= 0 && p <= 1) { // also rejects NaN
		return bad(field, "%v: want a probability in [0, 1]", p)
	}
	return nil
}

// Validate checks the configuration and names the first bad field. ports,
// when not nil, are the switch's interface names, which rules must use.
func (c *Config) Validate(ports []string) error {
	if c.HoldBytes < 0 {
		return bad("hold_bytes", "%d: want ≥ 0", c.HoldBytes)
	}
	if len(c.Rules) > MaxRules {
		return bad("rules", "%d rules: want at most %d", len(c.Rules), MaxRules)
	}
	for i := range c.Rules {
		if err := c.Rules[i].validate(fmt.Sprintf("rules[%d]", i), ports); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rule) validate(at string, ports []string) error {
	if r.Port == "" {
		return bad(at+".port", "missing")
	}
	if ports != nil && !contains(ports, r.Port) {
		return bad(at+".port", "%q is not one of the switch's ports %v", r.Port, ports)
	}
	if _, ok := parseDirection(r.Direction); !ok {
		return bad(at+".direction", "%q: want ingress or egress", r.Direction)
	}
	switch r.Match {
	case "", "all", "roce", "fabric", "data":
	default:
		return bad(at+".match", "%q: want all, roce, fabric or data", r.Match)
	}
	if len(r.Opcodes) > 0 && r.Match != "roce" {
		return bad(at+".opcodes", "need match: roce")
	}
	for j, s := range r.Opcodes {
		if _, err := parseOpcode(s); err != nil {
			return bad(fmt.Sprintf("%s.opcodes[%d]", at, j), "%v", err)
		}
	}
	if r.DSCP != nil && (*r.DSCP < 0 || *r.DSCP > 63) {
		return bad(at+".dscp", "%d: want 0–63", *r.DSCP)
	}
	for _, f := range []struct {
		name string
		p    float64
	}{{"loss", r.Loss}, {"corrupt", r.Corrupt}, {"duplicate", r.Duplicate}} {
		if err := prob(at+"."+f.name, f.p); err != nil {
			return err
		}
	}
	if b := r.Burst; b != nil {
		if err := b.validate(at + ".burst"); err != nil {
			return err
		}
	}
	if o := r.Reorder; o != nil {
		if err := prob(at+".reorder.p", o.P); err != nil {
			return err
		}
		if o.Delay < 0 || o.P > 0 && o.Delay == 0 {
			return bad(at+".reorder.delay", "%v: want > 0", o.Delay)
		}
	}
	if d := r.Delay; d != nil {
		if d.Mean < 0 {
			return bad(at+".delay.mean", "%v: want ≥ 0", d.Mean)
		}
		if d.Jitter < 0 || d.Jitter > d.Mean {
			return bad(at+".delay.jitter", "%v: want between 0 and the mean %v", d.Jitter, d.Mean)
		}
	}
	if r.Trim && r.Loss == 0 && r.Burst == nil {
		return bad(at+".trim", "needs loss or burst: it trims the packets they pick")
	}
	if r.RateBurst < 0 || r.RateBurst > 1<<30 {
		return bad(at+".rate_burst", "%d: want 0 to 1 GiB", r.RateBurst)
	}
	if r.RateBurst > 0 && r.Rate == 0 {
		return bad(at+".rate_burst", "needs a rate")
	}
	return nil
}

func (b *Burst) validate(at string) error {
	conv := b.Loss != 0 || b.Length != 0
	if conv {
		if b.P != 0 || b.R != 0 || b.K != nil || b.H != nil {
			return bad(at, "give either p, r, k, h or loss and length, not both")
		}
		if !(b.Loss >= 0 && b.Loss < 1) {
			return bad(at+".loss", "%v: want a mean loss rate in [0, 1)", b.Loss)
		}
		if !(b.Length >= 1) {
			return bad(at+".length", "%v: want a mean burst length ≥ 1 packet", b.Length)
		}
		if p, _, _, _ := b.gilbert(); p > 1 {
			return bad(at+".loss", "%v in bursts of %v packets needs p = %.3g > 1: want loss ≤ length/(1+length)", b.Loss, b.Length, p)
		}
		return nil
	}
	if err := prob(at+".p", b.P); err != nil {
		return err
	}
	if err := prob(at+".r", b.R); err != nil {
		return err
	}
	if b.K != nil {
		if err := prob(at+".k", *b.K); err != nil {
			return err
		}
	}
	if b.H != nil {
		if err := prob(at+".h", *b.H); err != nil {
			return err
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// parseOpcode reads an opcode by number ("7", "0x07") or by the name
// rocev2.Opcode.String gives it, in any case.
func parseOpcode(s string) (rocev2.Opcode, error) {
	if n, err := strconv.ParseUint(s, 0, 8); err == nil {
		return rocev2.Opcode(n), nil
	}
	for i := 0; i <= math.MaxUint8; i++ {
		if op := rocev2.Opcode(i); op.Known() && strings.EqualFold(op.String(), s) {
			return op, nil
		}
	}
	return 0, fmt.Errorf("opcode %q: want a number or a name such as RC_RDMA_WRITE_MIDDLE", s)
}

// clone returns a deep copy, so a published configuration cannot change
// under the rule set compiled from it.
func (c Config) clone() Config {
	c.Rules = append([]Rule(nil), c.Rules...)
	for i := range c.Rules {
		r := &c.Rules[i]
		r.Opcodes = append([]string(nil), r.Opcodes...)
		r.DSCP = clonePtr(r.DSCP)
		r.Reorder = clonePtr(r.Reorder)
		r.Delay = clonePtr(r.Delay)
		if r.Burst != nil {
			b := *r.Burst
			b.K, b.H = clonePtr(b.K), clonePtr(b.H)
			r.Burst = &b
		}
	}
	return c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
