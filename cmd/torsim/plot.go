package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"rocetor/tor/fabric"
	"rocetor/tor/lab"
	"rocetor/tor/sweep"
)

// writePlots renders a run's figures into dir with the lab's plotter:
// the FCT slowdown per size bucket (p50 and p99) and the switches'
// buffered bytes over time.
func writePlots(dir string, r *fabric.Result) error {
	var specs []lab.PlotSpec
	if len(r.FCT) > 0 {
		var names []string
		var p50, p99 []lab.XY
		for _, b := range r.FCT {
			if b.Flows == 0 {
				continue
			}
			x := float64(len(names))
			names = append(names, b.Range)
			p50 = append(p50, lab.XY{X: x, Y: b.P50Slowdown})
			p99 = append(p99, lab.XY{X: x, Y: b.P99Slowdown})
		}
		specs = append(specs, lab.PlotSpec{File: "slowdown.png", Title: fmt.Sprintf("FCT slowdown, %s, %s", r.Topology, r.Transport),
			XLabel: "flow size bucket", YLabel: "slowdown (FCT / ideal)", XNames: names,
			Lines: func(*lab.Group) []lab.Line { return []lab.Line{{Name: "p50", Points: p50}, {Name: "p99", Points: p99}} }})
	}
	if len(r.Buffer.Series) > 1 {
		var all, one []lab.XY
		for _, s := range r.Buffer.Series {
			all = append(all, lab.XY{X: float64(s.T) / 1e3, Y: float64(s.Bytes)})
			one = append(one, lab.XY{X: float64(s.T) / 1e3, Y: float64(s.Max)})
		}
		specs = append(specs, lab.PlotSpec{File: "buffers.png", Title: "switch buffers", XLabel: "simulated time (µs)", YLabel: "bytes queued",
			Lines: func(*lab.Group) []lab.Line {
				return []lab.Line{{Name: "all switches", Points: all}, {Name: "fullest switch", Points: one}}
			}})
	}
	_, err := lab.WritePlots(dir, specs, []lab.Group{{}})
	return err
}

// mergedCell is one cell's result as merge read it.
type mergedCell struct {
	name string // its directory, cell-N
	res  *fabric.Result
}

// writeMergePlots draws the cross-cell figures into dir with the lab's
// plotter: the p99 FCT slowdown per size bin, one line per cell
// (cells-slowdown.png), and the p99 slowdown of all flows against the
// offered load (--load), one line per set of cells that differ in
// nothing else (p99-vs-load.png; drawn when the cells have two loads or
// more). Lines are named by the flags in which their cells differ.
func writeMergePlots(dir string, cells []mergedCell) error {
	cmds := make([]string, len(cells))
	for i, c := range cells {
		cmds[i] = c.res.Command
	}
	labels := sweep.Labels(cmds, "out", "quiet", "cell", "sweep")
	var names []string
	var bySize []lab.Line
	for i, c := range cells {
		var pts []lab.XY
		for bi, b := range c.res.FCT {
			if bi >= len(names) {
				names = append(names, b.Range)
			}
			if b.Flows > 0 {
				pts = append(pts, lab.XY{X: float64(bi), Y: b.P99Slowdown})
			}
		}
		bySize = append(bySize, lab.Line{Name: strings.TrimSpace(c.name + " " + labels[i]), Points: pts})
	}
	lines := func(l []lab.Line) func(*lab.Group) []lab.Line { return func(*lab.Group) []lab.Line { return l } }
	specs := []lab.PlotSpec{{File: "cells-slowdown.png", Title: "p99 FCT slowdown by flow size, per cell",
		XLabel: "flow size bin", YLabel: "p99 slowdown (FCT / ideal)", XNames: names, Lines: lines(bySize)}}
	// Cells that differ only in --load make one line.
	series := sweep.Labels(cmds, "out", "quiet", "cell", "sweep", "load")
	byLoad := map[string][]lab.XY{}
	var order []string
	loads := map[float64]bool{}
	for i, c := range cells {
		load, ok := sweep.FlagValue(c.res.Command, "load")
		if !ok || c.res.All.Flows == 0 {
			continue
		}
		if _, seen := byLoad[series[i]]; !seen {
			order = append(order, series[i])
		}
		loads[load] = true
		byLoad[series[i]] = append(byLoad[series[i]], lab.XY{X: load, Y: c.res.All.P99Slowdown})
	}
	if len(loads) > 1 {
		var ls []lab.Line
		for _, s := range order {
			pts := byLoad[s]
			slices.SortFunc(pts, func(a, b lab.XY) int { return cmp.Compare(a.X, b.X) })
			name := s
			if name == "" {
				name = "cells with the flags all share"
			}
			ls = append(ls, lab.Line{Name: name, Points: pts})
		}
		specs = append(specs, lab.PlotSpec{File: "p99-vs-load.png", Title: "p99 FCT slowdown against offered load",
			XLabel: "offered load (--load)", YLabel: "p99 slowdown, all flows", Lines: lines(ls)})
	}
	_, err := lab.WritePlots(dir, specs, []lab.Group{{}})
	return err
}
