package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"path/filepath"
	"strings"
)

// The parsers of git's own files that the discovery of repositories
// (persist.go) reads: configuration (for core.hooksPath, include.path,
// includeIf.*.path, extensions.worktreeConfig, core.worktree and the paths
// of .gitmodules), the .git file and commondir pointers, and the index
// (for submodules and for bare repositories committed as plain files).
// Each reads what git reads and never fails on what it does not
// understand: it reports less, and the caller protects what it found.

// parseGitConfig calls fn for each variable of a git configuration file,
// in order: the section and the key lower-cased, the subsection as
// written ("" for none), the value unquoted ("true" for a key without
// '='). Syntax it cannot read ends the parse, as git would refuse the
// file; what came before is reported, and complete is false.
func parseGitConfig(b []byte, fn func(section, sub, key, value string)) (complete bool) {
	var section, sub string
	i := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#' || c == ';':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case c == '[':
			var ok bool
			section, sub, i, ok = configHeader(b, i+1)
			if !ok {
				return false
			}
		case isAlpha(c):
			start := i
			for i < len(b) && (isAlpha(b[i]) || isDigit(b[i]) || b[i] == '-') {
				i++
			}
			key := strings.ToLower(string(b[start:i]))
			for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
				i++
			}
			value := "true"
			switch {
			case i < len(b) && b[i] == '=':
				var ok bool
				value, i, ok = configValue(b, i+1)
				if !ok {
					return false
				}
			case i >= len(b) || b[i] == '\n' || b[i] == '\r' || b[i] == '#' || b[i] == ';':
			default:
				return false
			}
			if section != "" {
				fn(section, sub, key, value)
			}
		default:
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// configHeader reads a section header after its '[': `[name]`,
// `[name "sub"]` or the old `[name.sub]` (a lower-cased subsection).
func configHeader(b []byte, i int) (section, sub string, next int, ok bool) {
	start := i
	for i < len(b) && (isAlpha(b[i]) || isDigit(b[i]) || b[i] == '-' || b[i] == '.') {
		i++
	}
	name := strings.ToLower(string(b[start:i]))
	if name == "" || i >= len(b) {
		return "", "", i, false
	}
	if b[i] == ']' {
		if s, rest, found := strings.Cut(name, "."); found {
			return s, rest, i + 1, true
		}
		return name, "", i + 1, true
	}
	if b[i] != ' ' && b[i] != '\t' {
		return "", "", i, false
	}
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	if i >= len(b) || b[i] != '"' {
		return "", "", i, false
	}
	i++
	var s strings.Builder
	for ; i < len(b) && b[i] != '"'; i++ {
		if b[i] == '\n' {
			return "", "", i, false
		}
		if b[i] == '\\' && i+1 < len(b) {
			i++
		}
		s.WriteByte(b[i])
	}
	if i+1 >= len(b) || b[i+1] != ']' {
		return "", "", i, false
	}
	return name, s.String(), i + 2, true
}

// configValue reads a value after its '=': double quotes group, backslash
// escapes \n \t \b \\ \" and a line continuation, '#' or ';' outside
// quotes start a comment, and whitespace outside quotes at either end is
// dropped.
func configValue(b []byte, i int) (string, int, bool) {
	var v []byte
	quoted := false
	keep := 0 // len(v) up to the last byte that is not trailing blank space
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '\n' && !quoted:
			return string(v[:keep]), i + 1, true
		case c == '\n':
			return "", i, false // a newline inside quotes
		case (c == '#' || c == ';') && !quoted:
			for i < len(b) && b[i] != '\n' {
				i++
			}
			return string(v[:keep]), i, true
		case c == '"':
			quoted = !quoted
			keep = len(v)
		case c == '\\':
			if i+1 >= len(b) {
				return "", i, false
			}
			i++
			switch b[i] {
			case '\n':
				continue
			case '\r':
				if i+1 < len(b) && b[i+1] == '\n' {
					i++
					continue
				}
				return "", i, false
			case 'n':
				v = append(v, '\n')
			case 't':
				v = append(v, '\t')
			case 'b':
				v = append(v, '\b')
			case '\\', '"':
				v = append(v, b[i])
			default:
				return "", i, false
			}
			keep = len(v)
		case (c == ' ' || c == '\t' || c == '\r') && !quoted:
			v = append(v, c)
		default:
			v = append(v, c)
			keep = len(v)
		}
	}
	if quoted {
		return "", i, false
	}
	return string(v[:keep]), i, true
}

