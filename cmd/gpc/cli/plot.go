package cli

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/models"
)

func init() {
	register(&command{name: "plot", summary: "draw a trained model's predictions on a CSV file as a PNG", run: runPlot})
}

type plotArgs struct {
	model, input, out string
	labeled           bool
	grid              int
}

func parsePlot(args []string, stdout io.Writer) (*plotArgs, error) {
	f := newFlags("plot",
		"gpc plot --model MODEL.json --input FILE.csv --out PLOT.png [--labeled]",
		`Draw a trained model's predictions for the rows of FILE.csv as a PNG.

With two input columns the plot is the input plane: each point of a grid
over the rows' range coloured by its most probable class, paler where that
class is less certain, with the rows drawn on top (coloured by their label
with --labeled). With any other number of inputs and --labeled it is a
reliability diagram: the rows binned by the probability of their predicted
class, each bin's accuracy against that probability (a calibrated model
lies on the diagonal); without labels, a histogram of that probability.

Inputs are in the training file's units, as for gpc predict.`)
	var a plotArgs
	f.StringVar(&a.model, "model", "", "trained model `MODEL.json` written by gpc train (required)")
	f.StringVar(&a.input, "input", "", "inputs `FILE.csv` (required)")
	f.StringVar(&a.out, "out", "", "where to write the picture, `PLOT.png` (required)")
	f.BoolVar(&a.labeled, "labeled", false, "the last column of FILE.csv is the label")
	f.IntVar(&a.grid, "grid", 80, "two inputs: grid points per axis")
	pos, err := f.parse(args, stdout)
	if err != nil {
		return nil, err
	}
	if err := noArgs(pos); err != nil {
		return nil, err
	}
	switch {
	case a.model == "":
		return nil, usagef("--model MODEL.json is required")
	case a.input == "":
		return nil, usagef("--input FILE.csv is required")
	case a.out == "":
		return nil, usagef("--out PLOT.png is required")
	case a.grid < 2 || a.grid > 1000:
		return nil, usagef("--grid %d: want 2 to 1000", a.grid)
	}
	return &a, nil
}

// classColors are the classes' colours (cycled beyond eight).
var classColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

func classColor(k int) color.RGBA { return classColors[k%len(classColors)] }

// paler mixes c with white: weight 1 is c, 0 white.
func paler(c color.RGBA, weight float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(255 - weight*(255-float64(v))) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 255}
}

func runPlot(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parsePlot(args, stdout)
	if err != nil {
		return err
	}
	if err := checkOutput(a.out, "plot.png", a.input, a.model); err != nil {
		return err
	}
	m, err := models.Load(a.model, nil)
	if err != nil {
		return err
	}
	ds, _, err := readInputs(a.input, a.labeled, m.D, m.C)
	if err != nil {
		return err
	}
	var p *plot.Plot
	if m.D == 2 {
		p, err = planePlot(ctx, m, ds, a)
	} else {
		p, err = reliabilityPlot(ctx, m, ds, a)
	}
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w, err := p.WriterTo(6*vg.Inch, 5*vg.Inch, "png")
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(&buf); err != nil {
		return err
	}
	if err := datasets.WriteFileAtomic(a.out, buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", a.out)
	return nil
}

func predictFinite(ctx context.Context, m *models.Model, x []float64, n int) ([]float64, error) {
	probs, err := m.PredictContext(ctx, x, n, nil)
	if err != nil {
		return nil, explainNumerical("predicting", err)
	}
	for _, v := range probs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("the predicted class probabilities are not finite")
		}
	}
	return probs, nil
}

// argmax is the most probable class of row i and its probability.
func argmax(probs []float64, i, c int) (int, float64) {
	best := 0
	for k := 1; k < c; k++ {
		if probs[i*c+k] > probs[i*c+best] {
			best = k
		}
	}
	return best, probs[i*c+best]
}

