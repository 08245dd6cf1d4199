package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/store"
)

// StoreEnv overrides config.json's "store": a file path or a postgres:// URL.
const StoreEnv = "JOULE_STORE"

// StoreLocation is where home's ledger and receipts live: $JOULE_STORE,
// else c's Store (c may be nil), else store.DefaultFile in home. A relative
// path is taken relative to home, so every process of one home agrees
// whatever its working directory.
func StoreLocation(home string, c *Config) (string, error) {
	loc, from := os.Getenv(StoreEnv), "$"+StoreEnv
	if loc == "" && c != nil && c.Store != "" {
		loc, from = c.Store, filepath.Join(home, File)+": store"
	}
	if loc == "" {
		return filepath.Join(home, store.DefaultFile), nil
	}
	loc = strings.TrimSpace(loc)
	if store.IsURL(loc) {
		return loc, nil
	}
	if i := strings.Index(loc, "://"); i > 0 {
		// Quote only the scheme: the rest may hold a password.
		return "", fmt.Errorf("%s: a %q URL is not a store; want a file path or a postgres:// URL", from, loc[:i+3])
	}
	if !filepath.IsAbs(loc) {
		loc = filepath.Join(home, loc)
	}
	return loc, nil
}
