package experiments

import (
	"fmt"
	"math"
	"strings"
)

// VerdictRule is the rule by which reports decide, per cell and per table,
// whether a paper's result held in our runs. It is printed in every
// report and at the top of REPRODUCTION.md, so that the prose there can
// explain a verdict but never decide one.
const VerdictRule = `Verdicts are computed from the runs by this rule, never written by hand.
- Each side's uncertainty is the standard error of its cell value: ours from the runs (for a
  median, 1.2533·σ/√n); the paper's from its ± as the table's spec reads it (paper_pm: a standard
  error, a standard deviation over paper_n runs, or two of them around a median). A single run
  of a spec that asks for the bootstrap takes the bootstrap over its test points; a run that kept
  no per-point losses takes, for its error, the binomial √(e(1−e)/n) the bootstrap of 0/1 losses
  estimates and, for its NLL, its value × the per-point spread (σ/mean) of the runs on the same
  data that kept theirs, / √n.
- **Cell**: ours *agrees* (✓) when |ours − paper| ≤ 2·√(u_ours² + u_paper²) + half a unit of the
  paper's last printed digit; otherwise ours is *better* (✗−) or *worse* (✗+) for metrics with a
  direction (NLL, error, rank, time), or *differs* (✗). "Large" is a value above the table's
  large_above threshold on our side, the paper's word on its side; Large against Large agrees.
- **Ordering**: within a row, a pair of methods the paper separates by more than that tolerance
  is *reversed* when ours orders them the other way by more than two of our joint standard errors.
- **Table**: *reproduced* when at least 90% of the compared cells agree and no ordering is
  reversed; *not reproduced* when fewer than half agree or more than a quarter of the paper's
  orderings are reversed; *partly reproduced* otherwise. Timings (not comparable across hardware)
  are judged by the ordering alone. A table with runs missing says how many cells are complete.
  A table whose runs are not the paper's experiment is *not comparable* whatever its values, which
  are still compared beside it: its problems come from a generator of ours standing in for one the
  paper does not specify (the spec's generator: own), or its spec's not_comparable says why.
- **Budget**: every table states the budget run. With few runs the standard errors, and so the
  tolerance, are wide: a quick-profile "reproduced" means the paper's values are not contradicted
  at that budget, not that they are confirmed.`

// Cell verdicts.
const (
	verdictAgrees  = "agrees"
	verdictBetter  = "better"
	verdictWorse   = "worse"
	verdictDiffers = "differs"
)

// medianSE is the large-sample ratio of the standard error of a median to
// that of a mean, √(π/2), for normal data.
const medianSE = 1.2533141373155003

// direction is +1 where lower is better, 0 where a metric has none.
func direction(metric string) int {
	switch metric {
	case "nll", "error", "rank", "seconds_per_epoch":
		return 1
	case "bcr":
		return -1
	}
	return 0
}

// ourUncertainty is the standard error of our cell value.
func (rp *Reporter) ourUncertainty(st stat) float64 {
	if st.n == 0 || math.IsNaN(st.se) {
		return 0
	}
	if rp.s.Protocol.Uncertainty == "median2sd" {
		// st.se holds 2σ over the folds around the median.
		return medianSE * st.se / 2 / math.Sqrt(float64(st.n))
	}
	return st.se
}

// paperUncertainty is the standard error behind the paper's ± as the
// table declares it.
func paperUncertainty(tb Table, pm float64) float64 {
	if math.IsNaN(pm) {
		return 0
	}
	switch tb.PaperPM {
	case "sd":
		return pm / math.Sqrt(float64(tb.PaperN))
	case "2sd":
		return medianSE * pm / 2 / math.Sqrt(float64(tb.PaperN))
	case "none":
		return 0
	}
	return pm
}

