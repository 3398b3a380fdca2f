// Command gen writes graph/normtail_table.go, the table of package
// normtail; run it from the module root after changing that package.
package main

import (
	"log"

	"github.com/gpc-dev/gpc/datasets"
	"github.com/gpc-dev/gpc/graph/internal/normtail"
)

func main() {
	// Through the common write path: an interrupted run leaves the old
	// table, never a truncated source file.
	if err := datasets.WriteFileAtomic("graph/normtail_table.go", normtail.Source()); err != nil {
		log.Fatal(err)
	}
}
