package experiments

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gpc-dev/gpc/datasets"
)

// classColors follow the paper's red/green/blue classes (more for C > 3).
var classColors = []color.Color{
	color.RGBA{R: 220, G: 40, B: 40, A: 255}, color.RGBA{R: 30, G: 160, B: 60, A: 255},
	color.RGBA{R: 40, G: 70, B: 220, A: 255}, color.RGBA{R: 200, G: 140, B: 0, A: 255},
	color.RGBA{R: 140, G: 40, B: 180, A: 255}, color.RGBA{R: 0, G: 160, B: 170, A: 255},
	color.RGBA{R: 100, G: 100, B: 100, A: 255},
}

func classColor(c int) color.Color { return classColors[c%len(classColors)] }

// figures draws the spec's figures into the output directory. A figure
// whose runs are missing is skipped with a note in report.md rather than
// failing the report, so partial results can still be rendered.
func (rp *Reporter) figures() error {
	var notes []string
	for _, f := range rp.s.Figures {
		if err := rp.context().Err(); err != nil {
			return err
		}
		var err error
		if draw, ok := figureFunc(f); ok {
			err = draw(rp, f)
		} else {
			err = fmt.Errorf("no paper registers figure %q", f)
		}
		if ctxErr := rp.context().Err(); ctxErr != nil && err != nil {
			return ctxErr // interrupted, not a figure problem
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("- %s not drawn: %v", f, err))
		}
	}
	if len(notes) > 0 {
		return rp.appendReport("\n## Figure problems\n\n" + strings.Join(notes, "\n") + "\n")
	}
	return nil
}

// savePanels lays plots out in a grid and writes a PNG.
func (rp *Reporter) savePanels(name string, panels [][]*plot.Plot, w, h vg.Length) error {
	rows, cols := len(panels), len(panels[0])
	img := vgimg.New(w*vg.Length(cols), h*vg.Length(rows))
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 2,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align(panels, t, dc)
	for i := range panels {
		for j := range panels[i] {
			if panels[i][j] != nil {
				panels[i][j].Draw(canvases[i][j])
			}
		}
	}
	return datasets.WriteAtomic(filepath.Join(rp.dir, name+".png"), func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}

// firstCurve returns the split-0 curve of a method kind.
func (rp *Reporter) firstCurve(kind string) (Method, *Curve) {
	for _, m := range rp.s.Methods {
		if m.Model != kind && m.Name != kind {
			continue
		}
		for _, r := range rp.results {
			if r.Method == m.Name && r.Curve != nil {
				return m, r.Curve
			}
		}
	}
	return Method{}, nil
}

func xys(x, y []float64) plotter.XYs {
	out := make(plotter.XYs, len(x))
	for i := range x {
		out[i] = plotter.XY{X: x[i], Y: y[i]}
	}
	return out
}

// probPanel draws class-probability curves, optionally the Bayes curves
// dashed and label ticks at the top.
func probPanel(title string, c *Curve, p [][]float64, withBayes bool) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = title
	pl.X.Label.Text = "x"
	pl.Y.Label.Text = "p(y=c|x)"
	pl.Y.Min, pl.Y.Max = -0.08, 1.08
	for k := range p {
		l, err := plotter.NewLine(xys(c.X, p[k]))
		if err != nil {
			return nil, err
		}
		l.Color = classColor(k)
		l.Width = vg.Points(1.5)
		pl.Add(l)
		if withBayes && k < len(c.Bayes) {
			b, err := plotter.NewLine(xys(c.X, c.Bayes[k]))
			if err != nil {
				return nil, err
			}
			b.Color = classColor(k)
			b.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			pl.Add(b)
		}
	}
	for k := range p {
		var pts plotter.XYs
		for i, y := range c.TrainY {
			if y == k {
				pts = append(pts, plotter.XY{X: c.TrainX[i], Y: 1.05})
			}
		}
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		s.Color = classColor(k)
		s.Shape = tickGlyph{}
		s.Radius = vg.Points(3)
		pl.Add(s)
	}
	return pl, nil
}

// tickGlyph draws a short vertical bar (the paper's label ticks and rugs).
type tickGlyph struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (tickGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y - sty.Radius})
	p.Line(vg.Point{X: pt.X, Y: pt.Y + sty.Radius})
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(0.5)})
	c.Stroke(p)
}

