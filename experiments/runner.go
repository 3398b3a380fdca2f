package experiments

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph"
	"github.com/gpc-dev/gpc/models"
)

// Result is one finished run, one line of results.jsonl. Optional fields
// are filled only where a table or figure needs them.
type Result struct {
	Key     string `json:"key"`
	Dataset string `json:"dataset"`
	Setting string `json:"setting"`
	Method  string `json:"method"`
	Split   int    `json:"split"`
	// Notes say how a run departs from the paper's protocol (a random split
	// where the paper used an official one, say).
	Notes []string `json:"notes,omitempty"`
	// Error and NLL are the test error rate and mean negative log-likelihood.
	Error float64 `json:"error"`
	NLL   float64 `json:"nll"`
	// BCR is the balanced class rate: the mean over the classes present in
	// the test set of the accuracy on each (kept where a table reads it).
	BCR float64 `json:"bcr,omitempty"`
	// Outliers is P(z_i = 1 | y, X) for every training row, in the data
	// set's order, for models with outlier indicators (the robust paper's
	// Figure 1).
	Outliers []float64 `json:"outliers,omitempty"`
	// TestIndex holds the test rows' indices in the data set's file order,
	// with PointErr, where a table follows single instances (Table 3 of the
	// robust paper).
	TestIndex []int `json:"test_index,omitempty"`
	// SameAs is the key of the run whose result this one copies (Run.Twin):
	// its Seconds are that fit's, not spent again.
	SameAs string `json:"same_as,omitempty"`
	// Seconds is the wall time of training; SecondsPerEpoch divides it by
	// the epochs actually run (Table 8). Both include any time the process
	// waited for a core or was paused.
	//
	// CPUSeconds is the process's CPU time (all its threads) over the run,
	// training and scoring, where the runner made one fit at a time
	// (--workers 1): with GOMAXPROCS=1 the fit's cost on one core, which a
	// loaded or paused machine does not inflate. A fit resumed from a
	// checkpoint counts only the session that finished it.
	Seconds         float64 `json:"seconds"`
	CPUSeconds      float64 `json:"cpu_seconds,omitempty"`
	SecondsPerEpoch float64 `json:"seconds_per_epoch"`
	Epochs          int     `json:"epochs"`
	NTrain          int     `json:"n_train"`
	NTest           int     `json:"n_test"`
	D               int     `json:"d"`
	C               int     `json:"c"`
	Inducing        int     `json:"inducing"`
	// LearnedNoise holds the learned per-dimension input-noise variances.
	LearnedNoise []float64 `json:"learned_noise,omitempty"`
	// Params counts every trained scalar, including NIMGP's q(x_i): the sum
	// of ParamGroups.
	Params int `json:"params"`
	// ParamGroups is models.Model.ParamCount: trained scalars by group
	// ("kernel", "inducing", "q(u)", "likelihood", "noise", "nn", "q(x)").
	ParamGroups map[string]int `json:"param_groups,omitempty"`
	// NNParams counts the encoder weights of NIMGP_NN (Table 19's "M").
	NNParams int `json:"nn_params,omitempty"`
	// Confusion[p][t] counts test points predicted p whose label is t.
	Confusion [][]float64 `json:"confusion,omitempty"`
	// PointNLL and PointErr are per-test-point losses, kept when the spec
	// asks for bootstrap error bars (Table 1).
	PointNLL []float64 `json:"point_nll,omitempty"`
	PointErr []float64 `json:"point_err,omitempty"`
	// Curve holds predictions on an input grid (Figures 1 and 2).
	Curve *Curve `json:"curve,omitempty"`
	// Surface is a 2-D model's p(y=1) on a grid, with its inducing inputs
	// and training data (the SVGP paper's Figure 1).
	Surface *Surface `json:"surface,omitempty"`
	// ALError and ALNLL are the test error and NLL after each added point
	// (index 0: the initial training set), Figures 6 and 7.
	ALError []float64 `json:"al_error,omitempty"`
	ALNLL   []float64 `json:"al_nll,omitempty"`
	// Trace is the hold-out score after each objective evaluation
	// (protocol.trace; Figure 2 of the SVGP paper).
	Trace []TracePoint `json:"trace,omitempty"`
	// Finished is when the run ended (RFC 3339).
	Finished string `json:"finished"`
}

