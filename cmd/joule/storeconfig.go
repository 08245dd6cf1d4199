package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/store"
)

// StoreEnv overrides config.json's "store": a file path or a postgres:// URL.
const StoreEnv = "JOULE_STORE"

// storeLocation is where the ledger and receipts live: $JOULE_STORE, else
// config.json's "store", else StoreFile in $JOULE_HOME. A relative path is
// taken relative to $JOULE_HOME, so every process of one home agrees
// whatever its working directory.
func storeLocation(home string, cfg *config) (string, error) {
	loc, from := os.Getenv(StoreEnv), "$"+StoreEnv
	if loc == "" && cfg != nil && cfg.Store != "" {
		loc, from = cfg.Store, filepath.Join(home, ConfigFile)+": store"
	}
	if loc == "" {
		return filepath.Join(home, StoreFile), nil
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

// showStore is a store location fit to print: a URL without its password.
func showStore(loc string) string {
	if !store.IsURL(loc) {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "postgres://(unparsable URL)"
	}
	return u.Redacted()
}
