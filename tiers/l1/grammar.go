// Package l1 is the cascade's lawful tier: deterministic edits that need no
// model (a type-checked Go rename, formatting, literal or regex replace over a
// glob, a unified diff), recognised by a small grammar and nothing else.
package l1

import (
	"errors"
	"go/token"
	"strings"
)

// Command is one request the grammar recognised with certainty.
type Command interface{ verb() string }

// Rename renames a symbol everywhere it is used. Target.Name is NAME,
// PKG.NAME, TYPE.MEMBER; or a package's name, import path or directory
// with Target.Kind KindPackage; or Target is a position FILE:LINE:COL (COL
// counted in bytes, 1-based, as gopls takes it), on the identifier or on a
// package clause. What else Target says (its kind, file, line, package,
// function) must agree with the declaration found.
type Rename struct {
	Target Symbol
	To     string
}

// Format formats files matching Glob ("" = the whole workspace): Go with
// gofmt, or goimports when Imports is set; shell scripts with shfmt; other
// languages with the user's formatter on PATH, unless GoOnly.
type Format struct {
	Glob    string
	Imports bool   // goimports: add missing and remove unused imports (Go files only)
	GoOnly  bool   // "gofmt …": Go files only
	Tool    string // a named formatter other than gofmt/goimports: only the files it formats, by it
}

// Replace replaces Old by New in files matching Glob; Regex makes Old a Go
// regular expression and New a template ($1 …).
type Replace struct {
	Old, New, Glob string
	Regex          bool
}

// Patch applies a unified diff.
type Patch struct{ Diff string }

// Find lists the lines holding Text; it answers and changes nothing.
type Find struct{ Text string }

func (Rename) verb() string  { return "rename" }
func (Format) verb() string  { return "format" }
func (Replace) verb() string { return "replace" }
func (Patch) verb() string   { return "patch" }
func (Find) verb() string    { return "find" }

// ErrUsage is returned for a slash command with the wrong arguments.
var ErrUsage = errors.New("usage")

// Commands are the slash commands the grammar understands, for an editor's
// command palette.
var Commands = []struct{ Name, Description, Hint string }{
	{"rename", "Rename a Go identifier everywhere it is used (type-checked), or a package's name", "OLD NEW (OLD: name, pkg.Name, Type.Member, file.go:line:col, or package NAME)"},
	{"format", "Format files: Go with gofmt (--imports: goimports), shell with shfmt, others with prettier, black/ruff, rustfmt, clang-format when installed", "[--imports] [GLOB]"},
	{"replace", "Replace text in files matching a glob; /re/ for a regular expression", "OLD NEW [GLOB]"},
	{"diff", "Apply a unified diff given after the command", "<unified diff>"},
	{"find", "List every line holding some text", "TEXT"},
}

// Parse recognises a request. It returns (nil, nil) for anything it does not
// recognise, a *Declined for a request meant for L1 that it does not
// understand in full, and an error wrapping ErrUsage for a slash command of
// the grammar given the wrong arguments.
func Parse(prompt string) (Command, error) {
	p := strings.TrimSpace(prompt)
	if p == "" {
		return nil, nil
	}
	if d, ok := diffBody(p); ok {
		return Patch{Diff: d}, nil
	}
	if strings.HasPrefix(p, "/") {
		return parseSlash(p)
	}
	if strings.Contains(p, "\n") {
		return nil, nil
	}
	return Read(p)
}

