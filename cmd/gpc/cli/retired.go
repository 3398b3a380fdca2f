package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// retiredFormats are the model-file formats of the robust paper's models
// before they were presets (each had its own engine and file): such a file
// is refused with the way out, not misread as a gpc-model file.
var retiredFormats = map[string]string{
	"gpc-rmgpc": "rmgpc or smgpc",
	"gpc-htpc":  "htpc",
}

// retiredFormat reports a model file in a retired format; nil for any
// other file (models.Load reports what is wrong with it, if anything).
func retiredFormat(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	// Both formats wrote "format" first; a few kilobytes hold it.
	b, _ := io.ReadAll(io.LimitReader(f, 1<<12))
	head := strings.Join(strings.Fields(string(b)), "")
	for format, model := range retiredFormats {
		if strings.Contains(head, `"format":"`+format+`"`) {
			return fmt.Errorf("%s: a model in the retired %s format; retrain it with gpc train --model %s", path, format, model)
		}
	}
	return nil
}
