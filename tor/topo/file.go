package topo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
)

// ErrFile is what every error of a topology file wraps, with the file
// and line ("leaf.topo:7: …").
var ErrFile = errors.New("topology file")

// A topology file is text, one statement a line; "#" starts a comment,
// blank lines are skipped:
//
//	# two racks under one spine
//	node h1 host
//	node h2 host
//	node leaf1 switch
//	node leaf2 switch
//	node spine switch tier=2
//	link h1 leaf1 100G 1us
//	link h2 leaf2 100G 1us
//	link leaf1 spine 400G 500ns
//	link leaf2 spine          # rate and delay of its tier: --fabric-rate, --fabric-delay
//
// "node NAME host|switch [tier=N]" declares a node before any link
// names it; names are unique and become port names, so they are short
// words (letters, digits, "-", "_", "."). "link A B [RATE [DELAY]]" is
// one full-duplex link: RATE as tord's YAML spells rates (100G, 25G,
// 400Gbps), DELAY as Go durations (1us, 500ns, 0.001ms); an omitted
// one is the link's tier's (Tiers: host links, fabric links, links to
// tier 3 and up). A host has exactly one link, to a switch; a switch
// has two or more. A switch's
// tier, unless given, is its distance in links from the nearest host:
// 1 for the switches hosts hang off (ToRs), 2 above them, and so on;
// every switch must reach a host. Hosts are numbered for workloads in
// the file's order; parts are derived from tiers (Server, ToR, then
// Spine as the top of two switch tiers, Agg and Core with three or
// more).
//
// The ns-3 RDMA simulator's topology.txt (alibaba-edu
// High-Precision-Congestion-Control, simulation/mix, read by its
// third.cc) is read too: a first line "NODES SWITCHES LINKS", a second
// with the switches' node ids, then LINKS lines "SRC DST RATE DELAY
// ERROR_RATE" ("0 4 100Gbps 0.001ms 0"). Nodes are named h<id> and
// s<id>; the hosts keep ns-3's id order, so host i of a workload is
// ns-3's i-th host. A non-zero error rate is refused: loss is set per
// link by the simulator's own impairment, not by the topology.
//
// ReadFile tells the two apart by content: a first statement of three
// integers is ns-3's.

// ReadFile reads the topology file at path (either format), ti giving
// the rate and delay of links that do not say.
func ReadFile(path string, ti Tiers) (Topology, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Topology{}, fmt.Errorf("%w: %w", ErrFile, err)
	}
	name := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if isNS3(string(b)) {
		return ParseNS3(strings.NewReader(string(b)), path, name)
	}
	return ParseFile(strings.NewReader(string(b)), path, name, ti)
}

// ReadNS3 reads the ns-3 topology.txt at path.
func ReadNS3(path string) (Topology, error) {
	f, err := os.Open(path)
	if err != nil {
		return Topology{}, fmt.Errorf("%w: %w", ErrFile, err)
	}
	defer f.Close()
	return ParseNS3(f, path, strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
}

// isNS3 reports whether the first statement of text is three integers.
func isNS3(text string) bool {
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(stripComment(l))
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return false
		}
		for _, x := range f {
			if _, err := strconv.Atoi(x); err != nil {
				return false
			}
		}
		return true
	}
	return false
}

func stripComment(l string) string {
	if i := strings.IndexByte(l, '#'); i >= 0 {
		return l[:i]
	}
	return l
}

// fileErr is an error at line n of file.
func fileErr(file string, n int, format string, a ...any) error {
	return fmt.Errorf("%w %s:%d: %s", ErrFile, file, n, fmt.Sprintf(format, a...))
}

