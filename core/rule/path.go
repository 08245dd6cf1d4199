package rule

import (
	"fmt"
	"path"
	"strings"
)

// Access is what a file tool does with a path.
type Access uint8

const (
	// Read is reading one file (the Read tool, or Grep given a file).
	Read Access = iota + 1
	// ReadTree is reading a directory and everything below it (Glob, Grep).
	ReadTree
	// Write is creating or changing a file (Write, Edit, MultiEdit, NotebookEdit).
	Write
)

// AccessOf returns the access a file tool makes through its path input, and
// false for a tool that is not a file tool. Grep's path may name a file: the
// caller may pass Read instead of ReadTree when it knows it does.
func AccessOf(tool string) (Access, bool) {
	switch tool {
	case "Read":
		return Read, true
	case "Glob", "Grep":
		return ReadTree, true
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return Write, true
	}
	return 0, false
}

// Roots anchors path rules: Workspace is where relative patterns and bare
// Read and Write rules apply, Home is what ~ means. Both must be absolute,
// clean and symlink-resolved (see ResolveRoots): paths are compared after
// resolution, so a workspace reached through a symlink (macOS's /tmp) must be
// resolved too. An empty root makes the rules anchored at it match nothing.
// With several workspace roots, check a path once per root.
type Roots struct {
	Workspace string
	Home      string
}

