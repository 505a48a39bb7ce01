package fabric

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"rocetor/dataplane/sim"
	"rocetor/tor/impair"
	"rocetor/tor/topo"
)

// LinkLoss gives links a loss or corruption rate (torsim --link-loss):
// named links, and draws from which every link of a kind takes its rate.
// Its text form, one rule a line, # starting a comment:
//
//	NODE_A NODE_B RATE [corrupt]
//	draw fabric|hosts|all FRACTION WEIGHT:LO:HI ... [corrupt]
//
// The first names the link(s) between two nodes by topology name
// ("tor1 agg1-0", "h3 tor2"): frames crossing it in either direction
// are lost with probability RATE, or corrupted with it (the receiver
// drops them on their checksum, or llr recovers them). The second makes
// each link of the kind (fabric: switch to switch; hosts: host to
// switch) impaired with probability FRACTION, its rate drawn from the
// buckets: bucket i with probability WEIGHT_i / ΣWEIGHT, its rate
// log-uniform in [LO, HI). Protego's measured distribution of corrupting
// links (seed 003, Table 1, from Microsoft's datacenters; the open last
// bucket [1e-3, +) capped here at 1e-2):
//
//	draw fabric 0.1 47.23:1e-8:1e-5 18.43:1e-5:1e-4 21.66:1e-4:1e-3 12.67:1e-3:1e-2 corrupt
//
// Links draw in topology order from a stream of the network's seed;
// named links override what they drew.
type LinkLoss struct {
	Links []LinkRate
	Draws []LinkDraw
}

// LinkRate is one named link's rate.
type LinkRate struct {
	A, B    string
	Rate    float64
	Corrupt bool
}

// LinkDraw is a distribution links of a kind draw their rate from.
type LinkDraw struct {
	Kind     string // fabric, hosts or all
	Fraction float64
	Buckets  []LossBucket
	Corrupt  bool
}

// LossBucket is a range of rates, drawn log-uniformly, and its weight.
type LossBucket struct{ Weight, Lo, Hi float64 }

// ParseLinkLoss reads LinkLoss's text form.
func ParseLinkLoss(r io.Reader) (*LinkLoss, error) {
	ll := &LinkLoss{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		t, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(t)
		if len(f) == 0 {
			continue
		}
		corrupt := f[len(f)-1] == "corrupt"
		if corrupt {
			f = f[:len(f)-1]
		}
		var err error
		if f[0] == "draw" {
			var d LinkDraw
			d, err = parseDraw(f[1:])
			d.Corrupt = corrupt
			ll.Draws = append(ll.Draws, d)
		} else {
			lr := LinkRate{Corrupt: corrupt}
			if len(f) != 3 {
				err = fmt.Errorf("want NODE_A NODE_B RATE [corrupt] or draw …")
			} else {
				lr.A, lr.B = f[0], f[1]
				lr.Rate, err = parseRate(f[2])
			}
			ll.Links = append(ll.Links, lr)
		}
		if err != nil {
			return nil, fmt.Errorf("link loss line %d: %w", line, err)
		}
	}
	return ll, sc.Err()
}

func parseRate(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return 0, fmt.Errorf("rate %q: want a probability in [0, 1]", s)
	}
	return v, nil
}

func parseDraw(f []string) (LinkDraw, error) {
	var d LinkDraw
	if len(f) < 3 {
		return d, fmt.Errorf("want draw fabric|hosts|all FRACTION WEIGHT:LO:HI … [corrupt]")
	}
	if d.Kind = f[0]; d.Kind != "fabric" && d.Kind != "hosts" && d.Kind != "all" {
		return d, fmt.Errorf("draw %q: want fabric, hosts or all", d.Kind)
	}
	var err error
	if d.Fraction, err = parseRate(f[1]); err != nil {
		return d, err
	}
	for _, b := range f[2:] {
		p := strings.Split(b, ":")
		var v [3]float64
		ok := len(p) == 3
		for i := 0; ok && i < 3; i++ {
			v[i], err = strconv.ParseFloat(p[i], 64)
			ok = err == nil
		}
		if !ok || v[0] < 0 || v[1] <= 0 || v[2] < v[1] || v[2] > 1 {
			return d, fmt.Errorf("bucket %q: want WEIGHT:LO:HI, 0 < LO ≤ HI ≤ 1", b)
		}
		d.Buckets = append(d.Buckets, LossBucket{v[0], v[1], v[2]})
	}
	return d, nil
}

// linkImp is one link's impairment: a rate, lost or corrupted.
type linkImp struct {
	rate    float64
	corrupt bool
}

// rates assigns every link of t its impairment: draws in link order
// from a stream of seed, then the named links.
func (ll *LinkLoss) rates(t topo.Topology, seed uint64) ([]linkImp, error) {
	out := make([]linkImp, len(t.Links))
	if ll == nil {
		return out, nil
	}
	r := rand.New(rand.NewPCG(seed, sim.Seed(seed, 7)))
	for li, l := range t.Links {
		host := t.Nodes[l.A].Role == topo.Host || t.Nodes[l.B].Role == topo.Host
		for _, d := range ll.Draws {
			if d.Kind == "fabric" && host || d.Kind == "hosts" && !host {
				continue
			}
			if r.Float64() < d.Fraction {
				out[li] = linkImp{rate: d.draw(r), corrupt: d.Corrupt}
			}
		}
	}
	byName := map[string]int{}
	for i, nd := range t.Nodes {
		byName[nd.Name] = i
	}
	for _, lr := range ll.Links {
		a, okA := byName[lr.A]
		b, okB := byName[lr.B]
		found := false
		for li, l := range t.Links {
			if okA && okB && (l.A == a && l.B == b || l.A == b && l.B == a) {
				out[li], found = linkImp{rate: lr.Rate, corrupt: lr.Corrupt}, true
			}
		}
		if !found {
			return nil, fmt.Errorf("fabric: link loss: no link between %s and %s", lr.A, lr.B)
		}
	}
	return out, nil
}

// draw draws a rate from the buckets.
func (d LinkDraw) draw(r *rand.Rand) float64 {
	total := 0.0
	for _, b := range d.Buckets {
		total += b.Weight
	}
	u := r.Float64() * total
	b := d.Buckets[len(d.Buckets)-1]
	for _, c := range d.Buckets {
		if u < c.Weight {
			b = c
			break
		}
		u -= c.Weight
	}
	return math.Exp(math.Log(b.Lo) + r.Float64()*(math.Log(b.Hi)-math.Log(b.Lo)))
}

// lossRules are the impair rules that put the links' rates on a
// switch's ports: egress on each impaired link, and ingress too where
// the peer is a host (whose end has no impairment stage), so that both
// directions of a host link are impaired at the switch's end.
func (n *Network) lossRules(ends []end) []impair.Rule {
	var out []impair.Rule
	for _, e := range ends {
		li := n.loss[e.link]
		if li.rate == 0 {
			continue
		}
		dirs := []string{"egress"}
		if n.Topo.Nodes[e.peer].Role == topo.Host {
			dirs = append(dirs, "ingress")
		}
		for _, d := range dirs {
			r := impair.Rule{Port: n.portName(ends, e.port), Direction: d}
			if li.corrupt {
				r.Corrupt = li.rate
			} else {
				r.Loss = li.rate
			}
			out = append(out, r)
		}
	}
	return out
}
