package fabric

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"

	"rocetor/dataplane/sim"
	"rocetor/rocev2"
	"rocetor/tor/topo"
)

// FlowRecord is one flow of a run: when it was posted and when it
// completed, in simulated nanoseconds, and its completion time as its
// sending endpoint measured it. OK is false for a flow that failed or
// had not completed when the run ended. A record read from a flow file
// (ReadFlows) has no host indices (Src and Dst are -1) and no EndNs.
type FlowRecord struct {
	Src, Dst, Size int
	StartNs, EndNs int64
	FCTNs          int64
	OK             bool
	// IdealNs is the flow's FCT alone on an empty fabric (idealFCT):
	// the ns-3 RDMA simulator's standalone_fct.
	IdealNs int64
	// The flow's addresses and UDP ports as its packets carry them:
	// the hosts' addresses, its QP's source port (its ECMP entropy)
	// and RoCEv2's port.
	SrcIP, DstIP netip.Addr
	SPort, DPort uint16
	// Retransmits and Timeouts are those its sending endpoint
	// attributed to it (nic.Observer): the request packets of this
	// message it sent again, and the retransmission timeouts of its QP
	// while it was the QP's oldest unfinished message.
	Retransmits, Timeouts int
	// Path is the switches its packets cross, "-" when not known
	// (FlowPath).
	Path string
}

// flowTally counts, per flow (a WR's ID is its flow's index), what the
// hosts' endpoints attribute to it (nic.Observer). The network has one:
// a flow's counts are its source's alone, whose partition's goroutine
// writes them (Options.Threads).
type flowTally struct{ retx, timeouts []int }

// Retransmitted implements nic.Observer.
func (t *flowTally) Retransmitted(_ uint32, id uint64) {
	if id < uint64(len(t.retx)) {
		t.retx[id]++
	}
}

// TimedOut implements nic.Observer.
func (t *flowTally) TimedOut(_ uint32, id uint64) {
	if id < uint64(len(t.timeouts)) {
		t.timeouts[id]++
	}
}

// records returns the run's flows as records, in the order Run was
// given them.
func (r *runner) records() []FlowRecord {
	n := r.n
	out := make([]FlowRecord, len(r.flows))
	for i := range r.flows {
		f := &r.flows[i]
		src, dst := n.Hosts[f.Src], n.Hosts[f.Dst]
		fr := FlowRecord{Src: f.Src, Dst: f.Dst, Size: f.Size, StartNs: f.posted / sim.Nanosecond,
			EndNs: f.done / sim.Nanosecond, FCTNs: f.fct, OK: f.ok, SrcIP: src.IP, DstIP: dst.IP,
			DPort: rocev2.UDPPortRoCE, Path: "-"}
		if f.started {
			fr.SPort, _ = src.EP.SrcPort(f.qp)
			fr.Path = n.FlowPath(f.Src, f.Dst, f.qp)
		}
		if f.ok {
			fr.IdealNs = n.idealFCT(f.Flow)
		}
		if i < len(n.tally.retx) {
			fr.Retransmits, fr.Timeouts = n.tally.retx[i], n.tally.timeouts[i]
		}
		out[i] = fr
	}
	return out
}

// flowColumns is the number of columns of a flow file's line.
const flowColumns = 12

// WriteFlows writes the flow file: one line per completed flow, in the
// order Run was given the flows, with the ns-3 RDMA simulator's fct.txt
// columns first (source and destination IPv4 address in hex, source and
// destination UDP port, size in bytes, start, FCT and ideal FCT in ns)
// and then rocetor's: retransmitted packets, timeouts, path, transport.
// docs/simulator.md describes the columns.
func (res *Result) WriteFlows(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for i := range res.Records {
		f := &res.Records[i]
		if !f.OK {
			continue
		}
		fmt.Fprintf(bw, "%08x %08x %d %d %d %d %d %d %d %d %s %s\n", ip4(f.SrcIP), ip4(f.DstIP), f.SPort, f.DPort,
			f.Size, f.StartNs, f.FCTNs, f.IdealNs, f.Retransmits, f.Timeouts, cmpDash(f.Path), cmpDash(res.Transport))
	}
	return bw.Flush()
}