// fig1 is the paper's Figure 1: NIMGP_FO's latent predictive means with
// ±2 standard-deviation bands per class (models.Model.Marginals), without
// the first-order term Δ (left, variance v − Δ) and with it (right), the
// training data (x̃_i) as label ticks at the top (one row per class) and
// the learned inducing inputs Z^c as rugs at the bottom. Both panels share
// the y range so the widening by Δ is visible. Colours name the classes,
// as in the paper's caption, instead of a legend that would hide ticks.
func (rp *Reporter) fig1() error {
	_, c := rp.firstCurve("nimgp-fo")
	if c == nil || c.LatentMean == nil {
		return fmt.Errorf("no NIMGP_FO latent marginals at split 0 (rerun results written before they were recorded)")
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, mu := range c.LatentMean {
		for i, m := range mu {
			for _, v := range []float64{c.LatentVar[k][i], c.LatentVarNoDelta[k][i]} {
				sd := 2 * math.Sqrt(math.Max(v, 0))
				lo, hi = math.Min(lo, m-sd), math.Max(hi, m+sd)
			}
		}
	}
	span := hi - lo
	if !(span > 0) {
		span = 1
	}
	C := len(c.LatentMean)
	rowGap := 0.035 * span
	trainRow := func(k int) float64 { return hi + 0.06*span + rowGap*float64(k) }
	zRow := func(k int) float64 { return lo - 0.06*span - rowGap*float64(k) }
	var panels []*plot.Plot
	for _, side := range []struct {
		title string
		v     [][]float64
	}{{"NIMGP_FO without Δ", c.LatentVarNoDelta}, {"NIMGP_FO with Δ", c.LatentVar}} {
		pl := plot.New()
		pl.Title.Text = side.title + " (f0 red, f1 green, f2 blue)"
		pl.X.Label.Text = "x (observed input)"
		pl.Y.Label.Text = "latent mean ± 2 sd"
		pl.Y.Min, pl.Y.Max = zRow(C-1)-0.03*span, trainRow(C-1)+0.03*span
		for k, mu := range c.LatentMean {
			band := make(plotter.XYs, 0, 2*len(mu))
			for i := range mu {
				band = append(band, plotter.XY{X: c.X[i], Y: mu[i] + 2*math.Sqrt(math.Max(side.v[k][i], 0))})
			}
			for i := len(mu) - 1; i >= 0; i-- {
				band = append(band, plotter.XY{X: c.X[i], Y: mu[i] - 2*math.Sqrt(math.Max(side.v[k][i], 0))})
			}
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return err
			}
			r, g, b, _ := classColor(k).RGBA()
			poly.Color = color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 55}
			poly.LineStyle.Width = 0
			l, err := plotter.NewLine(xys(c.X, mu))
			if err != nil {
				return err
			}
			l.Color, l.Width = classColor(k), vg.Points(1.5)
			pl.Add(poly, l)
		}
		for k := range C {
			var pts plotter.XYs
			for i, y := range c.TrainY {
				if y == k {
					pts = append(pts, plotter.XY{X: c.TrainX[i], Y: trainRow(k)})
				}
			}
			if k < len(c.Z) {
				for _, z := range c.Z[k] {
					pts = append(pts, plotter.XY{X: z, Y: zRow(k)})
				}
			}
			if len(pts) == 0 {
				continue
			}
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			s.Color, s.Shape, s.Radius = classColor(k), tickGlyph{}, vg.Points(2.5)
			pl.Add(s)
		}
		panels = append(panels, pl)
	}
	return rp.savePanels("fig1", [][]*plot.Plot{panels}, 4.5*vg.Inch, 3.5*vg.Inch)
}

// fig2 is every method's predictive distribution against the Bayes optimum.
func (rp *Reporter) fig2() error {
	var panels []*plot.Plot
	for _, m := range rp.s.Methods {
		_, c := rp.firstCurve(m.Name)
		if c == nil {
			continue
		}
		pl, err := probPanel(m.Name, c, c.P, true)
		if err != nil {
			return err
		}
		panels = append(panels, pl)
	}
	if len(panels) == 0 {
		return fmt.Errorf("no curves at split 0")
	}
	for len(panels)%2 != 0 {
		panels = append(panels, nil)
	}
	var grid [][]*plot.Plot
	for i := 0; i < len(panels); i += 2 {
		grid = append(grid, panels[i:i+2])
	}
	return rp.savePanels("fig2", grid, 4*vg.Inch, 3*vg.Inch)
}

