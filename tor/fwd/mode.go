package fwd

import (
	"fmt"
	"net/netip"
)

// Mode is how a route with several next hops spreads its packets.
type Mode uint8

// Multipath modes.
const (
	// ECMP hashes each packet's flow (source and destination IP, UDP
	// or TCP ports, and the destination QP of RoCE packets) onto one
	// next hop: a flow keeps its path and arrives in order.
	ECMP Mode = iota
	// Spray sends successive packets of the group round robin over its
	// next hops: the finest balance, with reordering that the end hosts
	// must tolerate (DCP, seed 002 §2, is built for it).
	Spray
	// Adaptive sends each packet to the next hop whose egress queue
	// holds the fewest bytes, preferring the ECMP choice unless another
	// queue is shorter by more than the group's bias (DCP's adaptive
	// routing, seed 002 §5).
	Adaptive
)

var modeNames = [...]string{"ecmp", "spray", "adaptive"}

// String returns the mode's configuration name.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode parses "ecmp", "spray" or "adaptive".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: multipath mode %q: want ecmp, spray or adaptive", ErrConfig, s)
}

// MarshalText implements encoding.TextMarshaler, so configuration files
// spell modes by name.
func (m Mode) MarshalText() ([]byte, error) {
	if int(m) >= len(modeNames) {
		return nil, fmt.Errorf("%w: multipath mode %d", ErrConfig, int(m))
	}
	return []byte(modeNames[m]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Policy sets the multipath mode of the routes whose prefixes lie inside
// Prefix (a route group): 10.0.0.0/8 covers 10.1.0.0/16 and 10.1.2.0/24,
// not 0.0.0.0/0.
type Policy struct {
	Prefix netip.Prefix `yaml:"prefix"`
	Mode   Mode         `yaml:"mode"`
	// Bias is how many bytes shorter another next hop's queue must be
	// before adaptive mode leaves the ECMP choice; 0 always takes the
	// shortest queue.
	Bias int `yaml:"bias_bytes"`
}

// Multipath is the multipath configuration of a table: a default and
// per-group policies. Its zero value is ECMP everywhere.
type Multipath struct {
	Mode   Mode     `yaml:"mode"`
	Bias   int      `yaml:"bias_bytes"`
	Groups []Policy `yaml:"groups"`
}

// Validate checks the policies and names the first bad one.
func (mp *Multipath) Validate() error {
	if int(mp.Mode) >= len(modeNames) {
		return fmt.Errorf("%w: multipath mode %d", ErrConfig, int(mp.Mode))
	}
	if mp.Bias < 0 {
		return fmt.Errorf("%w: multipath bias %d bytes: want ≥ 0", ErrConfig, mp.Bias)
	}
	for i, g := range mp.Groups {
		switch {
		case !g.Prefix.IsValid():
			return fmt.Errorf("%w: multipath group %d: no prefix", ErrConfig, i)
		case int(g.Mode) >= len(modeNames):
			return fmt.Errorf("%w: multipath group %d (%s): mode %d", ErrConfig, i, g.Prefix, int(g.Mode))
		case g.Bias < 0:
			return fmt.Errorf("%w: multipath group %d (%s): bias %d bytes: want ≥ 0", ErrConfig, i, g.Prefix, g.Bias)
		}
	}
	return nil
}

// policy returns the mode and bias of the route with prefix p: those of
// the most specific group containing p, else the defaults.
func (mp *Multipath) policy(p netip.Prefix) (Mode, int) {
	mode, bias, best := mp.Mode, mp.Bias, -1
	for _, g := range mp.Groups {
		gp := g.Prefix.Masked()
		if gp.Addr().Is4() != p.Addr().Is4() || gp.Bits() > p.Bits() || !gp.Contains(p.Addr()) {
			continue
		}
		if gp.Bits() > best {
			mode, bias, best = g.Mode, g.Bias, gp.Bits()
		}
	}
	return mode, bias
}