// emptyClassNote names, for Result.Notes, the classes of 0..C−1 a training
// split has no rows of, or is "" when every class has rows. A split with
// rows of one class only never gets here: models.Fit refuses it (a
// one-class classifier is no result) and the run fails, naming the
// classes. With two or more classes present the run is a result (the
// noisy-input paper's toy problem can have a class that wins nowhere), but
// one a reader should know about.
func emptyClassNote(train *datasets.Dataset) string {
	var ec *datasets.EmptyClassError
	if !errors.As(train.MissingClasses("", ""), &ec) {
		return ""
	}
	noun := "class " + datasets.ClassList(ec.Empty)
	if len(ec.Empty) > 1 {
		noun = "classes " + datasets.ClassList(ec.Empty)
	}
	return fmt.Sprintf("the training split has no rows of %s (of 0..%d); the model was trained on the other classes", noun, ec.C-1)
}

// TracePoint is the hold-out score after one objective evaluation, with
// the training time up to it (scoring excluded).
type TracePoint struct {
	Eval    int     `json:"eval"`
	Seconds float64 `json:"seconds"`
	NLL     float64 `json:"nll"`
	Error   float64 `json:"error"`
}

// Surface is a 2-D model's predictive on a grid. The training points are
// not kept: the figures reload them, so that results never copy a data
// set from the data directory (results written before carry train_x and
// train_y, which are ignored).
type Surface struct {
	// X1 and X2 are the grid axes; P is len(X2)×len(X1), row-major:
	// p(y=1) for a binary model, else one such grid per class in turn.
	X1 []float64 `json:"x1"`
	X2 []float64 `json:"x2"`
	P  []float64 `json:"p"`
	Z  []float64 `json:"z"` // inducing inputs, M×2
}

// predictSurface predicts m, a model of c classes, on a g × g grid over
// window (x1 from window[0] to window[1], x2 from window[2] to window[3]),
// with its inducing inputs.
func predictSurface(m *models.Model, c int, window [4]float64, g int) (*Surface, error) {
	s := &Surface{X1: make([]float64, g), X2: make([]float64, g)}
	for i := range g {
		t := float64(i) / float64(g-1)
		s.X1[i] = window[0] + (window[1]-window[0])*t
		s.X2[i] = window[2] + (window[3]-window[2])*t
	}
	x := make([]float64, 0, 2*g*g)
	for _, b := range s.X2 {
		for _, a := range s.X1 {
			x = append(x, a, b)
		}
	}
	p, err := m.Predict(x, g*g, nil)
	if err != nil {
		return nil, err
	}
	if c == 2 {
		s.P = make([]float64, g*g)
		for i := range s.P {
			s.P[i] = p[2*i+1]
		}
	} else {
		s.P = make([]float64, c*g*g)
		for i := range g * g {
			for k := range c {
				s.P[k*g*g+i] = p[i*c+k]
			}
		}
	}
	if z := m.InducingInputs(); len(z) > 0 {
		s.Z = z[0]
	}
	return s, nil
}

