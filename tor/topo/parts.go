package topo

// Part is a node's place in its shape, finer than its role: what
// experiments find nodes by. The testbed's parts have the names of
// tor/lab's node roles.
type Part string

// Parts.
const (
	Sender   Part = "sender"   // a host of a testbed shape behind tor1
	Receiver Part = "receiver" // a host of a testbed shape behind tor2
	Server   Part = "host"     // a host of a leaf-spine or a fat tree
	ToR      Part = "tor"      // a switch hosts hang off: tor1, tor2, a leaf, a fat tree's torP-I
	Core     Part = "core"     // the testbed's core switches, a fat tree's top tier
	Agg      Part = "agg"      // a fat tree's aggregation switch
	Spine    Part = "spine"    // a leaf-spine's spine
)

// ByPart returns the indices of the nodes of this part, in order.
func (t *Topology) ByPart(p Part) []int {
	var out []int
	for i, n := range t.Nodes {
		if n.Part == p {
			out = append(out, i)
		}
	}
	return out
}

// Index returns the index of the named node, -1 if there is none.
func (t *Topology) Index(name string) int {
	for i, n := range t.Nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// Peer returns the node at the other end of link l from node n.
func (t *Topology) Peer(l, n int) int {
	if t.Links[l].A == n {
		return t.Links[l].B
	}
	return t.Links[l].A
}

// Bottleneck returns the port where the senders' flows meet on their
// way to the receivers: the first sender's switch (tor1) and its first
// link toward another switch (toward tor2 on the dumbbell and the
// link, core on the chain, core1 on multipath). ok is false in a shape
// without senders (leaf-spine, fat tree).
func (t *Topology) Bottleneck() (node, link int, ok bool) {
	senders := t.ByPart(Sender)
	if len(senders) == 0 {
		return -1, -1, false
	}
	node = -1
	for li, l := range t.Links {
		if l.A == senders[0] || l.B == senders[0] {
			node = t.Peer(li, senders[0])
			break
		}
	}
	if node < 0 {
		return -1, -1, false
	}
	for li, l := range t.Links {
		if (l.A == node || l.B == node) && t.Nodes[t.Peer(li, node)].Role == Switch {
			return node, li, true
		}
	}
	return -1, -1, false
}