// gitConfig is what the discovery needs of a repository's configuration.
type gitConfig struct {
	hooksPaths     []string // core.hooksPath values, as written
	includes       []string // include.path and includeIf.*.path, as written
	worktreeConfig bool     // extensions.worktreeConfig
	worktree       string   // core.worktree, as written
	sha256         bool     // extensions.objectFormat = sha256
	excludesFile   string   // core.excludesFile, as written
}

func (g *gitConfig) add(section, sub, key, value string) {
	switch {
	case section == "core" && sub == "" && key == "hookspath":
		g.hooksPaths = append(g.hooksPaths, value)
	case section == "core" && sub == "" && key == "worktree":
		g.worktree = value
	case section == "core" && sub == "" && key == "excludesfile":
		g.excludesFile = value
	case (section == "include" && sub == "" || section == "includeif") && key == "path":
		g.includes = append(g.includes, value)
	case section == "extensions" && sub == "" && key == "worktreeconfig":
		g.worktreeConfig = gitBool(value)
	case section == "extensions" && sub == "" && key == "objectformat":
		g.sha256 = strings.EqualFold(value, "sha256")
	}
}

// gitBool is git's reading of a boolean value.
func gitBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// configPath turns a path value of a configuration file at file into an
// absolute path as git would: "~/" is the home, a relative path is
// relative to base (the file's directory for an include, the work tree
// for core.hooksPath). "" when it names nothing usable here.
func configPath(v, base, home string) string {
	switch {
	case v == "" || strings.HasPrefix(v, "%(prefix)/"):
		return ""
	case v == "~" || strings.HasPrefix(v, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, v[1:])
	case strings.HasPrefix(v, "~"):
		return "" // another user's home: outside the writable trees in practice
	case filepath.IsAbs(v):
		return filepath.Clean(v)
	case base == "":
		return ""
	}
	return filepath.Join(base, v)
}

// submodulePaths lists submodule.*.path of a .gitmodules file.
func submodulePaths(b []byte) []string {
	var out []string
	parseGitConfig(b, func(section, sub, key, value string) {
		if section == "submodule" && key == "path" && value != "" {
			out = append(out, value)
		}
	})
	return out
}

// gitfileTarget reads a .git file ("gitdir: PATH") at file and returns the
// git directory it names, absolute.
func gitfileTarget(b []byte, file string) (string, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("gitdir: "))
	if !ok {
		return "", false
	}
	p := string(bytes.TrimRight(rest, " \t\r\n"))
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(file), p)
	}
	return filepath.Clean(p), true
}

// commondirTarget reads a git directory's commondir file (gitdir/commondir).
func commondirTarget(b []byte, gitdir string) (string, bool) {
	p := string(bytes.TrimRight(b, " \t\r\n"))
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(gitdir, p)
	}
	return filepath.Clean(p), true
}

// Modes of index entries (the object type bits).
const (
	indexModeType    = 0o170000
	indexModeGitlink = 0o160000
)

var errIndex = errors.New("not a git index this parser reads")

// indexEntries calls fn with the mode and path of each entry of a git
// index (versions 2, 3 and 4; hashLen 20 for SHA-1 repositories, 32 for
// SHA-256). The path is only valid during the call.
func indexEntries(b []byte, hashLen int, fn func(mode uint32, path []byte)) error {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return errIndex
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return errIndex
	}
	n := binary.BigEndian.Uint32(b[8:12])
	off := 12
	var prev []byte
	fixed := 40 + hashLen + 2 // stat data, object name, flags
	for e := uint32(0); e < n; e++ {
		start := off
		if off+fixed > len(b) {
			return errIndex
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+fixed-2 : off+fixed])
		off += fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 || off+2 > len(b) {
				return errIndex
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			// A varint of bytes to drop from the previous path, then the
			// rest of this one up to a NUL.
			var drop uint64
			for k := 0; ; k++ {
				if off >= len(b) || k > 9 {
					return errIndex
				}
				c := b[off]
				off++
				drop = drop<<7 | uint64(c&0x7f)
				if c&0x80 == 0 {
					break
				}
				drop++
			}
			if drop > uint64(len(prev)) {
				return errIndex
			}
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return errIndex
			}
			name = append(prev[:len(prev)-int(drop):len(prev)-int(drop)], b[off:off+end]...)
			off += end + 1
			prev = name
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return errIndex
			}
			name = b[off : off+end]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off = start + (off-start+end+8)&^7
			if off > len(b) {
				return errIndex
			}
		}
		fn(mode, name)
	}
	return nil
}
