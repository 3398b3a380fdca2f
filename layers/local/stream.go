package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gpc-dev/gpc/datasets/frame"
)

// statesMagic opens WriteStates' stream, so that other bytes are refused
// rather than read as a table.
const statesMagic = "gpc-local-states 1\n"

// maxStatesHeader bounds the header ReadStates will allocate for: a
// damaged length must give an error, not an allocation of exabytes. The
// header holds two step counts per row (T and Done), so this allows some
// 60 million rows.
const maxStatesHeader = 1 << 30

// tableHeader is a table's State without its values and moments: the
// shape and the optimiser's scalars, written ahead of every table's arrays
// so that a reader checks all the shapes before it overwrites any value.
type tableHeader struct {
	Name        string
	Rows, Width int
	// Opt is nil when the table has no optimiser; its M and V are nil (they
	// follow the values in the stream), its T is kept.
	Opt *RowAdamState
}

// WriteStates writes the states of tables (State: values, and moments and
// step counts of the row-wise optimiser) to w, for ReadStates. Every
// table's shape comes first, then the arrays as little-endian binary read
// straight from the tables' storage: NIMGP's q(x_i) on MNIST holds 2.3 GB,
// which a checkpoint must not copy (a gob of it took four times its size
// in memory, and the resume of a 350-epoch fit ran out of it).
func WriteStates(w io.Writer, tables []*Param) error {
	heads := make([]tableHeader, len(tables))
	for i, p := range tables {
		s := p.State()
		heads[i] = tableHeader{Name: p.Name, Rows: p.Rows(), Width: p.Width}
		if o := s.Opt; o != nil {
			h := *o
			h.M, h.V = nil, nil
			heads[i].Opt = &h
		}
	}
	if _, err := frame.Write(w, statesMagic, heads); err != nil {
		return fmt.Errorf("local: writing the table headers: %w", err)
	}
	buf := make([]byte, streamChunk*8)
	for _, p := range tables {
		if err := writeFloats(w, p.data, buf); err != nil {
			return fmt.Errorf("local: writing %s: %w", p.Name, err)
		}
		if r := p.opt; r != nil {
			if err := writeFloats(w, r.m, buf); err != nil {
				return fmt.Errorf("local: writing %s's first moments: %w", p.Name, err)
			}
			if err := writeFloats(w, r.v, buf); err != nil {
				return fmt.Errorf("local: writing %s's second moments: %w", p.Name, err)
			}
		}
	}
	return nil
}

// ReadStates reads what WriteStates wrote into tables of the same names
// and shapes (each Reset for the same data set), in place: no copy of the
// arrays is held, whatever their size. Every header is checked against its
// table before any value changes, and on such an error nothing has; an
// error while the arrays are read (a stream cut short) leaves the tables'
// values undefined, and the error says so.
func ReadStates(r io.Reader, tables []*Param) error {
	var heads []tableHeader
	if _, err := frame.Read(r, statesMagic, maxStatesHeader, &heads); err != nil {
		if errors.Is(err, frame.ErrMagic) {
			return errors.New("local: not a stream of table states")
		}
		return fmt.Errorf("local: reading the table headers: %w", err)
	}
	if len(heads) != len(tables) {
		return fmt.Errorf("local: the stream holds %d tables, %d are to be restored", len(heads), len(tables))
	}
	opts := make([]*RowAdam, len(tables))
	for i, p := range tables {
		h := heads[i]
		switch {
		case h.Name != p.Name:
			return fmt.Errorf("local: table %d is %s in the stream, %s here", i, h.Name, p.Name)
		case h.Rows != p.Rows() || h.Width != p.Width:
			return fmt.Errorf("local: %s has %d rows of %d in the stream, %d of %d here", p.Name, h.Rows, h.Width, p.Rows(), p.Width)
		}
		if h.Opt != nil {
			var err error
			if opts[i], err = p.restoredAdam(*h.Opt, h.Rows*h.Width); err != nil {
				return err
			}
		}
	}
	buf := make([]byte, streamChunk*8)
	for i, p := range tables {
		if err := readFloats(r, p.data, buf); err != nil {
			return fmt.Errorf("local: reading %s (its values are now undefined): %w", p.Name, err)
		}
		o := opts[i]
		if o != nil {
			if err := readFloats(r, o.m, buf); err != nil {
				return fmt.Errorf("local: reading %s's first moments (its values are now undefined): %w", p.Name, err)
			}
			if err := readFloats(r, o.v, buf); err != nil {
				return fmt.Errorf("local: reading %s's second moments (its values are now undefined): %w", p.Name, err)
			}
		}
		p.opt = o
	}
	return nil
}

// streamChunk is the number of values converted per write or read: large
// enough for the system calls not to matter, small enough to stay in cache.
const streamChunk = 8192

func writeFloats(w io.Writer, x []float64, buf []byte) error {
	for len(x) > 0 {
		k := min(len(x), len(buf)/8)
		for j, v := range x[:k] {
			binary.LittleEndian.PutUint64(buf[8*j:], math.Float64bits(v))
		}
		if _, err := w.Write(buf[:8*k]); err != nil {
			return err
		}
		x = x[k:]
	}
	return nil
}

func readFloats(r io.Reader, x []float64, buf []byte) error {
	for len(x) > 0 {
		k := min(len(x), len(buf)/8)
		if _, err := io.ReadFull(r, buf[:8*k]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		for j := range x[:k] {
			x[j] = math.Float64frombits(binary.LittleEndian.Uint64(buf[8*j:]))
		}
		x = x[k:]
	}
	return nil
}
