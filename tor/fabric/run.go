package fabric

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
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
	// Stop, if set, ends the run early: once it is closed (torsim's
	// context, on Ctrl-C or SIGTERM), Run returns ErrStopped after the
	// window of simulated time it is in, rather than at the run's end,
	// which for one of the seeds' cells can be an hour of CPU away.
	Stop <-chan struct{}
}

// ErrStopped is the error of a run ended by RunOptions.Stop.
var ErrStopped = errors.New("fabric: run stopped")

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
	// done counts the flows completed, out those posted and not
	// completed, each by the partition of the flow's source (which
	// collects its completion), errs the errors there.
	done, out []int
	errs      []error
	waitQ     []map[uint32][]int // flows waiting for room on their QP, per host by QPN
	rr        map[[2]int]int
	samp      *sampler
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
	r.done, r.out, r.errs = make([]int, len(n.parts)), make([]int, len(n.parts)), make([]error, len(n.parts))
	if len(n.parts) > 1 {
		if err := r.parallel(); err != nil {
			return nil, err
		}
	}
	r.id = n.Global.Add(r)
	for _, h := range n.Hosts {
		h := h
		h.Node.After = func(now sim.Time) { r.collect(h, now) }
	}
	r.samp = newSampler(n, o.Sample)
	r.samp.id = n.Global.Add(r.samp)
	n.Global.Wake(r.samp.id, 0)
	if len(r.order) > 0 {
		n.Global.Wake(r.id, r.flows[r.order[0]].Start*sim.Nanosecond)
	}
	if err := r.loop(limit); err != nil {
		return nil, err
	}
	n.group.Flush()
	if k := n.group.CrossNoFrame(); k > 0 {
		return nil, fmt.Errorf("fabric: %d frames between partitions found no free frame at their receiver: "+
			"a run with --threads %d is exact only while none does (frames cross at the end of a window); run it with one thread", k, len(n.parts))
	}
	return r.result()
}

// parallel refuses what a run on several partitions cannot do exactly:
// a completion on one host posting at once on another (a flow started
// by another's completion, or a SEND's receive, posted at the
// destination when a queued flow is submitted).
func (r *runner) parallel() error {
	for i := range r.flows {
		if r.flows[i].After >= 0 {
			return fmt.Errorf("fabric: flow %d starts when flow %d completes: a run on %d threads has flows of their own start times only",
				i, r.flows[i].After, len(r.n.parts))
		}
	}
	if r.o.Op == nic.OpSend {
		return fmt.Errorf("fabric: a run on %d threads posts WRITEs only", len(r.n.parts))
	}
	return nil
}

// loop runs the simulation until every flow completed, the events ran
// out or one after limit fired (that one fired, as one simulation's
// loop would), in windows (sim.Group): each partition fires its events
// before the window's end — at most the lookahead after the earliest
// event, and just after Global's next, whose events fire between
// windows, after every partition's of their time (their actors' ids are
// the last) — on a goroutine of its own.
func (r *runner) loop(limit sim.Time) error {
	n, g := r.n, r.n.group
	start := time.Now()
	lastP, lastEv, lastT := start, uint64(0), sim.Time(0)
	for !r.finished() {
		select {
		case <-r.o.Stop: // a nil Stop never is
			return fmt.Errorf("%w at %.3f ms simulated", ErrStopped, float64(g.Now())/float64(sim.Millisecond))
		default:
		}
		g.Begin()
		w := g.Next()
		if w == sim.Never {
			break
		}
		if w > limit {
			g.StepFirst()
			break
		}
		end := min(limit+1, w+min(g.Lookahead, sim.Never-w))
		if t := n.Global.Next(); t < end {
			end = t + 1
		}
		if r.window(end) {
			break
		}
		if t := n.Global.Next(); t < end {
			g.Advance(t)
			for n.Global.Next() < end {
				n.Global.Step()
			}
		}
		if r.o.Progress != nil {
			if now := time.Now(); now.Sub(lastP) >= time.Second {
				ev := g.Events()
				done := r.doneAll()
				p := Progress{Now: g.Now(), Events: ev, Done: done, Flows: len(r.flows), Wall: now.Sub(start)}
				dt := now.Sub(lastP).Seconds()
				p.EventsPerSec = float64(ev-lastEv) / dt
				p.SimPerWallSecond = sim.Time(float64(g.Now()-lastT) / dt)
				if done > 0 {
					p.ETA = time.Duration(float64(p.Wall) * float64(len(r.flows)-done) / float64(done))
				}
				r.o.Progress(p)
				lastP, lastEv, lastT = now, ev, g.Now()
			}
		}
	}
	return errors.Join(r.errs...)
}

// window runs every partition to end and reports whether the last flow
// completed in it. With every flow posted, the partitions with flows
// to complete run first, each stopping at the event that completes its
// last: if that completed every flow, the last of those events is
// where one simulation would have stopped, and every partition runs to
// it; else all run on to end.
func (r *runner) window(end sim.Time) bool {
	g := r.n.group
	all := make([]int, len(g.Parts))
	for i := range all {
		all[i] = i
	}
	if r.at < len(r.order) {
		g.Run(all, end, r.failed)
		return false
	}
	var busy []int
	for i := range all {
		if r.out[i] > 0 {
			busy = append(busy, i)
		}
	}
	paused := g.Run(busy, end, func(i int) bool { return r.out[i] == 0 || r.errs[i] != nil })
	if r.finished() {
		g.Stop(paused)
		return true
	}
	g.Run(all, end, r.failed)
	return false
}

