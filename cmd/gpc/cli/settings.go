package cli

import (
	"fmt"
	"strings"
)

// settingsFlag collects repeated --set ENGINE.KEY=VALUE engine settings
// (models.Options.Settings).
type settingsFlag map[string]string

func (s settingsFlag) String() string {
	var parts []string
	for k, v := range s {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (s settingsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || !strings.Contains(k, ".") || strings.HasPrefix(k, ".") {
		return fmt.Errorf("want ENGINE.KEY=VALUE, got %q", v)
	}
	s[k] = val
	return nil
}