// ResolveRoots resolves a workspace directory and a home directory (both
// absolute) through symlinks, for use as Roots.
func ResolveRoots(workspace, home string) (Roots, error) {
	if !path.IsAbs(workspace) {
		return Roots{}, fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	if !path.IsAbs(home) {
		return Roots{}, fmt.Errorf("home directory %q is not an absolute path", home)
	}
	ws, err := Resolve("/", workspace)
	if err != nil {
		return Roots{}, fmt.Errorf("resolving workspace: %w", err)
	}
	h, err := Resolve("/", home)
	if err != nil {
		return Roots{}, fmt.Errorf("resolving home directory: %w", err)
	}
	return Roots{Workspace: ws, Home: h}, nil
}

type anchor uint8

const (
	anchorWorkspace anchor = iota
	anchorRoot
	anchorHome
)

// pathPattern is the parsed specifier of a Read or Write rule.
type pathPattern struct {
	anchor anchor
	bare   bool // no specifier: anywhere within the workspace
	segs   []segment
}

// base is the directory the pattern is anchored at under roots.
func (p pathPattern) base(roots Roots) string {
	switch p.anchor {
	case anchorHome:
		return roots.Home
	case anchorRoot:
		return "/"
	}
	return roots.Workspace
}

// parsePathPattern parses a Read or Write rule's specifier: a glob relative
// to the workspace (an optional leading ./ is dropped), or absolute (/p, or
// Claude Code's //p), or relative to the home directory (~ or ~/p).
func parsePathPattern(spec string) (pathPattern, error) {
	if spec[0] == '!' {
		return pathPattern{}, fmt.Errorf("negated pattern %q is not supported; use a deny rule", spec)
	}
	p := pathPattern{anchor: anchorWorkspace}
	rest := spec
	switch {
	case strings.HasPrefix(spec, "//"):
		p.anchor, rest = anchorRoot, spec[2:]
	case spec[0] == '/':
		p.anchor, rest = anchorRoot, spec[1:]
	case spec == "~":
		p.anchor, rest = anchorHome, ""
	case strings.HasPrefix(spec, "~/"):
		p.anchor, rest = anchorHome, spec[2:]
	case spec[0] == '~':
		return pathPattern{}, fmt.Errorf("%q: only ~ and ~/ are supported for the home directory, not ~user", spec)
	case strings.HasPrefix(spec, "./"):
		rest = spec[2:]
		if rest == "" {
			return pathPattern{}, fmt.Errorf("pattern %q names the workspace itself; write ** or a bare rule", spec)
		}
		if rest[0] == ' ' || rest[0] == '\t' || rest[0] == '!' || rest[0] == '~' {
			// Without the ./ these would mean something else (or be
			// trimmed): escape them so the canonical form keeps them.
			rest = "\\" + rest
		}
	}
	if rest == "" {
		if p.anchor == anchorWorkspace {
			return pathPattern{}, fmt.Errorf("empty path pattern")
		}
		return p, nil // "/" or "~": that directory itself
	}
	if strings.HasSuffix(rest, "/") {
		hint := strings.TrimRight(spec, "/")
		if !strings.HasSuffix(hint, "**") {
			hint += "/**"
		}
		return pathPattern{}, fmt.Errorf("trailing slash in %q: write %s to match a directory and everything below it", spec, hint)
	}
	for _, raw := range strings.Split(rest, "/") {
		seg, err := parseSegment(raw)
		if err != nil {
			if raw == "" {
				return pathPattern{}, fmt.Errorf("empty path segment in %q", spec)
			}
			return pathPattern{}, err
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// String returns the canonical specifier: "" for a bare rule, "./" and the
// second slash of "//" dropped.
func (p pathPattern) String() string {
	if p.bare {
		return ""
	}
	var b strings.Builder
	switch p.anchor {
	case anchorRoot:
		b.WriteByte('/')
	case anchorHome:
		b.WriteByte('~')
		if len(p.segs) > 0 {
			b.WriteByte('/')
		}
	}
	for i, s := range p.segs {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(s.raw)
	}
	return b.String()
}

// MatchPath reports whether a Read or Write rule matches an access to abs,
// which must be absolute, clean and symlink-resolved (see Resolve); any
// other abs matches nothing. Read rules match Read and ReadTree, Write-family
// rules match Write.
//
// Patterns are gitignore-style globs anchored at the workspace, at / or at
// the home directory: '*' and '?' never match '/', "**" matches zero or more
// whole segments (so src/** also matches src itself, and **/x matches x),
// and wildcards match names starting with a dot: Read(**) covers every file
// in the workspace, dotfiles included. A bare Read or Write covers the
// workspace and everything in it, nothing outside.
//
// Allow rules match narrowly: the pattern, as written, must match abs itself,
// case-sensitively; for ReadTree it must match everything below abs too
// (Read(src/**) allows a Grep over src/lib, Read(src/*.go) does not).
//
// Ask and deny rules match broadly: case-insensitively (a case-insensitive
// file system opens .GIT/config for .git/config); also when the pattern
// matches a directory above abs (Write(.git) covers .git/config, as in
// gitignore); for ReadTree also when the pattern could match anything below
// abs; and also against the pattern with its leading literal directories
// resolved through symlinks, so that Read(/etc/**) still covers
// /private/etc/passwd on macOS and Read(~/.bashrc) covers the file a
// ~/.bashrc symlink points to. That last step reads the file system.
//
// mode must be Allow, Ask or Deny; any other value matches nothing.
func (r Rule) MatchPath(kind Access, abs string, roots Roots, mode Mode) bool {
	switch {
	case !mode.valid():
		return false
	case r.kind == kindRead && (kind == Read || kind == ReadTree):
	case r.kind == kindWrite && kind == Write:
	default:
		return false
	}
	if !isCleanAbs(abs) {
		return false
	}
	base := r.path.base(roots)
	if !isCleanAbs(base) {
		return false
	}
	broad := mode != Allow
	if r.path.bare {
		return within(abs, base, broad)
	}
	m := matcher{tree: kind == ReadTree, broad: broad}
	if m.match(base, r.path.segs, abs) {
		return true
	}
	if broad {
		if realBase, rest, ok := resolveLiteralPrefix(base, r.path.segs); ok {
			return m.match(realBase, rest, abs)
		}
	}
	return false
}

// resolveLiteralPrefix joins base with the pattern's leading literal
// segments and resolves the result through symlinks. It reports false when
// there is nothing to resolve, resolution fails, or it changes nothing.
func resolveLiteralPrefix(base string, segs []segment) (string, []segment, bool) {
	n := 0
	for n < len(segs) && segs[n].literal {
		n++
	}
	if n == 0 {
		return "", nil, false
	}
	parts := make([]string, 0, n+1)
	parts = append(parts, base)
	for _, s := range segs[:n] {
		parts = append(parts, s.text)
	}
	p := path.Join(parts...)
	real, err := Resolve("/", p)
	if err != nil || real == p {
		return "", nil, false
	}
	return real, segs[n:], true
}

// matcher runs a pattern over a path's segments as a small NFA whose states
// are positions in the pattern.
type matcher struct {
	tree  bool // ReadTree: the access covers everything below the path
	broad bool // ask/deny: ancestors, descendants, case folding count
}

func (m matcher) match(base string, segs []segment, abs string) bool {
	if !within(abs, base, m.broad) {
		return false
	}
	rel := ""
	if len(abs) > len(base) {
		rel = strings.TrimPrefix(abs[len(base):], "/")
	}
	var curBuf, nextBuf [32]bool
	cur, next := curBuf[:0], nextBuf[:0]
	if len(segs)+1 > len(curBuf) {
		cur, next = make([]bool, len(segs)+1), make([]bool, len(segs)+1)
	} else {
		cur, next = curBuf[:len(segs)+1], nextBuf[:len(segs)+1]
	}
	cur[0] = true
	closeOver(segs, cur)
	accept := len(segs)
	for rel != "" {
		if m.broad && cur[accept] {
			return true // the pattern matches a directory above abs
		}
		var name string
		name, rel, _ = strings.Cut(rel, "/")
		clear(next)
		live := false
		for i, on := range cur[:accept] {
			if !on {
				continue
			}
			if segs[i].globstar {
				next[i] = true
				live = true
			} else if segs[i].match(name, m.broad) {
				next[i+1] = true
				live = true
			}
		}
		if !live {
			return false
		}
		closeOver(segs, next)
		cur, next = next, cur
	}
	if cur[accept] && (!m.tree || m.broad) {
		return true
	}
	if !m.tree {
		return false
	}
	if m.broad {
		// Could the pattern match something below abs?
		for _, on := range cur[:accept] {
			if on {
				return true
			}
		}
		return false
	}
	// Does the pattern match everything below abs?
	for i, on := range cur[:accept] {
		if on && onlyGlobstars(segs[i:]) {
			return true
		}
	}
	return false
}

// closeOver adds the states reachable without consuming a segment: a "**"
// may match zero segments.
func closeOver(segs []segment, states []bool) {
	for i, s := range segs {
		if states[i] && s.globstar {
			states[i+1] = true
		}
	}
}

func onlyGlobstars(segs []segment) bool {
	for _, s := range segs {
		if !s.globstar {
			return false
		}
	}
	return true
}

// isCleanAbs reports whether p is absolute and path.Clean(p) == p: "/",
// or "/" and segments none of which is empty, "." or "..". It scans p once
// instead of cleaning it: a kernel sandbox's deny glob is matched against
// every file below its base (MatchBelow), and cleaning both paths was a
// third of that.
func isCleanAbs(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	start := 1 // of the current segment
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		switch p[start:i] {
		case "", ".", "..":
			return false
		}
		start = i + 1
	}
	return true
}

// MatchBelow is MatchPath for a caller that walks the entries below a
// rule's Scope base already resolved through symlinks (real): abs, a path
// below real, is matched against the rest of the pattern from real, as
// MatchPath's last step does, without reading the file system. It is what
// a kernel sandbox expanding a deny glob over thousands of files needs:
// MatchPath resolves the pattern's literal prefix again on every call.
func (r Rule) MatchBelow(kind Access, abs, real string, mode Mode) bool {
	switch {
	case !mode.valid():
		return false
	case r.kind == kindRead && (kind == Read || kind == ReadTree):
	case r.kind == kindWrite && kind == Write:
	default:
		return false
	}
	if !isCleanAbs(abs) || !isCleanAbs(real) {
		return false
	}
	broad := mode != Allow
	if r.path.bare {
		return within(abs, real, broad)
	}
	n := 0
	for n < len(r.path.segs) && r.path.segs[n].literal {
		n++
	}
	m := matcher{tree: kind == ReadTree, broad: broad}
	return m.match(real, r.path.segs[n:], abs)
}
