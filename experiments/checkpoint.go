package experiments

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/models"
)

// DefaultCheckpointMinutes is the interval between checkpoints of a
// minibatch fit when protocol.checkpoint_minutes is 0: short beside a
// 3-hour session or a preemption, long beside the seconds a write takes.
const DefaultCheckpointMinutes = 10

// checkpointDir is the directory under a results directory that holds the
// checkpoints of the fits in progress.
const checkpointDir = "checkpoints"

// checkpointPath is the checkpoint file of run r, "" when the runner has
// none (checkpoints off, or an env outside Execute). A run's fits must
// share the file only if they are one fit: paths that fit several times
// per run (active learning) do not checkpoint.
func (e *Env) checkpointPath(r Run) string {
	if e.resultsDir == "" || e.spec.Protocol.CheckpointMinutes < 0 {
		return ""
	}
	return filepath.Join(e.resultsDir, checkpointDir, checkpointName(r.Key))
}

// checkpointName turns a run key into a file name: its safe characters,
// shortened, and a hash of the whole key, so that two keys never share a
// file.
func checkpointName(key string) string {
	safe := []rune{}
	for _, c := range key {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			safe = append(safe, c)
		default:
			safe = append(safe, '_')
		}
	}
	if len(safe) > 80 {
		safe = safe[:80]
	}
	h := fnv.New64a()
	h.Write([]byte(key))
	return fmt.Sprintf("%s-%016x.ckpt", strings.Trim(string(safe), "._"), h.Sum64())
}

// checkpointEvery is the spec's interval between checkpoints.
func (e *Env) checkpointEvery() time.Duration {
	m := e.spec.Protocol.CheckpointMinutes
	if m == 0 {
		m = DefaultCheckpointMinutes
	}
	return time.Duration(m * float64(time.Minute))
}

// checkpoint returns the models.Checkpoint of run r's fit, carrying the
// caller's state v (a pointer to a gob-encodable value) in the file, or nil
// when the run has no checkpoint. sync, if set, brings v up to date before
// each save; v is overwritten when the fit resumes, and restored, if set,
// is called then.
func (e *Env) checkpoint(r Run, v any, sync, restored func()) (*models.Checkpoint, error) {
	path := e.checkpointPath(r)
	if path == "" {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	return &models.Checkpoint{
		Path:  path,
		Every: e.checkpointEvery(),
		Save: func() ([]byte, error) {
			if sync != nil {
				sync()
			}
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(v); err != nil {
				return nil, err
			}
			if e.onCheckpoint != nil {
				e.onCheckpoint(r)
			}
			return buf.Bytes(), nil
		},
		Restore: func(b []byte) error {
			if err := gob.NewDecoder(bytes.NewReader(b)).Decode(v); err != nil {
				return err
			}
			if restored != nil {
				restored()
			}
			return nil
		},
		// A fit of hours says how far it is at each checkpoint; the
		// runner's log is otherwise silent until the fit ends.
		Written: func(info models.CheckpointInfo) {
			if e.logf == nil {
				return
			}
			e.logf("checkpointed: %v", progressOf(r, info))
		},
	}, nil
}

// lockRun takes run r's lock beside its checkpoint, so that two runners
// sharing a directory (a shard and an unsharded runner, say) never fit the
// same run at once, or write one checkpoint from two processes: busy says
// another runner holds it. Without a results directory there is nothing to
// share and nothing is locked.
func (e *Env) lockRun(r Run) (unlock func(), busy bool, err error) {
	if e.resultsDir == "" {
		return func() {}, false, nil
	}
	dir := filepath.Join(e.resultsDir, checkpointDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}, false, err
	}
	unlock, busy, err = tryLock(filepath.Join(dir, checkpointName(r.Key)+".lock"), true)
	if err != nil {
		return func() {}, false, fmt.Errorf("locking run %s: %w", r.Key, err)
	}
	if unlock == nil {
		unlock = func() {}
	}
	return unlock, busy, nil
}

// removeCheckpoint removes run r's checkpoint: its result is stored, or it
// failed (a retry, likely after a fix, must start over).
func (e *Env) removeCheckpoint(r Run) error {
	if path := e.checkpointPath(r); path != "" {
		return models.RemoveCheckpoint(path)
	}
	return nil
}

// sessionClock measures a fit's training time across the sessions a
// checkpoint joins: prior is the time of earlier sessions up to their last
// checkpoint, to which this session's time since start, less the time
// spent scoring, is added.
type sessionClock struct {
	start   time.Time
	scoring time.Duration
	prior   time.Duration
}

func startClock() *sessionClock { return &sessionClock{start: time.Now()} }

// training is the training time so far.
func (c *sessionClock) training() time.Duration { return c.at(time.Now()) }

// at is the training time at moment t of this session.
func (c *sessionClock) at(t time.Time) time.Duration { return c.prior + t.Sub(c.start) - c.scoring }
