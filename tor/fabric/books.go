package fabric

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/tor/impair"
	"rocetor/tor/llr"
	"rocetor/tor/pipeline"
	"rocetor/tor/topo"
)

// Books account for every frame of a run, at its end, node by node and
// link by link, in frames. A node is a worker with its frame memory and
// its port stack (receive ring, llr's receiver, ingress impairment); a
// link direction is the sending port's egress impairment and the wire.
//
// A node's books:
//
//	received + created = sent + consumed + dropped + held
//
// where:
//
//   - received: frames whose last bit arrived at one of its ports: into
//     the receive ring, refused by the full ring, or lost for want of a
//     free frame of its memory to copy them into (counted as they leave
//     the sender, when the copy is made).
//   - created: frames it built — a host's data, ACKs, NAKs and CNPs, a
//     switch's PFC frames, NetRT's requests, notices, pooled copies and
//     retransmissions, llr's copies, ACKs, dummies and notices (a
//     switch's or an llr NIC's, hostLLR) (dataplane.Snapshot.Built) —
//     and the copies its ingress
//     impairment made. Trimming shortens a frame in place: a trimmed
//     header is the frame it was.
//   - sent: frames its pipeline handed to its ports (the worker's
//     TxPackets).
//   - consumed: frames that ended here as intended: a host's received
//     packets, delivered to its transport; MAC control frames acted on;
//     llr's control shims; NetRT's pooled copies retired (ACKed,
//     expired, evicted).
//   - dropped: by reason — every drop reason of the worker and its
//     stages (some of which, netrt_consumed and netrt_nak_answered, end
//     a frame on purpose and say so), rx_ring_full, rx_no_frame, the
//     ingress impairment's destroyed frames (impair_ingress_CAUSE) and
//     llr's receiver's (llr_duplicate, llr_malformed, llr_buffer_full,
//     llr_resync).
//   - held: frames still there: in the receive rings, the egress queues,
//     the ingress impairment's hold, llr's reordering buffer (a copy of
//     the frame, outside the memory), NetRT's pool and reordering buffer.
//
// A link direction's books:
//
//	sent + duplicated = arrived + lost + held + in flight
//
// where sent is what the sending node's pipeline handed the port,
// duplicated, lost (by cause) and held are the egress impairment's, and
// arrived is the receiving node's received on that port. Its memory
// checks a node's held frames once more: its frames in use are its held
// frames (less llr's copies, which live outside it), those its egress
// impairment holds for its links, and the frames in flight toward it,
// whose copies it already holds.
//
// Summed, the links cancel out: frames created = consumed + dropped +
// lost on the wire + held + in flight — every frame the hosts sent was
// delivered, dropped with a reason, or is still somewhere. Unbuilt
// counts the frames a node set out to build and found no free frame for
// (the worker's no_frame): no frame existed, so they are outside the
// books.
type Books struct {
	// Balanced is true when every node's and link's books and the
	// memory check balance.
	Balanced bool        `json:"balanced"`
	Totals   BookTotals  `json:"totals"`
	Switches []NodeBooks `json:"switches"`
	Hosts    []NodeBooks `json:"hosts"`
	// Links are the link directions whose books say more than sent =
	// arrived: something lost, duplicated, held or in flight. The
	// others are in Totals.
	Links      []LinkBooks `json:"links,omitempty"`
	Imbalances []Imbalance `json:"imbalances,omitempty"`
}

// NodeBooks are one node's books; see Books.
type NodeBooks struct {
	Name     string            `json:"name"`
	Received uint64            `json:"received"`
	Created  uint64            `json:"created"`
	Sent     uint64            `json:"sent"`
	Consumed uint64            `json:"consumed"`
	Dropped  map[string]uint64 `json:"dropped,omitempty"`
	// HeaderOnly counts, by reason and among Dropped, the DCP
	// header-only packets dropped here (dataplane.Snapshot.HODrops).
	HeaderOnly map[string]uint64 `json:"header_only_dropped,omitempty"`
	Held       map[string]uint64 `json:"held,omitempty"`
	Unbuilt    uint64            `json:"unbuilt,omitempty"`
	// MemFrames is the size of its frame memory, MemInUse the frames in
	// use at the end, of which InFlightTo are copies of frames still on
	// the wire toward it.
	MemFrames  int    `json:"mem_frames"`
	MemInUse   int    `json:"mem_in_use"`
	InFlightTo uint64 `json:"in_flight_to"`
	// LinkHeld is the frames its egress impairment holds: in its
	// memory, in the links' books.
	LinkHeld uint64 `json:"link_held,omitempty"`
	// LLRTxHeld is the frames llr's Tx buffers hold in its memory (sent,
	// not yet acknowledged); MemShared the holders frames in use have
	// besides their owners (dataplane.Mem.Shared): a frame llr's Tx
	// buffer or NetRT's pool holds while it is queued is counted by each
	// and in use once.
	LLRTxHeld uint64 `json:"llr_tx_held,omitempty"`
	MemShared uint64 `json:"mem_shared,omitempty"`
}

