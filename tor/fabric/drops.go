package fabric

import (
	"fmt"
	"io"
	"net/netip"

	"rocetor/dataplane"
	"rocetor/dataplane/sim"
	"rocetor/rocev2"
)

// dropHeader, a drop log's first line, names its columns.
const dropHeader = "# time_ns switch in out reason src dst qp psn opcode bytes"

// dropLogger returns a switch's drop hook writing one line per dropped
// frame to w: when (ns), the switch, the ports it came in by and was
// bound for ("-" where the worker does not know: a frame flushed from
// a queue), the reason it is counted under, and for a RoCEv2 frame its
// source and destination address, destination QP, PSN and opcode ("-"
// for any other frame), and its length. Write errors are w's to keep
// (a bufio.Writer's Flush returns the first).
func dropLogger(w io.Writer, sw string, ports []*sim.Port, clock func() int64, cls rocev2.Classifier) func([]byte, uint16, uint16, dataplane.Reason) {
	name := func(i uint16) string {
		if int(i) < len(ports) {
			return ports[i].Name()
		}
		return "-"
	}
	var m rocev2.Meta
	return func(f []byte, in, out uint16, r dataplane.Reason) {
		cls.Classify(f, &m)
		if m.Kind != rocev2.KindRoCE {
			fmt.Fprintf(w, "%d %s %s %s %s - - - - - %d\n", clock(), sw, name(in), name(out), r, len(f))
			return
		}
		src, dst := netip.AddrFrom16(m.Flow.Src).Unmap(), netip.AddrFrom16(m.Flow.Dst).Unmap()
		fmt.Fprintf(w, "%d %s %s %s %s %s %s %d %d %s %d\n", clock(), sw, name(in), name(out), r,
			src, dst, m.Flow.QP, m.PSN, m.Opcode, len(f))
	}
}
