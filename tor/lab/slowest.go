package lab

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"rocetor/tor/fabric"
)

// SlowFlow is one of a cell's slowest flows: which flow of the cell's
// workload (its index), its size, FCT and ideal FCT, and the timeouts
// and retransmissions its sender attributed to it (fabric.FlowRecord).
// A few of them per size bin are enough to tell whether a bin's mean or
// p99 is set by a handful of flows and what befell those: a record
// keeps no per-flow FCTs otherwise.
type SlowFlow struct {
	Bin         string  `json:"bin"`
	Flow        int     `json:"flow"`
	Size        int     `json:"size"`
	FCTNs       int64   `json:"fct_ns"`
	IdealNs     int64   `json:"ideal_ns"`
	Slowdown    float64 `json:"slowdown"`
	Timeouts    int     `json:"timeouts"`
	Retransmits int     `json:"retransmits"`
}

// slowestPerBin is how many flows of each size bin Slowest keeps.
const slowestPerBin = 3

// slowest returns the n completed flows of each of fabric.DefaultBins'
// size bins with the largest slowdowns, slowest first (ties: the
// earlier flow first, so the list is deterministic).
func slowest(recs []fabric.FlowRecord, n int) []SlowFlow {
	bins := fabric.DefaultBins
	by := make([][]SlowFlow, len(bins)+1)
	for i := range recs {
		r := &recs[i]
		if !r.OK {
			continue
		}
		b, _ := slices.BinarySearch(bins, r.Size+1)
		by[b] = append(by[b], SlowFlow{Bin: binName(b), Flow: i, Size: r.Size, FCTNs: r.FCTNs, IdealNs: r.IdealNs,
			Slowdown: r.Slowdown(), Timeouts: r.Timeouts, Retransmits: r.Retransmits})
	}
	var out []SlowFlow
	for _, fs := range by {
		slices.SortStableFunc(fs, func(a, b SlowFlow) int { return cmp.Compare(b.Slowdown, a.Slowdown) })
		out = append(out, fs[:min(n, len(fs))]...)
	}
	return out
}

// binName names size bin b of fabric.DefaultBins: "<10000",
// "10000-100000", …, ">=10000000".
func binName(b int) string {
	bins := fabric.DefaultBins
	switch {
	case b == 0:
		return fmt.Sprintf("<%d", bins[0])
	case b == len(bins):
		return fmt.Sprintf(">=%d", bins[b-1])
	}
	return fmt.Sprintf("%d-%d", bins[b-1], bins[b])
}

// timeoutClasses splits a cell's flows by whether their sender timed
// out while the flow was its QP's oldest (FabricRun.Classes: "timed
// out", "no timeout").
func timeoutClasses(recs []fabric.FlowRecord) map[string][]fabric.FlowRecord {
	by := map[string][]fabric.FlowRecord{}
	for _, r := range recs {
		c := "no timeout"
		if r.Timeouts > 0 {
			c = "timed out"
		}
		by[c] = append(by[c], r)
	}
	return by
}

// writeFlowFile writes r's flow file (fabric.Result.WriteFlows) to
// dir (made if missing), named after the cell's point and seed.
func writeFlowFile(dir string, r *fabric.Result, point map[string]string, seed int) error {
	keys := make([]string, 0, len(point))
	for k := range point {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	name := fmt.Sprintf("seed%d", seed)
	for _, k := range keys {
		if v := point[k]; v != "-" {
			name += "-" + strings.ReplaceAll(v, "/", "_")
		}
	}
	f, err := createFile(filepath.Join(dir, name+".txt"))
	if err != nil {
		return err
	}
	if err := r.WriteFlows(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