// Curve is a 1-D prediction curve: P[c][i] = p(y=c | X[i]).
type Curve struct {
	X []float64   `json:"x"`
	P [][]float64 `json:"p"`
	// Bayes is the Bayes-optimal predictive at X (toy problem).
	Bayes [][]float64 `json:"bayes,omitempty"`
	// LatentMean[c][i] and LatentVar[c][i] are NIMGP_FO's latent predictive
	// mean and variance at X[i] (models.Model.Marginals), the variance
	// including the first-order term Δ; LatentVarNoDelta is the variance
	// without Δ (Figure 1: left without Δ, right with it).
	LatentMean       [][]float64 `json:"latent_mean,omitempty"`
	LatentVar        [][]float64 `json:"latent_var,omitempty"`
	LatentVarNoDelta [][]float64 `json:"latent_var_no_delta,omitempty"`
	// Z holds the learned inducing inputs of each latent function (1-D).
	Z [][]float64 `json:"z,omitempty"`
	// TrainX and TrainY are the observed training data (label ticks).
	TrainX []float64 `json:"train_x,omitempty"`
	TrainY []int     `json:"train_y,omitempty"`
}

// store is the append-only results file of one runner. Each finished run
// is one line written with a single write call, then synced and closed,
// under a mutex: a kill can lose the run in progress but never half a line
// that a later read would take for a result. A directory may hold several
// such files, one per shard (results.shard-I-of-N.jsonl beside
// results.jsonl); reading merges them all, so a report sees every shard's
// runs and a runner skips runs any shard has finished.
type store struct {
	mu   sync.Mutex
	path string
	done map[string]Result
	// order keeps the keys in file order for the report.
	order []string
	// bad names the lines that could not be read (file:line: reason).
	bad []string
	// maxLine is the longest result line read or written, in bytes, the
	// free-space estimate's size of a line still to come.
	maxLine int
	// from is the file:line each kept result was read from, and conflicts
	// names the later lines of a key whose numbers differ from the kept
	// result's: two fits of one run that disagree are not dropped silently.
	from      map[string]string
	conflicts []string
	// running holds a channel per run under way, closed when it ends, so
	// that a twin dispatched while its original runs waits for it.
	running map[string]chan struct{}
	// others is how many bytes of each other runner's results file
	// finishedElsewhere has taken in; othersMu serialises those reads.
	othersMu sync.Mutex
	others   map[string]int64
}

// start marks a run as under way; the returned function ends it.
func (s *store) start(key string) (end func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	if s.running == nil {
		s.running = map[string]chan struct{}{}
	}
	s.running[key] = ch
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
		close(ch)
	}
}

// resultsFile is a runner's results file: results.jsonl, or one per shard.
func resultsFile(dir string, shard, shards int) string {
	if shards > 1 {
		return filepath.Join(dir, fmt.Sprintf("results.shard-%d-of-%d.jsonl", shard, shards))
	}
	return filepath.Join(dir, "results.jsonl")
}

// openStore reads every results file in dir, writing to results.jsonl.
func openStore(dir string) (*store, error) { return openStoreFor(dir, 0, 0) }

