package models

import (
	"bufio"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/datasets/frame"
	"github.com/gpc-dev/gpc/solvers"
)

// Checkpoint makes a minibatch fit survive the end of its process: Fit
// writes the training state to Path at the end of an epoch every Every, and
// a Fit of a model with the same Options on the same data with the same
// Path resumes from the file and ends with the parameters of an
// uninterrupted fit, bit for bit. Fits of many hours need it, since a
// session or a preemptible cluster job ends before they do.
//
// Fit does not remove the file when it finishes (a process killed between
// the end of Fit and the use of its result would otherwise start over):
// remove it with RemoveCheckpoint once the result is safe.
type Checkpoint struct {
	// Path is the checkpoint file. If it exists, Fit resumes from it; a
	// file of another fit (options, data) or a damaged one is an error
	// naming it, never a silent fresh start.
	Path string
	// Every is the least time between checkpoints (0: every epoch).
	Every time.Duration
	// Save, if set, returns the caller's own state to carry in the file
	// (for example a hold-out trace scored from Callback), taken with each
	// checkpoint after the epoch's Callback.
	Save func() ([]byte, error)
	// Restore, if set, is called when Fit resumes, before training, with
	// the bytes Save returned at that checkpoint (nil without Save).
	Restore func([]byte) error
	// Written, if set, is called after each checkpoint is written, with
	// the progress it records (for a log of a long fit).
	Written func(CheckpointInfo)
}

// checkpointFormat and checkpointVersion tag a checkpoint file, so that
// another file at the path is refused rather than misread.
//
// A file of version 2 is checkpointMagic, the length of a gob of
// checkpointFile (8 bytes, little-endian) and that gob, then, if Streamed,
// the objective's state as its WriteState wrote it and a trailer of the
// stream's length (8 bytes) and CRC-32C (4 bytes). The stream stays out of
// the gob because gob holds a whole message in memory, twice when it is
// read: for NIMGP on MNIST (2.3 GB of per-row tables) a resume of version
// 1 needed some 20 GB. Version 1 files, one gob of checkpointFile, are
// still read, so that fits checkpointed by an earlier gpc resume.
const (
	checkpointFormat  = "gpc-checkpoint"
	checkpointVersion = 2
	checkpointMagic   = "gpc-checkpoint 2\n"
	// maxCheckpointHeader bounds the header a reader allocates for.
	maxCheckpointHeader = 1 << 30
	trailerSize         = 12
)

// checkpointFile is the gob-encoded header of a checkpoint file (all of a
// version 1 file).
type checkpointFile struct {
	Format  string
	Version int
	Print   fitPrint
	State   solvers.Snapshot
	Caller  []byte
	// Streamed says the objective's state follows the header as a stream.
	Streamed bool
}

// castagnoli is the CRC-32C table: the checksum the hardware computes, so
// checking a stream of gigabytes costs a fraction of reading it.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fitPrint is what a resumed fit must share with the one that wrote the
// checkpoint for the result to be the same.
type fitPrint struct {
	// Options are the model's options as JSON (a user's kernel factory or
	// likelihood is not in them).
	Options string
	N, D, C int
	// Data hashes the training rows as trained on: inputs (standardised if
	// the model standardises), labels and given noise.
	Data uint64
}

// checkpointPrint fingerprints the fit of m on train (standardised).
func (m *Model) checkpointPrint(train *datasets.Dataset) (fitPrint, error) {
	opts := m.Opts
	if opts.Train.Stop == StopBudget {
		// The budget rule trains as fits did before the rule existed, so a
		// checkpoint written then (without the field) resumes.
		opts.Train.Stop = ""
	}
	o, err := json.Marshal(opts)
	if err != nil {
		return fitPrint{}, fmt.Errorf("models: checkpoint: encoding the options: %w", err)
	}
	h := uint64(0x636b7074)
	for _, r := range rowPrints(train, m.givenNoise(train)) {
		h = solvers.Mix64(h ^ r)
	}
	return fitPrint{Options: string(o), N: train.N, D: train.D, C: train.C, Data: h}, nil
}

// Checkpointable reports whether Fit can checkpoint this model: minibatch
// training (the svi engine with Adam or Adadelta). Callers that checkpoint
// whatever they fit ask it first, since Fit refuses a checkpoint otherwise.
func (m *Model) Checkpointable() bool { return m.checkpointable() == nil }

// CheckpointError says why a fit of m cannot be checkpointed (nil: it can).
func (m *Model) CheckpointError() error { return m.checkpointable() }

