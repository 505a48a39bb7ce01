package lab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"rocetor/dataplane"
	"rocetor/tor/fabric"
)

// Per-flow dumps, for finding which flows set a cell's percentiles and
// where their time went (docs/experiments.md, dcp-fabric's "Which
// flows set the P95"): the records keep each cell's statistics only.

// flowsFile names the dump of the cell at pt, seed.
func flowsFile(pt map[string]string, seed int) string {
	return fmt.Sprintf("%s-%s-%s-%s-seed%d.tsv", pt["workload"], pt["load"], pt["scheme"], pt["cc"], seed)
}

// writeFlows is a keep function that writes r's flows to path, one
// line each, in the order the workload made them (a flow's line number
// is the same in every scheme's cell of a seed). A failed write is
// reported on FabricRun.Extra as flows_dump_failed = 1, not as an
// error: the cell's figures do not depend on it.
func writeFlows(path string) func(*fabric.Result, *FabricRun) {
	return func(r *fabric.Result, fr *FabricRun) {
		if err := dumpFlows(path, r.Records); err != nil {
			if fr.Extra == nil {
				fr.Extra = map[string]float64{}
			}
			fr.Extra["flows_dump_failed"] = 1
		}
	}
}

func dumpFlows(path string, recs []fabric.FlowRecord) error {
	f, err := createFile(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "flow\tsrc\tdst\tsize\tstart_ns\tfct_ns\tideal_ns\tslowdown\tok\tretransmits\ttimeouts\tsport\tpath")
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(w, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.4f\t%t\t%d\t%d\t%d\t%s\n", i, r.Src, r.Dst, r.Size, r.StartNs, r.FCTNs, r.IdealNs,
			r.Slowdown(), r.OK, r.Retransmits, r.Timeouts, r.SPort, r.Path)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chainKeep returns a keep function running a (if not nil), then b.
func chainKeep(a, b func(*fabric.Result, *FabricRun)) func(*fabric.Result, *FabricRun) {
	if a == nil {
		return b
	}
	return func(r *fabric.Result, fr *FabricRun) {
		a(r, fr)
		b(r, fr)
	}
}

// bytesFlagOK reports whether s reads as a byte count with units
// (dataplane.Bytes), above 0.
func bytesFlagOK(s string) bool {
	var b dataplane.Bytes
	return b.UnmarshalText([]byte(s)) == nil && b > 0
}

// createFile creates path, and its directory if missing: a --flows
// directory that does not exist yet would otherwise fail the dump only
// after the cell's whole run.
func createFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return os.Create(path)
}
