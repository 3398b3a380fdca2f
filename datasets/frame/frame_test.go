package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type head struct {
	Name string
	Rows []int
}

func TestRoundTripLeavesPayload(t *testing.T) {
	var b bytes.Buffer
	in := head{Name: "q(x)", Rows: []int{3, 1, 4}}
	n, err := Write(&b, "test 1\n", in)
	if err != nil {
		t.Fatal(err)
	}
	if int64(b.Len()) != n {
		t.Fatalf("Write says %d bytes, wrote %d", n, b.Len())
	}
	b.WriteString("payload")
	var out head
	m, err := Read(&b, "test 1\n", 1<<20, &out)
	if err != nil {
		t.Fatal(err)
	}
	if m != n || out.Name != in.Name || fmt.Sprint(out.Rows) != fmt.Sprint(in.Rows) {
		t.Fatalf("read %d bytes %+v, wrote %d bytes %+v", m, out, n, in)
	}
	if rest := b.String(); rest != "payload" {
		t.Fatalf("Read consumed past the header: %q left", rest)
	}
}

func TestReadRefuses(t *testing.T) {
	var good bytes.Buffer
	if _, err := Write(&good, "test 1\n", head{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	g := good.Bytes()
	huge := bytes.Clone(g)
	binary.LittleEndian.PutUint64(huge[len("test 1\n"):], 1<<62)
	garbled := bytes.Clone(g)
	for i := len("test 1\n") + 8; i < len(garbled); i++ {
		garbled[i] = 0xff
	}
	for _, c := range []struct {
		name, magic string
		b           []byte
		max         uint64
		want        string
		isMagic     bool
	}{
		{"other magic", "test 2\n", g, 1 << 20, "does not open with", true},
		{"empty", "test 1\n", nil, 1 << 20, "does not open with", true},
		{"cut in the magic", "test 1\n", g[:3], 1 << 20, "ends within its magic", true},
		{"cut in the length", "test 1\n", g[:len("test 1\n")+3], 1 << 20, "header's length", false},
		{"huge length", "test 1\n", huge, 1 << 20, "claims 4611686018427387904 bytes", false},
		{"over the bound", "test 1\n", g, 4, "more than the 4 allowed", false},
		{"cut in the header", "test 1\n", g[:len(g)-2], 1 << 20, "reading the header", false},
		{"garbled header", "test 1\n", garbled, 1 << 20, "decoding the header", false},
	} {
		var h head
		_, err := Read(bytes.NewReader(c.b), c.magic, c.max, &h)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrMagic) != c.isMagic {
			t.Errorf("%s: got %v, want an error with %q (ErrMagic %v)", c.name, err, c.want, c.isMagic)
		}
	}
}

type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		k := f.n
		f.n = 0
		return k, errors.New("disk full")
	}
	f.n -= len(b)
	return len(b), nil
}

func TestWriteReportsShortWrite(t *testing.T) {
	n, err := Write(&failAfter{n: 10}, "test 1\n", head{Name: "a"})
	if err == nil || n != 10 {
		t.Fatalf("got %d bytes, %v; want 10 and the writer's error", n, err)
	}
}