// openStoreFor reads every results file in dir (results.jsonl and the
// shards', in name order) and appends to the given shard's. A line that
// does not parse (a crash of the machine mid-write, or a damaged file) is
// skipped and named in bad, so its run is redone.
func openStoreFor(dir string, shard, shards int) (*store, error) {
	s := &store{path: resultsFile(dir, shard, shards), done: map[string]Result{}}
	files, err := filepath.Glob(filepath.Join(dir, "results*.jsonl"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	for _, name := range files {
		if err := s.read(name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// read merges one results file; the first result for a key wins.
func (s *store) read(name string) error {
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	// A last line without its newline is the tail of an append a crash
	// cut short; it is named as such below, and the next append starts a
	// fresh line after it.
	torn := datasets.TornTail(f)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), maxResultLine)
	line, lastBad := 0, 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r Result
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Key == "" {
			why := "no run key"
			if err != nil {
				why = err.Error()
			}
			s.bad = append(s.bad, fmt.Sprintf("%s:%d: %s", name, line, why))
			lastBad = line
			continue
		}
		if kept, dup := s.done[r.Key]; dup {
			if d := scoreDifference(kept, r); d != "" {
				s.conflicts = append(s.conflicts, fmt.Sprintf("%s:%d: run %s is recorded again with different numbers (%s); the result of %s is kept", name, line, r.Key, d, s.from[r.Key]))
			}
			continue
		}
		s.order = append(s.order, r.Key)
		s.done[r.Key] = r
		s.maxLine = max(s.maxLine, len(sc.Bytes())+1)
		if s.from == nil {
			s.from = map[string]string{}
		}
		s.from[r.Key] = fmt.Sprintf("%s:%d", name, line)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("%s:%d: the line is longer than %d MiB, the limit of a result line (is it a results file?)", name, line+1, maxResultLine>>20)
	case err != nil:
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	case torn && lastBad == line && line > 0:
		s.bad[len(s.bad)-1] = fmt.Sprintf("%s:%d: the last line is torn (it has no newline: a write cut short, by a crash say)", name, line)
	}
	return nil
}

// maxResultLine bounds one line of a results file, so that a damaged or
// foreign file of gigabyte lines is refused once this much is read instead
// of being held whole (the earlier bound was 1 GiB). Result lines are far
// larger than data rows: the largest in experiments/results is 253 KB
// (MNIST's 10 000 test points with per-point losses, about 25 bytes a
// point and array); at 64 MiB a run keeping two or three per-point arrays
// fits about a million test points, a hundred times the largest test set
// whose per-point arrays the specs keep.
const maxResultLine = 64 << 20

// finishedElsewhere returns the result for key that another runner stored
// in its own results file in the store's directory after this store was
// read. A runner of another sharding fits a run only under the run's lock,
// but once it has stored the result and let go of the lock, this runner,
// whose list of runs to do was made before, would fit the run again; it
// calls this after taking the lock. The other files' new complete lines
// are taken into the store, each file read on from where the last call
// stopped, so a grid's runs do not each reread every other runner's file.
func (s *store) finishedElsewhere(key string) (Result, bool) {
	s.othersMu.Lock()
	defer s.othersMu.Unlock()
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(s.path), "results*.jsonl"))
	for _, name := range files {
		if name != s.path { // this runner's own appends are in the store already
			s.readNew(name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.done[key]
	return r, ok
}

// readNew takes the complete lines another runner has appended to its
// results file since the last call (othersMu held); lines that do not
// parse are left to the next full read, which names them.
func (s *store) readNew(name string) {
	f, err := os.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	if s.others == nil {
		s.others = map[string]int64{}
	}
	if _, err := f.Seek(s.others[name], io.SeekStart); err != nil {
		return
	}
	// Another runner's file is read a bounded window at a time: a damaged
	// or hostile file cannot make this runner buffer more than one line cap.
	data, err := io.ReadAll(io.LimitReader(f, maxResultLine))
	if err != nil {
		return
	}
	end := bytes.LastIndexByte(data, '\n') + 1 // a line being written waits
	if end == 0 && len(data) == maxResultLine {
		// A line longer than the cap is no result: step over this window;
		// its rest fails to parse and is skipped like any unreadable line.
		end = len(data)
	}
	s.others[name] += int64(end)
	s.mu.Lock()
	defer s.mu.Unlock()
	for line := range bytes.Lines(data[:end]) {
		var r Result
		if json.Unmarshal(line, &r) != nil || r.Key == "" {
			continue
		}
		if _, dup := s.done[r.Key]; !dup {
			s.order = append(s.order, r.Key)
			s.done[r.Key] = r
		}
	}
}

// scoreDifference describes how b's numbers differ from a's, or is ""
// when they agree but for the timings, which differ between any two fits.
func scoreDifference(a, b Result) string {
	if a.Error != b.Error || a.NLL != b.NLL {
		return fmt.Sprintf("error %v and NLL %v, against %v and %v", b.Error, b.NLL, a.Error, a.NLL)
	}
	for _, r := range []*Result{&a, &b} {
		r.Seconds, r.CPUSeconds, r.SecondsPerEpoch = 0, 0, 0
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		return "the same error and NLL but other fields differ"
	}
	return ""
}

// warnings describes the unreadable lines and the conflicting repeats of
// a run, at most five of each.
func (s *store) warnings() []string {
	var out []string
	for i, c := range s.conflicts {
		if i == 5 {
			out = append(out, fmt.Sprintf("warning: %d more results recorded again with different numbers", len(s.conflicts)-5))
			break
		}
		out = append(out, "warning: "+c)
	}
	for i, b := range s.bad {
		if i == 5 {
			out = append(out, fmt.Sprintf("warning: %d more unreadable result lines", len(s.bad)-5))
			break
		}
		out = append(out, "warning: unreadable result line skipped (its run is redone): "+b)
	}
	return out
}

// twinOf returns the copy of r's twin's result, when r has a twin and its
// result is stored (waiting for it while the twin is under way in this
// runner): the same fit under the other setting's name, noted.
func (s *store) twinOf(ctx context.Context, r Run) (*Result, bool) {
	if r.Twin == "" {
		return nil, false
	}
	s.mu.Lock()
	t, ok := s.done[r.Twin]
	wait := s.running[r.Twin]
	s.mu.Unlock()
	if !ok && wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, false
		}
		s.mu.Lock()
		t, ok = s.done[r.Twin]
		s.mu.Unlock()
	}
	if !ok {
		return nil, false
	}
	res := t
	res.Notes = append(append([]string(nil), t.Notes...), "the same fit as "+r.Twin+" (this method does not read the settings' other fields)")
	res.SameAs = r.Twin
	return &res, true
}

// has reports whether a run's key is already stored.
func (s *store) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.done[key]
	return ok
}

