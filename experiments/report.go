package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"

	"github.com/gpc-dev/gpc/datasets"
)

// Cell is one entry of report.json: our mean ± standard error over n runs
// beside the paper's published value (nil where the paper has none).
type Cell struct {
	Table   string   `json:"table"`
	Dataset string   `json:"dataset"`
	Setting string   `json:"setting"`
	Method  string   `json:"method"`
	Metric  string   `json:"metric"`
	Mean    *float64 `json:"mean"`
	Stderr  *float64 `json:"stderr"`
	N       int      `json:"n"`
	// Paper is the paper's mean (its ± is in report.md and the spec).
	Paper *float64 `json:"paper"`
	// Large marks our value as above the table's large_above threshold.
	Large bool `json:"large,omitempty"`
	// Verdict is the computed verdict of the cell (VerdictRule): agrees,
	// better, worse or differs; empty where there is nothing to compare.
	Verdict string `json:"verdict,omitempty"`
}

// TableVerdict is a table's computed verdict in report.json.
type TableVerdict struct {
	Table   string `json:"table"`
	Verdict string `json:"verdict"`
}

// ReportJSON is the layout of report.json.
type ReportJSON struct {
	Spec     *Spec          `json:"spec"`
	Cells    []Cell         `json:"cells"`
	Verdicts []TableVerdict `json:"verdicts"`
}

// stat is a mean with its standard error and count.
type stat struct {
	mean, se float64
	n        int
	// boot says se is a bootstrap standard deviation over the test points
	// of a single run, a spread to judge by although n is 1.
	boot bool
}

// summarize returns the mean and the standard error of the mean (sample
// standard deviation / √n; 0 for a single value).
func summarize(v []float64) stat {
	if len(v) == 0 {
		return stat{mean: math.NaN(), se: math.NaN()}
	}
	var m float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	if len(v) == 1 {
		return stat{mean: m, n: 1}
	}
	var ss float64
	for _, x := range v {
		ss += (x - m) * (x - m)
	}
	return stat{mean: m, se: math.Sqrt(ss / float64(len(v)-1) / float64(len(v))), n: len(v)}
}

// metricOf extracts a results-table metric from a run.
func metricOf(r Result, metric string) (float64, bool) {
	switch metric {
	case "nll":
		return r.NLL, true
	case "error":
		return r.Error, true
	case "bcr":
		return r.BCR, true
	case "seconds_per_epoch":
		return r.SecondsPerEpoch, true
	case "learned_noise":
		if len(r.LearnedNoise) == 0 {
			return 0, false
		}
		var s float64
		for _, v := range r.LearnedNoise {
			s += v
		}
		return s / float64(len(r.LearnedNoise)), true
	}
	return 0, false
}

// Reporter renders one spec's results; a paper's figures draw from it.
type Reporter struct {
	s       *Spec
	dir     string
	dataDir string
	results []Result
	// by groups results by dataset|setting|method.
	by    map[string][]Result
	cells []Cell
	md    strings.Builder
	// planned counts the grid's runs per dataset|setting|method.
	planned  map[string]int
	verdicts []TableVerdict
	// tables holds each table's markdown by ID, and total the grid's
	// size, for Splice.
	tables map[string]string
	total  int
	// judged holds each table's verdict label and tallies by table ID,
	// for the scoreboard.
	judged map[string][]judgement
	// missing names the runs without a result and their shards.
	missing string
	// spread caches nllSpread by dataset|setting.
	spread map[string]float64
	// ctx stops the report: checked between tables and figures, and by
	// the figures that draw data again (an O(n³) generator).
	ctx context.Context
}

// context is the report's context, Background for a Reporter built
// without one.
func (rp *Reporter) context() context.Context {
	if rp.ctx == nil {
		return context.Background()
	}
	return rp.ctx
}

func groupKey(d, s, m string) string { return d + "|" + s + "|" + m }

