// Package testdeps says where the npm packages the tests drive are: the
// real host CLIs, SDK clients, language servers and browsers that
// .ci/setup.d (make deps) installs, pinned by a package.json and
// package-lock.json in the checkout, into a cache outside it (gigabytes
// that must not sit in the work tree). .ci/setup.d/lib/npm.sh computes
// the same place; TestShellAgrees holds the two to it.
package testdeps

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
)

// CacheEnv names the variable that moves the cache (a test of make deps
// itself, a machine whose home is small).
const CacheEnv = "JOULE_TEST_CACHE"

// RootCache is the cache of a root that names none: outside root's home,
// which other accounts cannot enter.
const RootCache = "/var/cache/joule-test"

// Installed is the file npm.sh writes once an install is whole.
const Installed = ".joule-installed"

// root is the cache as the test process found its environment at start:
// a test that points HOME elsewhere for the programs it runs still finds
// what make deps installed.
var root = Cache()

// Cache is where make deps installs npm packages: $JOULE_TEST_CACHE, else
// $XDG_CACHE_HOME/joule-test, else, for root, /var/cache/joule-test, else
// ~/.cache/joule-test. Root's home is closed to other accounts, and the
// system-mode tests run the host CLIs as the users they add.
func Cache() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "joule-test")
	}
	if os.Geteuid() == 0 {
		return RootCache
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "joule-test")
}

// NodeModules is the node_modules directory of the packages pinned in pkg
// (the directory holding package.json and package-lock.json, relative to
// the working directory or absolute): pkg/node_modules when it exists (an
// install from before the cache, or a link to one), else the cache's
// whole install of that very lockfile. "" when neither is there.
func NodeModules(pkg string) string {
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return ""
	}
	if st, err := os.Stat(filepath.Join(abs, "node_modules")); err == nil && st.IsDir() {
		return filepath.Join(abs, "node_modules")
	}
	dir, err := cacheDir(root, abs)
	if err != nil {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, Installed)); err != nil {
		return ""
	}
	return filepath.Join(dir, "node_modules")
}

// Link makes dir/node_modules a link to pkg's node_modules, for what
// resolves packages from its own directory up (Node's ES module imports,
// TypeScript's types): a script copied into dir then runs as it would in
// pkg.
func Link(dir, pkg string) error {
	nm := NodeModules(pkg)
	if nm == "" {
		return errors.New("the npm packages of " + pkg + " are not installed: run make deps")
	}
	return os.Symlink(nm, filepath.Join(dir, "node_modules"))
}

// cacheDir is where under cache the packages of abs, a directory of the
// module, are installed: its path in the module, then a digest of its
// package.json and package-lock.json, so that two checkouts share an
// install only when they pin the same packages.
func cacheDir(cache, abs string) (string, error) {
	mod := abs
	for {
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err == nil {
			break
		}
		if filepath.Dir(mod) == mod {
			return "", errors.New(abs + " is not in the module")
		}
		mod = filepath.Dir(mod)
	}
	rel, err := filepath.Rel(mod, abs)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(abs, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return filepath.Join(cache, "npm", rel, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// Stage readies dst to run pkg's scripts from: a copy of each file at the
// top of pkg (client.mjs, drive.mjs, …) and dst/node_modules linked to
// pkg's. Node resolves a script's imports from the script's own real
// directory up, so the script runs from dst, not from the checkout.
func Stage(dst, pkg string) error {
	ents, err := os.ReadDir(pkg)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(pkg, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return Link(dst, pkg)
}
