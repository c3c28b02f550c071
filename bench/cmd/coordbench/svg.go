package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/coordelect/coordelect/bench/internal/benchstat"
)

// The report's plots, written as SVG by hand: a log-scaled value axis,
// either categories (a box and every sample per category) or a log-scaled
// x axis (one line per series). The output depends only on the data, and
// numbers are printed with fixed precision, so the same data gives the
// same bytes.

// Plot geometry, in SVG user units (pixels).
const (
	plotHeight = 340
	plotLeft   = 70  // room for the value axis' labels
	plotRight  = 150 // room for a legend
	plotTop    = 40
	plotBottom = 60
	fontStyle  = `font-family="sans-serif" font-size="12"`
)

// plotColors are the series' colours, in order.
var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// logAxis maps values in [lo, hi] (both > 0) to [p0, p1] logarithmically.
type logAxis struct{ lo, hi, p0, p1 float64 }

// newLogAxis widens [min, max] to the 1-2-5 values around it.
func newLogAxis(min, max, p0, p1 float64) logAxis {
	lo, hi := niceBelow(min), niceAbove(max)
	if hi <= lo {
		hi = niceAbove(lo * 1.5)
	}
	return logAxis{lo, hi, p0, p1}
}

func (a logAxis) at(v float64) float64 {
	return a.p0 + (a.p1-a.p0)*(math.Log10(v)-math.Log10(a.lo))/(math.Log10(a.hi)-math.Log10(a.lo))
}

// ticks are the 1-2-5 values in the axis' range.
func (a logAxis) ticks() []float64 {
	var out []float64
	for e := math.Floor(math.Log10(a.lo)); e <= math.Ceil(math.Log10(a.hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow10(int(e))
			if v >= a.lo*0.999 && v <= a.hi*1.001 {
				out = append(out, v)
			}
		}
	}
	return out
}

// niceBelow is the largest 1-2-5 value at or below v; niceAbove the
// smallest at or above it.
func niceBelow(v float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{5, 2, 1} {
		if m*e <= v*1.0001 {
			return m * e
		}
	}
	return e
}

func niceAbove(v float64) float64 {
	e := math.Pow10(int(math.Floor(math.Log10(v))))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*0.9999 {
			return m * e
		}
	}
	return 10 * e
}

// svgDoc accumulates an SVG document.
type svgDoc struct {
	b    strings.Builder
	w, h int
}

func newSVG(w, h int, title string) *svgDoc {
	d := &svgDoc{w: w, h: h}
	fmt.Fprintf(&d.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s>`+"\n", w, h, w, h, fontStyle)
	fmt.Fprintf(&d.b, "<title>%s</title>\n", xmlEscape(title))
	fmt.Fprintf(&d.b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	d.text(float64(w)/2, 22, "middle", "bold", title)
	return d
}

func (d *svgDoc) line(x1, y1, x2, y2 float64, stroke string, width float64, dash bool) {
	extra := ""
	if dash {
		extra = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(&d.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`+"\n",
		num(x1), num(y1), num(x2), num(y2), stroke, num(width), extra)
}

func (d *svgDoc) text(x, y float64, anchor, weight, s string) {
	w := ""
	if weight != "" {
		w = ` font-weight="` + weight + `"`
	}
	fmt.Fprintf(&d.b, `<text x="%s" y="%s" text-anchor="%s"%s>%s</text>`+"\n", num(x), num(y), anchor, w, xmlEscape(s))
}

func (d *svgDoc) circle(x, y, r float64, fill string, opacity float64) {
	fmt.Fprintf(&d.b, `<circle cx="%s" cy="%s" r="%s" fill="%s" fill-opacity="%s"/>`+"\n", num(x), num(y), num(r), fill, num(opacity))
}

func (d *svgDoc) rect(x, y, w, h float64, stroke, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%s" y="%s" width="%s" height="%s" stroke="%s" fill="%s"/>`+"\n", num(x), num(y), num(w), num(h), stroke, fill)
}

func (d *svgDoc) polyline(pts [][2]float64, stroke string) {
	var s []string
	for _, p := range pts {
		s = append(s, num(p[0])+","+num(p[1]))
	}
	fmt.Fprintf(&d.b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(s, " "), stroke)
}

// valueAxis draws the log-scaled value axis with its grid and label.
func (d *svgDoc) valueAxis(a logAxis, x0, x1 float64, label string) {
	for _, v := range a.ticks() {
		y := a.at(v)
		d.line(x0, y, x1, y, "#dddddd", 1, false)
		d.text(x0-6, y+4, "end", "", tickLabel(v))
	}
	d.line(x0, a.p0, x0, a.p1, "black", 1, false)
	yMid := (a.p0 + a.p1) / 2
	fmt.Fprintf(&d.b, `<text x="16" y="%s" text-anchor="middle" transform="rotate(-90 16 %s)">%s</text>`+"\n", num(yMid), num(yMid), xmlEscape(label))
}

