// Command gen writes graph/normtail_table.go, the table of package
// normtail; run it from the module root after changing that package.
package main

import (
	"log"
	"os"

	"github.com/gpc-dev/gpc/graph/internal/normtail"
)

func main() {
	if err := os.WriteFile("graph/normtail_table.go", normtail.Source(), 0o644); err != nil {
		log.Fatal(err)
	}
}
