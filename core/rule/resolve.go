package rule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"unicode/utf8"
)

const (
	// maxPathLen is Linux's PATH_MAX.
	maxPathLen = 4096
	// maxLinks is Linux's limit on symlinks followed in one lookup.
	maxLinks = 40
)

// Resolve makes p absolute against cwd and resolves it the way the kernel
// will when the path is opened: component by component, following every
// symlink (so dir/link/.. is the parent of the link's target, not dir), and
// taking the components from the first missing one on as they are, so that a
// file about to be created under a symlinked directory, or through a
// dangling symlink, resolves to where it will really be written. The result
// is absolute and clean.
//
// It fails for an empty path, a NUL byte, invalid UTF-8, a path longer than
// 4096 bytes, more than 40 symlinks, a relative p without an absolute cwd, a
// path starting with ~ (the caller must expand it, or not: the gate cannot
// know which the tool will do), and a component it cannot inspect (for
// example for lack of permission): callers must treat an error as a denial.
func Resolve(cwd, p string) (string, error) {
	if err := checkPath("path", p); err != nil {
		return "", err
	}
	if p[0] == '~' {
		return "", fmt.Errorf("path %q starts with ~; expand the home directory first", p)
	}
	full := p
	if !path.IsAbs(p) {
		if cwd == "" {
			return "", fmt.Errorf("relative path %q needs a working directory", p)
		}
		if err := checkPath("working directory", cwd); err != nil {
			return "", err
		}
		if !path.IsAbs(cwd) {
			return "", fmt.Errorf("working directory %q is not absolute", cwd)
		}
		full = cwd + "/" + p
		if len(full) > maxPathLen {
			return "", fmt.Errorf("path %q joined to working directory is %d bytes, longer than the %d-byte limit", short(p), len(full), maxPathLen)
		}
	}
	return walk("/", full, p)
}

// ResolveDir is Resolve("/", p) for a path expected to name an existing
// directory, such as a working directory. When p is absolute, exists, is a
// directory and none of its components is a symlink, the kernel proves that
// in one system call (openat2 with RESOLVE_NO_SYMLINKS on Linux) instead of
// one lstat per component; in every other case p is walked as Resolve walks
// it. The result and the errors are Resolve's either way.
func ResolveDir(p string) (string, error) {
	if err := checkPath("path", p); err != nil {
		return "", err
	}
	if path.IsAbs(p) {
		if r, ok := resolveDirFast(p); ok {
			return r, nil
		}
	}
	return Resolve("/", p)
}

// ResolveFrom is Resolve for a path relative to dir, where dir is already
// resolved (absolute, clean, free of symlinks, as Resolve returns it): it
// does not inspect dir's components again, which saves a system call per
// component on a hot path. An absolute p is resolved from the root.
func ResolveFrom(dir, p string) (string, error) {
	if err := checkPath("path", p); err != nil {
		return "", err
	}
	if p[0] == '~' {
		return "", fmt.Errorf("path %q starts with ~; expand the home directory first", p)
	}
	if path.IsAbs(p) {
		return walk("/", p, p)
	}
	if !path.IsAbs(dir) || path.Clean(dir) != dir {
		return "", fmt.Errorf("directory %q is not absolute and clean", dir)
	}
	if len(dir)+1+len(p) > maxPathLen {
		return "", fmt.Errorf("path %q joined to working directory is %d bytes, longer than the %d-byte limit", short(p), len(dir)+1+len(p), maxPathLen)
	}
	return walk(dir, p, p)
}

// walk resolves rest component by component, starting from the resolved
// directory resolved; p is the path as given, for messages.
func walk(resolved, rest, p string) (string, error) {
	links := 0
	for rest != "" {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		switch name {
		case "", ".":
			continue
		case "..":
			resolved = path.Dir(resolved)
			continue
		}
		next := path.Join(resolved, name)
		info, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			resolved = next // will be created (or the open will fail)
			continue
		case err != nil:
			return "", fmt.Errorf("resolving %q: %w", short(p), err)
		case info.Mode()&fs.ModeSymlink == 0:
			resolved = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("resolving %q: more than %d symlinks (a loop?)", short(p), maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("resolving %q: %w", short(p), err)
		}
		if path.IsAbs(target) {
			resolved = "/"
		}
		rest = target + "/" + rest
	}
	if len(resolved) > maxPathLen {
		return "", fmt.Errorf("path %q resolves to %d bytes, longer than the %d-byte limit", short(p), len(resolved), maxPathLen)
	}
	return resolved, nil
}

func checkPath(what, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("empty %s", what)
	case len(p) > maxPathLen:
		return fmt.Errorf("%s %q is %d bytes, longer than the %d-byte limit", what, short(p), len(p), maxPathLen)
	case strings.IndexByte(p, 0) >= 0:
		return fmt.Errorf("%s %q contains a NUL byte", what, short(p))
	case !utf8.ValidString(p):
		return fmt.Errorf("%s %q is not valid UTF-8", what, short(p))
	}
	return nil
}

// short keeps error messages readable for very long paths.
func short(p string) string {
	if len(p) > 80 {
		return p[:80] + "..."
	}
	return p
}

// Within reports whether abs is root or below it, comparing whole path
// segments: /work/ab is not within /work/a. Both must be absolute; they are
// compared cleaned, without touching the file system.
func Within(abs, root string) bool {
	if !path.IsAbs(abs) || !path.IsAbs(root) {
		return false
	}
	return within(path.Clean(abs), path.Clean(root), false)
}

// within is Within for clean paths; fold compares without regard to case.
func within(abs, root string, fold bool) bool {
	if root == "/" {
		return strings.HasPrefix(abs, "/")
	}
	if len(abs) < len(root) {
		return false
	}
	prefix := abs[:len(root)]
	if prefix != root && !(fold && strings.EqualFold(prefix, root)) {
		return false
	}
	return len(abs) == len(root) || abs[len(root)] == '/'
}
