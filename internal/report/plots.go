package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// series is one line of a plot.
type series struct {
	name   string
	xs, ys []float64
}

// level is a horizontal line drawn across a plot, such as a link's capacity.
type level struct {
	name string
	y    float64
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// Plot sizes: two plots side by side fit a laptop screen.
const (
	plotW = 14 * vg.Centimeter
	plotH = 8 * vg.Centimeter
)

// linePlot draws series (with markers when points, as for a sweep) and
// dashed levels, and returns the plot as inline SVG.
func linePlot(title, xLabel, yLabel string, lines []series, levels []level, points bool) (template.HTML, error) {
	return markedPlot(title, xLabel, yLabel, lines, levels, points, nil)
}

// mark is a moment drawn across a time plot: a change to the links,
// numbered as the report's list of changes numbers it.
type mark struct {
	x     float64
	label string
}

var markColor = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}

// markedPlot is linePlot with marks: vertical dotted lines, labelled at the top.
func markedPlot(title, xLabel, yLabel string, lines []series, levels []level, points bool, marks []mark) (template.HTML, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	// The legend goes below the plot, never over its data.
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	entries := 0
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for i, s := range lines {
		if len(s.xs) == 0 {
			continue
		}
		l, err := addSeries(p, s, palette[i%len(palette)], points)
		if err != nil {
			return "", err
		}
		xmin, xmax = math.Min(xmin, slices.Min(s.xs)), math.Max(xmax, slices.Max(s.xs))
		if s.name != "" {
			legend.Add(s.name, l)
			entries++
		}
	}
	if math.IsInf(xmin, 1) {
		return "", nil
	}
	if xmin == xmax {
		xmin, xmax = xmin-0.5, xmax+0.5
	}
	// A margin so that the first and last points and tick labels show whole.
	pad := (xmax - xmin) * 0.04
	p.X.Min, p.X.Max = xmin-pad, xmax+pad
	for i, lv := range levels {
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: lv.y}, {X: xmax, Y: lv.y}})
		if err != nil {
			return "", err
		}
		l.Color = palette[(len(lines)+i)%len(palette)]
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		l.Width = vg.Points(1)
		p.Add(l)
		legend.Add(lv.name, l)
		entries++
		p.Y.Max = math.Max(p.Y.Max, lv.y*1.08)
	}
	if len(marks) > 0 {
		top := p.Y.Max * 1.1
		labels := plotter.XYLabels{}
		for _, m := range marks {
			if m.x < xmin-pad || m.x > xmax+pad {
				continue
			}
			l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: top}})
			if err != nil {
				return "", err
			}
			l.Color, l.Width, l.Dashes = markColor, vg.Points(0.8), []vg.Length{vg.Points(1.5), vg.Points(1.5)}
			p.Add(l)
			labels.XYs = append(labels.XYs, plotter.XY{X: m.x, Y: top})
			labels.Labels = append(labels.Labels, m.label)
		}
		if len(labels.XYs) > 0 {
			ls, err := plotter.NewLabels(labels)
			if err != nil {
				return "", err
			}
			for i := range ls.TextStyle {
				ls.TextStyle[i].Color = markColor
				ls.TextStyle[i].XAlign = draw.XCenter
			}
			p.Add(ls)
			p.Y.Max = top * 1.06
		}
	}
	return svg(p, legend, entries)
}

// addSeries draws one series as a line, with markers when points, and
// returns the line for the legend.
func addSeries(p *plot.Plot, s series, c color.Color, points bool) (*plotter.Line, error) {
	xys := make(plotter.XYs, len(s.xs))
	for j := range s.xs {
		xys[j].X, xys[j].Y = s.xs[j], s.ys[j]
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	p.Add(l)
	if points {
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, err
		}
		sc.Color = c
		sc.Shape = draw.CircleGlyph{}
		p.Add(sc)
	}
	return l, nil
}

// histogram draws the distribution of values.
func histogram(title, xLabel string, values []float64) (template.HTML, error) {
	if len(values) < 2 {
		return "", nil
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = "count"
	bins := int(math.Min(40, math.Max(5, math.Sqrt(float64(len(values))))))
	h, err := plotter.NewHist(plotter.Values(values), bins)
	if err != nil {
		return "", err
	}
	h.FillColor = palette[0]
	h.LineStyle.Color = color.White
	p.Add(h)
	return svg(p, plot.Legend{}, 0)
}

// legendRow is the height of one legend entry below a plot.
const legendRow = 4.6 * vg.Millimeter

// svg renders a plot as SVG to inline in HTML, with its legend of entries
// rows in a strip of its own below it, so that no legend covers the data.
// Fonts are named, not embedded, to keep the report small.
func svg(p *plot.Plot, legend plot.Legend, entries int) (template.HTML, error) {
	strip := vg.Length(0)
	if entries > 0 {
		strip = vg.Length(entries)*legendRow + 2*vg.Millimeter
	}
	c := vgsvg.NewWith(vgsvg.UseWH(plotW, plotH+strip), vgsvg.EmbedFonts(false))
	whole := draw.New(c)
	p.Draw(draw.Crop(whole, 0, 0, strip, 0))
	if entries > 0 {
		legend.XOffs = 12 * vg.Millimeter
		legend.Draw(draw.Crop(whole, 0, 0, 0, -plotH))
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("drawing %q: %w", p.Title.Text, err)
	}
	s := b.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:] // drop the XML prologue: the SVG sits inside HTML
	}
	return template.HTML(s), nil
}

// downsample averages a time series into at most n buckets, as MRTG's
// longer graphs average 5-minute samples.
func downsample(xs, ys []float64, n int) ([]float64, []float64) {
	if len(xs) <= n {
		return xs, ys
	}
	per := int(math.Ceil(float64(len(xs)) / float64(n)))
	var ox, oy []float64
	for i := 0; i < len(xs); i += per {
		end := min(len(xs), i+per)
		sx, sy := 0.0, 0.0
		for j := i; j < end; j++ {
			sx += xs[j]
			sy += ys[j]
		}
		ox = append(ox, sx/float64(end-i))
		oy = append(oy, sy/float64(end-i))
	}
	return ox, oy
}