func (d *svgDoc) String() string { return d.b.String() + "</svg>\n" }

// num prints a coordinate with one decimal, without a trailing ".0".
func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// tickLabel prints a tick value: 1 000 as "1000", 0.5 as "0.5".
func tickLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func xmlEscape(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

// sampleSet is one category of a distribution plot.
type sampleSet struct {
	label string
	ms    []float64
}

// distributionSVG draws, per set, a box (quartiles and median, nearest
// rank as in the tables) with whiskers
// to the extremes and every sample beside it, on a log time axis.
func distributionSVG(title, ylabel string, sets []sampleSet) string {
	slot := 170.0
	w := plotLeft + int(slot)*len(sets) + 30
	d := newSVG(w, plotHeight, title)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range sets {
		for _, v := range s.ms {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	a := newLogAxis(lo, hi, plotHeight-plotBottom, plotTop)
	d.valueAxis(a, plotLeft, float64(w-20), ylabel)
	for i, s := range sets {
		sorted := slices.Sorted(slices.Values(s.ms))
		cx := plotLeft + slot*(float64(i)+0.5)
		q1, q2, q3 := benchstat.NearestRank(sorted, .25), benchstat.NearestRank(sorted, .5), benchstat.NearestRank(sorted, .75)
		bx := cx - 45
		d.line(bx+17, a.at(sorted[0]), bx+17, a.at(sorted[len(sorted)-1]), "black", 1, false)
		d.rect(bx, a.at(q3), 34, math.Max(a.at(q1)-a.at(q3), 1), "black", "#e8eef7")
		d.line(bx, a.at(q2), bx+34, a.at(q2), "black", 2, false)
		for j, v := range s.ms {
			jitter := float64((j*7)%11) * 3 // deterministic spread, no overlap in rows
			d.circle(cx+5+jitter, a.at(v), 2.5, plotColors[i%len(plotColors)], 0.6)
		}
		d.text(cx, plotHeight-plotBottom+18, "middle", "", s.label)
		d.text(cx, plotHeight-plotBottom+34, "middle", "", fmt.Sprintf("p50 %s ms, %d rounds", fmtMS(q2), len(s.ms)))
	}
	return d.String()
}

// series is one line of a line plot: y by x, both > 0.
type series struct {
	label string
	xs    []float64
	ys    []float64
	// dashed draws a reference line, not a measurement.
	dashed bool
}

// linesSVG draws the series against a log x axis and a log y axis, with
// a legend on the right.
func linesSVG(title, xlabel, ylabel string, ss []series) string {
	w := plotLeft + 420 + plotRight
	d := newSVG(w, plotHeight, title)
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for i := range s.xs {
			xlo, xhi = math.Min(xlo, s.xs[i]), math.Max(xhi, s.xs[i])
			ylo, yhi = math.Min(ylo, s.ys[i]), math.Max(yhi, s.ys[i])
		}
	}
	ax := newLogAxis(xlo, xhi, plotLeft+20, float64(w-plotRight-20))
	ay := newLogAxis(ylo, yhi, plotHeight-plotBottom, plotTop)
	d.valueAxis(ay, plotLeft, float64(w-plotRight), ylabel)
	d.line(plotLeft, ay.p0, float64(w-plotRight), ay.p0, "black", 1, false)
	for _, v := range ax.ticks() {
		d.line(ax.at(v), ay.p0, ax.at(v), ay.p0+5, "black", 1, false)
		d.text(ax.at(v), ay.p0+18, "middle", "", tickLabel(v))
	}
	d.text((ax.p0+ax.p1)/2, plotHeight-plotBottom+40, "middle", "", xlabel)
	color := 0
	for k, s := range ss {
		c := "#888888"
		if !s.dashed {
			c = plotColors[color%len(plotColors)]
			color++
		}
		var pts [][2]float64
		for i := range s.xs {
			pts = append(pts, [2]float64{ax.at(s.xs[i]), ay.at(s.ys[i])})
		}
		ly := float64(plotTop + 10 + 20*k)
		lx := float64(w - plotRight + 10)
		if s.dashed {
			for i := 1; i < len(pts); i++ {
				d.line(pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1], c, 1.5, true)
			}
			d.line(lx, ly, lx+20, ly, c, 1.5, true)
		} else {
			d.polyline(pts, c)
			for _, p := range pts {
				d.circle(p[0], p[1], 3.5, c, 1)
			}
			d.line(lx, ly, lx+20, ly, c, 2, false)
		}
		d.text(lx+26, ly+4, "start", "", s.label)
	}
	return d.String()
}
