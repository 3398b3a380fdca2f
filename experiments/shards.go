package experiments

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// shardFile matches a shard's results file name.
var shardFile = regexp.MustCompile(`^results\.shard-(\d+)-of-(\d+)\.jsonl$`)

// missingRuns says which runs of the grid in dir have no result and, when
// the grid was run in shards, which shards they belong to, so that the
// tasks to rerun can be named ("" when the grid is complete). planned are
// the grid's runs, done the keys with a result.
func missingRuns(dir string, planned []Run, done map[string]bool) string {
	var missing []Run
	for _, r := range planned {
		if !done[r.Key] {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	// The shardings used: the n of every results.shard-i-of-n.jsonl, and
	// the shards that wrote a file.
	entries, _ := os.ReadDir(dir)
	wrote := map[int]map[int]bool{}
	for _, e := range entries {
		m := shardFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		i, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		if wrote[n] == nil {
			wrote[n] = map[int]bool{}
		}
		wrote[n][i] = true
	}
	s := fmt.Sprintf("%d of %d runs have no result", len(missing), len(planned))
	if len(wrote) == 0 {
		return s + " (run unsharded: rerun the same command to finish them)"
	}
	ns := slices.Sorted(maps.Keys(wrote))
	var parts []string
	for _, n := range ns {
		count := map[int]int{}
		for _, r := range missing {
			count[r.shard(n)]++
		}
		var shards []string
		for _, i := range slices.Sorted(maps.Keys(count)) {
			note := ""
			if !wrote[n][i] {
				note = ", never started"
			}
			shards = append(shards, fmt.Sprintf("%d/%d (%s%s)", i, n, plural(count[i], "run"), note))
		}
		parts = append(parts, "of the sharding in "+strconv.Itoa(n)+": shards "+strings.Join(shards, ", "))
	}
	return s + "; " + strings.Join(parts, "; ") + " — rerun those tasks (--shard i/n)"
}

// MissingRuns is missingRuns for a results directory written by Execute.
func MissingRuns(dir string) (string, error) {
	s, err := loadResolved(dir)
	if err != nil {
		return "", err
	}
	st, err := openStore(dir)
	if err != nil {
		return "", err
	}
	done := map[string]bool{}
	for _, r := range st.results() {
		done[r.Key] = true
	}
	return missingRuns(dir, Expand(s), done), nil
}
