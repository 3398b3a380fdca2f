package experiments

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// judgement is one table's computed verdict in a few words.
type judgement struct {
	title, label, why string
}

// recordTV records a results table's verdict for report.json and the
// scoreboard.
func (rp *Reporter) recordTV(tb Table, tv *tableVerdict) {
	label, values := tv.label()
	why := tv.tally()
	if label == labelNotComparable {
		why = "the values alone read " + values + ": " + why
	}
	rp.record(tb, tv.text(), label, why)
}

// recordText records a verdict given as text ("**label** — why" or
// "no verdict: why").
func (rp *Reporter) recordText(tb Table, text string) {
	label, why := labelNone, strings.TrimPrefix(text, "no verdict: ")
	if rest, ok := strings.CutPrefix(text, "**"); ok {
		if l, w, ok := strings.Cut(rest, "**"); ok {
			label, why = l, strings.TrimPrefix(w, " — ")
		}
	}
	rp.record(tb, text, label, why)
}

func (rp *Reporter) record(tb Table, text, label, why string) {
	rp.verdicts = append(rp.verdicts, TableVerdict{Table: tb.ID, Verdict: text})
	if rp.judged == nil {
		rp.judged = map[string][]judgement{}
	}
	rp.judged[tb.ID] = append(rp.judged[tb.ID], judgement{title: tb.Title, label: label, why: why})
}

// ScoreItem is one table or figure of a paper on the scoreboard.
type ScoreItem struct {
	// Paper is the paper's number (000 … 004, as in /work/shared/papers).
	Paper string
	// Item names the table or figure as the paper does.
	Item string
	// PaperBudget is the paper's own budget for it, in a few words.
	PaperBudget string
	// From is "DIR ID": the results directory (under experiments/results)
	// and table ID whose computed verdict the item takes. Empty for items
	// with no table to judge (Note says why).
	From string
	// Note is the why of an item without a computed verdict, or a word
	// added to a judged one's.
	Note string
}

