// Package frame writes and reads the header of a binary stream: a magic
// string that names the format and version, the length of a gob-encoded
// header (8 bytes, little-endian), and the gob. What follows the header is
// the caller's, typically arrays too large to pass through gob, which holds
// a whole message in memory (twice when it is read).
//
// The length is read before the gob, so a reader allocates for the header
// only up to a bound of its choosing: a damaged length is an error, never
// an allocation of exabytes; and a stream of another format is refused by
// its magic before anything is decoded.
package frame

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
)

// ErrMagic is returned (wrapped) by Read when the stream does not open with
// the expected magic: it is another format, another version, or empty.
var ErrMagic = errors.New("frame: not the expected format")

// Write writes magic, the length of header's gob encoding and the encoding
// to w. It returns the number of bytes written.
func Write(w io.Writer, magic string, header any) (int64, error) {
	var hb bytes.Buffer
	if err := gob.NewEncoder(&hb).Encode(header); err != nil {
		return 0, fmt.Errorf("frame: encoding the header: %w", err)
	}
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(hb.Len()))
	var written int64
	for _, b := range [][]byte{[]byte(magic), n[:], hb.Bytes()} {
		k, err := w.Write(b)
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// Read reads what Write wrote with the same magic, decoding the header into
// header (a pointer), and returns the number of bytes read: the caller's
// part of the stream starts there. It refuses another magic (ErrMagic) and
// a header said to be longer than limit bytes, before allocating for it. r is
// read no further than the header's end.
func Read(r io.Reader, magic string, limit uint64, header any) (int64, error) {
	m := make([]byte, len(magic))
	if k, err := io.ReadFull(r, m); err != nil || string(m) != magic {
		if err != nil && k > 0 && string(m[:k]) == magic[:k] {
			return int64(k), fmt.Errorf("%w: the stream ends within its magic %q", ErrMagic, magic)
		}
		return int64(k), fmt.Errorf("%w: the stream does not open with %q", ErrMagic, magic)
	}
	read := int64(len(magic))
	var n [8]byte
	k, err := io.ReadFull(r, n[:])
	read += int64(k)
	if err != nil {
		return read, fmt.Errorf("frame: reading the header's length: %w", err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > limit {
		return read, fmt.Errorf("frame: the header claims %d bytes, more than the %d allowed: the stream is damaged", size, limit)
	}
	hb := make([]byte, size)
	k, err = io.ReadFull(r, hb)
	read += int64(k)
	if err != nil {
		return read, fmt.Errorf("frame: reading the header (%d bytes): %w", size, err)
	}
	if err := gob.NewDecoder(bytes.NewReader(hb)).Decode(header); err != nil {
		return read, fmt.Errorf("frame: decoding the header: %w", err)
	}
	return read, nil
}