// fig3 is one synthetic problem before and after noise of variance 0.1.
func (rp *Reporter) fig3() error {
	sp, err := datasets.SyntheticSplitProblemContext(rp.context(), max(rp.s.Protocol.NTrain, 100), 0, 2, 3, 0.1, rp.s.seedFor(0), datasets.SyntheticOptions{})
	if err != nil {
		return err
	}
	var row []*plot.Plot
	for i, ds := range []*datasets.Dataset{sp.CleanTrain, sp.Train} {
		pl := plot.New()
		pl.Title.Text = []string{"before noise", "after noise (variance 0.1)"}[i]
		pl.X.Label.Text, pl.Y.Label.Text = "x1", "x2"
		for k := 0; k < ds.C; k++ {
			var pts plotter.XYs
			for j := range ds.N {
				if ds.Y[j] == k {
					pts = append(pts, plotter.XY{X: ds.X[2*j], Y: ds.X[2*j+1]})
				}
			}
			if len(pts) == 0 {
				continue
			}
			s, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			s.Color, s.Radius = classColor(k), vg.Points(1.5)
			pl.Add(s)
		}
		row = append(row, pl)
	}
	return rp.savePanels("fig3", [][]*plot.Plot{row}, 4*vg.Inch, 4*vg.Inch)
}