func (m *Model) checkpointable() error {
	c, ok := m.engine.(Checkpointer)
	if !ok {
		return capabilityError(m.engine, "checkpoint a fit", "Checkpointer")
	}
	if err := c.Checkpointable(m); err != nil {
		return fmt.Errorf("models: the %s engine: %w", m.engine.Name(), err)
	}
	return nil
}

// checkCheckpoint refuses a checkpoint for a fit that cannot write one,
// before any work.
func (m *Model) checkCheckpoint(ck *Checkpoint) error {
	switch {
	case ck == nil:
		return nil
	case ck.Path == "":
		return errors.New("models: FitConfig.Checkpoint has no Path")
	case ck.Every < 0:
		return fmt.Errorf("models: checkpoint %s: Every must not be negative, got %v", ck.Path, ck.Every)
	}
	if err := m.checkpointable(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", ck.Path, err)
	}
	return nil
}

// openCheckpoint reads ck's file, if any, restores the caller's state from
// it and returns the snapshot to resume from (nil: start afresh) and the
// function that writes checkpoints (nil without ck).
func (m *Model) openCheckpoint(ck *Checkpoint, train *datasets.Dataset, params []solvers.Param) (*solvers.Snapshot, func(*solvers.Snapshot) error, error) {
	if ck == nil {
		return nil, nil, nil
	}
	fp, err := m.checkpointPrint(train)
	if err != nil {
		return nil, nil, err
	}
	f, err := readCheckpoint(ck.Path, fp)
	if err != nil {
		return nil, nil, err
	}
	save := func(s *solvers.Snapshot) error { return writeCheckpoint(ck, fp, s) }
	if f == nil {
		return nil, save, nil
	}
	// Matching options and data make the shapes match; a file that passed
	// those checks with other shapes was written by another gpc.
	if len(f.State.Params) != len(params) {
		return nil, nil, fmt.Errorf("models: checkpoint %s holds %d parameters, the model trains %d", ck.Path, len(f.State.Params), len(params))
	}
	for i, p := range params {
		if len(f.State.Params[i]) != len(p.Data) {
			return nil, nil, fmt.Errorf("models: checkpoint %s holds %d values of parameter %s, which has %d", ck.Path, len(f.State.Params[i]), p.Name, len(p.Data))
		}
	}
	if ck.Restore != nil {
		if err := ck.Restore(f.Caller); err != nil {
			return nil, nil, fmt.Errorf("models: checkpoint %s: restoring the caller's state: %w", ck.Path, err)
		}
	}
	return &f.State, save, nil
}

// damagedCheckpoint is the error of a checkpoint file that cannot be read
// as one.
// ErrForeignCheckpoint matches (errors.Is) the error of a fit refused
// because the checkpoint it was given belongs to another fit (other
// options or training data). That file is another fit's work, so a caller
// that cleans up after failed fits keeps it.
var ErrForeignCheckpoint = errors.New("models: the checkpoint is of another fit")

// foreignCheckpointError is a refusal of another fit's checkpoint: its own
// message, and ErrForeignCheckpoint to errors.Is.
type foreignCheckpointError struct{ msg string }

func (e *foreignCheckpointError) Error() string        { return e.msg }
func (e *foreignCheckpointError) Is(target error) bool { return target == ErrForeignCheckpoint }

func damagedCheckpoint(path string, why any) error {
	return fmt.Errorf("models: checkpoint %s is damaged or not a checkpoint (%v); remove it to start the fit over", path, why)
}

// checkpointHeader is a checkpoint file's header as readCheckpointHeader
// read it.
type checkpointHeader struct {
	f *checkpointFile
	// st describes the file as it was opened.
	st fs.FileInfo
	// rest reads on from the header's end.
	rest *bufio.Reader
	// streamAt is the offset of the objective's stream, −1 in a version 1
	// file.
	streamAt int64
}

