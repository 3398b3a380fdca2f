package experiments

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// family is a method's group in the SVGP paper's figures: the first word
// of its name (KLSp, MFSp, EPFitc).
func family(method string) string {
	f, _, _ := strings.Cut(method, " ")
	return f
}

// traceOf returns a method's trace at split 0.
func (rp *Reporter) traceOf(method string) []TracePoint {
	for _, r := range rp.results {
		if r.Method == method && r.Split == 0 && len(r.Trace) > 0 {
			return r.Trace
		}
	}
	return nil
}

// frontierShares splits a log-spaced time grid, from the first traced
// evaluation to the last, among the method families by which of them has
// reached the lowest hold-out NLL by that time (the efficient frontier of
// the SVGP paper's Figure 2).
func frontierShares(traces map[string][]TracePoint) map[string]float64 {
	lo, hi := math.Inf(1), 0.0
	for _, tr := range traces {
		lo = math.Min(lo, math.Max(tr[0].Seconds, 1e-6))
		hi = math.Max(hi, tr[len(tr)-1].Seconds)
	}
	shares := map[string]float64{}
	if !(hi > lo) {
		return shares
	}
	const grid = 200
	counted := 0
	for k := 0; k < grid; k++ {
		t := lo * math.Pow(hi/lo, float64(k)/(grid-1))
		best, who := math.Inf(1), ""
		for m, tr := range traces {
			for _, p := range tr {
				if p.Seconds > t {
					break
				}
				if p.NLL < best {
					best, who = p.NLL, m
				}
			}
		}
		if who != "" {
			shares[family(who)]++
			counted++
		}
	}
	for f := range shares {
		shares[f] /= float64(counted)
	}
	return shares
}

// frontierTable reports Figure 2's findings as computed from the traces:
// each method's final hold-out NLP and error, the share of the efficient
// frontier each family holds, whether each family improves with M (the
// methods listed in increasing M), and how erratic each trace is.
func (rp *Reporter) frontierTable(tb Table) {
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	rp.printf("| Method | evaluations | seconds | final NLP | final error | NLP rises > 0.02 | error rises > 0.02 |\n|---|---|---|---|---|---|---|\n")
	traces := map[string][]TracePoint{}
	finals := map[string][]float64{}
	var fams []string
	for _, m := range rp.tableMethods(tb) {
		tr := rp.traceOf(m)
		if !slices.Contains(fams, family(m)) {
			fams = append(fams, family(m))
		}
		if tr == nil {
			rp.printf("| %s | — | — | — | — | — | — |\n", m)
			continue
		}
		traces[m] = tr
		rises := func(v func(TracePoint) float64) int {
			n := 0
			for i := 1; i < len(tr); i++ {
				if v(tr[i])-v(tr[i-1]) > 0.02 {
					n++
				}
			}
			return n
		}
		last := tr[len(tr)-1]
		finals[family(m)] = append(finals[family(m)], last.NLL)
		rp.printf("| %s | %d | %.3g | %.4f | %.4f | %d | %d |\n", m, len(tr), last.Seconds, last.NLL, last.Error,
			rises(func(p TracePoint) float64 { return p.NLL }), rises(func(p TracePoint) float64 { return p.Error }))
	}
	rp.printf("\n")
	if len(traces) == 0 {
		rp.printf("Verdict (computed): no verdict: no traced runs.\n\n")
		rp.recordText(tb, "no verdict: no traced runs")
		return
	}
	shares := frontierShares(traces)
	var parts []string
	for _, f := range fams {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", f, 100*shares[f]))
	}
	rp.printf("Efficient frontier (lowest hold-out NLP reached by each time, on a log grid from the first evaluation to the last): %s.\n\n", strings.Join(parts, ", "))
	var improve []string
	for _, f := range fams {
		v := finals[f]
		mono := len(v) > 1
		for i := 1; i < len(v); i++ {
			if v[i] > v[i-1]+0.005 {
				mono = false
			}
		}
		word := "falls"
		if !mono {
			word = "does not fall"
		}
		improve = append(improve, fmt.Sprintf("%s %s with M (%s)", f, word, strings.Join(fmtAll(v), " → ")))
	}
	rp.printf("Final hold-out NLP against M: %s.\n\n", strings.Join(improve, "; "))
	verdict := "not reproduced"
	lead := ""
	for f, s := range shares {
		if lead == "" || s > shares[lead] || s == shares[lead] && f < lead {
			lead = f
		}
	}
	switch {
	case tb.Leader == "":
		verdict = "no verdict: the table names no leader"
	case shares[tb.Leader] >= 0.9:
		verdict = "reproduced"
	case lead == tb.Leader:
		verdict = "partly reproduced"
	}
	text := fmt.Sprintf("**%s** — the paper's frontier is held by %s; here %s holds %.0f%% of it", verdict, tb.Leader, tb.Leader, 100*shares[tb.Leader])
	if lead != tb.Leader {
		text += fmt.Sprintf(" and %s the most (%.0f%%)", lead, 100*shares[lead])
	}
	text += " (reproduced: at least 90%; partly: the largest share)"
	rp.printf("Verdict (computed): %s.\n\n", text)
	rp.recordText(tb, text)
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

func fmtAll(v []float64) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = fmt.Sprintf("%.3f", x)
	}
	return out
}

// traceFigure is the SVGP paper's Figure 2 (and its supplementary S.2):
// hold-out NLP (left) and error (right) against training seconds, one line
// per method, from the split-0 traces.
func traceFigure(rp *Reporter, name string) error {
	left, right := plot.New(), plot.New()
	left.Title.Text, right.Title.Text = "hold-out NLP", "hold-out error"
	for _, p := range []*plot.Plot{left, right} {
		p.X.Label.Text = "seconds"
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	right.Legend.Top = true
	// Colour by the method's place in its family (M = 4, 16, 64 alike in
	// every family), dashes by family.
	dashes := [][]vg.Length{nil, {vg.Points(5), vg.Points(3)}, {vg.Points(1.5), vg.Points(2)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	colours := []color.Color{color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}}
	var fams []string
	within := map[string]int{}
	n := 0
	for _, m := range rp.s.Methods {
		tr := rp.traceOf(m.Name)
		if tr == nil {
			continue
		}
		n++
		f := family(m.Name)
		if !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
		col := colours[within[f]%len(colours)]
		dash := dashes[slices.Index(fams, f)%len(dashes)]
		within[f]++
		var a, b plotter.XYs
		for _, p := range tr {
			t := math.Max(p.Seconds, 1e-4)
			a = append(a, plotter.XY{X: t, Y: p.NLL})
			b = append(b, plotter.XY{X: t, Y: p.Error})
		}
		for k, pts := range []plotter.XYs{a, b} {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color, l.Dashes = col, dash
			l.Width = vg.Points(1.2)
			if k == 0 {
				left.Add(l)
			} else {
				right.Add(l)
				right.Legend.Add(m.Name, l)
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("no traced runs at split 0")
	}
	return rp.savePanels(name, [][]*plot.Plot{{left, right}}, 5*vg.Inch, 4*vg.Inch)
}
