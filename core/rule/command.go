package rule

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"
)

// Word is one word of a command's argv after shell analysis. Literal is false
// when the word's text is not known before the command runs (it holds an
// expansion such as $HOME or $(cmd), or a glob); such a word never equals a
// rule word.
type Word struct {
	Text    string
	Literal bool
}

// Mode says which list of a Set a rule came from, and so how broadly it
// matches. Modes are ordered: a larger Mode is stricter, so verdicts from
// several checks combine by taking the largest.
type Mode uint8

const (
	Allow Mode = iota + 1
	Ask
	Deny
)

func (m Mode) String() string {
	switch m {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

func (m Mode) valid() bool { return m == Allow || m == Ask || m == Deny }

// command is the parsed specifier of a Bash rule.
type command struct {
	words  []string // rule words, quoting removed; empty for a bare rule
	prefix bool     // the rule ended in :* (or a final " *")

	// The broad form used by ask and deny rules, derived from words.
	program  string   // base name of words[0], lower case
	flags    []string // flag keys, sorted
	operands []string // the other words after the program, in order
}

// systemBinDirs are the directories whose programs an allow rule also
// matches by base name: /usr/bin/git is the git that Bash(git status) means,
// and /usr/local/go/bin/go, the Go toolchain in its standard install
// directory, is the go of Bash(go:*).
var systemBinDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true,
	"/usr/local/go/bin": true,
}

// flagAliases maps, per program, the spellings of an option to one key, so
// that a deny rule written with one spelling catches the others. Only
// options whose equivalence holds for every subcommand are listed.
var flagAliases = map[string]map[string]string{
	"rm":    {"-r": "recursive", "-R": "recursive", "--recursive": "recursive", "-f": "force", "--force": "force"},
	"cp":    {"-r": "recursive", "-R": "recursive", "--recursive": "recursive", "-f": "force", "--force": "force"},
	"mv":    {"-f": "force", "--force": "force"},
	"chmod": {"-R": "recursive", "--recursive": "recursive"},
	"chown": {"-R": "recursive", "--recursive": "recursive"},
	"chgrp": {"-R": "recursive", "--recursive": "recursive"},
	"git":   {"-f": "force", "--force": "force"},
}

// parseCommand parses a Bash rule's specifier: words separated by blanks,
// with shell quoting ('...', "...", backslash) to put blanks or special
// characters inside a word, and an optional final :* or " *".
func parseCommand(spec string) (command, error) {
	var (
		c       command
		word    strings.Builder
		inWord  bool
		afterCo bool // the previous character was an unquoted ':'
	)
	flush := func() {
		if inWord {
			c.words = append(c.words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(spec); {
		ch := spec[i]
		colon := false
		switch {
		case ch == ' ' || ch == '\t':
			flush()
			i++
		case ch == '\'':
			end := strings.IndexByte(spec[i+1:], '\'')
			if end < 0 {
				return command{}, fmt.Errorf("unterminated single quote in %q", spec)
			}
			word.WriteString(spec[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case ch == '"':
			n, err := readDoubleQuoted(spec[i:], &word)
			if err != nil {
				return command{}, err
			}
			inWord = true
			i += n
		case ch == '\\':
			if i+1 == len(spec) {
				return command{}, fmt.Errorf("trailing backslash in %q", spec)
			}
			_, size := utf8.DecodeRuneInString(spec[i+1:])
			word.WriteString(spec[i+1 : i+1+size])
			inWord = true
			i += 1 + size
		case ch == ':' && strings.TrimRight(spec[i:], " \t") == ":*":
			c.prefix = true
			flush()
			i = len(spec)
		case ch == '*':
			if afterCo {
				return command{}, fmt.Errorf(":* must come at the end of the rule, in %q", spec)
			}
			if !inWord && strings.TrimRight(spec[i:], " \t") == "*" {
				c.prefix = true
				i = len(spec)
				break
			}
			return command{}, fmt.Errorf("wildcard * in %q: only a final :* or \" *\" is supported (quote it to match a literal *)", spec)
		case ch == '$' || ch == '`':
			return command{}, fmt.Errorf("shell expansion %q in %q: rules match literal words (quote it to match it literally)", ch, spec)
		case strings.IndexByte(";&|<>()", ch) >= 0:
			return command{}, fmt.Errorf("shell operator %q in %q: a rule matches one simple command (quote it to match it literally)", ch, spec)
		default:
			colon = ch == ':'
			word.WriteByte(ch)
			inWord = true
			i++
		}
		afterCo = colon
	}
	flush()
	if len(c.words) == 0 {
		if !c.prefix {
			return command{}, fmt.Errorf("empty command in %q", spec)
		}
		return command{}, nil // Bash(*) and Bash(:*) are Bash
	}
	if c.words[0] == "" {
		return command{}, fmt.Errorf("empty program name in %q", spec)
	}
	if isAssignment(c.words[0]) {
		return command{}, fmt.Errorf("environment assignment %q in %q: rules match the command's words, not its environment", c.words[0], spec)
	}
	c.program = strings.ToLower(path.Base(c.words[0]))
	c.flags, c.operands = splitRuleWords(c.words[1:], flagAliases[c.program])
	return c, nil
}

// readDoubleQuoted reads a "..." word part from s (which starts with '"')
// into w, with the shell's escapes, and returns the bytes consumed.
func readDoubleQuoted(s string, w *strings.Builder) (int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
				i++
			}
		case '$', '`':
			return 0, fmt.Errorf("shell expansion %q inside double quotes in %q: rules match literal words (use single quotes)", s[i], s)
		}
		w.WriteByte(s[i])
	}
	return 0, fmt.Errorf("unterminated double quote in %q", s)
}

func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" || isDigit(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !isLetter(name[i]) && !isDigit(name[i]) && name[i] != '_' {
			return false
		}
	}
	return true
}