// readCheckpointHeader reads the header of the checkpoint open as fh (all
// of a version 1 file) and checks its format and version.
func readCheckpointHeader(path string, fh *os.File) (checkpointHeader, error) {
	st, err := fh.Stat()
	if err != nil {
		return checkpointHeader{}, fmt.Errorf("models: reading checkpoint %s: %w", path, err)
	}
	br := bufio.NewReaderSize(fh, 1<<20)
	var f checkpointFile
	head, err := br.Peek(len(checkpointMagic))
	streamAt := int64(-1)
	if err == nil && string(head) == checkpointMagic {
		limit := uint64(maxCheckpointHeader)
		if sz := uint64(st.Size()); sz < limit {
			limit = sz
		}
		if streamAt, err = frame.Read(br, checkpointMagic, limit, &f); err != nil {
			return checkpointHeader{}, damagedCheckpoint(path, err)
		}
	} else if err := gob.NewDecoder(br).Decode(&f); err != nil {
		// Version 1: the whole file is one gob.
		return checkpointHeader{}, damagedCheckpoint(path, err)
	}
	switch {
	case f.Format != checkpointFormat:
		return checkpointHeader{}, fmt.Errorf("models: %s is not a gpc checkpoint (format %q)", path, f.Format)
	case f.Version != 1 && f.Version != checkpointVersion:
		return checkpointHeader{}, fmt.Errorf("models: checkpoint %s has version %d; this gpc reads versions 1 and %d", path, f.Version, checkpointVersion)
	case f.Version == checkpointVersion && streamAt < 0, f.Version == 1 && (streamAt >= 0 || f.Streamed):
		return checkpointHeader{}, damagedCheckpoint(path, fmt.Sprintf("version %d in a file laid out as the other", f.Version))
	}
	return checkpointHeader{f: &f, st: st, rest: br, streamAt: streamAt}, nil
}

// CheckpointInfo is what a checkpoint file records of its fit's progress.
type CheckpointInfo struct {
	// Epoch and Iterations count the completed epochs and optimiser steps.
	Epoch, Iterations int
	// History records the completed epochs: loss, wall time, steps.
	History solvers.History
	// Saved is when the file was written.
	Saved time.Time
}

// infoOf is the progress a snapshot records, saved at the given time.
func infoOf(s *solvers.Snapshot, saved time.Time) CheckpointInfo {
	return CheckpointInfo{Epoch: s.Epoch, Iterations: s.Iterations, History: s.History, Saved: saved}
}

// ReadCheckpointInfo reads the progress recorded in the checkpoint at path,
// for watching a long fit from outside its process. It reads the file's
// header only (a version 1 file whole), so that a checkpoint of gigabytes
// takes milliseconds, and it neither asks which fit the file belongs to
// nor checks the objective's state: a fit resuming from the file does.
func ReadCheckpointInfo(path string) (CheckpointInfo, error) {
	fh, err := os.Open(path)
	if err != nil {
		return CheckpointInfo{}, fmt.Errorf("models: reading checkpoint %s: %w", path, err)
	}
	defer fh.Close()
	h, err := readCheckpointHeader(path, fh)
	if err != nil {
		return CheckpointInfo{}, err
	}
	return infoOf(&h.f.State, h.st.ModTime()), nil
}

// readCheckpoint returns the checkpoint at path, nil if there is none, or
// an error naming the file when it is damaged or of another fit. A streamed
// objective state is checked against its CRC here, before anything is
// restored, and is read from the file again by the Snapshot's
// RestoreObjective.
func readCheckpoint(path string, want fitPrint) (*checkpointFile, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("models: reading checkpoint %s: %w", path, err)
	}
	defer fh.Close()
	head, err := readCheckpointHeader(path, fh)
	if err != nil {
		return nil, err
	}
	f, st, br, streamAt := head.f, head.st, head.rest, head.streamAt
	damaged := func(why any) error { return damagedCheckpoint(path, why) }
	if d := f.Print.differs(want); d != "" {
		return nil, &foreignCheckpointError{fmt.Sprintf("models: checkpoint %s is of another fit: %s; remove it or give another path", path, d)}
	}
	if !f.Streamed {
		if f.Version == checkpointVersion {
			if _, err := br.Peek(1); err != io.EOF {
				return nil, damaged("bytes after the header of a checkpoint without a stream")
			}
		}
		return f, nil
	}
	n := st.Size() - trailerSize - streamAt
	if n < 0 {
		return nil, damaged("the objective state is cut short")
	}
	var tr [trailerSize]byte
	if _, err := fh.ReadAt(tr[:], streamAt+n); err != nil {
		return nil, damaged(err)
	}
	if got := binary.LittleEndian.Uint64(tr[:8]); got != uint64(n) {
		return nil, damaged(fmt.Sprintf("an objective state of %d bytes where the trailer says %d", n, got))
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(fh, streamAt, n)); err != nil {
		return nil, fmt.Errorf("models: reading checkpoint %s: %w", path, err)
	}
	if h.Sum32() != binary.LittleEndian.Uint32(tr[8:]) {
		return nil, damaged("the objective state's checksum does not match")
	}
	f.State.RestoreObjective = func(ss solvers.StateStreamer) error {
		fh, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("models: reading checkpoint %s: %w", path, err)
		}
		defer fh.Close()
		// The file verified above, not one put in its place since.
		if now, err := fh.Stat(); err != nil || !os.SameFile(st, now) {
			return fmt.Errorf("models: checkpoint %s was replaced while the fit was resuming from it", path)
		}
		cr := &countingReader{r: bufio.NewReaderSize(io.NewSectionReader(fh, streamAt, n), 1<<20)}
		if err := ss.ReadState(cr); err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
		if cr.n != n {
			return fmt.Errorf("checkpoint %s: the objective read %d bytes of its state's %d (its state is now undefined)", path, cr.n, n)
		}
		return nil
	}
	return f, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// countingWriter counts and checksums the bytes written through it.