func parseSlash(p string) (Command, error) {
	name, rest, _ := strings.Cut(p[1:], " ")
	args, err := fields(rest)
	if err != nil {
		return nil, err
	}
	usage := func() error {
		for _, c := range Commands {
			if c.Name == name {
				return &usageError{"/" + c.Name + " " + c.Hint}
			}
		}
		return nil
	}
	switch name {
	case "rename":
		if len(args) > 0 && args[0] == "package" { // a keyword: never an identifier
			if len(args) != 3 {
				return nil, usage()
			}
			return Rename{Target: Symbol{Name: args[1], Kind: KindPackage}, To: args[2]}, nil
		}
		if len(args) != 2 {
			return nil, usage()
		}
		if f, l, c, ok := fileLoc(args[0]); ok && c > 0 {
			return Rename{Target: Symbol{File: f, Line: l, Col: c}, To: args[1]}, nil
		}
		return Rename{Target: Symbol{Name: args[0]}, To: args[1]}, nil
	case "format":
		f := Format{}
		if len(args) > 0 && (args[0] == "--imports" || args[0] == "-imports") {
			f.Imports, args = true, args[1:]
		}
		if len(args) > 1 || (len(args) == 1 && strings.HasPrefix(args[0], "-")) {
			return nil, usage()
		}
		if len(args) == 1 {
			f.Glob = args[0]
		}
		return f, nil
	case "replace":
		if len(args) < 2 || len(args) > 3 {
			return nil, usage()
		}
		r := Replace{Old: args[0], New: args[1]}
		if len(args) == 3 {
			r.Glob = args[2]
		}
		if len(r.Old) > 2 && strings.HasPrefix(r.Old, "/") && strings.HasSuffix(r.Old, "/") {
			r.Old, r.Regex = r.Old[1:len(r.Old)-1], true
		}
		if r.Old == "" {
			return nil, usage()
		}
		return r, nil
	case "find":
		if strings.TrimSpace(rest) == "" {
			return nil, usage()
		}
		if len(args) == 1 {
			if name, ok := symbolWord(args[0]); ok && strings.Contains(name, ".") {
				return Lookup{Target: Symbol{Name: name}, Want: Uses}, nil // a symbol: its definition, never a text search
			}
			if token.IsIdentifier(args[0]) {
				return Lookup{Target: Symbol{Name: args[0]}, Want: Uses, OrText: true}, nil
			}
			return Find{Text: args[0]}, nil
		}
		return Find{Text: strings.TrimSpace(rest)}, nil
	case "diff":
		return nil, usage() // a diff body would have been recognised above
	}
	return nil, nil
}

type usageError struct{ usage string }

func (e *usageError) Error() string { return "usage: " + e.usage }
func (e *usageError) Unwrap() error { return ErrUsage }

// fields splits s on blanks, honouring '…', "…" and `…` quoting.
func fields(s string) ([]string, error) {
	var out []string
	s = strings.TrimSpace(s)
	for s != "" {
		if q := s[0]; q == '"' || q == '\'' || q == '`' {
			end := strings.IndexByte(s[1:], q)
			if end < 0 {
				return nil, &usageError{"unterminated quote " + string(q)}
			}
			out = append(out, s[1:1+end])
			s = strings.TrimSpace(s[2+end:])
			continue
		}
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			i = len(s)
		}
		out = append(out, s[:i])
		s = strings.TrimSpace(s[i:])
	}
	return out, nil
}

// diffBody finds a unified diff in a prompt: after an optional "/diff" or
// "apply this patch:" line, text whose first diff line is "--- " or
// "diff --git" and which has a hunk header.
func diffBody(p string) (string, bool) {
	body := p
	if strings.HasPrefix(body, "/diff") {
		body = strings.TrimLeft(body[len("/diff"):], " \t\r\n")
	} else if first, rest, ok := strings.Cut(body, "\n"); ok && !strings.HasPrefix(first, "---") && !strings.HasPrefix(first, "diff ") {
		l := strings.ToLower(strings.TrimSpace(first))
		if !(strings.HasPrefix(l, "apply") && (strings.Contains(l, "patch") || strings.Contains(l, "diff"))) {
			return "", false
		}
		body = rest
	}
	body = strings.TrimPrefix(strings.TrimPrefix(body, "```diff\n"), "```\n")
	body = strings.TrimRight(strings.TrimSuffix(strings.TrimRight(body, " \t\r\n"), "```"), " \t\r\n")
	if !(strings.HasPrefix(body, "--- ") || strings.HasPrefix(body, "diff ")) || !strings.Contains(body, "\n@@ ") {
		return "", false
	}
	return body + "\n", true
}
