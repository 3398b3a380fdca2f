package experiments

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/gpc-dev/gpc/datasets"
)

// Generated blocks of a markdown document, which Splice rewrites:
//
//	<!-- gpc:rule -->            the verdict rule (VerdictRule)
//	<!-- gpc:table DIR ID -->    table ID of the results in DIR, as its report renders it
//	<!-- gpc:scoreboard -->      every table and figure of the papers with its verdict (Scoreboard)
//	<!-- gpc:end -->             ends either block
//
// so that the tables and verdicts in REPRODUCTION.md are the reports'
// own, regenerated from the committed results rather than copied by hand.
const (
	spliceOpen = "<!-- gpc:"
	spliceEnd  = "<!-- gpc:end -->"
)

// Splice returns doc with every generated block rewritten from the
// results directories it names (relative to root); dataDir is passed to
// the reports (data tables read it).
func Splice(doc []byte, root, dataDir string) ([]byte, error) {
	var out bytes.Buffer
	lines := strings.SplitAfter(string(doc), "\n")
	reports := map[string]*Reporter{}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		out.WriteString(line)
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, spliceOpen) || t == spliceEnd {
			continue
		}
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != spliceEnd {
			if strings.HasPrefix(strings.TrimSpace(lines[end]), spliceOpen) {
				return nil, fmt.Errorf("splice: line %d: a block opened at line %d is not closed by %s before the next one", end+1, i+1, spliceEnd)
			}
			end++
		}
		if end == len(lines) {
			return nil, fmt.Errorf("splice: line %d: %s has no closing %s", i+1, t, spliceEnd)
		}
		body, err := spliceBody(t, root, dataDir, reports)
		if err != nil {
			return nil, fmt.Errorf("splice: line %d: %w", i+1, err)
		}
		out.WriteString(body)
		out.WriteString(lines[end])
		i = end
	}
	return out.Bytes(), nil
}

// spliceBody renders one block's content from its opening marker.
func spliceBody(marker, root, dataDir string, reports map[string]*Reporter) (string, error) {
	f := strings.Fields(strings.TrimSuffix(strings.TrimPrefix(marker, spliceOpen), "-->"))
	switch {
	case len(f) == 1 && f[0] == "rule":
		return quote(VerdictRule) + "\n", nil
	case len(f) == 1 && f[0] == "scoreboard":
		return scoreboard(root, dataDir, reports)
	case len(f) == 3 && f[0] == "table":
		dir, id := f[1], f[2]
		rp, err := loadReport(root, dir, dataDir, reports)
		if err != nil {
			return "", err
		}
		md, ok := rp.tables[id]
		if !ok {
			return "", fmt.Errorf("results %s have no table %q", dir, id)
		}
		return fmt.Sprintf("Spec `%s`, budget: %s; runs finished: %s.\n\n%s", rp.s.Name, rp.s.Budget, runsFinished(rp), md), nil
	}
	return "", fmt.Errorf("unknown block %q (want <!-- gpc:rule -->, <!-- gpc:scoreboard --> or <!-- gpc:table DIR ID -->)", marker)
}

// runsFinished is "n of N", with how many of the n are copies of another
// run of the grid (same_as) and so not fits of their own.
func runsFinished(rp *Reporter) string {
	copies := 0
	for _, r := range rp.results {
		if r.SameAs != "" {
			copies++
		}
	}
	s := fmt.Sprintf("%d of %d", len(rp.results), rp.total)
	if copies > 0 {
		s += fmt.Sprintf(" (%d of them copies of another run's fit, same_as: %d fits)", copies, len(rp.results)-copies)
	}
	return s
}

// SpliceFile rewrites a markdown file's generated blocks in place
// (atomically); changed reports whether its content changed.
func SpliceFile(path, root, dataDir string) (changed bool, err error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	out, err := Splice(doc, root, dataDir)
	if err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	if bytes.Equal(doc, out) {
		return false, nil
	}
	return true, datasets.WriteFileAtomic(path, out)
}