// Scoreboard lists every table and figure of the four papers with the
// committed results that judge it. Adding a paper's experiment adds its
// items here; the verdicts are the reports', never written here.
var Scoreboard = []ScoreItem{
	{"000", "Table 1", "1 run, 750 epochs", "t1_toy T1", ""},
	{"000", "Figures 1, 2", "1 run", "", "drawn from t1_toy (fig1.png, fig2.png), judged by eye"},
	{"000", "Table 2", "100 problems × 6 settings", "t2_t3_synthetic T2", ""},
	{"000", "Table 3", "100 problems × 6 settings", "t2_t3_synthetic T3", ""},
	{"000", "Figure 3", "one problem", "", "an illustration of a generated problem (fig3.png)"},
	{"000", "Figure 4", "100 problems × 3 levels", "t2_t3_synthetic Fig4", "histograms only in the paper; the learned noise is shown against the true level"},
	{"000", "Table 4", "data characteristics", "", "generated from the data files (t5_t6_uci_quick T4)"},
	{"000", "Table 5", "8 sets × 4 levels × 100 splits, 1000 epochs", "t5_t6_uci_small20 T5", "the four small sets, 20 splits"},
	{"000", "Table 6", "8 sets × 4 levels × 100 splits, 1000 epochs", "t5_t6_uci_small20 T6", "the four small sets, 20 splits"},
	{"000", "Table 7", "1 run a cell, 350 epochs", "t7_t8_mnist_poly T7", ""},
	{"000", "Table 8", "1 run a cell (P100 GPU)", "t7_t8_mnist_poly T8", "CPU against GPU: judged by ordering"},
	{"000", "Figure 5", "1 run a cell", "", "histograms of the learned noise, drawn from t7_t8_mnist_poly (fig5.png)"},
	{"000", "Figures 6, 7", "100 repetitions × 100 steps", "active_learning_quick Fig6", "the paper plots curves only"},
	{"000", "Figure 8", "data", "", "a picture of the astrophysics data"},
	{"000", "Table 9", "100 splits, 750 epochs", "t9_t10_astro T9", ""},
	{"000", "Table 10", "100 splits, 750 epochs", "t9_t10_astro T10", "confusion matrices, not judged"},
	{"000", "Table 11", "100 problems × 3 levels", "t11_t12_mgp_aug T11", ""},
	{"000", "Table 12", "100 problems × 3 levels", "t11_t12_mgp_aug T12", ""},
	{"000", "Table 13", "100 problems × 27 settings", "t13_t14_synthetic_dn_quick T13", ""},
	{"000", "Table 14", "100 problems × 27 settings", "t13_t14_synthetic_dn_quick T14", ""},
	{"000", "Table 15", "100 problems × 12 settings", "t15_t16_synthetic_c_quick T15", ""},
	{"000", "Table 16", "100 problems × 12 settings", "t15_t16_synthetic_c_quick T16", ""},
	{"000", "Table 17", "100 splits, 750 epochs", "t17_t18_astro_b4 T17", ""},
	{"000", "Table 18", "100 splits, 750 epochs", "t17_t18_astro_b4 T18", "confusion matrices, not judged"},
	{"000", "Table 19", "parameter counts", "t19_params_quick T19", "counted, not trained"},
	{"001", "Table 7 (SE kernel)", "1 run a cell, 350 epochs", "mnist_se_v001_quick T7-001", ""},
	{"001", "Table 8 (SE kernel)", "1 run a cell (GPU)", "mnist_se_v001_quick T8-001", "CPU against GPU: judged by ordering"},
	{"002", "Table 1", "10 folds, 300 iterations", "svgp_t1_raetsch T1", ""},
	{"002", "Figure 1", "1 fit per M", "svgp_fig1_banana F1", "judged by eye in the paper"},
	{"002", "Figure 2", "1 traced fit per method and M", "svgp_fig2_image F2", ""},
	{"002", "MNIST odd vs even (text)", "1 run", "svgp_mnist_oddeven E4e", ""},
	{"002", "Figure 3 (airline)", "1 run on the full data", "svgp_airline E5", "on a stand-in data set"},
	{"003", "Table 1", "data characteristics", "", "the data sets' description"},
	{"003", "Figure 1", "1 fit", "rmgpc_fig1_glass F1", ""},
	{"003", "Table 2", "100 splits × 3 noise levels", "rmgpc_t2_uci T2", ""},
	{"003", "Table 3", "100 splits", "rmgpc_t2_uci T3", ""},
	{"004", "Table I, Figures 1, 5", "illustrations", "", "the likelihoods' definitions and shapes, not experiments"},
	{"004", "Table II", "data characteristics", "", "the data sets' description"},
	{"004", "Table III (binary)", "10 splits", "liu_t2_binary T3b", ""},
	{"004", "Table IV (binary)", "10 splits", "liu_t2_binary T4b", ""},
	{"004", "Table III (multi-class)", "10 splits", "liu_t3_multiclass_reduced T3m", "1 split at a tenth of the steps"},
	{"004", "Table IV (multi-class)", "10 splits", "liu_t3_multiclass_reduced T4m", "1 split at a tenth of the steps"},
	{"004", "Table V (binary, error)", "10 splits", "liu_t5_binary T5b-err", ""},
	{"004", "Table V (binary, NLL)", "10 splits", "liu_t5_binary T5b-nll", ""},
	{"004", "Table V (multi-class, error)", "10 splits", "liu_t5_multiclass_reduced T5m-err", "1 split at a tenth of the steps"},
	{"004", "Table V (multi-class, NLL)", "10 splits", "liu_t5_multiclass_reduced T5m-nll", "1 split at a tenth of the steps"},
	{"004", "Figure 2", "1 fit per toy", "liu_fig2_toys F2e", "judged by eye in the paper"},
	{"004", "Figure 3 (airline)", "1 run", "liu_fig3_airline F3", "on a stand-in data set; curves only in the paper"},
	{"004", "Figure 4", "1 run per δ", "liu_fig4_delta F4n", "curves only in the paper"},
}

// scoreRank orders verdict labels from best to worst: an item of several
// tables (a paper table's NLL and error halves) takes the lowest.
var scoreRank = map[string]int{labelReproduced: 0, labelPartly: 1, labelNot: 2, labelNotComparable: 3, labelNone: 4}

// scoreOrder is the order of the scoreboard's counts.
var scoreOrder = []string{labelReproduced, labelPartly, labelNot, labelNotComparable, labelNone}

