package workload

import (
	"bufio"
	"embed"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Flow is one message from host Src to host Dst (indices among the
// fabric's hosts) of Size bytes, posted at Start (nanoseconds) or, if
// After ≥ 0, when flow After completes.
type Flow struct {
	Src, Dst int
	Size     int
	Start    int64
	After    int
}

//go:embed cdf/*.txt
var cdfs embed.FS

// CDF is a flow size distribution: sizes in bytes against cumulative
// probability, sampled by linear interpolation between points (as
// HPCC's traffic_gen.py does).
type CDF struct {
	Name string
	size []float64
	p    []float64 // 0 … 1, non-decreasing, last 1
}

// LoadCDF reads a distribution: "websearch", "datamining", "hadoop" (the
// committed files) or a path to a file of "size percent" lines.
func LoadCDF(name string) (*CDF, error) {
	b, err := cdfs.ReadFile("cdf/" + name + ".txt")
	if err != nil {
		if b, err = os.ReadFile(name); err != nil {
			return nil, fmt.Errorf("workload: cdf %q: not websearch, datamining, hadoop or a readable file", name)
		}
	}
	c := &CDF{Name: name}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("workload: cdf %s line %d: want size and percent", name, i+1)
		}
		s, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		if err1 != nil || err2 != nil || s < 0 || p < 0 || p > 100 ||
			(len(c.p) > 0 && (p/100 < c.p[len(c.p)-1] || s < c.size[len(c.size)-1])) {
			return nil, fmt.Errorf("workload: cdf %s line %d: %q is not a non-decreasing size and percent", name, i+1, line)
		}
		c.size, c.p = append(c.size, s), append(c.p, p/100)
	}
	if len(c.p) < 2 || c.p[len(c.p)-1] != 1 {
		return nil, fmt.Errorf("workload: cdf %s: want at least two points, the last at 100%%", name)
	}
	return c, nil
}

// Sample returns the size at cumulative probability u in [0, 1), at
// least 1 byte.
func (c *CDF) Sample(u float64) int {
	i, _ := slices.BinarySearch(c.p, u)
	i = max(1, min(i, len(c.p)-1))
	for i < len(c.p)-1 && c.p[i] == c.p[i-1] {
		i++
	}
	s0, s1, p0, p1 := c.size[i-1], c.size[i], c.p[i-1], c.p[i]
	s := s1
	if p1 > p0 {
		s = s0 + (u-p0)/(p1-p0)*(s1-s0)
	}
	return max(1, int(math.Round(s)))
}

// Mean returns the mean flow size of the distribution with sizes capped
// at maxSize bytes (none when 0): Sample's sizes are uniform within each
// segment, so a segment the cap cuts contributes its part below the cap
// at its mean and the rest at the cap.
func (c *CDF) Mean(maxSize int) float64 {
	m, top := 0.0, math.Inf(1)
	if maxSize > 0 {
		top = float64(maxSize)
	}
	for i := 1; i < len(c.p); i++ {
		s0, s1, dp := c.size[i-1], c.size[i], c.p[i]-c.p[i-1]
		switch {
		case s1 <= top:
			m += dp * (s0 + s1) / 2
		case s0 >= top:
			m += dp * top
		default:
			f := (top - s0) / (s1 - s0)
			m += dp * (f*(s0+top)/2 + (1-f)*top)
		}
	}
	return m
}

// Poisson draws flows for duration nanoseconds: each of the hosts
// starts flows with exponential gaps so that its mean offered load is
// load × rateBps, sizes from c (capped at maxSize when not 0), each to a
// host drawn uniformly among the others. The gaps follow the mean of the
// capped sizes: until 2026-11-30 they followed the uncapped one, and
// WebSearch capped at 3 MB offered 47.9 % of the load asked. Flows come
// sorted by start time, ties by source.
func Poisson(hosts int, c *CDF, load float64, rateBps uint64, duration int64, maxSize int, r *rand.Rand) []Flow {
	if hosts < 2 || load <= 0 {
		return nil
	}
	mean := c.Mean(maxSize)
	gap := mean * 8 / (load * float64(rateBps)) * 1e9 // ns between a host's flows
	var out []Flow
	for h := 0; h < hosts; h++ {
		t := 0.0
		for {
			t += r.ExpFloat64() * gap
			if t >= float64(duration) {
				break
			}
			d := r.IntN(hosts - 1)
			if d >= h {
				d++
			}
			s := c.Sample(r.Float64())
			if maxSize > 0 {
				s = min(s, maxSize)
			}
			out = append(out, Flow{Src: h, Dst: d, Size: s, Start: int64(t), After: -1})
		}
	}
	slices.SortStableFunc(out, func(a, b Flow) int {
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return a.Src - b.Src
	})
	return out
}

// Permutation sends size bytes from every host to another, each host
// receiving one flow: a random cyclic order, each host sending to the
// next.
func Permutation(hosts, size int, r *rand.Rand) []Flow {
	order := r.Perm(hosts)
	out := make([]Flow, hosts)
	for i := range order {
		out[i] = Flow{Src: order[i], Dst: order[(i+1)%hosts], Size: size, After: -1}
	}
	slices.SortFunc(out, func(a, b Flow) int { return a.Src - b.Src })
	return out
}