// roundoff is half a unit of the last digit printed in a paper value
// ("0.11" → 0.005, "12" → 0.5), the precision the paper gave it.
func roundoff(v string) float64 {
	a, _, _ := strings.Cut(strings.TrimSpace(v), "±")
	a = strings.TrimSpace(a)
	if i := strings.IndexAny(a, "eE"); i >= 0 {
		a = a[:i]
	}
	if i := strings.IndexByte(a, '.'); i >= 0 {
		return 0.5 * math.Pow(10, -float64(len(a)-i-1))
	}
	return 0.5
}

// judged is one compared cell: our value and the paper's, each with its
// standard error; Large values compare as +∞.
type judged struct {
	ours, uOurs     float64
	oursLarge       bool
	paper, uPaper   float64
	paperLarge, has bool
	round           float64
	verdict         string
}

// judge fills the verdict of a cell with both values.
func judge(c *judged, metric string) {
	dir := direction(metric)
	switch {
	case c.oursLarge && c.paperLarge:
		c.verdict = verdictAgrees
		return
	case c.oursLarge || c.paperLarge:
		c.verdict = verdictDiffers
		if dir != 0 {
			c.verdict = map[bool]string{true: verdictWorse, false: verdictBetter}[c.oursLarge]
		}
		return
	}
	d := c.ours - c.paper
	if math.Abs(d) <= 2*math.Hypot(c.uOurs, c.uPaper)+c.round {
		c.verdict = verdictAgrees
		return
	}
	switch {
	case dir == 0 || metric == "seconds_per_epoch":
		c.verdict = verdictDiffers
	case float64(dir)*d > 0:
		c.verdict = verdictWorse
	default:
		c.verdict = verdictBetter
	}
}

// mark is a cell's verdict as printed after it.
func mark(v string) string {
	switch v {
	case verdictAgrees:
		return " ✓"
	case verdictBetter:
		return " ✗−"
	case verdictWorse:
		return " ✗+"
	case verdictDiffers:
		return " ✗"
	}
	return ""
}

// order compares a and b as -1 (a first), +1 (b first) or 0 (not
// separated beyond tol), Large ranking after every number.
func order(a, b float64, aLarge, bLarge bool, tol float64) int {
	switch {
	case aLarge && bLarge:
		return 0
	case aLarge:
		return 1
	case bLarge:
		return -1
	case b-a > tol:
		return -1
	case a-b > tol:
		return 1
	}
	return 0
}

// tableVerdict tallies a results table's cells and orderings.
type tableVerdict struct {
	compared, agree int
	pairs, reversed int
	complete, cells int
	// sigCells counts cells with a paper value tested against the
	// reference method; sigAgree those whose ◁ mark agrees with ours.
	sigCells, sigAgree int
	reversedExamples   []string
	timing             bool
	// notComparable is the table's NotComparable reason.
	notComparable string
}

// addRow judges one row's orderings: names are the columns' methods.
func (tv *tableVerdict) addRow(row string, names []string, cs []*judged, metric string) {
	if direction(metric) == 0 {
		return
	}
	for i := range cs {
		for j := i + 1; j < len(cs); j++ {
			a, b := cs[i], cs[j]
			if a == nil || b == nil || !a.has || !b.has {
				continue
			}
			tolP := 2*math.Hypot(a.uPaper, b.uPaper) + a.round + b.round
			p := order(a.paper, b.paper, a.paperLarge, b.paperLarge, tolP)
			if p == 0 {
				continue
			}
			tv.pairs++
			o := order(a.ours, b.ours, a.oursLarge, b.oursLarge, 2*math.Hypot(a.uOurs, b.uOurs))
			if o == -p {
				tv.reversed++
				first, second := names[i], names[j]
				if p > 0 {
					first, second = second, first
				}
				tv.reversedExamples = append(tv.reversedExamples, fmt.Sprintf("%s: paper %s < %s", row, first, second))
			}
		}
	}
}

// Table verdict labels, in the order an item of several tables takes the
// lowest (Scoreboard).
const (
	labelReproduced    = "reproduced"
	labelPartly        = "partly reproduced"
	labelNot           = "not reproduced"
	labelNotComparable = "not comparable"
	labelNone          = "no verdict"
)

