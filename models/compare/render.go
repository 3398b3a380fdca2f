package compare

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/gpc-dev/gpc/datasets"
)

// WriteTable writes the report as an aligned text table, one row per run,
// and the reference's Monte Carlo floor when it was repeated.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "train %s (%d rows, %d features, %d classes), test %s (%d rows), likelihood %s", r.Train, r.N, r.D, r.C, r.Test, r.NTest, r.Likelihood)
	if r.Reference != "" {
		fmt.Fprintf(w, ", reference %s", r.Reference)
	}
	fmt.Fprintln(w)
	head := []string{"engine", "error", "NLL", "evidence", "max|Δp|", "mean|Δp|", "|Δμ|", "|Δv|", "|Δμ|/sd", "|Δv|/v", "μ ratio", "conf ratio", "fit s", "s/ESS"}
	rows := [][]string{head}
	opt := func(v *float64, f string) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf(f, *v)
	}
	var notes []string
	for _, row := range r.Rows {
		name := row.Engine
		if row.Run > 1 {
			name = fmt.Sprintf("%s#%d", row.Engine, row.Run)
		}
		if row.Skipped != "" {
			rows = append(rows, []string{name, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-"})
			notes = append(notes, fmt.Sprintf("%s: %s", name, row.Skipped))
			continue
		}
		ess := "-"
		if v, ok := row.Figure("seconds_per_ess"); ok {
			ess = fmt.Sprintf("%.3g", v)
		}
		ev := opt(row.Evidence, "%.2f")
		if row.Evidence != nil {
			ev += " (" + row.EvidenceKind + ")"
		}
		rows = append(rows, []string{name, fmt.Sprintf("%.4f", row.TestError), fmt.Sprintf("%.4f", row.NLL), ev,
			opt(row.MaxAbsDP, "%.4f"), opt(row.MeanAbsDP, "%.4f"), opt(row.LatentMeanErr, "%.4g"), opt(row.LatentVarErr, "%.4g"),
			opt(row.LatentMeanZ, "%.4f"), opt(row.LatentVarRel, "%.4f"),
			opt(row.LatentMeanRatio, "%.3f"), opt(row.ConfidenceRatio, "%.3f"), fmt.Sprintf("%.1f", row.FitSeconds), ess})
		var figs []string
		for _, f := range row.Figures {
			figs = append(figs, fmt.Sprintf("%s %.4g", f.Name, f.Value))
		}
		if len(figs) > 0 {
			notes = append(notes, fmt.Sprintf("%s: %s", name, strings.Join(figs, ", ")))
		}
	}
	widths := make([]int, len(head))
	for _, row := range rows {
		for j, c := range row {
			widths[j] = max(widths[j], len([]rune(c)))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for j, c := range row {
			pad := widths[j] - len([]rune(c))
			if j == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	if mean, mx, ok := r.Floor(); ok {
		fmt.Fprintf(w, "Monte Carlo floor (%s repeated with other seeds): mean |Δp| %.4f, max |Δp| %.4f\n", r.Reference, mean, mx)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	return nil
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WritePNG plots each engine's predictive probabilities of the test rows
// against the reference's: for two classes p(y = 1), for
// more the probability of each row's own label; points on the diagonal
// agree with the reference. The file is written atomically.
func (r *Report) WritePNG(path string, labels []int) error {
	ref := r.ReferenceRow()
	if ref == nil {
		return fmt.Errorf("compare: no reference run to plot against")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: predictive probabilities against %s", r.Test, r.Reference)
	p.X.Label.Text = r.Reference
	p.Y.Label.Text = "engine"
	if r.C == 2 {
		p.X.Label.Text += " p(y=1)"
		p.Y.Label.Text += " p(y=1)"
	} else {
		p.X.Label.Text += " p(own label)"
		p.Y.Label.Text += " p(own label)"
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	diag := plotter.NewFunction(func(x float64) float64 { return x })
	diag.Color = color.Gray{Y: 150}
	diag.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(diag)
	pick := func(probs []float64, i int) float64 {
		if r.C == 2 {
			return probs[i*2+1]
		}
		return probs[i*r.C+labels[i]]
	}
	k := 0
	for _, row := range r.Rows {
		if row.Skipped != "" || (row.Engine == r.Reference && row.Run == 1) {
			continue
		}
		pts := make(plotter.XYs, r.NTest)
		for i := range pts {
			pts[i] = plotter.XY{X: pick(ref.Probs, i), Y: pick(row.Probs, i)}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color = plotutil.Color(k)
		sc.GlyphStyle.Shape = plotutil.Shape(k)
		sc.GlyphStyle.Radius = vg.Points(2)
		name := row.Engine
		if row.Run > 1 {
			name = fmt.Sprintf("%s#%d", row.Engine, row.Run)
		}
		p.Add(sc)
		p.Legend.Add(name, sc)
		k++
	}
	p.Legend.Top, p.Legend.Left = true, true
	c := vgimg.New(6*vg.Inch, 6*vg.Inch)
	p.Draw(draw.New(c))
	if err := datasets.WriteAtomic(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
		return err
	}); err != nil {
		return fmt.Errorf("compare: writing %s: %w", filepath.Base(path), err)
	}
	return nil
}
