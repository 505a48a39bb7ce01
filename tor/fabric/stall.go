package fabric

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"rocetor/dataplane/sim"
)

// StallSyntax describes ParseStalls' input, for flags' help.
const StallSyntax = "PATTERN:DUR/PERIOD[:exp|fixed][;...], e.g. tor2:1ms/50ms (tor2 off its CPU 1 ms every 50 ms on average)"

// ErrStall is wrapped by every error ParseStalls returns.
var ErrStall = errors.New("stall spec")

// Stall takes the switches and hosts whose topology names match
// Pattern (path.Match: "tor2", "tor*", "h1", "*") off their CPU for Off
// once every Every on average, as the testbed's tord and roceperf are
// when other processes share their two CPUs. While a node is off, its
// worker does not step: frames wait in its receive rings (and overflow
// them, counted), its timers and held frames wait, its wires finish
// what they were sending; when it is back it takes a batch from each
// port at one time (sim.Node.Stall).
//
// Exp (the default) draws each pause's length from an exponential
// distribution of mean Off and the time between the end of one pause
// and the start of the next from one of mean Every−Off, so that the
// node is off Off/Every of the time, in pauses that arrive as a
// Poisson process; fixed pauses last exactly Off, once in each period
// of Every, at a phase each node draws once. Every node draws from a
// stream of its own, seeded from the run's seed and its name, so a
// run with stalls is as repeatable as one without.
type Stall struct {
	Pattern    string
	Off, Every sim.Time
	Fixed      bool
}

// Stalls is a list of Stall, the first whose pattern matches a node
// applying to it. Its String is ParseStalls' syntax, so that it is a
// flag.Value.
type Stalls []Stall

// ParseStalls reads a stall spec: entries separated by ";", each
// PATTERN:DUR/PERIOD with an optional ":exp" (exponential pauses, the
// default) or ":fixed", DUR and PERIOD as Go durations ("500us",
// "1ms"), DUR below PERIOD. The empty string is no stall.
func ParseStalls(s string) (Stalls, error) {
	var out Stalls
	for _, e := range strings.Split(s, ";") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		st, err := parseStall(e)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %v (want %s)", ErrStall, e, err, StallSyntax)
		}
		out = append(out, st)
	}
	return out, nil
}

func parseStall(e string) (Stall, error) {
	var st Stall
	pat, rest, ok := strings.Cut(e, ":")
	if !ok || pat == "" {
		return st, errors.New("no PATTERN:")
	}
	if _, err := path.Match(pat, ""); err != nil {
		return st, err
	}
	st.Pattern = pat
	rest, dist, _ := strings.Cut(rest, ":")
	switch dist {
	case "", "exp":
	case "fixed":
		st.Fixed = true
	default:
		return st, fmt.Errorf("distribution %q: want exp or fixed", dist)
	}
	ds, ps, ok := strings.Cut(rest, "/")
	if !ok {
		return st, errors.New("no DUR/PERIOD")
	}
	d, err := time.ParseDuration(ds)
	if err != nil {
		return st, err
	}
	p, err := time.ParseDuration(ps)
	if err != nil {
		return st, err
	}
	if d <= 0 || p <= d {
		return st, fmt.Errorf("want 0 < %v < %v", d, p)
	}
	st.Off, st.Every = sim.Time(d)*sim.Nanosecond, sim.Time(p)*sim.Nanosecond
	return st, nil
}

// String implements flag.Value.
func (s *Stalls) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for i, st := range *s {
		if i > 0 {
			b.WriteByte(';')
		}
		dist := "exp"
		if st.Fixed {
			dist = "fixed"
		}
		fmt.Fprintf(&b, "%s:%v/%v:%s", st.Pattern, time.Duration(st.Off/sim.Nanosecond), time.Duration(st.Every/sim.Nanosecond), dist)
	}
	return b.String()
}

// Set implements flag.Value: the spec replaces what was there.
func (s *Stalls) Set(v string) error {
	st, err := ParseStalls(v)
	if err != nil {
		return err
	}
	*s = st
	return nil
}

// Staller is one node's pauses: what sim.Node.Stall asks of it, and
// what it counts. It is owned by the node's simulation (not safe for
// concurrent use).
type Staller struct {
	Name string
	st   Stall
	rng  *rand.Rand
	// The current or next pause: [start, end).
	start, end sim.Time
	// Pauses counts the pauses that ended by the node's last step
	// (those it had no step to defer in too); OffTime adds up their
	// lengths.
	Pauses  uint64
	OffTime sim.Time
	// Log, if set, sees every pause as it is drawn (tests, probes).
	Log func(start, end sim.Time)
}

func newStaller(name string, st Stall, seed uint64) *Staller {
	h := uint64(0)
	for _, c := range []byte(name) {
		h = h*131 + uint64(c)
	}
	s := &Staller{Name: name, st: st, rng: rand.New(rand.NewPCG(seed, sim.Seed(seed, 9, h)))}
	if st.Fixed {
		s.start = sim.Time(s.rng.Int64N(st.Every))
		s.end = s.start + st.Off
	} else {
		s.start = s.draw(st.Every - st.Off)
		s.end = s.start + max(s.draw(st.Off), 1)
	}
	return s
}

// draw is an exponential time of the given mean.
func (s *Staller) draw(mean sim.Time) sim.Time {
	return sim.Time(s.rng.ExpFloat64() * float64(mean))
}

// Until implements sim.Node.Stall: the end of the pause now falls in,
// or now.
func (s *Staller) Until(now sim.Time) sim.Time {
	for s.end <= now {
		s.next()
	}
	if now >= s.start {
		return s.end
	}
	return now
}

// next counts the pause that ended and draws the one after it.
func (s *Staller) next() {
	s.Pauses++
	s.OffTime += s.end - s.start
	if s.Log != nil {
		s.Log(s.start, s.end)
	}
	if s.st.Fixed {
		s.start += s.st.Every
		s.end = s.start + s.st.Off
		return
	}
	s.start = s.end + s.draw(s.st.Every-s.st.Off)
	s.end = s.start + max(s.draw(s.st.Off), 1)
}

// Apply sets the Stall of every switch and host whose name one of s's
// patterns matches (the first that does) and returns their Stallers,
// switches first. The run's seed seeds them (Options.Seed). A pattern
// that matches no node is an error: a misspelt name would otherwise
// leave the run unstalled, silently.
func (s Stalls) Apply(n *Network) ([]*Staller, error) {
	var out []*Staller
	used := make([]bool, len(s))
	attach := func(name string, node *sim.Node) {
		for i, st := range s {
			if ok, _ := path.Match(st.Pattern, name); ok {
				used[i] = true
				sr := newStaller(name, st, n.Opts.Seed)
				prev := node.Stall
				node.Stall = sr.Until
				if prev != nil {
					// A host's QP-context cache (Options.QPCache) holds
					// it too: off its CPU until both are done.
					node.Stall = func(now sim.Time) sim.Time { return max(prev(now), sr.Until(now)) }
				}
				out = append(out, sr)
				return
			}
		}
	}
	for _, sw := range n.Switches {
		attach(sw.Name, sw.Node)
	}
	for _, h := range n.Hosts {
		attach(h.Name, h.Node)
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("%w: %q matches no switch or host", ErrStall, s[i].Pattern)
		}
	}
	return out, nil
}