// append writes one result line through datasets.AppendLine: one write,
// synced; a torn last line left by a crash gets its newline first, so the
// new line stays parseable and the torn one stays reported; a partial
// write is cut back off.
func (s *store) append(r Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.done[r.Key]; dup {
		return nil
	}
	if err := datasets.AppendLine(s.path, b); err != nil {
		return err
	}
	s.maxLine = max(s.maxLine, len(b)+1)
	s.done[r.Key] = r
	s.order = append(s.order, r.Key)
	return nil
}

// results returns the stored results in file order.
func (s *store) results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Result, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.done[k])
	}
	return out
}

// execFunc executes one run.
type execFunc func(ctx context.Context, env *Env, r Run) (*Result, error)

// RunConfig controls Execute.
type RunConfig struct {
	// Workers is the number of runs executed in parallel (≥ 1).
	Workers int
	// DataDir is the --data-dir flag ("" resolves as datasets.ResolveDataDir).
	DataDir string
	// Log receives one line per started/finished/failed run (nil: silent).
	Log io.Writer
	// Shard and Shards select this runner's share of the grid: the runs
	// whose key hashes to Shard (1-based) of Shards. Shards ≤ 1 runs all.
	// Each shard appends to its own file, so shards of one grid can run at
	// once on several machines sharing the directory.
	Shard, Shards int
	// Grid is the whole grid these runs belong to, saved for the report
	// when the spec given to Execute is a part of it (the command line's
	// --methods and --datasets); nil means the spec itself. Without it a
	// run of one method into a folder of several would leave a report of
	// that method alone.
	Grid *Spec
	// exec replaces the real run executor in tests.
	exec execFunc
	// afterAppend is called after each stored result (tests).
	afterAppend func(n int)
	// onCheckpoint is called as a run's checkpoint is taken (tests).
	onCheckpoint func(Run)
	// freeSpace replaces datasets.FreeBytes in tests.
	freeSpace func(dir string) (free uint64, known bool)
}

// Summary counts what Execute did.
type Summary struct {
	Total, Skipped, Done, Failed int
	// Busy counts the runs left to another runner that was fitting them or
	// had finished them since this runner started (a shard and an unsharded
	// runner sharing the directory, say).
	Busy int
}

// resolvedSpecFile is where Execute saves the resolved spec so that
// `report DIR` can re-expand the same grid.
const resolvedSpecFile = "spec.json"