// LinkBooks are one direction of a link; see Books.
type LinkBooks struct {
	From       string            `json:"from"`
	To         string            `json:"to"`
	Sent       uint64            `json:"sent"`
	Duplicated uint64            `json:"duplicated,omitempty"`
	Arrived    uint64            `json:"arrived"`
	Lost       map[string]uint64 `json:"lost,omitempty"`
	Held       uint64            `json:"held,omitempty"`
	InFlight   uint64            `json:"in_flight,omitempty"`
}

// BookTotals sum the books over the network: Created + Duplicated =
// Consumed + dropped + Lost + Held + LinkHeld + InFlight.
type BookTotals struct {
	CreatedByHosts     uint64            `json:"created_by_hosts"`
	CreatedBySwitches  uint64            `json:"created_by_switches"`
	Duplicated         uint64            `json:"duplicated_on_wire,omitempty"`
	ConsumedByHosts    uint64            `json:"consumed_by_hosts"`
	ConsumedBySwitches uint64            `json:"consumed_by_switches"`
	HostDropped        map[string]uint64 `json:"host_dropped,omitempty"`
	SwitchDropped      map[string]uint64 `json:"switch_dropped,omitempty"`
	HeaderOnly         map[string]uint64 `json:"header_only_dropped,omitempty"`
	Lost               map[string]uint64 `json:"lost_on_wire,omitempty"`
	Held               map[string]uint64 `json:"held,omitempty"`
	LinkHeld           uint64            `json:"held_on_wire,omitempty"`
	InFlight           uint64            `json:"in_flight"`
	Unbuilt            uint64            `json:"unbuilt,omitempty"`
	Links              int               `json:"link_directions"`
}

// Imbalance is books that do not balance: Node names the node or the
// link direction ("a→b"), Counter the account ("frames": a node's
// books; "memory": its frames in use against its held frames and those
// in flight toward it; "link": a link direction's books; "total": the
// sums), Difference the left side less the right.
type Imbalance struct {
	Node       string `json:"node"`
	Counter    string `json:"counter"`
	Difference int64  `json:"difference"`
	Detail     string `json:"detail"`
}

func (im Imbalance) String() string {
	return fmt.Sprintf("%s: %s off by %+d (%s)", im.Node, im.Counter, im.Difference, im.Detail)
}

// ErrUnbalanced is returned (wrapped, naming every imbalance) by
// Books.Check when a frame is unaccounted for.
var ErrUnbalanced = errors.New("frame books do not balance")

