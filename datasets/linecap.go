package datasets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// MaxLineBytes bounds one line of every text reader of this package. The
// widest real rows (MNIST's 784 features, about 20 kB at full precision;
// the data sets of the papers have lines of a few hundred bytes) stay far
// below it; a line of hundreds of megabytes is a corrupt or hostile file,
// refused once this many bytes have been read instead of being buffered
// whole.
const MaxLineBytes = 4 << 20

// LineTooLongError is a line longer than MaxLineBytes.
type LineTooLongError struct {
	Line int // 1-based
}

// Error names the line and the limit.
func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line %d is longer than %d MiB, the limit of a line", e.Line, MaxLineBytes>>20)
}

// lineCapReader hands its reader's bytes on a whole line at a time and
// fails with a *LineTooLongError at a line longer than max, before any of
// that line is handed on: encoding/csv has no limit of its own, and splits
// whatever part of a line it was given into fields before it reports the
// reader's error (a few megabytes of one-character cells are millions of
// fields).
type lineCapReader struct {
	br      *bufio.Reader
	max     int
	line    int    // 1-based line being read
	buf     []byte // the line being collected, reused
	pending []byte // the part of a whole line not yet handed on
	err     error
}

func newLineCapReader(r io.Reader, max int) *lineCapReader {
	return &lineCapReader{br: bufio.NewReaderSize(r, 1<<16), max: max}
}

func (l *lineCapReader) Read(p []byte) (int, error) {
	for len(l.pending) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		l.line++
		l.buf = l.buf[:0]
		for {
			chunk, err := l.br.ReadSlice('\n')
			l.buf = append(l.buf, chunk...)
			n := len(l.buf)
			if n > 0 && l.buf[n-1] == '\n' {
				n--
			}
			if n > l.max {
				l.err, l.buf = &LineTooLongError{Line: l.line}, nil
				return 0, l.err
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil {
				l.err = err
			}
			break
		}
		l.pending = l.buf
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}

// newLineScanner is a bufio.Scanner of lines capped at MaxLineBytes.
func newLineScanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), MaxLineBytes)
	return sc
}

// scanErr reports a newLineScanner's error after line lines of path: a
// too-long line as a *ParseError naming it.
func scanErr(path string, line int, err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return perr(path, line+1, 0, "", "the line is longer than %d MiB, the limit of a line", MaxLineBytes>>20)
	}
	return fmt.Errorf("%s:%d: %w", path, line+1, err)
}

// maxExcerpt bounds the characters of a bad value quoted in a message.
const maxExcerpt = 40

// Excerpt shortens v to its first 40 characters, saying how long it was:
// an error quoting a 100 MB cell (or a spec's megabyte-long value) would
// itself be 100 MB. Every message of gpc that quotes a value read from a
// file quotes it through Excerpt.
func Excerpt(v string) string {
	if len(v) <= maxExcerpt {
		return v
	}
	cut, n := 0, 0
	for cut < len(v) && n < maxExcerpt {
		_, size := utf8.DecodeRuneInString(v[cut:])
		cut += size
		n++
	}
	if cut >= len(v) {
		return v
	}
	return fmt.Sprintf("%s… (%d bytes)", v[:cut], len(v))
}
