package fabric

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"time"

	"rocetor/dataplane/sim"
	"rocetor/nic"
	"rocetor/tor/topo"
	"rocetor/tor/workload"
)

// RunOptions say how flows run.
type RunOptions struct {
	// QPs is how many QPs each communicating host pair has (default 1);
	// a pair's flows take them in turn.
	QPs int
	// Op is the verb every flow posts: nic.OpWrite (the default) or
	// nic.OpSend (a receive is posted for each).
	Op nic.Op
	// Until ends the run at this simulated time even if flows remain
	// (0: when every flow completed, or 10 s).
	Until sim.Time
	// Sample is the interval of the buffer occupancy samples (default
	// 10 µs).
	Sample sim.Time
	// Progress, if set, is called about every second of wall time.
	Progress func(p Progress)
	// Stats say which flows the result's statistics count and how they
	// are grouped.
	Stats StatsOptions
}

// Progress is what a progress line says.
type Progress struct {
	Now              sim.Time
	Events           uint64
	EventsPerSec     float64
	Done, Flows      int
	Wall, ETA        time.Duration
	SimPerWallSecond sim.Time
}

// flowState is one flow in a run.
type flowState struct {
	workload.Flow
	qp      uint32
	posted  sim.Time
	done    sim.Time
	fct     int64 // ns, from the completion
	ok      bool
	started bool
	next    []int // flows that start when this one completes
}

type runner struct {
	n     *Network
	o     RunOptions
	flows []flowState
	byID  map[uint64]int
	order []int // flows with a start time, by start
	at    int   // next of order
	id    int   // the runner's actor id
	done  int
	waitQ []map[uint32][]int // flows waiting for room on their QP, per host by QPN
	rr    map[[2]int]int
	samp  *sampler
	err   error
}