// Incast sends size bytes from each of senders to dst at once.
func Incast(senders []int, dst, size int) []Flow {
	var out []Flow
	for _, s := range senders {
		out = append(out, Flow{Src: s, Dst: dst, Size: size, After: -1})
	}
	return out
}

// Sequence sends count messages of size bytes from src to dst, at most
// depth in flight (at least 1): message i is posted when message
// i−depth completed, as roceperf keeps its queue depth.
func Sequence(src, dst, size, count, depth int) []Flow {
	depth = max(depth, 1)
	out := make([]Flow, count)
	for i := range out {
		out[i] = Flow{Src: src, Dst: dst, Size: size, After: -1}
		if i >= depth {
			out[i].After = i - depth
		}
	}
	return out
}

// AllToAll sends size bytes from every host to every other at once
// (AllToAllOver hosts 0 … hosts−1).
func AllToAll(hosts, size int) []Flow { return AllToAllOver(firstHosts(hosts), size) }

// RingAllReduce is a ring all-reduce of size bytes over hosts 0 …
// hosts−1 in order (RingAllReduceOver): 2(N−1) steps (reduce-scatter,
// then all-gather), in each of which every host sends a chunk of
// size/N to the next host on the ring; host i's flow of step s starts
// when the flow it received in step s−1 completed.
func RingAllReduce(hosts, size int) []Flow { return RingAllReduceOver(firstHosts(hosts), size) }

// firstHosts is 0 … n−1.
func firstHosts(n int) []int {
	out := make([]int, max(n, 0))
	for i := range out {
		out[i] = i
	}
	return out
}

// Write writes flows in the traffic file format: a first line with the
// number of flows, then one line per flow, "src dst size start_ns
// after" (after −1: at start), as HPCC's traffic files list one flow a
// line.
func Write(w io.Writer, flows []Flow) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%d\n", len(flows))
	for _, f := range flows {
		fmt.Fprintf(bw, "%d %d %d %d %d\n", f.Src, f.Dst, f.Size, f.Start, f.After)
	}
	return bw.Flush()
}

// Read reads a traffic file (Write's format; after may be left out), or
// an htsim connection matrix (a first line "Nodes N", then "Connections
// C" and one "src->dst id I start T size S" line per flow, T in
// picoseconds, as htsim's datacenter/connection_matrices hold them).
// Lines starting with # are comments.
func Read(r io.Reader) ([]Flow, error) {
	sc := bufio.NewScanner(r)
	var out []Flow
	n, line := -1, 0
	htsim := false
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if n < 0 && !htsim && f[0] == "Nodes" {
			htsim = true
			continue
		}
		if htsim {
			if f[0] == "Connections" {
				continue
			}
			fl, err := cmFlow(f)
			if err != nil {
				return nil, fmt.Errorf("workload: connection matrix line %d: %w", line, err)
			}
			out = append(out, fl)
			continue
		}
		if n < 0 {
			v, err := strconv.Atoi(t)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("workload: traffic line %d: want the number of flows", line)
			}
			n = v
			continue
		}
		if len(f) != 4 && len(f) != 5 {
			return nil, fmt.Errorf("workload: traffic line %d: want src dst size start_ns [after]", line)
		}
		var v [5]int64
		v[4] = -1
		for i := range f {
			x, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("workload: traffic line %d: %q is not an integer", line, f[i])
			}
			v[i] = x
		}
		if v[0] < 0 || v[1] < 0 || v[2] < 1 || v[3] < 0 || v[4] >= int64(len(out)) {
			return nil, fmt.Errorf("workload: traffic line %d: bad flow (after must name an earlier flow)", line)
		}
		out = append(out, Flow{Src: int(v[0]), Dst: int(v[1]), Size: int(v[2]), Start: v[3], After: int(v[4])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if n >= 0 && n != len(out) {
		return nil, fmt.Errorf("workload: traffic file says %d flows, has %d", n, len(out))
	}
	return out, nil
}

// cmFlow parses one connection of an htsim connection matrix.
func cmFlow(f []string) (Flow, error) {
	fl := Flow{After: -1}
	a, b, ok := strings.Cut(f[0], "->")
	src, err1 := strconv.Atoi(a)
	dst, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return fl, fmt.Errorf("%q is not src->dst", f[0])
	}
	fl.Src, fl.Dst = src, dst
	for i := 1; i+1 < len(f); i += 2 {
		switch f[i] {
		case "start":
			ps, err := strconv.ParseFloat(f[i+1], 64)
			if err != nil {
				return fl, fmt.Errorf("start %q", f[i+1])
			}
			fl.Start = int64(ps / 1000)
		case "size":
			v, err := strconv.Atoi(f[i+1])
			if err != nil || v < 1 {
				return fl, fmt.Errorf("size %q", f[i+1])
			}
			fl.Size = v
		}
	}
	if fl.Size == 0 {
		return fl, fmt.Errorf("no size")
	}
	return fl, nil
}
