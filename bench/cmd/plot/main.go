// Command plot draws failover time distributions as box plots, one box
// per sample file, with every sample drawn beside its box, into a PNG:
//
//	go run ./cmd/plot -o ../docs/img/failover.png -title "..." \
//		"ours n=5=/tmp/ours5.txt" "raft n=5=/tmp/raft5.txt"
//
// Each argument is LABEL=FILE (split at the last '='); a file holds one
// time in milliseconds per line, as the -samples flag of 'coordbench
// failover' and raftfailover writes them. Bad arguments print one line and
// exit with status 2.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"io"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one box: a label and its samples in milliseconds.
type series struct {
	label string
	ms    plotter.Values
}

func main() {
	err := run(os.Args[1:], os.Stdout)
	var ue usageError
	switch {
	case err == nil || errors.Is(err, flag.ErrHelp):
	case errors.As(err, &ue):
		fmt.Fprintf(os.Stderr, "plot: %v\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "plot: %v\n", err)
		os.Exit(1)
	}
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	out := fs.String("o", "failover.png", "PNG file to write")
	title := fs.String("title", "Failover time", "plot title")
	logY := fs.Bool("log", true, "logarithmic time axis")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"want at least one LABEL=FILE argument"}
	}
	var ss []series
	for _, a := range fs.Args() {
		s, err := readSeries(a)
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	return draw1(ss, *title, *logY, *out)
}

// readSeries reads one LABEL=FILE argument.
func readSeries(arg string) (series, error) {
	i := strings.LastIndexByte(arg, '=')
	if i <= 0 || i == len(arg)-1 {
		return series{}, usageError{fmt.Sprintf("%q: want LABEL=FILE", arg)}
	}
	s := series{label: arg[:i]}
	f, err := os.Open(arg[i+1:])
	if err != nil {
		return s, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		v, err := strconv.ParseFloat(line, 64)
		if err != nil || v <= 0 {
			return s, fmt.Errorf("%s: %q is not a positive time in ms", f.Name(), line)
		}
		s.ms = append(s.ms, v)
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	if len(s.ms) == 0 {
		return s, fmt.Errorf("%s: no samples", f.Name())
	}
	return s, nil
}

// draw1 draws the boxes and the samples beside them and saves the PNG.
func draw1(ss []series, title string, logY bool, out string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "failover time (ms)"
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Tick.Marker = gridTicks{p.Y.Tick.Marker}
	p.Add(plotter.NewGrid())
	var names []string
	for i, s := range ss {
		box, err := plotter.NewBoxPlot(vg.Points(28), float64(i), s.ms)
		if err != nil {
			return err
		}
		pts := make(plotter.XYs, len(s.ms))
		for j, v := range s.ms {
			pts[j] = plotter.XY{X: float64(i) + 0.3, Y: v}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		sc.GlyphStyle.Radius = vg.Points(1.5)
		sc.GlyphStyle.Color = color.RGBA{R: 200, G: 60, B: 40, A: 160}
		p.Add(box, sc)
		names = append(names, fmt.Sprintf("%s\n(%d)", s.label, len(s.ms)))
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.6, float64(len(ss))-0.3 // room for the last samples
	return p.Save(vg.Length(90*len(ss)+160), 4*vg.Inch, out)
}

// gridTicks labels every tick its marker returns (log ticks leave the
// minor ones blank, which leaves a plot of 100 to 3000 ms nearly unlabelled).
type gridTicks struct{ plot.Ticker }

func (g gridTicks) Ticks(min, max float64) []plot.Tick {
	ts := g.Ticker.Ticks(min, max)
	for i := range ts {
		if ts[i].Label == "" && keep(ts[i].Value) {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// keep says which minor ticks get a label: 2× and 5× the powers of ten.
func keep(v float64) bool {
	for d := v; d >= 1; d /= 10 {
		if d == 2 || d == 5 {
			return true
		}
	}
	return false
}
