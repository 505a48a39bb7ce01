package lab

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotSpec is one plot of an experiment: a line per series, a point per
// group.
type PlotSpec struct {
	File   string // PNG file name inside the --plot folder
	Title  string
	XLabel string
	YLabel string
	X, Y   func(*Group) float64 // NaN leaves the point out
	Series func(*Group) string  // one line per distinct value
	Only   func(*Group) bool    // the groups plotted; nil: all
	// Prepare, when set, sees every group before X and Y are asked for
	// any: a spec whose points depend on other groups (a goodput as a
	// share of the lossless run's) reads them here.
	Prepare func(groups []Group)
	// LegendBottom puts the legend bottom left, for lines that fall to
	// the right.
	LegendBottom bool
	// XNames, when set, names the x values 0, 1, … (categories such
	// as flow size buckets) instead of numbering the axis.
	XNames []string
	// Lines, when set, replaces X and Y: each group gives whole lines
	// (time series), named by Series(g) and the line's name, drawn
	// without point glyphs. A Shared line (a threshold) is drawn once
	// under its own name, whichever groups give it.
	Lines func(*Group) []Line
	// Bars draws a group of bars per XNames category, a bar per series,
	// instead of lines (categories that are not a scale: schemes).
	// LogY puts the y axis on a log scale from 1 (slowdowns, which are
	// at least 1), the bars rising from 1.
	Bars, LogY bool
	// Optional skips the plot, without an error, when no group has
	// anything for it: data only one backend records (the simulator's
	// DCQCN rate trace).
	Optional bool
}

// Line is one line of a PlotSpec's Lines.
type Line struct {
	Name   string
	Points []XY
	Shared bool
}

// WritePlots renders each spec as a PNG into dir and returns the files.
func WritePlots(dir string, specs []PlotSpec, groups []Group) ([]string, error) {
	var files []string
	var errs []error
	for _, s := range specs {
		if s.Prepare != nil {
			s.Prepare(groups)
		}
		path := filepath.Join(dir, s.File)
		if names, _ := seriesPoints(s, groups); s.Optional && len(names) == 0 {
			continue
		}
		if err := renderPlot(path, s, groups); err != nil {
			errs = append(errs, fmt.Errorf("plot %s: %w", s.File, err))
			continue
		}
		files = append(files, path)
	}
	return files, errors.Join(errs...)
}

// seriesPoints returns each series' points sorted by x, with the series
// in order of first appearance.
func seriesPoints(s PlotSpec, groups []Group) (names []string, pts map[string]plotter.XYs) {
	pts = map[string]plotter.XYs{}
	for i := range groups {
		g := &groups[i]
		if s.Only != nil && !s.Only(g) {
			continue
		}
		if s.Lines != nil {
			for _, l := range s.Lines(g) {
				name := l.Name
				if !l.Shared && s.Series != nil {
					name = strings.TrimSpace(s.Series(g) + " " + l.Name)
				}
				if _, ok := pts[name]; ok && l.Shared {
					continue
				}
				if _, ok := pts[name]; !ok {
					names = append(names, name)
					pts[name] = plotter.XYs{}
				}
				for _, p := range l.Points {
					if !math.IsNaN(p.X) && !math.IsNaN(p.Y) && !math.IsInf(p.X, 0) && !math.IsInf(p.Y, 0) {
						pts[name] = append(pts[name], plotter.XY{X: p.X, Y: p.Y})
					}
				}
			}
			continue
		}
		x, y := s.X(g), s.Y(g)
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0) {
			continue
		}
		name := s.Series(g)
		if _, ok := pts[name]; !ok {
			names = append(names, name)
		}
		pts[name] = append(pts[name], plotter.XY{X: x, Y: y})
	}
	for _, n := range names {
		sort.Slice(pts[n], func(i, j int) bool { return pts[n][i].X < pts[n][j].X })
	}
	return names, pts
}

func renderPlot(path string, s PlotSpec, groups []Group) error {
	p := plot.New()
	p.Title.Text = s.Title
	p.X.Label.Text = s.XLabel
	p.Y.Label.Text = s.YLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	names, pts := seriesPoints(s, groups)
	if len(names) == 0 {
		return errors.New("no successful run to plot")
	}
	if s.Bars {
		if err := addBars(p, s, names, pts); err != nil {
			return err
		}
		names = nil
	}
	for i, n := range names {
		if s.Lines != nil {
			if len(pts[n]) == 0 {
				continue
			}
			l, err := plotter.NewLine(pts[n])
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(i)
			l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
			p.Add(l)
			p.Legend.Add(n, l)
			continue
		}
		l, sc, err := plotter.NewLinePoints(pts[n])
		if err != nil {
			return err
		}
		c := plotutil.Color(i)
		l.Color = c
		sc.Color = c
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(n, l, sc)
	}
	// Top left: the lines of these plots mostly rise to the right. Time
	// series start at the left: top right.
	p.Legend.Top, p.Legend.Left = !s.LegendBottom, s.Lines == nil || s.XNames != nil
	if s.XNames != nil {
		p.NominalX(s.XNames...)
	}
	p.Legend.TextStyle.Color = color.Black
	return p.Save(6*vg.Inch, 4*vg.Inch, path)
}

// addBars adds a bar chart per series to p: at each category x = 0, 1,
// … of s.XNames, the series' bars side by side. With LogY the bars
// stand on an invisible one, so that they rise from 1.
func addBars(p *plot.Plot, s PlotSpec, names []string, pts map[string]plotter.XYs) error {
	w := vg.Points(min(12, 300/float64(max(1, len(names)*len(s.XNames)))))
	var base *plotter.BarChart
	floor := 0.0
	if s.LogY {
		floor = 1
		p.Y.Scale, p.Y.Tick.Marker, p.Y.Min = plot.LogScale{}, plot.LogTicks{}, 1
		ones := make(plotter.Values, len(s.XNames))
		for i := range ones {
			ones[i] = 1
		}
		var err error
		if base, err = plotter.NewBarChart(ones, w); err != nil {
			return err
		}
		// Not added to the plot: the bars only stand on it.
	}
	for i, n := range names {
		v := make(plotter.Values, len(s.XNames))
		for _, pt := range pts[n] {
			if k := int(pt.X); k >= 0 && k < len(v) {
				v[k] = max(pt.Y-floor, 0)
			}
		}
		b, err := plotter.NewBarChart(v, w)
		if err != nil {
			return err
		}
		if base != nil {
			b.StackOn(base) // its bottom; StackOn copies the base's offset, set below
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(float64(i)-float64(len(names)-1)/2)
		p.Add(b)
		p.Legend.Add(n, b)
	}
	return nil
}
