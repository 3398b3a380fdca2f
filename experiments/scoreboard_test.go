package experiments

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScoreboardItemsHaveBlocks checks that every judged item of the
// scoreboard shows its table in docs/REPRODUCTION.md as a generated block,
// so the scoreboard's verdicts are the document's (TestReproductionUpToDate
// then fails when either drifts from the results).
func TestScoreboardItemsHaveBlocks(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "REPRODUCTION.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "<!-- gpc:scoreboard -->") {
		t.Fatal("REPRODUCTION.md has no scoreboard block")
	}
	for _, it := range Scoreboard {
		if it.From == "" {
			if it.Note == "" {
				t.Errorf("%s %s: no results and no note saying why", it.Paper, it.Item)
			}
			continue
		}
		f := strings.Fields(it.From)
		marker := "<!-- gpc:table experiments/results/" + f[0] + " " + f[1] + " -->"
		if !strings.Contains(string(doc), marker) {
			t.Errorf("%s %s: REPRODUCTION.md has no block %s", it.Paper, it.Item, marker)
		}
	}
}

// TestOwnGeneratorNotComparable checks that the verdict comes from the
// spec's generator property: every table of a generator: own spec is not
// comparable, whatever its values.
func TestOwnGeneratorNotComparable(t *testing.T) {
	rp := &Reporter{s: &Spec{Generator: "own"}}
	if why := rp.notComparable(Table{ID: "T"}); why != ownGenerator {
		t.Fatalf("own generator: %q", why)
	}
	if why := rp.notComparable(Table{ID: "T", NotComparable: "also this"}); !strings.Contains(why, ownGenerator) || !strings.Contains(why, "also this") {
		t.Fatalf("own generator and a table's reason: %q", why)
	}
	rp.s.Generator = "paper"
	if why := rp.notComparable(Table{ID: "T"}); why != "" {
		t.Fatalf("paper's generator: %q", why)
	}
	if _, err := ParseSpec("x.yaml", []byte(strings.Replace(miniSpec, "name:", "generator: ours\nname:", 1))); err == nil || !strings.Contains(err.Error(), "generator") {
		t.Fatalf("a bad generator was accepted: %v", err)
	}
}

// TestScoreboardLowestHalf checks that an item of two tables takes the
// lower verdict, a table without one not lowering it.
func TestScoreboardLowestHalf(t *testing.T) {
	if halfName("Test NLL on MNIST") != "NLL" || halfName("Average test error") != "error" {
		t.Fatal("halfName")
	}
	if !(scoreRank[labelReproduced] < scoreRank[labelPartly] && scoreRank[labelPartly] < scoreRank[labelNot] && scoreRank[labelNot] < scoreRank[labelNotComparable]) {
		t.Fatal("scoreRank order")
	}
}
