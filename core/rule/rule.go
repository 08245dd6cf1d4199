// Package rule parses the capability rules of a grant, written in Claude
// Code's permission-rule syntax, and matches them against commands, paths,
// URLs and tool names; it also resolves paths through symlinks, so that a
// rule is matched against the place an action really touches.
//
// # Rules
//
//	Bash                 any command
//	Bash(git status)     exactly the words git status (shell quoting allowed)
//	Bash(go test:*)      commands whose words start with go test; a final " *"
//	                     (Bash(go test *)) means the same and is rewritten to :*;
//	                     no other * is accepted
//	Read, Write          any path within the workspace (not the whole disk)
//	Read(src/**)         a gitignore-style glob: see Rule.MatchPath
//	Read(/abs/**)        absolute; Claude Code's //abs is accepted too. Unlike in
//	                     Claude Code, /p is absolute, not relative to a settings file
//	Read(~/.ssh/**)      relative to the home directory
//	Edit(...)            Write, Edit, MultiEdit and NotebookEdit rules are one
//	                     family: each covers every file-writing tool
//	WebFetch             any URL
//	WebFetch(domain:h)   URLs whose host is h; domain:*.h for hosts below h
//	WebSearch            the WebSearch tool
//	mcp__srv__tool       one MCP tool; mcp__srv and mcp__srv__* every tool of srv
//	Task, TodoWrite, ... any other tool, by exact name, without parentheses
//
// Read rules also cover Glob and Grep (see AccessOf). Blanks around a
// specifier are ignored. Each Rule has one canonical text (Rule.String).
//
// # Modes
//
// A Set keeps three lists: deny wins over ask, ask over allow. Allow rules
// match narrowly and ask and deny rules broadly, so that respelling an action
// can at worst cost a prompt, never buy an allow: see Rule.MatchCommand,
// Rule.MatchPath and Rule.MatchURL for what that means for each.
package rule

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxRuleLen bounds a rule's text; grants are written by people.
const maxRuleLen = 8192

type kind uint8

const (
	kindNone kind = iota
	kindBash
	kindRead
	kindWrite
	kindWebFetch
	kindWebSearch
	kindMCP
	kindTool
)

// Rule is one parsed capability rule. The zero Rule matches nothing.
type Rule struct {
	tool string // tool name as written, e.g. "Bash", "Edit", "mcp__github__*"
	spec string // canonical specifier; "" for a bare rule
	kind kind

	cmd    command     // kindBash
	path   pathPattern // kindRead, kindWrite
	domain domain      // kindWebFetch
	server string      // kindMCP: set when the rule covers every tool of one server
}

// Tool returns the tool name the rule was written with ("Bash", "Edit",
// "mcp__github__*", ...).
func (r Rule) Tool() string { return r.tool }

// WholeTool reports a rule that names a tool without saying what of it:
// `Bash`, `WebFetch`, `Read`, `Edit`. As an ask rule it is the grant's
// default for the tool (Set).
func (r Rule) WholeTool() bool {
	return r.spec == "" && (r.kind == kindBash || r.kind == kindWebFetch || r.kind == kindRead || r.kind == kindWrite)
}

// Spec returns the canonical text between the parentheses, or "" for a rule
// without parentheses.
func (r Rule) Spec() string { return r.spec }

// String returns the rule's canonical text; Parse(r.String()) gives back r.
func (r Rule) String() string {
	if r.spec == "" {
		return r.tool
	}
	return r.tool + "(" + r.spec + ")"
}

// Parse parses one rule. Errors name the rule and say what is wrong with it.
func Parse(s string) (Rule, error) {
	r, err := parse(s)
	if err != nil {
		if len(s) > 80 {
			s = s[:80] + "..."
		}
		return Rule{}, fmt.Errorf("rule %q: %w", s, err)
	}
	return r, nil
}