// Execute runs every run of the resolved spec not yet in DIR/results.jsonl,
// on cfg.Workers goroutines, appending each result as it finishes. A run
// that fails is logged and left out, so the next invocation retries it. It
// returns ctx's error if cancelled (the finished runs are kept).
func Execute(ctx context.Context, s *Spec, dir string, cfg RunConfig) (Summary, error) {
	var sum Summary
	if cfg.Shards > 1 && (cfg.Shard < 1 || cfg.Shard > cfg.Shards) {
		return sum, &SetupError{fmt.Errorf("shard %d of %d: want 1 ≤ shard ≤ %d", cfg.Shard, cfg.Shards, cfg.Shards)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return sum, &SetupError{err}
	}
	unlock, err := lockResults(resultsFile(dir, cfg.Shard, cfg.Shards))
	if err != nil {
		return sum, &SetupError{err}
	}
	defer unlock()
	grid := s
	if cfg.Grid != nil {
		grid = cfg.Grid
	}
	b, err := json.MarshalIndent(grid, "", "  ")
	if err != nil {
		return sum, &SetupError{err}
	}
	if err := datasets.WriteFileAtomic(filepath.Join(dir, resolvedSpecFile), b); err != nil {
		return sum, &SetupError{err}
	}
	st, err := openStoreFor(dir, cfg.Shard, cfg.Shards)
	if err != nil {
		return sum, &SetupError{err}
	}
	runs := Expand(s)
	if cfg.Shards > 1 {
		runs = slices.DeleteFunc(runs, func(r Run) bool { return r.shard(cfg.Shards) != cfg.Shard })
	}
	sum.Total = len(runs)
	var todo []Run
	for _, r := range runs {
		if st.has(r.Key) {
			sum.Skipped++
			continue
		}
		todo = append(todo, r)
	}
	free := cfg.freeSpace
	if free == nil {
		free = datasets.FreeBytes
	}
	if err := checkRoom(dir, s, st, len(todo), max(1, cfg.Workers), free); err != nil {
		return sum, &SetupError{err}
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			st.mu.Lock()
			fmt.Fprintf(cfg.Log, format+"\n", args...)
			st.mu.Unlock()
		}
	}
	for _, w := range st.warnings() {
		logf("%s", w)
	}
	name := s.Name
	if cfg.Shards > 1 {
		name = fmt.Sprintf("%s shard %d/%d", s.Name, cfg.Shard, cfg.Shards)
	}
	twins := 0
	for _, r := range todo {
		if r.Twin != "" {
			twins++
		}
	}
	copies := ""
	if twins > 0 {
		copies = fmt.Sprintf(" (%d of them the same fit as another run, copied once it is done)", twins)
	}
	logf("%s: %d runs, %d already done, %d to do on %d workers%s", name, sum.Total, sum.Skipped, len(todo), max(1, cfg.Workers), copies)
	exec := cfg.exec
	if exec == nil {
		exec = executeRun
	}
	e := newEnv(s, cfg.DataDir)
	e.resultsDir, e.onCheckpoint, e.logf = dir, cfg.onCheckpoint, logf
	jobs := make(chan Run)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	permanent := 0 // failures a rerun gives again
	var cores coreShare
	defer cores.close()
	for range max(1, cfg.Workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range jobs {
				t0 := time.Now()
				end := st.start(r.Key)
				res, copied := st.twinOf(ctx, r)
				var err error
				unlockRun, locked := func() {}, true
				if !copied {
					var busy bool
					unlockRun, busy, err = e.lockRun(r)
					locked = err == nil
					why := ""
					if busy {
						why = "left %s to another runner, which is fitting it"
					} else if err == nil {
						if _, ok := st.finishedElsewhere(r.Key); ok {
							unlockRun()
							why = "%s was finished by another runner"
						}
					}
					if why != "" {
						end()
						mu.Lock()
						sum.Busy++
						logf(why, r.Key)
						mu.Unlock()
						continue
					}
				}
				if !copied && err == nil {
					cores.enter()
					c0, cpuOK := graph.ProcessCPU()
					res, err = exec(ctx, e, r)
					if c1, _ := graph.ProcessCPU(); cpuOK && max(1, cfg.Workers) == 1 && err == nil && res != nil {
						res.CPUSeconds = float64(c1-c0) / 1e9
					}
					cores.leave()
				}
				if err == nil && res != nil {
					res.Key, res.Dataset, res.Setting, res.Method, res.Split = r.Key, r.Dataset, r.Setting.Name, r.Method.Name, r.Split
					res.Finished = time.Now().UTC().Format(time.RFC3339)
					err = st.append(*res)
				}
				end() // stored or failed: a twin waiting for it goes on
				// A stored result needs no checkpoint, and a failed run is
				// retried from the start; a cancelled one resumes from it.
				// (Not without the run's lock: the checkpoint may be another
				// runner's.)
				// A checkpoint refused as another fit's is that fit's work: kept.
				if locked && (ctx.Err() == nil || err == nil) && !errors.Is(err, models.ErrForeignCheckpoint) {
					if rerr := e.removeCheckpoint(r); rerr != nil && err == nil {
						logf("warning: %s: %v", r.Key, rerr)
					}
				}
				unlockRun() // after the checkpoint is gone: a runner taking the run next starts it over
				mu.Lock()
				if err != nil {
					if ctx.Err() == nil {
						sum.Failed++
						if !retryable(err) {
							permanent++
						}
						if firstErr == nil {
							firstErr = fmt.Errorf("run %s: %w", r.Key, err)
						}
						logf("FAILED %s: %v", r.Key, err)
					}
				} else {
					sum.Done++
					n := sum.Done
					how := fmt.Sprintf("%.1fs", time.Since(t0).Seconds())
					if copied {
						how = "the same fit as " + r.Twin
					}
					logf("[%d/%d] %s  error %.4f  nll %.4f  (%s)", sum.Skipped+n, sum.Total, r.Key, res.Error, res.NLL, how)
					if cfg.afterAppend != nil {
						cfg.afterAppend(n)
					}
				}
				mu.Unlock()
			}
		}()
	}