// Report writes DIR/report.md, DIR/report.json and the spec's figures from
// DIR/results.jsonl and the spec saved by Execute. Only results of the
// saved grid are used, so stale lines from another budget are ignored.
func Report(dir, dataDir string) error { return ReportContext(context.Background(), dir, dataDir) }

// ReportContext is Report, stopped with ctx's error once ctx is done: it is
// checked before the results are read, between tables, before anything is
// written and between figures (and within the figures that draw a data
// set again). Every file is written whole (datasets.WriteFileAtomic), so
// an interrupted report leaves each file either new or as it was; stopped
// before the writes, it writes nothing.
func ReportContext(ctx context.Context, dir, dataDir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rp, total, err := newReporter(dir, dataDir)
	if err != nil {
		return err
	}
	rp.ctx = ctx
	rp.render(total)
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := datasets.WriteFileAtomic(filepath.Join(dir, "report.md"), []byte(rp.md.String())); err != nil {
		return err
	}
	b, err := json.MarshalIndent(ReportJSON{Spec: rp.s, Cells: rp.cells, Verdicts: rp.verdicts}, "", "  ")
	if err != nil {
		return err
	}
	if err := datasets.WriteFileAtomic(filepath.Join(dir, "report.json"), b); err != nil {
		return err
	}
	return rp.figures()
}

// newReporter loads a results directory's spec and the results of its
// grid; total is the grid's size.
func newReporter(dir, dataDir string) (*Reporter, int, error) {
	s, err := loadResolved(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("report: %w (was the experiment run into %s?)", err, dir)
	}
	st, err := openStore(dir)
	if err != nil {
		return nil, 0, err
	}
	keys := map[string]bool{}
	planned := map[string]int{}
	for _, r := range Expand(s) {
		keys[r.Key] = true
		planned[groupKey(r.Dataset, r.Setting.Name, r.Method.Name)]++
	}
	rp := &Reporter{s: s, dir: dir, dataDir: dataDir, by: map[string][]Result{}, planned: planned}
	done := map[string]bool{}
	for _, r := range st.results() {
		if keys[r.Key] {
			rp.results = append(rp.results, r)
			k := groupKey(r.Dataset, r.Setting, r.Method)
			rp.by[k] = append(rp.by[k], r)
			done[r.Key] = true
		}
	}
	rp.missing = missingRuns(dir, Expand(s), done)
	return rp, len(keys), nil
}

func (rp *Reporter) printf(format string, args ...any) { fmt.Fprintf(&rp.md, format, args...) }

func (rp *Reporter) render(total int) {
	s := rp.s
	rp.printf("# %s\n\n", s.Title)
	rp.printf("Spec `%s` (family %s). Paper values: %s.\n\n", s.Name, s.Family, s.Source)
	rp.printf("Budget: %s. Runs finished: %d of %d.\n\n", s.Budget, len(rp.results), total)
	if rp.missing != "" {
		rp.printf("Incomplete: %s.\n\n", rp.missing)
	}
	switch rp.s.Protocol.Uncertainty {
	case "median2sd":
		rp.printf("Cells read `ours: median ± 2 standard deviations over the folds [n runs] · paper`; `—` means no value.\n\n")
	case "bootstrap":
		rp.printf("Cells read `ours ± bootstrap standard error over test points [n runs] · paper`; `—` means no value.\n\n")
	default:
		rp.printf("Cells read `ours ± standard error [n runs] · paper`; `—` means no value.\n\n")
	}
	rp.printf("Verdict marks: ✓ agrees, ✗− ours better, ✗+ ours worse, ✗ differs, by the rule:\n\n%s\n\n", quote(VerdictRule))
	rp.tables = map[string]string{}
	for _, tb := range s.Tables {
		if rp.context().Err() != nil {
			return // the caller returns ctx's error and writes nothing
		}
		start := rp.md.Len()
		switch tb.Kind {
		case "confusion":
			rp.confusionTable(tb)
		case "data":
			rp.dataTable(tb)
		case "params":
			rp.paramsTable(tb)
		case "frontier":
			rp.frontierTable(tb)
		case "instances":
			rp.instancesTable(tb)
		case "outliers":
			rp.outliersTable(tb)
		default:
			rp.resultsTable(tb)
		}
		// Specs give the NLL and error halves of one paper table the same
		// id (T1, T9, T17), so a spliced block holds every table of its id.
		rp.tables[tb.ID] += rp.md.String()[start:]
	}
	if len(s.Figures) > 0 {
		rp.printf("## Figures\n\n")
		for _, f := range s.Figures {
			rp.printf("- %s: `%s.png`\n", f, f)
		}
		rp.printf("\n")
	}
	if s.Notes != "" {
		rp.printf("## Notes and deviations\n\n%s\n", s.Notes)
	}
}