func parse(s string) (Rule, error) {
	if len(s) > maxRuleLen {
		return Rule{}, fmt.Errorf("%d bytes, longer than the %d-byte limit", len(s), maxRuleLen)
	}
	if !utf8.ValidString(s) {
		return Rule{}, fmt.Errorf("not valid UTF-8")
	}
	for _, c := range s {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return Rule{}, fmt.Errorf("control character %q", c)
		}
	}
	s = strings.Trim(s, " \t")
	if s == "" {
		return Rule{}, fmt.Errorf("empty rule")
	}
	tool, spec, hasSpec := strings.Cut(s, "(")
	if hasSpec {
		if !strings.HasSuffix(spec, ")") {
			if strings.Contains(spec, ")") {
				return Rule{}, fmt.Errorf("text after the closing parenthesis")
			}
			return Rule{}, fmt.Errorf("missing closing parenthesis")
		}
		spec = spec[:len(spec)-1]
	} else if strings.Contains(s, ")") {
		return Rule{}, fmt.Errorf("closing parenthesis without an opening one")
	}
	if err := checkToolName(tool); err != nil {
		return Rule{}, err
	}
	r := Rule{tool: tool}
	switch {
	case strings.HasPrefix(tool, "mcp__"):
		if hasSpec {
			return Rule{}, fmt.Errorf("MCP rules take no specifier; name the tool (mcp__server__tool) or the server (mcp__server)")
		}
		return parseMCP(tool)
	case tool == "Bash":
		r.kind = kindBash
	case tool == "Read":
		r.kind = kindRead
	case tool == "Write", tool == "Edit", tool == "MultiEdit", tool == "NotebookEdit":
		r.kind = kindWrite
	case tool == "WebFetch":
		r.kind = kindWebFetch
	case tool == "WebSearch":
		r.kind = kindWebSearch
		if hasSpec {
			return Rule{}, fmt.Errorf("WebSearch takes no specifier")
		}
		return r, nil
	default:
		r.kind = kindTool
		if hasSpec {
			return Rule{}, fmt.Errorf("%s takes no specifier%s", tool, toolHint(tool))
		}
		return r, nil
	}
	if !hasSpec {
		if r.kind == kindRead || r.kind == kindWrite {
			r.path = pathPattern{anchor: anchorWorkspace, bare: true}
		}
		return r, nil
	}
	spec = trimBlanks(spec)
	if spec == "" {
		return Rule{}, fmt.Errorf("empty specifier; write %s without parentheses", tool)
	}
	var err error
	switch r.kind {
	case kindBash:
		r.cmd, err = parseCommand(spec)
		if err != nil {
			return Rule{}, err
		}
		r.spec = r.cmd.String()
	case kindRead, kindWrite:
		r.path, err = parsePathPattern(spec)
		if err != nil {
			return Rule{}, err
		}
		r.spec = r.path.String()
	case kindWebFetch:
		r.domain, err = parseDomain(spec)
		if err != nil {
			return Rule{}, err
		}
		r.spec = r.domain.String()
	}
	return r, nil
}

// trimBlanks drops the blanks around a specifier, keeping one that a
// backslash escapes.
func trimBlanks(spec string) string {
	spec = strings.TrimLeft(spec, " \t")
	trimmed := strings.TrimRight(spec, " \t")
	slashes := len(trimmed) - len(strings.TrimRight(trimmed, "\\"))
	if slashes%2 == 1 && len(trimmed) < len(spec) {
		return spec[:len(trimmed)+1]
	}
	return trimmed
}

// checkToolName accepts the names hosts give tools: a letter, then letters,
// digits, '_' and '-'; MCP rules may end in "__*".
func checkToolName(name string) error {
	if name == "" {
		return fmt.Errorf("missing tool name")
	}
	body := strings.TrimSuffix(name, "__*")
	if body == "" || !isLetter(body[0]) {
		return fmt.Errorf("tool name %q must start with a letter", name)
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !isLetter(c) && !isDigit(c) && c != '_' && c != '-' {
			if c == '*' {
				return fmt.Errorf("wildcard in tool name %q; only mcp__server__* is supported", name)
			}
			return fmt.Errorf("invalid character %q in tool name %q", c, name)
		}
	}
	if body != name && !strings.HasPrefix(name, "mcp__") {
		return fmt.Errorf("wildcard in tool name %q; only mcp__server__* is supported", name)
	}
	return nil
}

func parseMCP(tool string) (Rule, error) {
	rest := strings.TrimPrefix(tool, "mcp__")
	server, name, hasName := strings.Cut(rest, "__")
	if server == "" || server == "*" {
		return Rule{}, fmt.Errorf("missing MCP server name in %q", tool)
	}
	if strings.Contains(server, "*") || name != "*" && strings.Contains(name, "*") {
		return Rule{}, fmt.Errorf("wildcard in %q; only mcp__server__* is supported", tool)
	}
	r := Rule{tool: tool, kind: kindMCP}
	switch {
	case !hasName, name == "*":
		r.server = server
	case name == "":
		return Rule{}, fmt.Errorf("empty MCP tool name in %q", tool)
	}
	return r, nil
}

// toolHint points people at the rule they probably meant.
func toolHint(tool string) string {
	switch tool {
	case "Glob", "Grep":
		return "; Read(...) rules cover Glob and Grep"
	}
	for _, known := range []string{"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch"} {
		if strings.EqualFold(tool, known) {
			return "; tool names are case-sensitive: did you mean " + known + "?"
		}
	}
	return ""
}

// MatchTool reports whether the rule covers every call of the named tool,
// whatever its input: a plain tool rule with that name, an MCP rule naming
// the tool or its server, or a bare Bash, WebFetch or WebSearch rule. Bare
// Read and Write rules are limited to the workspace, so they never match here:
// use MatchPath. Names are case-sensitive.
func (r Rule) MatchTool(name string) bool {
	switch r.kind {
	case kindTool:
		return name == r.tool
	case kindMCP:
		if r.server == "" {
			return name == r.tool
		}
		p := "mcp__" + r.server
		return name == p || strings.HasPrefix(name, p+"__")
	case kindBash:
		return r.spec == "" && name == "Bash"
	case kindWebFetch:
		return r.spec == "" && name == "WebFetch"
	case kindWebSearch:
		return name == "WebSearch"
	}
	return false
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