dispatch:
	for _, r := range todo {
		select {
		case <-ctx.Done():
			break dispatch
		case jobs <- r:
		}
	}
	close(jobs)
	wg.Wait()
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}
	switch {
	case sum.Failed > 0 && permanent == sum.Failed:
		return sum, fmt.Errorf("%d of %d runs failed on their data or settings, which rerunning gives again (first: %w)", sum.Failed, len(todo), firstErr)
	case permanent > 0:
		return sum, fmt.Errorf("%d of %d runs failed, %d of them on their data or settings, which rerunning gives again; rerun the same command to retry the other %d (first: %w)", sum.Failed, len(todo), permanent, sum.Failed-permanent, firstErr)
	case sum.Failed > 0:
		return sum, fmt.Errorf("%d of %d runs failed; rerun the same command to retry them (first: %w)", sum.Failed, len(todo), firstErr)
	}
	return sum, nil
}

// The free-space estimate's sizes where the results directory has no
// example yet: the largest result line the papers' specs write (253 KB,
// MNIST's per-point losses; most lines are about 1 KB), and a checkpoint
// larger than the largest written so far (49 MB, an MNIST NIMGP-NN fit).
const (
	defaultResultLine = 256 << 10
	defaultCheckpoint = 64 << 20
)

// checkRoom refuses to start runs into dir when its file system cannot
// hold what they will write, a long grid would otherwise fail hours in,
// on a full disk: a result line for each of the runs left, as long as the
// longest line stored (defaultResultLine when none is), and, unless the
// spec turns checkpoints off, one checkpoint per worker, twice (a
// checkpoint is replaced by writing the new one beside it), as large as
// the largest in dir/checkpoints (defaultCheckpoint when there is none).
// free is datasets.FreeBytes or a test's stand-in; where the free space is
// not known the runs go ahead.
func checkRoom(dir string, s *Spec, st *store, left, workers int, free func(string) (uint64, bool)) error {
	if left == 0 {
		return nil
	}
	have, known := free(dir)
	if !known {
		return nil
	}
	line, lineHow := uint64(st.maxLine), "the longest stored"
	if line == 0 {
		line, lineHow = defaultResultLine, "none stored yet, so the longest the papers' specs write"
	}
	need := uint64(left) * line
	how := fmt.Sprintf("%d result lines of up to %s (%s)", left, datasets.ByteSize(line), lineHow)
	if s.Protocol.CheckpointMinutes >= 0 {
		ckpt, ckptHow := uint64(0), "the largest in "+filepath.Join(dir, checkpointDir)
		files, _ := filepath.Glob(filepath.Join(dir, checkpointDir, "*.ckpt"))
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				ckpt = max(ckpt, uint64(fi.Size()))
			}
		}
		if ckpt == 0 {
			ckpt, ckptHow = defaultCheckpoint, "none written yet, so a default"
		}
		n := uint64(2 * min(workers, left))
		need += n * ckpt
		how += fmt.Sprintf(" and %d checkpoints of up to %s (%s; two per worker while one replaces the other)", n, datasets.ByteSize(ckpt), ckptHow)
	}
	if need > have {
		return fmt.Errorf("not enough room in %s: the %d runs left need about %s, for %s, but it has %s free; free some space or give --out a directory on another disk", dir, left, datasets.ByteSize(need), how, datasets.ByteSize(have))
	}
	return nil
}