// ParseFile reads rocetor's topology format (see ReadFile) from r; file
// names it in errors, name is the topology's name.
func ParseFile(r io.Reader, file, name string, ti Tiers) (Topology, error) {
	t := Topology{Name: name}
	tier := map[int]int{} // explicit tiers
	index := map[string]int{}
	type pending struct {
		line              int
		rateSet, delaySet bool
	}
	var lp []pending
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(stripComment(sc.Text()))
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "node":
			if len(f) < 3 || len(f) > 4 {
				return t, fileErr(file, n, "want \"node NAME host|switch [tier=N]\", got %d words", len(f))
			}
			if !goodName(f[1]) {
				return t, fileErr(file, n, "node name %q: want letters, digits, '-', '_' or '.', at most 15", f[1])
			}
			if _, dup := index[f[1]]; dup {
				return t, fileErr(file, n, "node %s declared twice", f[1])
			}
			var role Role
			switch f[2] {
			case "host":
				role = Host
			case "switch":
				role = Switch
			default:
				return t, fileErr(file, n, "node %s: role %q, want host or switch", f[1], f[2])
			}
			index[f[1]] = len(t.Nodes)
			if len(f) == 4 {
				v, ok := strings.CutPrefix(f[3], "tier=")
				k, err := strconv.Atoi(v)
				if !ok || err != nil || k < 1 || role == Host {
					return t, fileErr(file, n, "node %s: %q, want tier=N (N ≥ 1) on a switch", f[1], f[3])
				}
				tier[len(t.Nodes)] = k
			}
			t.Nodes = append(t.Nodes, NodeSpec{Name: f[1], Role: role})
		case "link":
			if len(f) < 3 || len(f) > 5 {
				return t, fileErr(file, n, "want \"link A B [RATE [DELAY]]\", got %d words", len(f))
			}
			var l LinkSpec
			var ok bool
			for i, e := range []*int{&l.A, &l.B} {
				if *e, ok = index[f[1+i]]; !ok {
					return t, fileErr(file, n, "link to %s, which no node line declares before", f[1+i])
				}
			}
			if l.A == l.B {
				return t, fileErr(file, n, "link from %s to itself", f[1])
			}
			p := pending{line: n}
			var err error
			if len(f) > 3 {
				if l.RateBps, err = parseRate(f[3]); err != nil {
					return t, fileErr(file, n, "%v", err)
				}
				p.rateSet = true
			}
			if len(f) > 4 {
				if l.Delay, err = parseDelay(f[4]); err != nil {
					return t, fileErr(file, n, "%v", err)
				}
				p.delaySet = true
			}
			t.Links = append(t.Links, l)
			lp = append(lp, p)
		default:
			return t, fileErr(file, n, "%q: want node or link", f[0])
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("%w %s: %w", ErrFile, file, err)
	}
	line := func(l int) int { return lp[l].line }
	if err := t.derive(tier, file, line); err != nil {
		return t, err
	}
	// Links that give no rate or delay take their tier's.
	d := t.WithTiers(ti)
	for i, p := range lp {
		if !p.rateSet {
			t.Links[i].RateBps = d.Links[i].RateBps
		}
		if !p.delaySet {
			t.Links[i].Delay = d.Links[i].Delay
		}
		if t.Links[i].RateBps == 0 {
			return t, fileErr(file, p.line, "link %s–%s: no rate, and its tier has none", t.Nodes[t.Links[i].A].Name, t.Nodes[t.Links[i].B].Name)
		}
	}
	return t, nil
}

// ParseNS3 reads the ns-3 RDMA simulator's topology.txt (see ReadFile).
func ParseNS3(r io.Reader, file, name string) (Topology, error) {
	t := Topology{Name: name}
	sc := bufio.NewScanner(r)
	n := 0
	next := func() ([]string, bool) {
		for sc.Scan() {
			n++
			if f := strings.Fields(stripComment(sc.Text())); len(f) > 0 {
				return f, true
			}
		}
		return nil, false
	}
	ints := func(f []string, what string) ([]int, error) {
		var out []int
		for _, x := range f {
			v, err := strconv.Atoi(x)
			if err != nil || v < 0 {
				return nil, fileErr(file, n, "%s: %q is not a non-negative integer", what, x)
			}
			out = append(out, v)
		}
		return out, nil
	}
	f, _ := next()
	head, err := ints(f, "header \"NODES SWITCHES LINKS\"")
	if err != nil {
		return t, err
	}
	if len(head) != 3 {
		return t, fileErr(file, n, "header: want \"NODES SWITCHES LINKS\", got %d words", len(f))
	}
	nodes, switches, links := head[0], head[1], head[2]
	if switches > nodes {
		return t, fileErr(file, n, "%d switches of %d nodes", switches, nodes)
	}
	isSwitch := make([]bool, nodes)
	if switches > 0 {
		f, ok := next()
		if !ok {
			return t, fileErr(file, n, "end of file, want the %d switch ids", switches)
		}
		ids, err := ints(f, "switch ids")
		if err != nil {
			return t, err
		}
		if len(ids) != switches {
			return t, fileErr(file, n, "%d switch ids, the header says %d", len(ids), switches)
		}
		for _, id := range ids {
			if id >= nodes || isSwitch[id] {
				return t, fileErr(file, n, "switch id %d: out of 0…%d or repeated", id, nodes-1)
			}
			isSwitch[id] = true
		}
	}
	for i := 0; i < nodes; i++ {
		if isSwitch[i] {
			t.Nodes = append(t.Nodes, NodeSpec{Name: fmt.Sprintf("s%d", i), Role: Switch})
		} else {
			t.Nodes = append(t.Nodes, NodeSpec{Name: fmt.Sprintf("h%d", i), Role: Host})
		}
	}
	var lines []int
	for i := 0; i < links; i++ {
		f, ok := next()
		if !ok {
			return t, fileErr(file, n, "end of file after %d links, the header says %d", i, links)
		}
		if len(f) != 5 {
			return t, fileErr(file, n, "want \"SRC DST RATE DELAY ERROR_RATE\", got %d words", len(f))
		}
		ends, err := ints(f[:2], "link ends")
		if err != nil {
			return t, err
		}
		var l LinkSpec
		l.A, l.B = ends[0], ends[1]
		if l.A >= nodes || l.B >= nodes || l.A == l.B {
			return t, fileErr(file, n, "link %d–%d: want two different nodes of 0…%d", l.A, l.B, nodes-1)
		}
		if l.RateBps, err = parseRate(f[2]); err != nil {
			return t, fileErr(file, n, "%v", err)
		}
		if l.Delay, err = parseDelay(f[3]); err != nil {
			return t, fileErr(file, n, "%v", err)
		}
		if e, err := strconv.ParseFloat(f[4], 64); err != nil || e != 0 {
			return t, fileErr(file, n, "error rate %q: only 0 is read (give a link's loss as the simulator's impairment instead)", f[4])
		}
		t.Links = append(t.Links, l)
		lines = append(lines, n)
	}
	if f, ok := next(); ok {
		return t, fileErr(file, n, "%q after the %d links the header announces", strings.Join(f, " "), links)
	}
	return t, t.derive(nil, file, func(l int) int { return lines[l] })
}

