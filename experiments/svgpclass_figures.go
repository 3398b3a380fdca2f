package experiments

import (
	"github.com/gpc-dev/gpc/datasets"

	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// surfaceGrid adapts a Surface to plotter.GridXYZ.
type surfaceGrid struct{ s *Surface }

func (g surfaceGrid) Dims() (c, r int)   { return len(g.s.X1), len(g.s.X2) }
func (g surfaceGrid) Z(c, r int) float64 { return g.s.P[r*len(g.s.X1)+c] }
func (g surfaceGrid) X(c int) float64    { return g.s.X1[c] }
func (g surfaceGrid) Y(r int) float64    { return g.s.X2[r] }

// bananaFigure is the SVGP paper's Figure 1: per method (rows: the method
// name's first word, e.g. KL, MF, GFITC; columns: its variants in spec
// order, e.g. M = 4 … 64 and the non-sparse one), the training points, the
// inducing inputs and the p = 0.5 contour of the split-0 model.
func bananaFigure(rp *Reporter, name string) error {
	train, _, _, err := datasets.RatschSplit(rp.dataDir, "banana", 1, 0)
	if err != nil {
		return err
	}
	var rowNames []string
	rows := map[string][]*plot.Plot{}
	for _, m := range rp.s.Methods {
		var s *Surface
		for _, r := range rp.results {
			if r.Method == m.Name && r.Split == 0 && r.Surface != nil {
				s = r.Surface
			}
		}
		if s == nil {
			continue
		}
		row, _, _ := strings.Cut(m.Name, " ")
		if _, ok := rows[row]; !ok {
			rowNames = append(rowNames, row)
		}
		pl, err := surfacePanel(m.Name, s, train)
		if err != nil {
			return err
		}
		rows[row] = append(rows[row], pl)
	}
	if len(rowNames) == 0 {
		return fmt.Errorf("no surfaces at split 0")
	}
	cols := 0
	for _, r := range rowNames {
		cols = max(cols, len(rows[r]))
	}
	var grid [][]*plot.Plot
	for _, r := range rowNames {
		row := rows[r]
		for len(row) < cols {
			row = append(row, nil)
		}
		grid = append(grid, row)
	}
	return rp.savePanels(name, grid, 3*vg.Inch, 3*vg.Inch)
}

// surfacePanel draws one model of a 2-D problem over its surface's grid:
// the training points coloured by class, the decision boundary (the
// p(y=1) = 0.5 contour, or the edges of the argmax regions of a
// multi-class surface: surfaceBoundaries) and the inducing inputs, which
// are left out when there are as many as training points (a non-sparse
// model's Z = X says nothing).
func surfacePanel(title string, s *Surface, train *datasets.Dataset) (*plot.Plot, error) {
	grids, level, err := surfaceBoundaries(s)
	if err != nil {
		return nil, err
	}
	pl := plot.New()
	pl.Title.Text = title
	classes := 0
	for _, y := range train.Y {
		classes = max(classes, y+1)
	}
	for c := 0; c < classes; c++ {
		var pts plotter.XYs
		for i, y := range train.Y {
			if y == c {
				pts = append(pts, plotter.XY{X: train.X[2*i], Y: train.X[2*i+1]})
			}
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = classColor(c)
		sc.GlyphStyle.Radius = vg.Points(1.2)
		pl.Add(sc)
	}
	for _, g := range grids {
		ct := plotter.NewContour(g, []float64{level}, palette.Heat(1, 1))
		ct.LineStyles = []draw.LineStyle{{Color: color.Black, Width: vg.Points(1.2)}}
		pl.Add(ct)
	}
	var zs plotter.XYs
	for i := 0; i+1 < len(s.Z); i += 2 {
		zs = append(zs, plotter.XY{X: s.Z[i], Y: s.Z[i+1]})
	}
	if len(zs) > 0 && len(zs) < train.N {
		sc, err := plotter.NewScatter(zs)
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle.Color = color.Black
		sc.GlyphStyle.Radius = vg.Points(2.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		pl.Add(sc)
	}
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = s.X1[0], s.X1[len(s.X1)-1], s.X2[0], s.X2[len(s.X2)-1]
	return pl, nil
}
