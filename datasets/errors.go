package datasets

import (
	"fmt"
	"strconv"
)

// ParseError describes one problem in an input file. Every reader in this
// package reports malformed input with a *ParseError so that callers (and
// users reading the message) always get the exact position of the bad cell
// instead of a generic "invalid syntax".
//
// Line is 1-based and counts physical lines of the file, including a header
// line if there is one, so it matches what an editor shows. Column is the
// 1-based index of the field (cell) on that line, not a byte offset, because
// the files are tables and users navigate them by column. Line or Column is 0
// when the problem concerns the whole file or the whole line respectively.
type ParseError struct {
	File   string // path of the file as given to the reader
	Line   int    // 1-based line number; 0 if the problem is not tied to a line
	Column int    // 1-based field index; 0 if the problem is not tied to a field
	Value  string // the offending text; empty if there is no single offending cell
	Msg    string // what is wrong, phrased to follow the quoted value
}

// Error formats the error as file:line:column: "value" message, the
// convention compilers use, so editors and terminals can link to the spot.
func (e *ParseError) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += ":" + strconv.Itoa(e.Line)
		if e.Column > 0 {
			pos += ":" + strconv.Itoa(e.Column)
		}
	}
	if e.Value != "" {
		return fmt.Sprintf("%s: %q %s", pos, Excerpt(e.Value), e.Msg)
	}
	return pos + ": " + e.Msg
}

// perr is a short constructor used by the readers.
func perr(file string, line, col int, value, format string, args ...any) *ParseError {
	return &ParseError{File: file, Line: line, Column: col, Value: value, Msg: fmt.Sprintf(format, args...)}
}