// ScoreboardMarkdown renders the scoreboard from the committed results
// under root (the repository), reusing reports (by results path) already
// rendered.
func ScoreboardMarkdown(root, dataDir string) (string, error) {
	return scoreboard(root, dataDir, map[string]*Reporter{})
}

func scoreboard(root, dataDir string, reports map[string]*Reporter) (string, error) {
	counts := map[string]int{}
	var rows strings.Builder
	rows.WriteString("| Paper | Table or figure | Paper's budget | Budget run | Verdict | Why |\n|---|---|---|---|---|---|\n")
	for _, it := range Scoreboard {
		label, why, budget := labelNone, it.Note, "—"
		if it.From != "" {
			f := strings.Fields(it.From)
			if len(f) != 2 {
				return "", fmt.Errorf("scoreboard: %s %s: From %q: want \"DIR ID\"", it.Paper, it.Item, it.From)
			}
			dir := filepath.ToSlash(filepath.Join("experiments", "results", f[0]))
			rp, err := loadReport(root, dir, dataDir, reports)
			if err != nil {
				return "", fmt.Errorf("scoreboard: %s %s: %w", it.Paper, it.Item, err)
			}
			js := rp.judged[f[1]]
			if _, ok := rp.tables[f[1]]; !ok {
				return "", fmt.Errorf("scoreboard: %s %s: results %s have no table %q", it.Paper, it.Item, dir, f[1])
			}
			var whys []string
			for _, j := range js {
				// A half without a verdict (a confusion matrix) does not
				// lower the other's.
				if j.label != labelNone && (label == labelNone || scoreRank[j.label] > scoreRank[label]) {
					label = j.label
				}
				w := j.why
				if len(js) > 1 {
					w = halfName(j.title) + ": " + j.label + ", " + w
				}
				whys = append(whys, w)
			}
			why = strings.Join(slices.DeleteFunc(whys, func(w string) bool { return w == "" }), "; ")
			if it.Note != "" && why != "" {
				why = it.Note + "; " + why
			} else if it.Note != "" {
				why = it.Note
			}
			budget = budgetRun(rp)
		}
		counts[label]++
		fmt.Fprintf(&rows, "| %s | %s | %s | %s | %s | %s |\n", it.Paper, it.Item, it.PaperBudget, budget, label, mdCell(why))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d tables and figures:", len(Scoreboard))
	for i, l := range scoreOrder {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s **%d %s**", sep, counts[l], l)
	}
	b.WriteString(" (each item takes the verdict computed in its block below; an item of two tables the lower of theirs).\n\n")
	b.WriteString(rows.String())
	return b.String(), nil
}

// loadReport renders the results in dir (relative to root) once.
func loadReport(root, dir, dataDir string, reports map[string]*Reporter) (*Reporter, error) {
	if rp, ok := reports[dir]; ok {
		return rp, nil
	}
	rp, total, err := newReporter(filepath.Join(root, dir), dataDir)
	if err != nil {
		return nil, err
	}
	rp.render(total)
	rp.total = total
	reports[dir] = rp
	return rp, nil
}

// halfName shortens a table title to the half it is ("Test NLL on MNIST"
// → "NLL").
func halfName(title string) string {
	t := strings.ToLower(title)
	switch {
	case strings.Contains(t, "nll") || strings.Contains(t, "log-likelihood") || strings.Contains(t, "log likelihood") || strings.Contains(t, "log probability"):
		return "NLL"
	case strings.Contains(t, "error"):
		return "error"
	case strings.Contains(t, "confusion"):
		return "confusion"
	}
	return title
}

// budgetRun states the budget a report's runs had and how many finished.
func budgetRun(rp *Reporter) string {
	b := rp.s.Budget
	b = strings.Replace(b, "full (paper protocol as written in the spec), ", "reduced by ", 1)
	b = strings.Replace(b, "full (paper protocol as written in the spec)", "full", 1)
	b = strings.Replace(b, " but at least ", " (at least ", 1)
	if strings.Contains(b, "(at least ") {
		b = strings.Replace(b, " optimiser steps (min_steps)", " steps)", 1)
	}
	return fmt.Sprintf("%s; runs: %s", b, runsFinished(rp))
}

// mdCell escapes a table cell's pipes.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
