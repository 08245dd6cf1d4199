// Package home locates $JOULE_HOME, the directory of joule's keys, store
// and resident gate. It depends on the standard library alone, so that
// the thin hook client can link it without the rest of core.
package home

import (
	"fmt"
	"os"
	"path/filepath"
)

// Dir returns $JOULE_HOME, or $XDG_DATA_HOME/joule, or
// ~/.local/share/joule.
func Dir() (string, error) {
	if h := os.Getenv("JOULE_HOME"); h != "" {
		return h, nil
	}
	return Default()
}

// Default is the home joule uses when JOULE_HOME is not set:
// $XDG_DATA_HOME/joule, or ~/.local/share/joule.
func Default() (string, error) {
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "joule"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot locate a home directory: %w (set JOULE_HOME)", err)
	}
	return filepath.Join(home, ".local", "share", "joule"), nil
}
