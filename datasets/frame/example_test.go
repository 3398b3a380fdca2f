package frame_test

import (
	"bytes"
	"fmt"
	"io"

	"github.com/gpc-dev/gpc/datasets/frame"
)

// A table's shape goes in the header, its values follow as raw bytes that
// the reader streams into storage it already holds.
func Example() {
	type shape struct{ Rows, Width int }
	var b bytes.Buffer
	if _, err := frame.Write(&b, "my-table 1\n", shape{Rows: 2, Width: 3}); err != nil {
		panic(err)
	}
	b.Write([]byte{1, 2, 3, 4, 5, 6})

	var s shape
	if _, err := frame.Read(&b, "my-table 1\n", 1<<20, &s); err != nil {
		panic(err)
	}
	values := make([]byte, s.Rows*s.Width)
	if _, err := io.ReadFull(&b, values); err != nil {
		panic(err)
	}
	fmt.Println(s.Rows, s.Width, values)

	_, err := frame.Read(bytes.NewReader([]byte("other 1\n")), "my-table 1\n", 1<<20, &s)
	fmt.Println(err)
	// Output:
	// 2 3 [1 2 3 4 5 6]
	// frame: not the expected format: the stream does not open with "my-table 1\n"
}