// String returns the canonical specifier: words quoted only where needed,
// one space apart, then :* for a prefix rule.
func (c command) String() string {
	var b strings.Builder
	for i, w := range c.words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteWord(w))
	}
	if c.prefix && len(c.words) > 0 {
		b.WriteString(":*")
	}
	return b.String()
}

func quoteWord(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t'\"\\$`;&|<>()*") {
		return w
	}
	if !strings.Contains(w, "'") {
		return "'" + w + "'"
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(w); i++ {
		if strings.IndexByte("\"\\$`", w[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(w[i])
	}
	b.WriteByte('"')
	return b.String()
}

// MatchCommand reports whether a Bash rule matches one simple command, given
// as argv words from shell analysis (wrappers such as sudo, env or sh -c and
// compound commands are that analysis's job, not this one's). A bare Bash
// rule matches every command. A non-literal word never equals a rule word.
//
// Allow rules match narrowly: argv[0] equals the rule's program as written
// (or is that program in /bin, /usr/bin, /usr/local/bin, /sbin, /usr/sbin
// or /usr/local/go/bin), every later rule word equals the argv word at its position,
// and the command has exactly the rule's words, or at least them for a :*
// rule.
//
// Ask and deny rules match broadly, so that respelling a command does not
// escape them:
//   - the program is compared by base name and without regard to case
//     (./rm, /tmp/x/RM and /bin/rm are all rm);
//   - each of the rule's flags must appear somewhere in the command before a
//     "--": short flags letter by letter in any grouping and order (a rule's
//     -rf matches -fr, -r -f and -f -r), long flags by name (--force also
//     matches --force=x); for rm, cp, mv, chmod, chown, chgrp and git the
//     known equivalents are mapped (-r, -R, --recursive; -f, --force) and
//     abbreviated long options are expanded as GNU getopt does (--rec);
//   - the rule's other words must appear among the command's other literal
//     words in the same order, not necessarily adjacent, so that an option's
//     value in between (git -C dir push) does not hide them;
//   - every ask or deny rule matches as a prefix: Bash(npm publish) also
//     asks for npm publish --tag beta.
//
// mode must be Allow, Ask or Deny; any other value matches nothing.
func (r Rule) MatchCommand(args []Word, mode Mode) bool {
	if r.kind != kindBash || !mode.valid() {
		return false
	}
	if len(r.cmd.words) == 0 {
		return true
	}
	if len(args) == 0 || !args[0].Literal {
		return false
	}
	if mode == Allow {
		return r.cmd.matchNarrow(args)
	}
	return r.cmd.matchBroad(args)
}

func (c command) matchNarrow(args []Word) bool {
	if len(args) < len(c.words) || !c.prefix && len(args) != len(c.words) {
		return false
	}
	if !sameProgram(args[0].Text, c.words[0]) {
		return false
	}
	for i, w := range c.words[1:] {
		a := args[i+1]
		if !a.Literal || a.Text != w {
			return false
		}
	}
	return true
}

func sameProgram(argv0, program string) bool {
	if argv0 == program {
		return true
	}
	if strings.Contains(program, "/") {
		return false
	}
	i := strings.LastIndexByte(argv0, '/')
	return i >= 0 && argv0[i+1:] == program && systemBinDirs[argv0[:i]]
}

func (c command) matchBroad(args []Word) bool {
	if strings.ToLower(path.Base(args[0].Text)) != c.program {
		return false
	}
	aliases := flagAliases[c.program]
	operands := c.operands
	have := make(map[string]bool)
	next := 0 // index into operands of the next one to find
	optionsEnded := false
	for _, a := range args[1:] {
		if !a.Literal {
			continue
		}
		if !optionsEnded {
			if a.Text == "--" {
				optionsEnded = true
				continue
			}
			if isFlag(a.Text) {
				addFlagKeys(have, a.Text, aliases, true)
				continue
			}
		}
		if next < len(operands) && a.Text == operands[next] {
			next++
		}
	}
	if next < len(operands) {
		return false
	}
	for _, f := range c.flags {
		if !have[f] {
			return false
		}
	}
	return true
}

// splitRuleWords separates a rule's words after the program into flag keys
// (sorted) and the other words (in order).
func splitRuleWords(words []string, aliases map[string]string) (flags, operands []string) {
	keys := make(map[string]bool)
	optionsEnded := false
	for _, w := range words {
		switch {
		case optionsEnded:
			operands = append(operands, w)
		case w == "--":
			optionsEnded = true
		case isFlag(w):
			addFlagKeys(keys, w, aliases, false)
		default:
			operands = append(operands, w)
		}
	}
	for k := range keys {
		flags = append(flags, k)
	}
	slices.Sort(flags)
	return flags, operands
}

// isFlag reports whether w is an option word: -x... or --name..., but not a
// lone "-" (standard input) or "--".
func isFlag(w string) bool {
	return len(w) >= 2 && w[0] == '-' && w != "--"
}

// addFlagKeys adds the keys an option word stands for: one per letter of a
// short-option group, the name (and name=value) of a long option, each
// mapped through the program's aliases. For a command word (expand) a long
// option that abbreviates a known one also adds that one's key.
func addFlagKeys(keys map[string]bool, w string, aliases map[string]string, expand bool) {
	key := func(spelling string) string {
		if k, ok := aliases[spelling]; ok {
			return k
		}
		return spelling
	}
	if strings.HasPrefix(w, "--") {
		name, _, hasValue := strings.Cut(w, "=")
		keys[key(w)] = true
		if hasValue {
			keys[key(name)] = true
		}
		if expand && len(name) > 2 {
			for spelling, k := range aliases {
				if strings.HasPrefix(spelling, "--") && strings.HasPrefix(spelling, name) {
					keys[k] = true
				}
			}
		}
		return
	}
	for _, letter := range w[1:] {
		keys[key("-"+string(letter))] = true
	}
}