// retryable says whether a failed run might succeed when run again: not
// when its split lacks classes, its sizes exceed the machine's memory or
// its data do not parse, which a rerun meets identically.
func retryable(err error) bool {
	var (
		empty *datasets.EmptyClassError
		mem   *models.MemoryError
		parse *datasets.ParseError
	)
	return !errors.As(err, &empty) && !errors.As(err, &mem) && !errors.As(err, &parse)
}

// coreShare gives each fit one core while there are at least as many fits
// under way as cores (graph.OneCorePerRun): fits that each spread
// themselves over every core only contend for them (twelve T11 fits on two
// workers: 13.5–13.8 s before, 13.2 s with one core each). When fewer fits
// are left than cores, as at the end of a grid, the hold is released and
// they spread again.
type coreShare struct {
	mu      sync.Mutex
	active  int
	release func()
}

func (c *coreShare) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active++
	if c.release == nil && c.active > 1 && c.active >= runtime.GOMAXPROCS(0) {
		c.release = graph.OneCorePerRun()
	}
}

func (c *coreShare) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active--
	if c.release != nil && c.active < runtime.GOMAXPROCS(0) {
		c.release()
		c.release = nil
	}
}

func (c *coreShare) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// SetupError is an Execute failure before any run started (a bad shard,
// a held lock, an unwritable directory): there is no report to show.
type SetupError struct{ Err error }

// Error is the underlying error's message.
func (e *SetupError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *SetupError) Unwrap() error { return e.Err }

// shard is the run's shard of n: its twin's, if it has one, so that the
// fit it copies is made by the same runner (and so always found).
func (r Run) shard(n int) int {
	if r.Twin != "" {
		return ShardOf(r.Twin, n)
	}
	return ShardOf(r.Key, n)
}

// ShardOf is the 1-based shard of n that runs the run with this key: a
// hash of the key, so that a shard's share does not depend on the order
// of the grid or on which other runs exist.
func ShardOf(key string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int(h.Sum64()%uint64(n)) + 1
}

// loadResolved reads the spec saved by Execute.
func loadResolved(dir string) (*Spec, error) {
	b, err := os.ReadFile(filepath.Join(dir, resolvedSpecFile))
	if err != nil {
		return nil, err
	}
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, resolvedSpecFile), err)
	}
	s.file = filepath.Join(dir, resolvedSpecFile)
	return &s, nil
}