// figNoiseHist draws histograms of learned input-noise variances: rows are
// the learned-noise settings, columns the noise-aware methods. For the
// synthetic data (Fig 4) each run contributes its per-dimension values
// (one shared variance per dimension); for MNIST (Fig 5) the 784 values.
func (rp *Reporter) figNoiseHist(name string) error {
	var rows [][]*plot.Plot
	for _, st := range rp.s.Settings {
		if !st.LearnNoise {
			continue
		}
		var row []*plot.Plot
		for _, m := range rp.s.Methods {
			if methodInputs(m) == "observed" {
				continue
			}
			var vals plotter.Values
			for _, d := range rp.s.Datasets {
				for _, r := range rp.by[groupKey(d, st.Name, m.Name)] {
					vals = append(vals, r.LearnedNoise...)
				}
			}
			pl := plot.New()
			pl.Title.Text = fmt.Sprintf("%s, %s", m.Name, st.Name)
			pl.X.Label.Text = "learned noise variance"
			if len(vals) > 0 {
				h, err := plotter.NewHist(vals, 20)
				if err != nil {
					return err
				}
				h.FillColor = color.Gray{Y: 150}
				pl.Add(h)
			}
			// A common x range from 0 past the true level shows at a
			// glance whether the estimate collapsed to 0 or recovered it.
			pl.X.Min = 0
			pl.X.Max = 1.3 * st.Noise
			for _, v := range vals {
				pl.X.Max = math.Max(pl.X.Max, 1.05*v)
			}
			if st.Noise > 0 {
				l, err := plotter.NewLine(plotter.XYs{{X: st.Noise, Y: 0}, {X: st.Noise, Y: float64(max(1, len(vals)/4))}})
				if err != nil {
					return err
				}
				l.Color = color.RGBA{R: 220, A: 255}
				l.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
				pl.Add(l)
			}
			row = append(row, pl)
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("no learned-noise settings")
	}
	return rp.savePanels(name, rows, 3*vg.Inch, 2.5*vg.Inch)
}

// alCurves averages the active-learning curves per (setting, method).
func (rp *Reporter) alCurves(st Setting, m Method, reduction bool) plotter.XYs {
	var sum []float64
	var n []float64
	for _, d := range rp.s.Datasets {
		for _, r := range rp.by[groupKey(d, st.Name, m.Name)] {
			for i, e := range r.ALError {
				if i >= len(sum) {
					sum, n = append(sum, 0), append(n, 0)
				}
				if reduction {
					e = r.ALError[0] - e
				}
				sum[i] += e
				n[i]++
			}
		}
	}
	out := make(plotter.XYs, len(sum))
	for i := range sum {
		out[i] = plotter.XY{X: float64(i), Y: sum[i] / n[i]}
	}
	return out
}

// alFigure draws one panel per noise level and a row per selection rule.
func (rp *Reporter) alFigure(name string, selections []string, reduction bool) error {
	var levels []float64
	for _, st := range rp.s.Settings {
		if !slices.Contains(levels, st.Noise) {
			levels = append(levels, st.Noise)
		}
	}
	var rows [][]*plot.Plot
	for _, sel := range selections {
		var row []*plot.Plot
		for _, lv := range levels {
			pl := plot.New()
			pl.Title.Text = fmt.Sprintf("%s, noise %g", sel, lv)
			pl.X.Label.Text = "added points"
			pl.Y.Label.Text = "test error"
			if reduction {
				pl.Y.Label.Text = "error reduction"
			}
			any := false
			for _, st := range rp.s.Settings {
				if st.Noise != lv || st.Selection != sel {
					continue
				}
				for k, m := range rp.s.Methods {
					pts := rp.alCurves(st, m, reduction)
					if len(pts) < 2 {
						continue
					}
					l, err := plotter.NewLine(pts)
					if err != nil {
						return err
					}
					l.Color = classColor(k)
					l.Width = vg.Points(1.2)
					pl.Add(l)
					pl.Legend.Add(m.Name, l)
					any = true
				}
			}
			if any {
				row = append(row, pl)
			}
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("no active-learning curves")
	}
	w := len(rows[0])
	for i := range rows {
		for len(rows[i]) < w {
			rows[i] = append(rows[i], nil)
		}
		rows[i] = rows[i][:w]
	}
	return rp.savePanels(name, rows, 3.2*vg.Inch, 2.6*vg.Inch)
}

func (rp *Reporter) fig6() error { return rp.alFigure("fig6", []string{"entropy", "random"}, false) }
func (rp *Reporter) fig7() error { return rp.alFigure("fig7", []string{"entropy"}, true) }

// errPoints implements plotter.XYer, XErrorer and YErrorer.
type errPoints struct {
	plotter.XYs
	plotter.XErrors
	plotter.YErrors
}

// fig8Colors are Figure 8's class colours: pulsars green, as in the paper.
var fig8Colors = map[string]color.Color{"bll": classColor(0), "fsrq": classColor(2), "psr": classColor(1)}

// fig8 is the astrophysics data: LP index α against LP β (the two
// attributes with error bars besides flux), coloured by class.
func (rp *Reporter) fig8() error {
	ds, err := datasets.LoadAstro(rp.dataDir)
	if err != nil {
		return err
	}
	ia, ib := -1, -1
	for j, n := range ds.FeatureNames {
		switch {
		case n == "lp_index" || n == "alpha" || (ia < 0 && containsAny(n, "index", "alpha")):
			ia = j
		case n == "lp_beta" || n == "beta" || (ib < 0 && containsAny(n, "beta")):
			ib = j
		}
	}
	if ia < 0 || ib < 0 {
		ia, ib = 3, 4 // AstroColumnsTable9 order: flux, det, pivot, α, β, curv
	}
	pl := plot.New()
	pl.Title.Text = "Astrophysics data (4FGL, >30σ)"
	pl.X.Label.Text, pl.Y.Label.Text = "LP index α", "LP β"
	for k := 0; k < ds.C; k++ {
		var e errPoints
		for i := range ds.N {
			if ds.Y[i] != k {
				continue
			}
			x, y := ds.X[i*ds.D+ia], ds.X[i*ds.D+ib]
			sx, sy := math.Sqrt(ds.Noise[i*ds.D+ia]), math.Sqrt(ds.Noise[i*ds.D+ib])
			e.XYs = append(e.XYs, plotter.XY{X: x, Y: y})
			e.XErrors = append(e.XErrors, struct{ Low, High float64 }{-sx, sx})
			e.YErrors = append(e.YErrors, struct{ Low, High float64 }{-sy, sy})
		}
		if len(e.XYs) == 0 {
			continue
		}
		s, err := plotter.NewScatter(e.XYs)
		if err != nil {
			return err
		}
		// The paper's Figure 8 draws the pulsars green ("the psr class
		// (green points)"); the blazars take red and blue.
		col := classColor(k)
		if k < len(ds.ClassNames) {
			if c, ok := fig8Colors[ds.ClassNames[k]]; ok {
				col = c
			}
		}
		s.Color, s.Radius = col, vg.Points(1.5)
		xe, err := plotter.NewXErrorBars(e)
		if err != nil {
			return err
		}
		ye, err := plotter.NewYErrorBars(e)
		if err != nil {
			return err
		}
		xe.Color, ye.Color = col, col
		xe.LineStyle.Width, ye.LineStyle.Width = vg.Points(0.4), vg.Points(0.4)
		pl.Add(xe, ye, s)
		name := fmt.Sprint(k)
		if k < len(ds.ClassNames) {
			name = ds.ClassNames[k]
		}
		pl.Legend.Add(name, s)
	}
	return rp.savePanels("fig8", [][]*plot.Plot{{pl}}, 6*vg.Inch, 4.5*vg.Inch)
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if len(s) >= len(x) {
			for i := 0; i+len(x) <= len(s); i++ {
				if s[i:i+len(x)] == x {
					return true
				}
			}
		}
	}
	return false
}