// failed tells whether partition i's collection failed: the run stops.
func (r *runner) failed(i int) bool { return r.errs[i] != nil }

// finished tells whether every flow completed or an error stops the
// run.
func (r *runner) finished() bool {
	return r.doneAll() == len(r.flows) || errors.Join(r.errs...) != nil
}

func (r *runner) doneAll() int {
	d := 0
	for _, k := range r.done {
		d += k
	}
	return d
}

// Fire implements sim.Actor: it posts the flows whose start is due.
func (r *runner) Fire(now sim.Time) {
	for r.at < len(r.order) && r.flows[r.order[r.at]].Start*sim.Nanosecond <= now {
		r.post(r.order[r.at], now)
		r.at++
	}
	if r.at < len(r.order) {
		r.n.Global.Wake(r.id, r.flows[r.order[r.at]].Start*sim.Nanosecond)
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
	r.out[h.part]++
	r.submit(i, now)
}

// submit posts flow i at now: from the runner, between windows, or from
// its source's completions, on its partition's goroutine.
func (r *runner) submit(i int, now sim.Time) {
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
			r.errs[h.part] = fmt.Errorf("fabric: flow %d: post receive: %w", i, err)
			return
		}
		d.Node.Wake(now)
	}
	switch err := h.EP.Post(wr); {
	case err == nil:
		h.Node.Wake(now)
	case errors.Is(err, nic.ErrSQFull) || errors.Is(err, nic.ErrCQFull) || errors.Is(err, nic.ErrRing):
		// The QP's send queue is full: post when one of its flows
		// completes.
		r.waitQ[f.Src][f.qp] = append(r.waitQ[f.Src][f.qp], i)
	default:
		r.errs[h.part] = fmt.Errorf("fabric: flow %d: post: %w", i, err)
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
			r.done[h.part]++
			r.out[h.part]--
			for _, j := range f.next {
				r.flows[j].Start = now / sim.Nanosecond
				r.post(j, now)
			}
			if w := r.waitQ[h.Index][c.QP]; len(w) > 0 {
				r.waitQ[h.Index][c.QP] = w[1:]
				r.submit(w[0], now)
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
	s.n.Global.Wake(s.id, now+s.every)
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
		first += serialize(wire(min(f.Size, mtu)), l.RateBps)
		slow = min(slow, l.RateBps)
	}
	last := f.Size - (pkts-1)*mtu
	rest := serialize(int64(pkts-2)*wire(mtu)+wire(last), slow)
	if pkts == 1 {
		rest = 0
	}
	return (2*prop + first + rest) / sim.Nanosecond
}

// serialize is the time b bytes take at rate bits/s. The product of
// bits and picoseconds per second needs 128 bits: in 64 it wraps past
// 2.3 MB (2^64 ps·bit over 8·10^12), and the ideal FCTs of every larger
// flow came out as a few µs, their slowdowns tens of times too high.
// Below that the quotient is the 64-bit one's exactly.
func serialize(b int64, rate uint64) sim.Time {
	hi, lo := bits.Mul64(uint64(b)*8, uint64(sim.Second))
	if hi >= rate {
		return sim.Time(math.MaxInt64) // past 292 days of one link: never a flow here
	}
	q, _ := bits.Div64(hi, lo, rate)
	return sim.Time(q)
}

// path returns the links of one shortest path from host a to host b.
// The hop counts to each destination host are kept, so a run of many
// flows walks the topology once per destination.
func (n *Network) path(a, b int) []topo.LinkSpec {
	t := &n.Topo
	src, dst := n.hostNode(a), n.hostNode(b)
	adj := n.adjacency()
	d := n.hostHops(dst)
	var out []topo.LinkSpec
	for x := src; x != dst && d(x) > 0; {
		next := -1
		for _, li := range adj[x] {
			l := t.Links[li]
			if y := l.A + l.B - x; d(y) == d(x)-1 {
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

// hostHops returns the hop counts from every node to host node dst, as
// hops(dst) would: for a host with one link they are its switch's plus
// one, so that only the switches' arrays are kept (hops keeps each it
// made, and one per host was 11 MB for htsim's 1,024 hosts, touched as
// the results' ideal FCTs were computed at the run's end).
func (n *Network) hostHops(dst int) func(x int) int {
	adj := n.adjacency()
	if len(adj[dst]) != 1 {
		d := n.hops(dst)
		return func(x int) int { return d[x] }
	}
	l := n.Topo.Links[adj[dst][0]]
	sw := l.A + l.B - dst
	if n.Topo.Nodes[sw].Role != topo.Switch {
		d := n.hops(dst)
		return func(x int) int { return d[x] }
	}
	d := n.hops(sw)
	return func(x int) int {
		switch {
		case x == dst:
			return 0
		case d[x] < 0:
			return -1
		}
		return d[x] + 1
	}
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