// label is the table's verdict, and what the values alone would read when
// the runs are not the paper's experiment.
func (tv *tableVerdict) label() (verdict, values string) {
	if tv.compared == 0 && tv.pairs == 0 {
		return labelNone, labelNone
	}
	frac := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	agree, rev := frac(tv.agree, tv.compared), 0.0
	if tv.pairs > 0 {
		rev = float64(tv.reversed) / float64(tv.pairs)
	}
	if tv.timing {
		agree = 1 // timings are judged by their ordering alone
	}
	switch {
	case agree >= 0.9 && tv.reversed == 0:
		values = labelReproduced
	case agree < 0.5 || rev > 0.25:
		values = labelNot
	default:
		values = labelPartly
	}
	if tv.notComparable != "" {
		return labelNotComparable, values
	}
	return values, values
}

// tally is the counts behind the verdict in a few words (the scoreboard's
// "why").
func (tv *tableVerdict) tally() string {
	if tv.compared == 0 && tv.pairs == 0 {
		return "no cell has a spread of ours to judge by"
	}
	var parts []string
	if !tv.timing {
		parts = append(parts, fmt.Sprintf("%d of %d cells agree", tv.agree, tv.compared))
	} else {
		parts = append(parts, "timings, by ordering")
	}
	if tv.pairs > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d orderings reversed", tv.reversed, tv.pairs))
	}
	if tv.sigCells > 0 {
		parts = append(parts, fmt.Sprintf("marks agree in %d of %d", tv.sigAgree, tv.sigCells))
	}
	if tv.complete < tv.cells {
		parts = append(parts, fmt.Sprintf("%d of %d cells complete", tv.complete, tv.cells))
	}
	return strings.Join(parts, ", ")
}

// text states the table's verdict and the tallies behind it.
func (tv *tableVerdict) text() string {
	if tv.compared == 0 && tv.pairs == 0 {
		return "no verdict: no cell has both a paper value and a spread of ours (a standard error needs two or more runs, or a bootstrap)"
	}
	verdict, v := tv.label()
	var b strings.Builder
	if verdict == labelNotComparable {
		fmt.Fprintf(&b, "**not comparable** — our runs are not the paper's experiment: %s. The values alone would read %s", tv.notComparable, v)
	} else {
		fmt.Fprintf(&b, "**%s**", v)
	}
	if !tv.timing {
		fmt.Fprintf(&b, " — %d of %d cells agree", tv.agree, tv.compared)
	} else {
		b.WriteString(" — timings judged by their ordering")
	}
	if tv.pairs > 0 {
		fmt.Fprintf(&b, "; %d of the paper's %d orderings reversed", tv.reversed, tv.pairs)
		if len(tv.reversedExamples) > 0 {
			ex := tv.reversedExamples
			if len(ex) > 4 {
				ex = append(ex[:4:4], fmt.Sprintf("%d more", len(tv.reversedExamples)-4))
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(ex, "; "))
		}
	}
	if tv.sigCells > 0 {
		fmt.Fprintf(&b, "; significance marks (%s, Wilcoxon p < 0.01) agree in %d of %d cells", sigMark, tv.sigAgree, tv.sigCells)
	}
	if tv.complete < tv.cells {
		fmt.Fprintf(&b, "; partial: %d of %d cells have all their runs", tv.complete, tv.cells)
	}
	return b.String()
}

// ownGenerator is the reason a table of a spec with generator: own is not
// comparable.
const ownGenerator = "its problems come from a generator of ours, standing in for one the paper does not specify and the authors did not publish"

// notComparable is why a table's runs are not the paper's experiment, from
// its spec's properties ("" when they are).
func (rp *Reporter) notComparable(tb Table) string {
	var why []string
	if rp.s.Generator == "own" {
		why = append(why, ownGenerator)
	}
	if tb.NotComparable != "" {
		why = append(why, tb.NotComparable)
	}
	return strings.Join(why, "; ")
}
