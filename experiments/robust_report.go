package experiments

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// instancesTable is the robust paper's Table 3: for each listed instance
// (1-based, file order) and each method, the average test error over the
// splits of the table's setting where the instance is a test row, ± its
// standard error, beside the paper's; cells are judged by VerdictRule.
func (rp *Reporter) instancesTable(tb Table) {
	methods := rp.tableMethods(tb)
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	hdr, sep := "| Setting | Method |", "|---|---|"
	for _, i := range tb.Instances {
		hdr += fmt.Sprintf(" #%d |", i)
		sep += "---|"
	}
	rp.printf("%s\n%s\n", hdr, sep)
	tv := &tableVerdict{notComparable: rp.notComparable(tb)}
	for _, st := range rp.tableSettings(tb) {
		for _, m := range methods {
			row := fmt.Sprintf("| %s | %s |", st.Name, m)
			for k, inst := range tb.Instances {
				var v []float64
				for _, d := range rp.s.Datasets {
					if tb.Dataset != "" && d != tb.Dataset {
						continue
					}
					for _, r := range rp.by[groupKey(d, st.Name, m)] {
						if p := slices.Index(r.TestIndex, inst-1); p >= 0 && p < len(r.PointErr) {
							v = append(v, r.PointErr[p])
						}
					}
				}
				paper := ""
				for _, pr := range tb.Paper {
					if pr.Method == m && (pr.Setting == "" || pr.Setting == st.Name) && k < len(pr.Values) {
						paper = pr.Values[k]
					}
				}
				text, jc := rp.judgedCell(tb, fmt.Sprintf("#%d", inst), st.Name, m, "error", summarize(v), paper, true)
				if jc != nil && jc.has {
					tv.compared++
					if jc.verdict == verdictAgrees {
						tv.agree++
					}
				}
				row += " " + text + " |"
			}
			rp.printf("%s\n", row)
		}
	}
	rp.printf("\nVerdict (computed): %s.\n\n", tv.text())
	rp.recordTV(tb, tv)
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

// outliersTable compares the instances a model flags (P(z_i = 1 | y, X)
// > 0.5) with the paper's: the verdict is reproduced when the sets are
// equal, partly when they overlap, and not reproduced otherwise.
func (rp *Reporter) outliersTable(tb Table) {
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	var text string
	for _, r := range rp.results {
		if len(r.Outliers) == 0 || r.Split != 0 {
			continue
		}
		var ours []int
		for i, p := range r.Outliers {
			if p > 0.5 {
				ours = append(ours, i+1)
			}
		}
		rp.printf("| Method | instances with P(z_i = 1 \\| y, X) > 0.5 (1-based) | their probabilities |\n|---|---|---|\n")
		var probs []string
		for _, i := range ours {
			probs = append(probs, fmt.Sprintf("%.2f", r.Outliers[i-1]))
		}
		rp.printf("| %s (ours) | %s | %s |\n", r.Method, joinInts(ours), strings.Join(probs, ", "))
		var pp []string
		for _, pr := range tb.Paper {
			pp = append(pp, pr.Values...)
		}
		rp.printf("| paper | %s | %s |\n\n", joinInts(tb.Instances), strings.Join(pp, ", "))
		common := 0
		for _, i := range ours {
			if slices.Contains(tb.Instances, i) {
				common++
			}
		}
		switch {
		case common == len(tb.Instances) && len(ours) == len(tb.Instances):
			text = "**reproduced** — the same instances"
		case common > 0:
			text = fmt.Sprintf("**partly reproduced** — %d of the paper's %d instances, %d others", common, len(tb.Instances), len(ours)-common)
		default:
			text = "**not reproduced** — none of the paper's instances"
		}
		break
	}
	if text == "" {
		text = "no verdict: no run with outlier probabilities"
	}
	rp.printf("Verdict (computed): %s.\n\n", text)
	rp.recordText(tb, text)
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// outlierFigure is the robust paper's Figure 1: P(z_i = 1 | y, X) for
// every instance, as needles, from the split-0 run with outlier
// probabilities.
func outlierFigure(rp *Reporter, name string) error {
	for _, r := range rp.results {
		if len(r.Outliers) == 0 || r.Split != 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s on %s: P(z_i = 1 | y, X)", r.Method, r.Dataset)
		p.X.Label.Text = "instance"
		p.Y.Min, p.Y.Max = 0, 1
		bars, err := plotter.NewBarChart(plotter.Values(r.Outliers), vg.Points(1.5))
		if err != nil {
			return err
		}
		bars.XMin = 1 // instance i at x = i (1-based)
		p.Add(bars)
		pts := make(plotter.XYs, 0, len(r.Outliers))
		for i, v := range r.Outliers {
			if v > 0.5 {
				pts = append(pts, plotter.XY{X: float64(i + 1), Y: v})
			}
		}
		if len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return err
			}
			p.Add(sc)
		}
		half := plotter.NewFunction(func(float64) float64 { return 0.5 })
		half.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(half)
		p.X.Min, p.X.Max = 0, math.Max(float64(len(r.Outliers)+1), 1)
		return rp.savePanels(name, [][]*plot.Plot{{p}}, 8*vg.Inch, 3*vg.Inch)
	}
	return fmt.Errorf("no run with outlier probabilities")
}