func ip4(a netip.Addr) uint32 {
	if !a.Unmap().Is4() {
		return 0
	}
	b := a.Unmap().As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func cmpDash(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n") {
		return "-"
	}
	return s
}

// ErrFlowFile reports a flow file line that does not parse.
var ErrFlowFile = errors.New("fabric: flow file")

// ReadFlows reads a flow file (WriteFlows's format) back as completed
// flows' records and the transport its lines name (the last line's).
// Lines starting with # and blank lines are skipped. A file of the ns-3
// RDMA simulator (its eight columns only) reads too: the retransmission
// and timeout counts are then 0, the path "-" and the transport "".
func ReadFlows(r io.Reader) (recs []FlowRecord, transport string, err error) {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		f := strings.Fields(t)
		if len(f) != 8 && len(f) != flowColumns {
			return nil, "", fmt.Errorf("%w: line %d: %d columns, want 8 or %d", ErrFlowFile, line, len(f), flowColumns)
		}
		var v [10]uint64
		for i := range v[:min(len(f), 10)] {
			base := 10
			if i < 2 {
				base = 16
			}
			if v[i], err = strconv.ParseUint(f[i], base, 64); err != nil {
				return nil, "", fmt.Errorf("%w: line %d: column %d: %w", ErrFlowFile, line, i+1, err)
			}
		}
		if v[0] > 0xffffffff || v[1] > 0xffffffff || v[2] > 0xffff || v[3] > 0xffff {
			return nil, "", fmt.Errorf("%w: line %d: address or port out of range", ErrFlowFile, line)
		}
		fr := FlowRecord{Src: -1, Dst: -1, SrcIP: addr4(v[0]), DstIP: addr4(v[1]), SPort: uint16(v[2]), DPort: uint16(v[3]),
			Size: int(v[4]), StartNs: int64(v[5]), FCTNs: int64(v[6]), IdealNs: int64(v[7]), OK: true, Path: "-"}
		if len(f) == flowColumns {
			fr.Retransmits, fr.Timeouts, fr.Path, transport = int(v[8]), int(v[9]), f[10], f[11]
		}
		recs = append(recs, fr)
	}
	if err := sc.Err(); err != nil {
		return nil, "", err
	}
	return recs, transport, nil
}

func addr4(v uint64) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// FlowPath returns the switches the data packets of a flow from host a
// to host b on a's QP qpn cross, joined by ">" ("tor0>agg1>core2>…"),
// as each switch's forwarding stage picks the next hop for the flow's
// addresses, UDP source port and destination QP (fwd.Stage.FlowHop):
// ECMP's choice per tier. It is "-" when the path is not one per flow —
// a switch on the way sprays or routes adaptively — or the QP is not
// one of a's to b.
func (n *Network) FlowPath(a, b int, qpn uint32) string {
	h, d := n.Hosts[a], n.Hosts[b]
	var rqp uint32
	for _, q := range h.peers[b] {
		if q.local == qpn {
			rqp = q.remote
		}
	}
	sport, err := h.EP.SrcPort(qpn)
	if rqp == 0 || err != nil {
		return "-"
	}
	adj := n.adjacency()
	x, dst := n.hostNode(a), n.hostNode(b)
	var path []string
	for port := 0; len(path) <= len(n.Switches); {
		if port >= len(adj[x]) {
			return "-"
		}
		l := n.Topo.Links[adj[x][port]]
		if x = l.A + l.B - x; x == dst {
			return strings.Join(path, ">")
		}
		if n.Topo.Nodes[x].Role != topo.Switch {
			return "-"
		}
		s := n.Switches[n.byNode[x]]
		p, ok := s.Pipe.Fwd.FlowHop(h.IP, d.IP, sport, rqp)
		if !ok {
			return "-"
		}
		path, port = append(path, s.Name), int(p)
	}
	return "-"
}