// Check recomputes every account from the books' figures and returns
// ErrUnbalanced naming each one that does not balance; it fills
// Imbalances and Balanced. Links summarised in Totals only (those
// whose sent equals arrived) are checked through the totals.
func (b *Books) Check() error {
	b.Imbalances = nil
	for _, side := range [][]NodeBooks{b.Switches, b.Hosts} {
		for i := range side {
			b.Imbalances = append(b.Imbalances, side[i].check()...)
		}
	}
	for i := range b.Links {
		if im, ok := b.Links[i].check(); !ok {
			b.Imbalances = append(b.Imbalances, im)
		}
	}
	if im, ok := b.total(); !ok {
		b.Imbalances = append(b.Imbalances, im)
	}
	b.Balanced = len(b.Imbalances) == 0
	if b.Balanced {
		return nil
	}
	var s []string
	for _, im := range b.Imbalances[:min(len(b.Imbalances), 8)] {
		s = append(s, im.String())
	}
	if k := len(b.Imbalances) - len(s); k > 0 {
		s = append(s, fmt.Sprintf("and %d more (books.imbalances in result.json)", k))
	}
	return fmt.Errorf("%w: %s", ErrUnbalanced, strings.Join(s, "; "))
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func (nb *NodeBooks) check() []Imbalance {
	var out []Imbalance
	in := nb.Received + nb.Created
	held := sum(nb.Held)
	o := nb.Sent + nb.Consumed + sum(nb.Dropped) + held
	if in != o {
		out = append(out, Imbalance{Node: nb.Name, Counter: "frames", Difference: int64(in - o),
			Detail: fmt.Sprintf("received %d + created %d ≠ sent %d + consumed %d + dropped %d + held %d",
				nb.Received, nb.Created, nb.Sent, nb.Consumed, sum(nb.Dropped), held)})
	}
	// llr's reordering buffer holds copies, outside the memory.
	mine := held - nb.Held[heldLLR]
	if mem := mine + nb.LinkHeld + nb.InFlightTo + nb.LLRTxHeld - nb.MemShared; uint64(nb.MemInUse) != mem {
		out = append(out, Imbalance{Node: nb.Name, Counter: "memory", Difference: int64(uint64(nb.MemInUse) - mem),
			Detail: fmt.Sprintf("%d frames in use ≠ %d held + %d held for its links + %d in flight toward it + %d in llr's Tx buffers − %d held twice",
				nb.MemInUse, mine, nb.LinkHeld, nb.InFlightTo, nb.LLRTxHeld, nb.MemShared)})
	}
	return out
}

func (lb *LinkBooks) check() (Imbalance, bool) {
	in := lb.Sent + lb.Duplicated
	o := lb.Arrived + sum(lb.Lost) + lb.Held + lb.InFlight
	return Imbalance{Node: lb.From + "→" + lb.To, Counter: "link", Difference: int64(in - o),
		Detail: fmt.Sprintf("sent %d + duplicated %d ≠ arrived %d + lost %d + held %d + in flight %d",
			lb.Sent, lb.Duplicated, lb.Arrived, sum(lb.Lost), lb.Held, lb.InFlight)}, in == o
}

// total checks the network's sums: what was created is consumed,
// dropped, lost or still somewhere.
func (b *Books) total() (Imbalance, bool) {
	t := &b.Totals
	in := t.CreatedByHosts + t.CreatedBySwitches + t.Duplicated
	o := t.ConsumedByHosts + t.ConsumedBySwitches + sum(t.HostDropped) + sum(t.SwitchDropped) + sum(t.Lost) +
		sum(t.Held) + t.LinkHeld + t.InFlight
	return Imbalance{Node: "network", Counter: "total", Difference: int64(in - o),
		Detail: fmt.Sprintf("created %d + duplicated %d ≠ consumed %d + dropped %d + lost %d + held %d + in flight %d",
			t.CreatedByHosts+t.CreatedBySwitches, t.Duplicated, t.ConsumedByHosts+t.ConsumedBySwitches,
			sum(t.HostDropped)+sum(t.SwitchDropped), sum(t.Lost), sum(t.Held)+t.LinkHeld, t.InFlight)}, in == o
}

// Names of the holders and of the drops outside the worker's reasons.
const (
	heldRing     = "rx_ring"
	heldEgress   = "egress"
	heldImpair   = "impair_ingress"
	heldLLR      = "llr_reorder"
	heldPool     = "netrt_pool"
	heldDst      = "netrt_dst"
	dropRing     = "rx_ring_full"
	dropNoFrame  = "rx_no_frame"
	dropImpairIn = "impair_ingress_"
)

// books draws up the network's books at the current time.
func (n *Network) books() *Books {
	now := n.Now() / sim.Nanosecond
	b := &Books{}
	t := &b.Totals
	t.HostDropped, t.SwitchDropped, t.HeaderOnly = map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	t.Lost, t.Held = map[string]uint64{}, map[string]uint64{}
	// Frames in flight toward each port, by the receiving port; frames
	// each port's worker sent on it.
	links := n.linkEnds()
	toward, sent := map[*sim.Port]uint64{}, map[*sim.Port]uint64{}
	for _, l := range links {
		toward[l.b] += uint64(l.a.InFlight())
		toward[l.a] += uint64(l.b.InFlight())
	}
	for _, s := range n.Switches {
		nb := n.nodeBooks(s.Name, s.Node, s.Pipe, s.Pipe.LLR, now, toward, sent)
		t.CreatedBySwitches += nb.Created
		t.ConsumedBySwitches += nb.Consumed
		addTo(t.SwitchDropped, nb.Dropped)
		b.Switches = append(b.Switches, nb)
	}
	for _, h := range n.Hosts {
		nb := n.nodeBooks(h.Name, h.Node, nil, h.LLR, now, toward, sent)
		t.CreatedByHosts += nb.Created
		t.ConsumedByHosts += nb.Consumed
		addTo(t.HostDropped, nb.Dropped)
		b.Hosts = append(b.Hosts, nb)
	}
	for _, side := range [][]NodeBooks{b.Switches, b.Hosts} {
		for i := range side {
			addTo(t.HeaderOnly, side[i].HeaderOnly)
			addTo(t.Held, side[i].Held)
			t.Unbuilt += side[i].Unbuilt
		}
	}
	for _, l := range links {
		for _, d := range [2]linkEnd{l, l.reverse()} {
			lb := linkBooks(d, sent[d.a])
			t.Links++
			t.Duplicated += lb.Duplicated
			addTo(t.Lost, lb.Lost)
			t.LinkHeld += lb.Held
			t.InFlight += lb.InFlight
			if _, ok := lb.check(); !ok || lb.Sent != lb.Arrived || lb.Duplicated+lb.Held+lb.InFlight > 0 || len(lb.Lost) > 0 {
				b.Links = append(b.Links, lb)
			}
		}
	}
	for _, m := range []map[string]uint64{t.HostDropped, t.SwitchDropped, t.HeaderOnly, t.Lost, t.Held} {
		prune(m)
	}
	_ = b.Check()
	return b
}

func addTo(dst, src map[string]uint64) {
	for k, v := range src {
		dst[k] += v
	}
}

func prune(m map[string]uint64) {
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
}

// nodeBooks draws up one node's books: pl is its pipeline (nil for a
// host, whose worker runs the RNIC, and llr's sender after it, over a
// port llr's receiver may wrap), lr its llr stage (nil without one).
func (n *Network) nodeBooks(name string, nd *sim.Node, pl *pipeline.Pipeline, lr *llr.Stage, now int64,
	toward, sent map[*sim.Port]uint64) NodeBooks {
	w := nd.W
	w.Publish(now)
	snap := w.Published() // read only, before the next step
	nb := NodeBooks{Name: name, Created: snap.Built, Consumed: snap.Consumed, Unbuilt: snap.Drops[dataplane.ReasonNoFrame],
		Dropped: map[string]uint64{}, HeaderOnly: map[string]uint64{}, Held: map[string]uint64{},
		MemFrames: snap.Frames, MemInUse: snap.FramesUse, MemShared: uint64(snap.FramesShared)}
	for k, d := range snap.Drops {
		if d > 0 && dataplane.Reason(k) != dataplane.ReasonNoFrame {
			nb.Dropped[dataplane.Reason(k).String()] += d
		}
		if h := snap.HODrops[k]; h > 0 {
			nb.HeaderOnly[dataplane.Reason(k).String()] += h
		}
	}
	for i, p := range nd.Ports {
		ws := p.WireStats()
		nb.Received += ws.RxFrames + ws.RxRefused + ws.RxNoFrame
		nb.Dropped[dropRing] += ws.RxRefused
		nb.Dropped[dropNoFrame] += ws.RxNoFrame
		nb.Sent += snap.Ports[i].TxPackets
		sent[p] = snap.Ports[i].TxPackets
		nb.Held[heldRing] += uint64(p.Pending())
		e := w.Egress(i)
		_, k := e.ControlDepth()
		for q := 0; q < e.NumQueues(); q++ {
			_, kq := e.Depth(q)
			k += kq
		}
		nb.Held[heldEgress] += uint64(k)
		nb.InFlightTo += toward[p]
	}
	if pl != nil {
		stageBooks(&nb, pl)
	}
	if lr != nil {
		llrBooks(&nb, lr)
	}
	prune(nb.Dropped)
	prune(nb.HeaderOnly)
	prune(nb.Held)
	return nb
}

// stageBooks adds what a switch's impaired ports and NetRT created,
// consumed, dropped and hold (llr's: llrBooks).
func stageBooks(nb *NodeBooks, pl *pipeline.Pipeline) {
	for _, ip := range pl.Impairs {
		st := ip.Counters()
		in := &st.Dir[impair.Ingress]
		nb.Created += in.Duplicated
		for c := impair.Cause(0); c < impair.NumCauses; c++ {
			nb.Dropped[dropImpairIn+c.String()] += in.Caused(c)
		}
		nb.Held[heldImpair] += uint64(ip.HeldBy(impair.Ingress))
		nb.LinkHeld += uint64(ip.HeldBy(impair.Egress))
	}
	if pl.Src != nil {
		s := pl.Src.Stats().Sum()
		// A duplicate held in place is a frame of its own in the books,
		// as a copy is, though the worker built none.
		nb.Created += s.InPlace
		nb.Consumed += s.Acked + s.Expired + s.Evicted
		nb.Held[heldPool] += uint64(s.Frames)
		d := pl.Dst.Stats()
		nb.Held[heldDst] += uint64(d.Frames + d.NAKs)
	}
}

// llrBooks adds what llr's receivers consumed, dropped and hold, on a
// switch or a host's NIC alike (what its sender built, the worker
// counts).
func llrBooks(nb *NodeBooks, lr *llr.Stage) {
	st := lr.Stats()
	for i := range st.Ports {
		p := &st.Ports[i]
		nb.Consumed += p.RxConsumed
		nb.Dropped["llr_malformed"] += p.RxMalformed
		nb.Dropped["llr_duplicate"] += p.Duplicates
		nb.Dropped["llr_buffer_full"] += p.RxBufferFull
		nb.Dropped["llr_resync"] += p.ResyncDropped
		nb.Held[heldLLR] += p.Held - p.Released - p.ResyncDropped
		nb.LLRTxHeld += uint64(p.TxHeld)
	}
}

// linkEnd is a link's two simulated ports, a sending toward b, with the
// names of their nodes and their impaired ports (nil when not wrapped).
type linkEnd struct {
	a, b         *sim.Port
	aName, bName string
	aImp, bImp   *impair.Port
}

func (l linkEnd) reverse() linkEnd {
	return linkEnd{a: l.b, b: l.a, aName: l.bName, bName: l.aName, aImp: l.bImp, bImp: l.aImp}
}

// linkEnds lists every link's ports in topology order, finding each
// node's ports as Build numbered them (in link order).
func (n *Network) linkEnds() []linkEnd {
	t := &n.Topo
	next := make([]int, len(t.Nodes))
	out := make([]linkEnd, 0, len(t.Links))
	end := func(node int) (*sim.Port, string, *impair.Port) {
		pi := next[node]
		next[node]++
		var nd *sim.Node
		var name string
		var imp *impair.Port
		if t.Nodes[node].Role == topo.Switch {
			s := n.Switches[n.byNode[node]]
			nd, name = s.Node, s.Name
			if len(s.Pipe.Impairs) > pi {
				imp = s.Pipe.Impairs[pi]
			}
		} else {
			h := n.Hosts[n.byNode[node]]
			nd, name = h.Node, h.Name
		}
		return nd.Ports[pi], name, imp
	}
	for _, l := range t.Links {
		var e linkEnd
		e.a, e.aName, e.aImp = end(l.A)
		e.b, e.bName, e.bImp = end(l.B)
		out = append(out, e)
	}
	return out
}

// linkBooks draws up the books of direction l.a → l.b, on which a's
// worker sent sent frames.
func linkBooks(l linkEnd, sent uint64) LinkBooks {
	ws := l.b.WireStats()
	lb := LinkBooks{From: l.aName, To: l.bName, Sent: sent, Arrived: ws.RxFrames + ws.RxRefused + ws.RxNoFrame,
		InFlight: uint64(l.a.InFlight())}
	if ip := l.aImp; ip != nil {
		st := ip.Counters()
		eg := &st.Dir[impair.Egress]
		lb.Duplicated = eg.Duplicated
		lb.Held = uint64(ip.HeldBy(impair.Egress))
		for c := impair.Cause(0); c < impair.NumCauses; c++ {
			if k := eg.Caused(c); k > 0 {
				if lb.Lost == nil {
					lb.Lost = map[string]uint64{}
				}
				lb.Lost[c.String()] = k
			}
		}
	}
	return lb
}

// markdown writes the totals in one sentence, and the imbalances.
func (b *Books) markdown(w io.Writer) {
	t := &b.Totals
	list := func(m map[string]uint64) string {
		if len(m) == 0 {
			return ""
		}
		var s []string
		for _, k := range sortedKeys(m) {
			s = append(s, fmt.Sprintf("%s %d", k, m[k]))
		}
		return " (" + strings.Join(s, ", ") + ")"
	}
	dropped := map[string]uint64{}
	addTo(dropped, t.HostDropped)
	addTo(dropped, t.SwitchDropped)
	fmt.Fprintf(w, "Frames: created %d by hosts and %d by switches, %d duplicated on the wire = consumed %d by hosts and %d by switches + dropped %d%s + lost on the wire %d%s + held %d%s + in flight %d",
		t.CreatedByHosts, t.CreatedBySwitches, t.Duplicated, t.ConsumedByHosts, t.ConsumedBySwitches,
		sum(dropped), list(dropped), sum(t.Lost), list(t.Lost), sum(t.Held)+t.LinkHeld, list(t.Held), t.InFlight)
	if b.Balanced {
		fmt.Fprintf(w, ": every frame accounted.\n")
		return
	}
	fmt.Fprintf(w, ".\n\n**The frame books do not balance**:\n\n")
	for _, im := range b.Imbalances {
		fmt.Fprintf(w, "- %s\n", im)
	}
}
