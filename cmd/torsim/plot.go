package main

import (
	"fmt"

	"rocetor/tor/fabric"
	"rocetor/tor/lab"
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
