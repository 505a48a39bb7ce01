package main

import (
	"fmt"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"rocetor/tor/fabric"
)

// writePlots renders a run's figures into dir: the FCT slowdown per
// size bucket (p50 and p99) and the switches' buffered bytes over time.
func writePlots(dir string, r *fabric.Result) error {
	if len(r.FCT) > 0 {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("FCT slowdown, %s, %s", r.Topology, r.Transport)
		p.X.Label.Text = "flow size bucket"
		p.Y.Label.Text = "slowdown (FCT / ideal)"
		p.Add(plotter.NewGrid())
		var names []string
		var p50, p99 plotter.XYs
		for i, b := range r.FCT {
			names = append(names, b.Range)
			p50 = append(p50, plotter.XY{X: float64(i), Y: b.P50Slowdown})
			p99 = append(p99, plotter.XY{X: float64(i), Y: b.P99Slowdown})
		}
		if err := plotutil.AddLinePoints(p, "p50", p50, "p99", p99); err != nil {
			return err
		}
		p.NominalX(names...)
		p.Legend.Top, p.Legend.Left = true, true
		if err := p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "slowdown.png")); err != nil {
			return err
		}
	}
	if len(r.Buffer.Series) > 1 {
		p := plot.New()
		p.Title.Text = "switch buffers"
		p.X.Label.Text = "simulated time (µs)"
		p.Y.Label.Text = "bytes queued"
		p.Add(plotter.NewGrid())
		var all, one plotter.XYs
		for _, s := range r.Buffer.Series {
			all = append(all, plotter.XY{X: float64(s.T) / 1e3, Y: float64(s.Bytes)})
			one = append(one, plotter.XY{X: float64(s.T) / 1e3, Y: float64(s.Max)})
		}
		if err := plotutil.AddLines(p, "all switches", all, "fullest switch", one); err != nil {
			return err
		}
		p.Legend.Top, p.Legend.Left = true, false
		if err := p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, "buffers.png")); err != nil {
			return err
		}
	}
	return nil
}