// planePlot draws the predicted classes over the plane of two inputs.
func planePlot(ctx context.Context, m *models.Model, ds *datasets.Dataset, a *plotArgs) (*plot.Plot, error) {
	lo := []float64{math.Inf(1), math.Inf(1)}
	hi := []float64{math.Inf(-1), math.Inf(-1)}
	for i := range ds.N {
		for j := range 2 {
			lo[j], hi[j] = math.Min(lo[j], ds.X[i*2+j]), math.Max(hi[j], ds.X[i*2+j])
		}
	}
	for j := range 2 {
		pad := 0.05 * (hi[j] - lo[j])
		if pad == 0 {
			pad = 1
		}
		lo[j], hi[j] = lo[j]-pad, hi[j]+pad
	}
	g := a.grid
	grid := make([]float64, 0, 2*g*g)
	for r := range g {
		for c := range g {
			grid = append(grid, lo[0]+(hi[0]-lo[0])*float64(c)/float64(g-1), lo[1]+(hi[1]-lo[1])*float64(r)/float64(g-1))
		}
	}
	probs, err := predictFinite(ctx, m, grid, g*g)
	if err != nil {
		return nil, err
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: most probable class (paler: less certain)", a.model)
	p.X.Label.Text, p.Y.Label.Text = "input 1", "input 2"
	cells := make(plotter.XYs, g*g)
	for i := range cells {
		cells[i] = plotter.XY{X: grid[2*i], Y: grid[2*i+1]}
	}
	bg, err := plotter.NewScatter(cells)
	if err != nil {
		return nil, err
	}
	// A square glyph a grid step wide, so the cells tile the plane.
	bg.GlyphStyleFunc = func(i int) draw.GlyphStyle {
		k, pk := argmax(probs, i, m.C)
		// Certainty from 1/C (white) to 1 (the class's colour), faded to
		// keep the rows on top legible.
		w := 0.55 * (pk - 1/float64(m.C)) / (1 - 1/float64(m.C))
		return draw.GlyphStyle{Color: paler(classColor(k), w), Radius: vg.Points(230 / float64(g)), Shape: draw.BoxGlyph{}}
	}
	p.Add(bg)
	byClass := map[int]plotter.XYs{}
	for i := range ds.N {
		k := -1
		if a.labeled {
			k = ds.Y[i]
		}
		byClass[k] = append(byClass[k], plotter.XY{X: ds.X[2*i], Y: ds.X[2*i+1]})
	}
	for k := -1; k < m.C; k++ {
		pts := byClass[k]
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
		if k >= 0 {
			s.GlyphStyle = draw.GlyphStyle{Color: classColor(k), Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Legend.Add(fmt.Sprintf("class %d", k), s)
		}
		p.Add(s)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo[0], hi[0], lo[1], hi[1]
	return p, nil
}

// reliabilityPlot draws the accuracy of ten bins of the predicted class's
// probability (with labels) or a histogram of that probability.
func reliabilityPlot(ctx context.Context, m *models.Model, ds *datasets.Dataset, a *plotArgs) (*plot.Plot, error) {
	probs, err := predictFinite(ctx, m, ds.X, ds.N)
	if err != nil {
		return nil, err
	}
	const bins = 10
	var count, right [bins]float64
	for i := range ds.N {
		k, pk := argmax(probs, i, m.C)
		b := min(int(pk*bins), bins-1)
		count[b]++
		if a.labeled && k == ds.Y[i] {
			right[b]++
		}
	}
	p := plot.New()
	p.X.Label.Text = "probability of the predicted class"
	p.X.Min, p.X.Max = 0, 1
	if !a.labeled {
		p.Title.Text = fmt.Sprintf("%s: confidence on %d rows", a.model, ds.N)
		p.Y.Label.Text = "rows"
		h := make(plotter.XYs, 0, bins)
		for b := range bins {
			h = append(h, plotter.XY{X: (float64(b) + 0.5) / bins, Y: count[b]})
		}
		hist, err := plotter.NewHistogram(h, bins)
		if err != nil {
			return nil, err
		}
		p.Add(hist)
		return p, nil
	}
	p.Title.Text = fmt.Sprintf("%s: reliability on %d labelled rows", a.model, ds.N)
	p.Y.Label.Text = "accuracy"
	p.Y.Min, p.Y.Max = 0, 1
	var acc plotter.XYs
	for b := range bins {
		if count[b] > 0 {
			acc = append(acc, plotter.XY{X: (float64(b) + 0.5) / bins, Y: right[b] / count[b]})
		}
	}
	diag, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	p.Add(diag)
	if len(acc) > 0 {
		lp, pts, err := plotter.NewLinePoints(acc)
		if err != nil {
			return nil, err
		}
		pts.Shape = draw.CircleGlyph{}
		p.Add(lp, pts)
		p.Legend.Add("model", lp, pts)
	}
	p.Legend.Add("calibrated", diag)
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}
