package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/joulehook/joule/core/rule"
)

// resolver resolves the paths of one Build as rule.Resolve does (every
// symlink on the way followed), but looks each directory up once: the
// rules, the home secrets and the toolchains' trees share their leading
// directories, and resolving each path from the root again cost a stat of
// every component of every one of them (hundreds of system calls on the
// start of every contained command). What it learns of each path it
// stats is kept for the Plan (Spec.stats), which asks again which of the
// refused paths exist.
type resolver struct {
	seen  map[string]resolved // clean absolute path → its resolution
	stats stats               // resolved path → what Lstat said of it
}

type resolved struct {
	path string
	err  error
}

// resolve returns p with every symlink resolved, or p cleaned where it
// cannot be resolved.
func (r *resolver) resolve(p string) string {
	var out string
	var err error
	if filepath.IsAbs(p) && filepath.Clean(p) == p {
		out, err = r.lookup(p)
	} else {
		// ".." after a symlink means the link's parent, not the lexical
		// one: only clean paths are resolved a directory at a time.
		out, err = rule.Resolve("/", p)
	}
	if err != nil {
		return filepath.Clean(p)
	}
	return out
}

// lookup resolves the clean absolute path p: its directory (remembered),
// then its last component from there. Once rule.Resolve's walk has
// resolved a path's directory, what remains of it is that last component
// from the directory's resolution, so the result is the same.
func (r *resolver) lookup(p string) (string, error) {
	if p == "/" {
		return p, nil
	}
	if v, ok := r.seen[p]; ok {
		return v.path, v.err
	}
	dir, err := r.lookup(filepath.Dir(p))
	var out string
	if err == nil {
		out, err = r.component(dir, filepath.Base(p))
	}
	if r.seen == nil {
		r.seen = map[string]resolved{}
	}
	r.seen[p] = resolved{out, err}
	return out, err
}

// component resolves name in the resolved directory dir, as rule.Resolve
// would: an entry that is not there is taken as it is (it may be created),
// a link is followed.
func (r *resolver) component(dir, name string) (string, error) {
	if r.stats == nil {
		r.stats = stats{}
	}
	next := filepath.Join(dir, name)
	if st, ok := r.stats[dir]; ok && !st.dir {
		r.stats[next] = stat{} // nothing can be below what is not a directory
		return next, nil
	}
	fi, err := os.Lstat(next)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		r.stats[next] = stat{}
		return next, nil
	case err == nil && fi.Mode()&fs.ModeSymlink == 0:
		r.stats[next] = stat{exists: true, dir: fi.IsDir()}
		return next, nil
	}
	// A link, or an error: rule.Resolve's own walk follows the one and
	// reports the other.
	return rule.ResolveFrom(dir, name)
}