// Run runs flows over the network and returns what was measured. The
// network must be fresh: a Network runs once.
func (n *Network) Run(flows []workload.Flow, o RunOptions) (*Result, error) {
	if o.QPs == 0 {
		o.QPs = 1
	}
	if o.Op == 0 {
		o.Op = nic.OpWrite
	}
	if o.Sample == 0 {
		o.Sample = 10 * sim.Microsecond
	}
	if o.Stats.Bins != nil {
		if err := checkBins(o.Stats.Bins); err != nil {
			return nil, err
		}
	}
	limit := o.Until
	if limit == 0 {
		limit = 10 * sim.Second
	}
	r := &runner{n: n, o: o, byID: map[uint64]int{}, rr: map[[2]int]int{}, waitQ: make([]map[uint32][]int, len(n.Hosts))}
	for i := range r.waitQ {
		r.waitQ[i] = map[uint32][]int{}
	}
	pairs := map[[2]int]bool{}
	for i, f := range flows {
		if f.Src < 0 || f.Dst < 0 || f.Src >= len(n.Hosts) || f.Dst >= len(n.Hosts) || f.Src == f.Dst {
			return nil, fmt.Errorf("fabric: flow %d: hosts %d → %d: the network has %d hosts", i, f.Src, f.Dst, len(n.Hosts))
		}
		if f.Size > n.Opts.MaxMessage {
			return nil, fmt.Errorf("fabric: flow %d: %d bytes, more than the largest message (%d)", i, f.Size, n.Opts.MaxMessage)
		}
		pairs[[2]int{f.Src, f.Dst}] = true
		r.flows = append(r.flows, flowState{Flow: f})
	}
	n.tally = flowTally{retx: make([]int, len(flows)), timeouts: make([]int, len(flows))}
	keys := make([][2]int, 0, len(pairs))
	for k := range pairs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	for _, k := range keys {
		if err := n.Pair(k[0], k[1], o.QPs); err != nil {
			return nil, err
		}
	}
	for i := range r.flows {
		if a := r.flows[i].After; a >= 0 {
			r.flows[a].next = append(r.flows[a].next, i)
		} else {
			r.order = append(r.order, i)
		}
	}
	slices.SortStableFunc(r.order, func(a, b int) int { return int(r.flows[a].Start - r.flows[b].Start) })
	r.id = n.Sim.Add(r)
	for _, h := range n.Hosts {
		h := h
		h.Node.After = func(now sim.Time) { r.collect(h, now) }
	}
	r.samp = newSampler(n, o.Sample)
	r.samp.id = n.Sim.Add(r.samp)
	n.Sim.Wake(r.samp.id, 0)
	if len(r.order) > 0 {
		n.Sim.Wake(r.id, r.flows[r.order[0]].Start*sim.Nanosecond)
	}
	start := time.Now()
	lastP, lastEv, lastT := start, uint64(0), sim.Time(0)
	for r.done < len(r.flows) && r.err == nil {
		if !n.Sim.Step() || n.Sim.Now() > limit {
			break
		}
		if o.Progress != nil && n.Sim.Events&0xfff == 0 {
			if now := time.Now(); now.Sub(lastP) >= time.Second {
				p := Progress{Now: n.Sim.Now(), Events: n.Sim.Events, Done: r.done, Flows: len(r.flows), Wall: now.Sub(start)}
				dt := now.Sub(lastP).Seconds()
				p.EventsPerSec = float64(n.Sim.Events-lastEv) / dt
				p.SimPerWallSecond = sim.Time(float64(n.Sim.Now()-lastT) / dt)
				if r.done > 0 {
					p.ETA = time.Duration(float64(p.Wall) * float64(len(r.flows)-r.done) / float64(r.done))
				}
				o.Progress(p)
				lastP, lastEv, lastT = now, n.Sim.Events, n.Sim.Now()
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.result()
}

// Fire implements sim.Actor: it posts the flows whose start is due.
func (r *runner) Fire(now sim.Time) {
	for r.at < len(r.order) && r.flows[r.order[r.at]].Start*sim.Nanosecond <= now {
		r.post(r.order[r.at], now)
		r.at++
	}
	if r.at < len(r.order) {
		r.n.Sim.Wake(r.id, r.flows[r.order[r.at]].Start*sim.Nanosecond)
	}
}

// post posts flow i on its pair's next QP and wakes its host (and, for
// SEND, posts the receive at the destination first).
func (r *runner) post(i int, now sim.Time) {
	f := &r.flows[i]
	h := r.n.Hosts[f.Src]
	k := [2]int{f.Src, f.Dst}
	qs := h.peers[f.Dst]
	q := qs[r.rr[k]%len(qs)]
	r.rr[k]++
	f.qp, f.posted, f.started = q.local, now, true
	r.byID[uint64(i)] = i
	r.submit(i)
}

func (r *runner) submit(i int) {
	f := &r.flows[i]
	h, d := r.n.Hosts[f.Src], r.n.Hosts[f.Dst]
	wr := nic.WR{ID: uint64(i), Op: r.o.Op, QP: f.qp, LKey: h.MR.Key, LocalVA: h.MR.VA, Len: f.Size,
		RKey: d.MR.Key, RemoteVA: d.MR.VA}
	if r.o.Op == nic.OpSend {
		var remote uint32
		for _, q := range h.peers[f.Dst] {
			if q.local == f.qp {
				remote = q.remote
			}
		}
		if err := d.EP.Post(nic.WR{ID: 1 << 62, Op: nic.OpRecv, QP: remote, LKey: d.MR.Key, LocalVA: d.MR.VA, Len: f.Size}); err != nil {
			r.err = fmt.Errorf("fabric: flow %d: post receive: %w", i, err)
			return
		}
		d.Node.Wake(r.n.Sim.Now())
	}
	switch err := h.EP.Post(wr); {
	case err == nil:
		h.Node.Wake(r.n.Sim.Now())
	case errors.Is(err, nic.ErrSQFull) || errors.Is(err, nic.ErrCQFull) || errors.Is(err, nic.ErrRing):
		// The QP's send queue is full: post when one of its flows
		// completes.
		r.waitQ[f.Src][f.qp] = append(r.waitQ[f.Src][f.qp], i)
	default:
		r.err = fmt.Errorf("fabric: flow %d: post: %w", i, err)
	}
}

// collect drains a host's completions after its step.
func (r *runner) collect(h *HostNode, now sim.Time) {
	for {
		k := h.EP.PollCQ(h.cqb[:])
		if k == 0 {
			return
		}
		for _, c := range h.cqb[:k] {
			if c.Op == nic.OpRecv {
				continue
			}
			i, ok := r.byID[c.ID]
			if !ok {
				continue
			}
			f := &r.flows[i]
			f.done, f.fct, f.ok = now, c.Latency, c.Status == nic.StatusOK
			r.done++
			for _, j := range f.next {
				r.flows[j].Start = now / sim.Nanosecond
				r.post(j, now)
			}
			if w := r.waitQ[h.Index][c.QP]; len(w) > 0 {
				r.waitQ[h.Index][c.QP] = w[1:]
				r.submit(w[0])
			}
		}
	}
}

// sampler reads every switch's egress backlog at a fixed interval:
// buffer occupancy over time.
type sampler struct {
	n      *Network
	id     int
	every  sim.Time
	peak   []int   // per switch
	sum    []int64 // per switch, for the mean
	k      int64
	series []Sample
}

// Sample is the fabric's buffered bytes at one time.
type Sample struct {
	T     int64 `json:"t_ns"`
	Bytes int   `json:"bytes"`
	Max   int   `json:"max_switch_bytes"`
}

func newSampler(n *Network, every sim.Time) *sampler {
	return &sampler{n: n, every: every, peak: make([]int, len(n.Switches)), sum: make([]int64, len(n.Switches))}
}

func (s *sampler) Fire(now sim.Time) {
	tot, mx := 0, 0
	for i, sw := range s.n.Switches {
		b := 0
		for p := range sw.Node.Ports {
			b += sw.Node.W.Egress(p).Backlog()
		}
		s.peak[i] = max(s.peak[i], b)
		s.sum[i] += int64(b)
		tot += b
		mx = max(mx, b)
	}
	s.k++
	s.series = append(s.series, Sample{T: now / sim.Nanosecond, Bytes: tot, Max: mx})
	s.n.Sim.Wake(s.id, now+s.every)
}

// idealFCT is a flow's completion time on an empty fabric: the
// message's packets pipelined over the path at its slowest link, the
// first packet's store-and-forward at every hop, and the propagation
// there and back (the WRITE's ACK).
func (n *Network) idealFCT(f workload.Flow) int64 {
	hops := n.path(f.Src, f.Dst)
	mtu := n.Opts.MTU
	pkts := max(1, (f.Size+mtu-1)/mtu)
	// Ethernet, IPv4, UDP, BTH and ICRC on every packet, RETH on the first.
	const hdr = 14 + 20 + 8 + 12 + 4
	wire := func(b int) int64 { return int64(b + hdr + n.Opts.Overhead) }
	var prop, first sim.Time
	slow := uint64(math.MaxUint64)
	for _, l := range hops {
		prop += l.Delay
		first += sim.Time(uint64(wire(min(f.Size, mtu))) * 8 * uint64(sim.Second) / l.RateBps)
		slow = min(slow, l.RateBps)
	}
	last := f.Size - (pkts-1)*mtu
	rest := sim.Time(uint64(int64(pkts-2)*wire(mtu)+wire(last)) * 8 * uint64(sim.Second) / slow)
	if pkts == 1 {
		rest = 0
	}
	return (2*prop + first + rest) / sim.Nanosecond
}

// path returns the links of one shortest path from host a to host b.
// The hop counts to each destination host are kept, so a run of many
// flows walks the topology once per destination.
func (n *Network) path(a, b int) []topo.LinkSpec {
	t := &n.Topo
	src, dst := n.hostNode(a), n.hostNode(b)
	adj := n.adjacency()
	d := n.hops(dst)
	var out []topo.LinkSpec
	for x := src; x != dst && d[x] > 0; {
		next := -1
		for _, li := range adj[x] {
			l := t.Links[li]
			if y := l.A + l.B - x; d[y] == d[x]-1 {
				out = append(out, l)
				next = y
				break
			}
		}
		if next < 0 {
			break
		}
		x = next
	}
	return out
}

func (n *Network) hostNode(h int) int {
	if n.hostNd == nil {
		n.hostNd = make([]int, len(n.Hosts))
		for i := range n.Topo.Nodes {
			if n.Topo.Nodes[i].Role == topo.Host {
				n.hostNd[n.byNode[i]] = i
			}
		}
	}
	return n.hostNd[h]
}

func (n *Network) adjacency() [][]int {
	if n.adj == nil {
		n.adj = make([][]int, len(n.Topo.Nodes))
		for i, l := range n.Topo.Links {
			n.adj[l.A] = append(n.adj[l.A], i)
			n.adj[l.B] = append(n.adj[l.B], i)
		}
	}
	return n.adj
}

// sumStats adds every unsigned and signed integer field of v, a struct,
// into m by name (nested structs' fields as Outer.Inner, arrays and
// slices of structs summed over their elements), leaving out maps and
// arrays of numbers.
func sumStats(m map[string]int64, prefix string, v reflect.Value) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		x := v.Field(i)
		switch x.Kind() {
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			m[prefix+f.Name] += int64(x.Uint())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			m[prefix+f.Name] += x.Int()
		case reflect.Struct:
			sumStats(m, prefix+f.Name+".", x)
		case reflect.Array, reflect.Slice:
			// Per-port or per-flow stats: summed element by element.
			if x.Type().Elem().Kind() == reflect.Struct {
				for j := 0; j < x.Len(); j++ {
					sumStats(m, prefix+f.Name+".", x.Index(j))
				}
			}
		}
	}
}