func (rp *Reporter) tableMethods(tb Table) []string {
	if len(tb.Methods) > 0 {
		return tb.Methods
	}
	var ms []string
	for _, m := range rp.s.Methods {
		ms = append(ms, m.Name)
	}
	return ms
}

func (rp *Reporter) tableSettings(tb Table) []Setting {
	var out []Setting
	for _, st := range rp.s.Settings {
		if len(tb.Settings) == 0 || slices.Contains(tb.Settings, st.Name) {
			out = append(out, st)
		}
	}
	return out
}

// paperValue finds the paper's value for a results-table cell.
func paperValue(tb Table, setting, dataset string, col int) (string, bool) {
	for _, r := range tb.Paper {
		if (r.Setting == "" || r.Setting == setting) && (r.Dataset == "" || r.Dataset == dataset) && col < len(r.Values) {
			return r.Values[col], true
		}
	}
	return "", false
}

// pcell adds a report.json cell and returns its markdown text.
func (rp *Reporter) pcell(tb Table, dataset, setting, method, metric string, st stat, paper string) string {
	text, _ := rp.judgedCell(tb, dataset, setting, method, metric, st, paper, false)
	return text
}

// judgedCell adds a report.json cell and returns its markdown text and,
// when judge is set and both sides have a value, its verdict (VerdictRule).
func (rp *Reporter) judgedCell(tb Table, dataset, setting, method, metric string, st stat, paper string, judgeIt bool) (string, *judged) {
	c := Cell{Table: tb.ID, Dataset: dataset, Setting: setting, Method: method, Metric: metric, N: st.n}
	j := &judged{}
	ours := "—"
	hasOurs := st.n > 0 && !math.IsNaN(st.mean)
	if hasOurs {
		m, e := st.mean, st.se
		c.Mean = &m
		if st.n >= 2 || st.boot {
			c.Stderr = &e
			ours = fmt.Sprintf("%s±%s [%d]", fmtNum(m), fmtNum(e), st.n)
		} else { // one run and no bootstrap: no spread to show, not a zero one
			ours = fmt.Sprintf("%s [%d]", fmtNum(m), st.n)
		}
		j.ours, j.uOurs = m, rp.ourUncertainty(st)
		if tb.LargeAbove > 0 && m > tb.LargeAbove {
			c.Large, j.oursLarge = true, true
			ours = "Large (" + ours + ")"
		}
	}
	pp := "—"
	if paper != "" && paper != "-" {
		pp = paper
		// "formula = value" (Table 19) carries its evaluated number last.
		if i := strings.LastIndex(paper, "= "); i >= 0 {
			paper = paper[i+2:]
		}
		if m, pm, ok := parsePaperValue(paper); ok {
			c.Paper = &m
			j.paper, j.uPaper, j.round, j.has = m, paperUncertainty(tb, pm), roundoff(paper), true
		} else if paper == "Large" {
			j.paperLarge, j.has = true, true
		}
	}
	// A single run has no spread to judge by, but for a bootstrap over its
	// test points.
	j.has = j.has && hasOurs && (st.n >= 2 || st.boot)
	if judgeIt && j.has {
		judge(j, metric)
		c.Verdict = j.verdict
		pp += mark(j.verdict)
	}
	rp.cells = append(rp.cells, c)
	if !judgeIt {
		return ours + " · " + pp, nil
	}
	return ours + " · " + pp, j
}