// goodName: a node name is a port name of its neighbours, so an
// interface name would do (IFNAMSIZ − 1).
func goodName(s string) bool {
	if s == "" || len(s) > 15 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// parseRate reads a link rate: tord's spelling (100G, 400Gbps) or
// ns-3's (100Gbps, 10Gb/s).
func parseRate(s string) (uint64, error) {
	var r dataplane.Rate
	if err := r.UnmarshalText([]byte(strings.TrimSuffix(s, "b/s"))); err != nil {
		return 0, err
	}
	if r == 0 {
		return 0, fmt.Errorf("rate %q: want more than 0", s)
	}
	return uint64(r), nil
}

// parseDelay reads a propagation delay: a Go duration (1us, 500ns,
// 0.001ms, as ns-3 spells them too).
func parseDelay(s string) (sim.Time, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("delay %q: want a duration with a unit, such as 1us, 500ns or 0.001ms", s)
	}
	return sim.Time(d) * sim.Nanosecond, nil
}

// derive checks the shape a file gave (a host has one link, to a
// switch; every switch reaches a host) and sets every node's tier and
// part: hosts 0, a switch its explicit tier or its distance from the
// nearest host. line gives the file line of link l for errors.
func (t *Topology) derive(explicit map[int]int, file string, line func(l int) int) error {
	if len(t.Hosts()) == 0 {
		return fmt.Errorf("%w %s: no hosts", ErrFile, file)
	}
	adj := make([][]int, len(t.Nodes))
	first := make([]int, len(t.Nodes)) // a link of each node, for errors
	for li, l := range t.Links {
		a, b := t.Nodes[l.A], t.Nodes[l.B]
		if a.Role == Host && b.Role == Host {
			return fileErr(file, line(li), "link %s–%s joins two hosts; a host links to a switch", a.Name, b.Name)
		}
		for _, x := range []int{l.A, l.B} {
			if t.Nodes[x].Role == Host && len(adj[x]) > 0 {
				return fileErr(file, line(li), "host %s has a second link (to %s); a host has exactly one", t.Nodes[x].Name, t.Nodes[l.A+l.B-x].Name)
			}
		}
		if len(adj[l.A]) == 0 {
			first[l.A] = li
		}
		if len(adj[l.B]) == 0 {
			first[l.B] = li
		}
		adj[l.A] = append(adj[l.A], l.B)
		adj[l.B] = append(adj[l.B], l.A)
	}
	dist := make([]int, len(t.Nodes))
	var queue []int
	for i, nd := range t.Nodes {
		dist[i] = -1
		if nd.Role == Host {
			if len(adj[i]) == 0 {
				return fmt.Errorf("%w %s: host %s has no link", ErrFile, file, nd.Name)
			}
			dist[i] = 0
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, y := range adj[x] {
			if dist[y] < 0 {
				dist[y] = dist[x] + 1
				queue = append(queue, y)
			}
		}
	}
	top := 0
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if dist[i] < 0 {
			if len(adj[i]) == 0 {
				return fmt.Errorf("%w %s: switch %s has no link", ErrFile, file, nd.Name)
			}
			return fileErr(file, line(first[i]), "switch %s reaches no host", nd.Name)
		}
		if nd.Role == Switch && len(adj[i]) < 2 {
			return fileErr(file, line(first[i]), "switch %s has one link; a switch has two or more", nd.Name)
		}
		nd.Tier = dist[i]
		if k, ok := explicit[i]; ok {
			nd.Tier = k
		}
		top = max(top, nd.Tier)
	}
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		switch {
		case nd.Role == Host:
			nd.Part = Server
		case nd.Tier == 1:
			nd.Part = ToR
		case top == 2:
			nd.Part = Spine
		case nd.Tier >= top:
			nd.Part = Core
		default:
			nd.Part = Agg
		}
	}
	return nil
}