type countingWriter struct {
	w   io.Writer
	n   int64
	crc uint32
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	c.crc = crc32.Update(c.crc, castagnoli, p[:k])
	return k, err
}

// differs describes how the fit that wrote a checkpoint (p) differs from
// this one (q), "" if it does not.
func (p fitPrint) differs(q fitPrint) string {
	switch {
	case p.Options != q.Options:
		return "the options differ (" + jsonDiff(p.Options, q.Options) + ")"
	case p.N != q.N || p.D != q.D || p.C != q.C:
		return fmt.Sprintf("it was written for %d rows, %d features, %d classes, not %d, %d, %d", p.N, p.D, p.C, q.N, q.D, q.C)
	case p.Data != q.Data:
		return "it was written for other training data (inputs, labels or given noise)"
	}
	return ""
}

// jsonDiff names the fields in which two JSON objects differ, with the
// file's value and this fit's.
func jsonDiff(file, here string) string {
	var a, b any
	if json.Unmarshal([]byte(file), &a) != nil || json.Unmarshal([]byte(here), &b) != nil {
		return "unreadable"
	}
	var out []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := map[string]bool{}
			for k := range am {
				keys[k] = true
			}
			for k := range bm {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				walk(strings.TrimPrefix(path+"."+k, "."), am[k], bm[k])
			}
			return
		}
		if !reflect.DeepEqual(a, b) {
			fa, _ := json.Marshal(a)
			fb, _ := json.Marshal(b)
			out = append(out, fmt.Sprintf("%s: %s in the file, %s here", path, fa, fb))
		}
	}
	walk("", a, b)
	return strings.Join(out, "; ")
}

// writeCheckpoint replaces the file at ck.Path by a new checkpoint: through
// a synced temporary file renamed over it, so that a kill at any moment
// leaves the previous checkpoint or the new one, never half of one. An
// objective state streamed by s.WriteObjective goes to the file as it is
// written, never whole in memory.
func writeCheckpoint(ck *Checkpoint, fp fitPrint, s *solvers.Snapshot) error {
	f := checkpointFile{Format: checkpointFormat, Version: checkpointVersion, Print: fp, State: *s,
		Streamed: s.WriteObjective != nil}
	if ck.Save != nil {
		b, err := ck.Save()
		if err != nil {
			return fmt.Errorf("models: checkpoint %s: the caller's state: %w", ck.Path, err)
		}
		f.Caller = b
	}
	err := datasets.WriteAtomic(ck.Path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if _, err := frame.Write(bw, checkpointMagic, f); err != nil {
			return err
		}
		if s.WriteObjective != nil {
			cw := &countingWriter{w: bw}
			if err := s.WriteObjective(cw); err != nil {
				return err
			}
			var tr [trailerSize]byte
			binary.LittleEndian.PutUint64(tr[:8], uint64(cw.n))
			binary.LittleEndian.PutUint32(tr[8:], cw.crc)
			if _, err := bw.Write(tr[:]); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("models: writing checkpoint %s: %w", ck.Path, err)
	}
	if ck.Written != nil {
		ck.Written(infoOf(s, time.Now()))
	}
	return nil
}

// RemoveCheckpoint removes a checkpoint file once its fit's result is safe,
// with any temporary file a write killed midway left beside it. A missing
// file is not an error.
func RemoveCheckpoint(path string) error {
	var errs []error
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		// datasets.WriteAtomic's temporary names: "." + base + "." + digits + ".tmp".
		n := e.Name()
		if strings.HasPrefix(n, "."+base+".") && strings.HasSuffix(n, ".tmp") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