// quote renders text as a markdown block quote.
func quote(text string) string {
	return "> " + strings.ReplaceAll(text, "\n", "\n> ")
}

// fmtNum prints 3 significant digits, like the paper.
func fmtNum(v float64) string {
	if v == 0 {
		return "0"
	}
	a := math.Abs(v)
	switch {
	case v == math.Trunc(v) && a < 1e9:
		return fmt.Sprintf("%d", int64(v)) // counts (Table 4, Table 19)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.3g", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// statFor summarises a metric over the runs of one group; with bootstrap
// uncertainty and a single run, the error bar is the bootstrap standard
// deviation over test points (Table 1).
func (rp *Reporter) statFor(rs []Result, metric string) stat {
	var v []float64
	for _, r := range rs {
		if x, ok := metricOf(r, metric); ok {
			v = append(v, x)
		}
	}
	st := summarize(v)
	if rp.s.Protocol.Uncertainty == "median2sd" && len(v) > 0 {
		// The SVGP paper's Table 1: the median over folds ± 2 standard
		// deviations over folds (its ambiguity A5, read this way).
		st.mean, st.se = median(v), 2*st.se*math.Sqrt(float64(len(v)))
	}
	if rp.s.Protocol.Uncertainty == "bootstrap" && len(rs) == 1 {
		r := rs[0]
		pts := r.PointNLL
		if metric == "error" {
			pts = r.PointErr
		}
		switch {
		case len(pts) > 0 && (metric == "nll" || metric == "error"):
			_, st.se = datasets.Bootstrap(pts, 1000, 1)
			st.boot = true
		case metric == "error" && r.NTest > 0 && !math.IsNaN(r.Error):
			// A run from before its spec asked for the bootstrap kept no
			// per-point losses; for 0/1 losses the bootstrap's standard
			// deviation is that of a binomial proportion, √(e(1−e)/n), which
			// the resampling only estimates.
			st.se = math.Sqrt(r.Error * (1 - r.Error) / float64(r.NTest))
			st.boot = true
		case metric == "nll" && r.NTest > 0 && !math.IsNaN(r.NLL):
			// A NLL has no such form: such a run takes the per-point
			// spread (σ/mean) of the runs on the same data that kept their
			// losses, which the bootstrap's σ/√n then follows; with no such
			// run it is shown without a spread and not judged.
			if cv, ok := rp.nllSpread(r.Dataset, r.Setting); ok {
				st.se = r.NLL * cv / math.Sqrt(float64(r.NTest))
				st.boot = true
			}
		}
	}
	return st
}

// nllSpread is the mean ratio σ/mean of the per-point NLLs of the runs on
// dataset that kept them: those of the same setting (the same test set)
// when there are any, else those of every setting.
func (rp *Reporter) nllSpread(dataset, setting string) (float64, bool) {
	k := dataset + "|" + setting
	if v, ok := rp.spread[k]; ok {
		return v, !math.IsNaN(v)
	}
	cv := func(sameSetting bool) float64 {
		var sum float64
		var n int
		for _, r := range rp.results {
			if r.Dataset != dataset || len(r.PointNLL) < 2 || sameSetting && r.Setting != setting {
				continue
			}
			st := summarize(r.PointNLL)
			if st.mean <= 0 || math.IsNaN(st.se) {
				continue
			}
			sum += st.se * math.Sqrt(float64(st.n)) / st.mean
			n++
		}
		if n == 0 {
			return math.NaN()
		}
		return sum / float64(n)
	}
	v := cv(true)
	if math.IsNaN(v) {
		v = cv(false)
	}
	if rp.spread == nil {
		rp.spread = map[string]float64{}
	}
	rp.spread[k] = v
	return v, !math.IsNaN(v)
}

func (rp *Reporter) resultsTable(tb Table) {
	methods := rp.tableMethods(tb)
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	multiData := len(rp.s.Datasets) > 1
	hdr := "| Setting |"
	sep := "|---|"
	if multiData {
		hdr += " Data set |"
		sep += "---|"
	}
	for _, m := range methods {
		hdr += " " + m + " |"
		sep += "---|"
	}
	rp.printf("%s\n%s\n", hdr, sep)
	tv := &tableVerdict{timing: tb.Metric == "seconds_per_epoch", notComparable: rp.notComparable(tb)}
	for _, st := range rp.tableSettings(tb) {
		for _, d := range rp.s.Datasets {
			row := "| " + st.Name + " |"
			if multiData {
				row += " " + d + " |"
			}
			js := make([]*judged, len(methods))
			for j, m := range methods {
				pv, _ := paperValue(tb, st.Name, d, j)
				k := groupKey(d, st.Name, m)
				text, jc := rp.judgedCell(tb, d, st.Name, m, tb.Metric, rp.statFor(rp.by[k], tb.Metric), pv, true)
				if tb.TestAgainst != "" && m != tb.TestAgainst {
					if p, n := rp.pairedTest(d, st.Name, m, tb.TestAgainst, tb.Metric); n > 0 {
						ours := p < 0.01
						if ours {
							text = strings.Replace(text, " · ", " "+sigMark+" · ", 1)
						}
						if pv != "" && pv != "-" {
							tv.sigCells++
							if ours == strings.HasSuffix(strings.TrimSpace(pv), sigMark) {
								tv.sigAgree++
							}
						}
					}
				}
				row += " " + text + " |"
				if jc != nil && jc.has {
					js[j] = jc
					tv.compared++
					if jc.verdict == verdictAgrees {
						tv.agree++
					}
				}
				if rp.planned[k] > 0 {
					tv.cells++
					if len(rp.by[k]) >= rp.planned[k] {
						tv.complete++
					}
				}
			}
			name := d
			if len(rp.tableSettings(tb)) > 1 {
				name = st.Name + "/" + d
			}
			tv.addRow(name, methods, js, tb.Metric)
			rp.printf("%s\n", row)
		}
		if tb.Averages {
			rp.printf("%s\n", rp.averageRow(tb, st.Name, methods, multiData))
		}
		if tb.Ranks {
			ranks := rp.meanRanks(st.Name, methods, tb.Metric)
			row := "| " + st.Name + " |"
			if multiData {
				row += " **mean rank** |"
			}
			for j, m := range methods {
				pv, _ := paperValue(tb, st.Name, rankRow, j)
				row += " " + rp.pcell(tb, rankRow, st.Name, m, "rank", ranks[m], pv) + " |"
			}
			rp.printf("%s\n", row)
		}
	}
	rp.printf("\nVerdict (computed): %s.\n\n", tv.text())
	rp.recordTV(tb, tv)
	if tb.DiffAgainst != "" {
		rp.diffTable(tb, methods, multiData)
	}
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

// diffTable prints, under a results table with DiffAgainst, each cell's
// paired difference from its reference cell (pairedDiff): the same rows and
// columns, the reference's own cells marked as such.
func (rp *Reporter) diffTable(tb Table, methods []string, multiData bool) {
	bySetting := slices.ContainsFunc(rp.s.Settings, func(st Setting) bool { return st.Name == tb.DiffAgainst })
	rp.printf("Paired difference from %s (%s), mean ± standard error [pairs]:\n\n", tb.DiffAgainst, map[bool]string{true: "the setting", false: "the method"}[bySetting])
	hdr, sep := "| Setting |", "|---|"
	if multiData {
		hdr, sep = hdr+" Data set |", sep+"---|"
	}
	for _, m := range methods {
		hdr, sep = hdr+" "+m+" |", sep+"---|"
	}
	rp.printf("%s\n%s\n", hdr, sep)
	for _, st := range rp.tableSettings(tb) {
		for _, d := range rp.s.Datasets {
			row := "| " + st.Name + " |"
			if multiData {
				row += " " + d + " |"
			}
			for _, m := range methods {
				rs, rm := st.Name, m
				if bySetting {
					rs = tb.DiffAgainst
				} else {
					rm = tb.DiffAgainst
				}
				if rs == st.Name && rm == m {
					row += " (reference) |"
					continue
				}
				diff, unit := pairedDiff(rp.by[groupKey(d, st.Name, m)], rp.by[groupKey(d, rs, rm)], tb.Metric)
				if diff.n == 0 {
					row += " — |"
					continue
				}
				row += fmt.Sprintf(" %+.3g ± %.2g [%d %s] |", diff.mean, diff.se, diff.n, unit)
			}
			rp.printf("%s\n", row)
		}
	}
	rp.printf("\n")
}

// pairedDiff is the mean difference of a metric between two groups of runs
// of the same data, a − b, with its standard error: over the splits both
// groups ran when they share at least two, else, for one run each, over
// the test points both kept (PointNLL for nll, PointErr for error) when
// they are as many. n = 0 when neither pairing is possible.
func pairedDiff(a, b []Result, metric string) (st stat, unit string) {
	bySplit := map[int]float64{}
	for _, r := range b {
		if v, ok := metricOf(r, metric); ok {
			bySplit[r.Split] = v
		}
	}
	var d []float64
	for _, r := range a {
		v, ok := metricOf(r, metric)
		if w, has := bySplit[r.Split]; ok && has {
			d = append(d, v-w)
		}
	}
	if len(d) >= 2 {
		return summarize(d), "splits"
	}
	if len(a) == 1 && len(b) == 1 {
		pa, pb := pointValues(a[0], metric), pointValues(b[0], metric)
		if len(pa) >= 2 && len(pa) == len(pb) {
			d = make([]float64, len(pa))
			for i := range pa {
				d[i] = pa[i] - pb[i]
			}
			return summarize(d), "test points"
		}
	}
	return stat{}, ""
}

// pointValues are a run's per-test-point values of a metric, if it kept
// them.
func pointValues(r Result, metric string) []float64 {
	switch metric {
	case "nll":
		return r.PointNLL
	case "error":
		return r.PointErr
	}
	return nil
}

// averageRow is a setting's row of averages over data sets (the
// additive-noise paper's Table II). A method's cell averages its per-set
// means over the data sets that have both its runs and a paper value, with
// standard error √(Σ se²)/k over those k sets, beside the mean of the
// paper's values over the same sets; "{k sets}" says how many. An average
// over fewer sets than the paper's is not the paper's number (which the
// spec's notes quote), so the row is shown and not judged.
func (rp *Reporter) averageRow(tb Table, setting string, methods []string, multiData bool) string {
	row := "| " + setting + " |"
	if multiData {
		row += " **" + averageRow + "** |"
	}
	for j, m := range methods {
		var means, paper []float64
		var se2 float64
		runs := 0
		for _, d := range rp.s.Datasets {
			st := rp.statFor(rp.by[groupKey(d, setting, m)], tb.Metric)
			pv, _ := paperValue(tb, setting, d, j)
			pm, _, ok := parsePaperValue(pv)
			if st.n == 0 || math.IsNaN(st.mean) || !ok {
				continue
			}
			means = append(means, st.mean)
			paper = append(paper, pm)
			se2 += st.se * st.se
			runs += st.n
		}
		if len(means) == 0 {
			row += " — |"
			continue
		}
		k := float64(len(means))
		avg := stat{mean: floats.Sum(means) / k, se: math.Sqrt(se2) / k, n: runs}
		pv := strconv.FormatFloat(floats.Sum(paper)/k, 'g', 4, 64)
		row += fmt.Sprintf(" %s {%s} |", rp.pcell(tb, averageRow, setting, m, tb.Metric, avg, pv), plural(len(means), "set"))
	}
	return row
}

// averageRow names the rows of averageRow.
const averageRow = "average"

// pairedTest is the Wilcoxon signed-rank p-value of a method's per-split
// metric against the reference method's on the same splits, and the number
// of non-zero differences.
func (rp *Reporter) pairedTest(d, setting, method, ref, metric string) (float64, int) {
	refBy := map[int]float64{}
	for _, r := range rp.by[groupKey(d, setting, ref)] {
		if x, ok := metricOf(r, metric); ok {
			refBy[r.Split] = x
		}
	}
	var diff []float64
	for _, r := range rp.by[groupKey(d, setting, method)] {
		x, ok := metricOf(r, metric)
		y, okRef := refBy[r.Split]
		if ok && okRef {
			diff = append(diff, x-y)
		}
	}
	if len(diff) == 0 {
		return 1, 0
	}
	return WilcoxonSignedRank(diff)
}

// meanRanks ranks the methods within every (data set, split) of a setting
// where all of them finished (1 = best, ties share the average rank) and
// averages over data sets and splits, as the paper's Tables 5 and 6.
func (rp *Reporter) meanRanks(setting string, methods []string, metric string) map[string]stat {
	type cellKey struct {
		d     string
		split int
	}
	vals := map[cellKey]map[string]float64{}
	for _, r := range rp.results {
		if r.Setting != setting || !slices.Contains(methods, r.Method) {
			continue
		}
		x, ok := metricOf(r, metric)
		if !ok {
			continue
		}
		k := cellKey{r.Dataset, r.Split}
		if vals[k] == nil {
			vals[k] = map[string]float64{}
		}
		vals[k][r.Method] = x
	}
	ranks := map[string][]float64{}
	keys := make([]cellKey, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].d != keys[j].d {
			return keys[i].d < keys[j].d
		}
		return keys[i].split < keys[j].split
	})
	for _, k := range keys {
		v := vals[k]
		if len(v) != len(methods) {
			continue
		}
		for _, m := range methods {
			var less, equal float64
			for _, o := range methods {
				switch {
				case v[o] < v[m]:
					less++
				case v[o] == v[m]:
					equal++
				}
			}
			ranks[m] = append(ranks[m], less+(equal+1)/2)
		}
	}
	out := map[string]stat{}
	for _, m := range methods {
		out[m] = summarize(ranks[m])
	}
	return out
}

// confusionOrder is the paper's class order in Tables 10 and 18 (bll,
// fsrq, psr) as indices of datasets.AstroClassNames, looked up by name
// (the file's labels are 0 = bll, 1 = fsrq, 2 = psr; see AstroClassNames
// for the evidence).
var confusionOrder = func() []int {
	var out []int
	for _, n := range []string{"bll", "fsrq", "psr"} {
		out = append(out, slices.Index(datasets.AstroClassNames, n))
	}
	return out
}()

func (rp *Reporter) confusionTable(tb Table) {
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	names := datasets.AstroClassNames
	hdr, sep := "| Setting | Predicted | Model |", "|---|---|---|"
	for _, t := range confusionOrder {
		hdr += " " + names[t] + " (true) |"
		sep += "---|"
	}
	rp.printf("%s\n%s\n", hdr, sep)
	for _, st := range rp.tableSettings(tb) {
		for _, p := range confusionOrder {
			for _, m := range rp.tableMethods(tb) {
				row := fmt.Sprintf("| %s | %s | %s |", st.Name, names[p], m)
				var rs []Result
				for _, d := range rp.s.Datasets {
					rs = append(rs, rp.by[groupKey(d, st.Name, m)]...)
				}
				for j, t := range confusionOrder {
					var v []float64
					for _, r := range rs {
						if p < len(r.Confusion) && t < len(r.Confusion[p]) {
							v = append(v, r.Confusion[p][t])
						}
					}
					paper := ""
					for _, pr := range tb.Paper {
						if pr.Method == m && pr.Pred == names[p] && (pr.Setting == "" || pr.Setting == st.Name) {
							paper = pr.Values[j]
						}
					}
					metric := fmt.Sprintf("confusion[pred=%s,true=%s]", names[p], names[t])
					row += " " + rp.pcell(tb, rp.s.Datasets[0], st.Name, m, metric, summarize(v), paper) + " |"
				}
				rp.printf("%s\n", row)
			}
		}
	}
	rp.printf("\n")
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

// dataTable is Table 4, generated from the data files.
func (rp *Reporter) dataTable(tb Table) {
	rp.printf("## %s — %s\n\n| Data set | #Instances | #Attributes | #Classes |\n|---|---|---|---|\n", tb.ID, tb.Title)
	for _, d := range rp.s.Datasets {
		ds, err := datasets.LoadUCI(rp.dataDir, d)
		ours := []float64{math.NaN(), math.NaN(), math.NaN()}
		if err == nil {
			ours = []float64{float64(ds.N), float64(ds.D), float64(ds.C)}
		}
		row := "| " + d + " |"
		for j, what := range []string{"instances", "attributes", "classes"} {
			pv, _ := paperValue(tb, "", d, j)
			st := stat{mean: ours[j], n: 1}
			if math.IsNaN(ours[j]) {
				st.n = 0
			}
			row += " " + strings.Replace(rp.pcell(tb, d, "", "", what, st, pv), "±0 [1]", "", 1) + " |"
		}
		rp.printf("%s\n", row)
	}
	rp.printf("\n")
}

// paramsTable is Table 19: the parameters each method adds to MGP, ours
// counted from the trained models, the paper's from its formulas.
func (rp *Reporter) paramsTable(tb Table) {
	methods := rp.tableMethods(tb)
	rp.printf("## %s — %s\n\n", tb.ID, tb.Title)
	hdr, sep := "| Data set | Setting |", "|---|---|"
	for _, m := range methods {
		hdr += " " + m + " |"
		sep += "---|"
	}
	rp.printf("%s\n%s\n", hdr, sep)
	for _, d := range rp.s.Datasets {
		for _, st := range rp.tableSettings(tb) {
			row := "| " + d + " | " + st.Name + " |"
			base := math.NaN()
			if rs := rp.by[groupKey(d, st.Name, "MGP")]; len(rs) > 0 {
				base = float64(rs[0].Params)
			}
			for j, m := range methods {
				rs := rp.by[groupKey(d, st.Name, m)]
				var s stat
				formula, _ := paperValue(tb, st.Name, d, j)
				if len(rs) > 0 && !math.IsNaN(base) {
					s = stat{mean: float64(rs[0].Params) - base, n: 1}
					if v, ok := paperFormula(m, rs[0]); ok {
						formula = fmt.Sprintf("%s = %d", formula, v)
					}
				}
				row += " " + strings.Replace(rp.pcell(tb, d, st.Name, m, "extra_params", s, formula), "±0 [1]", "", 1) + " |"
			}
			rp.printf("%s\n", row)
		}
	}
	rp.printf("\n")
	if tb.Note != "" {
		rp.printf("%s\n\n", tb.Note)
	}
}

// paperFormula evaluates Table 19's count for a run (N×(d+d+d) for NIMGP,
// M_NN + N×d for NIMGP_NN, N×d for NIMGP_FO, none for MGP).
func paperFormula(method string, r Result) (int, bool) {
	switch strings.ToUpper(method) {
	case "MGP":
		return 0, true
	case "NIMGP":
		return r.NTrain * 3 * r.D, true
	case "NIMGP_NN":
		return r.NNParams + r.NTrain*r.D, true
	case "NIMGP_FO":
		return r.NTrain * r.D, true
	}
	return 0, false
}

// plural is "1 set", "2 sets".
func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Spec returns the spec being reported.
func (rp *Reporter) Spec() *Spec { return rp.s }

// Dir returns the report directory, where figures are written.
func (rp *Reporter) Dir() string { return rp.dir }

// Results returns the spec's results read from the runner's files.
func (rp *Reporter) Results() []Result { return rp.results }
