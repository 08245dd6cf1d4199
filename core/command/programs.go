package command

import (
	"slices"
	"strings"
)

// programOptions judges a known program's arguments by its model
// (model.go and the tables beside it) and returns the words to list for
// it: git -C DIR status is listed without -C DIR (see gitOptions).
func (a *analyzer) programOptions(base string, words []word, fr *frame) []word {
	if base == "git" {
		return a.gitOptions(words, fr) // -C DIR moves the command itself
	}
	m := modelFor(base)
	if m == nil {
		return words
	}
	if m.handler != nil {
		if out := m.handler(a, base, words, *fr); out != nil {
			return out
		}
		return words
	}
	a.apply(base, m, words, *fr)
	return words
}

func (a *analyzer) refuseOption(prog, format string, args ...any) {
	if a.err == nil {
		a.fail(CodeProgramOption, prog+" "+format, args...)
	}
}

// flagWord splits a literal -name=value or --name=value word.
func flagWord(w word) (name, value string, hasValue, ok bool) {
	if !w.Literal || len(w.Text) < 2 || w.Text[0] != '-' || w.Text == "--" {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(strings.TrimLeft(w.Text, "-"), "=")
	return name, value, hasValue, true
}

// gitSafeConfig are the configuration keys git -c may set: they change
// output only. Every other key may run a program (core.fsmonitor,
// core.pager, alias.*, diff.external, *.textconv, credential.helper …) or
// load other files (include.path).
var gitSafeConfig = []string{
	"color.", "advice.", "core.quotepath", "core.abbrev", "log.", "user.name", "user.email", "init.defaultbranch",
	"status.showuntrackedfiles", "status.short", "status.branch", "diff.noprefix", "diff.renames",
	"diff.mnemonicprefix", "diff.context", "format.pretty", "column.", "pager.status=false", "pager.diff=false",
	"pager.log=false", "pager.branch=false", "pager.show=false", "core.safecrlf", "core.autocrlf",
	"commit.gpgsign=false", "tag.gpgsign=false", "gc.auto=0",
}

func gitSafeKey(kv string) bool {
	lower := strings.ToLower(kv)
	for _, p := range gitSafeConfig {
		if strings.HasPrefix(lower, p) {
			return true
		}
	}
	return false
}

// gitValueGlobals are git's global options that take a value.
var gitValueGlobals = map[string]bool{"C": true, "c": true, "git-dir": true, "work-tree": true, "namespace": true,
	"config-env": true, "super-prefix": true, "exec-path": false, "list-cmds": true, "attr-source": true}

// gitOptions judges git's global options, then the subcommand by its
// model (gitSub). -c with a key that can run a program, --config-env, --exec-path=
// DIR, --git-dir and --work-tree are refused. -C DIR with a literal
// relative DIR that does not climb out (no ..) is dropped from the listed
// words, so git -C sub status matches Bash(git status:*), and DIR is
// recorded as a read; any other -C stays in the words, where no narrow
// allow rule matches it. Options that change only output or locking (-c
// with a key of gitSafeConfig, --no-pager, -p, --no-optional-locks, the
// pathspec options) are dropped from the listed words too.
func (a *analyzer) gitOptions(words []word, fr *frame) []word {
	args := words[1:]
	out := words // a line without global options is listed as it is
	globals := len(args) > 0 && (!args[0].Literal || strings.HasPrefix(args[0].Text, "-"))
	if globals {
		out = []word{words[0]}
	}
	i := 0
	for ; globals && i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() {
				a.refuseOption("git", "is given %s, which is computed when the line runs and may be an option such as -c", quote(w.Text))
				return words
			}
			break
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag {
			break
		}
		if len(w.Text) > 2 && w.Text[1] != '-' && name != "" && (name[0] == 'C' || name[0] == 'c') {
			// -Cdir, -ckey=value
			name, value, hasValue = name[:1], w.Text[2:], true
		}
		takes, known := gitValueGlobals[name]
		if !known {
			switch name {
			case "p", "paginate", "P", "no-pager", "bare", "no-replace-objects", "literal-pathspecs",
				"glob-pathspecs", "noglob-pathspecs", "icase-pathspecs", "no-optional-locks", "no-lazy-fetch",
				"no-advice":
				continue // output and locking only: not listed, so rules match the subcommand
			case "version", "help", "html-path", "man-path", "info-path":
				out = append(out, w)
				continue
			}
			a.refuseOption("git", "has the unknown global option %s", quote(w.Text))
			return words
		}
		raw := []word{w}
		if takes && !hasValue {
			if i+1 >= len(args) {
				return words
			}
			i++
			raw = append(raw, args[i])
			if !args[i].Literal {
				a.refuseOption("git", "%s is given %s, which is computed when the line runs", w.Text, quote(args[i].Text))
				return words
			}
			value, hasValue = args[i].Text, true
		}
		switch name {
		case "c":
			if !gitSafeKey(value) {
				a.refuseOption("git", "-c %s sets a configuration key that can run a program or load other files", quote(value))
				return words
			}
		case "config-env":
			a.refuseOption("git", "--config-env %s sets configuration from the environment, which can run a program", quote(value))
			return words
		case "exec-path":
			if hasValue {
				a.refuseOption("git", "--exec-path=%s runs git's commands from another directory", value)
				return words
			}
			out = append(out, raw...)
		case "git-dir", "work-tree", "namespace", "super-prefix", "attr-source":
			a.refuseOption("git", "--%s %s points git at another repository, whose configuration and hooks can run programs", name, quote(value))
			return words
		case "C":
			rel := value != "" && !strings.HasPrefix(value, "/") && !strings.HasPrefix(value, "~") &&
				!slices.Contains(strings.Split(value, "/"), "..")
			if !rel {
				out = append(out, raw...)
			}
			// git runs in DIR: what the subcommand names is relative to it,
			// and the command is listed as running there.
			fr.shell = fr.shell.clone()
			fr.shell.chdir(literalWord(value))
		default:
			out = append(out, raw...)
		}
	}
	rest := args[i:]
	if globals {
		out = append(out, rest...)
	}
	if a.err != nil || len(rest) == 0 {
		return out
	}
	if !rest[0].Literal {
		a.refuseOption("git", "is given the subcommand %s, which is computed when the line runs", quote(rest[0].Text))
		return out
	}
	// git works in the repository of the directory it runs in.
	a.readPlace(literalWord("."), *fr)
	a.gitSub(rest[0].Text, rest, *fr)
	return out
}

// sedOptions judges sed's options and script: -i writes every file,
// -f runs a script file the gate cannot see (refused unless --sandbox),
// and the script's e command and s///e flag run commands (refused), w and
// W and s///w write files, r and R read them. --sandbox makes sed refuse
// e, r and w itself.
func (a *analyzer) sedOptions(words []word, fr frame) {
	args := words[1:]
	var scripts []word
	var files []word
	inPlace, sandbox, scriptFile := false, false, false
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() {
				a.refuseOption("sed", "is given %s, which is computed when the line runs and may be an option or a script", quote(w.Text))
				return
			}
			files = append(files, w)
			continue
		}
		t := w.Text
		switch {
		case t == "--":
			files = append(files, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(t, "--"):
			name, value, hasValue := strings.Cut(t[2:], "=")
			switch name {
			case "expression", "file":
				if !hasValue && i+1 < len(args) {
					i++
					value = args[i].Text
					if !args[i].Literal {
						a.refuseOption("sed", "--%s is given %s, which is computed when the line runs", name, quote(value))
						return
					}
				}
				if name == "file" {
					scriptFile = true
					a.read(literalWord(value), fr)
				} else {
					scripts = append(scripts, literalWord(value))
				}
			case "in-place":
				inPlace = true
			case "sandbox":
				sandbox = true
			case "line-length":
				if !hasValue {
					i++
				}
			case "quiet", "silent", "debug", "posix", "regexp-extended", "separate", "unbuffered", "null-data",
				"zero-terminated", "follow-symlinks", "binary", "help", "version":
			default:
				a.fail(CodeUnknownOption, "sed is given the option %s, which the gate does not model", quote(t))
				return
			}
		case len(t) > 1 && t[0] == '-':
			for j := 1; j < len(t); j++ {
				switch c := t[j]; c {
				case 'n', 'r', 'E', 's', 'u', 'z', 'b':
				case 'i':
					inPlace = true
					j = len(t) // the rest is a suffix
				case 'l':
					if j+1 == len(t) {
						i++
					}
					j = len(t)
				case 'e', 'f':
					value := t[j+1:]
					if value == "" {
						if i+1 >= len(args) {
							return
						}
						i++
						if !args[i].Literal {
							a.refuseOption("sed", "-%c is given %s, which is computed when the line runs", c, quote(args[i].Text))
							return
						}
						value = args[i].Text
					}
					if c == 'f' {
						scriptFile = true
						a.read(literalWord(value), fr)
					} else {
						scripts = append(scripts, literalWord(value))
					}
					j = len(t)
				default:
					a.fail(CodeUnknownOption, "sed is given the option -%c (in %s), which the gate does not model", c, quote(t))
					return
				}
			}
		default:
			files = append(files, w)
		}
	}
	if len(scripts) == 0 && !scriptFile && len(files) > 0 {
		if !files[0].Literal {
			a.refuseOption("sed", "runs the script %s, which is computed when the line runs", quote(files[0].Text))
			return
		}
		scripts, files = files[:1], files[1:]
	}
	if scriptFile && !sandbox {
		a.refuseOption("sed", "-f runs a script file the gate cannot see, which may run commands (use --sandbox)")
		return
	}
	for _, s := range scripts {
		eff, bad := sedScript(s.Text)
		if bad != "" && !sandbox {
			a.refuseOption("sed", "script %s: %s", quote(s.Text), bad)
			return
		}
		if sandbox {
			continue
		}
		for _, f := range eff.writes {
			a.write(literalWord(f), false, fr)
		}
		for _, f := range eff.reads {
			a.read(literalWord(f), fr)
		}
	}
	for _, f := range files {
		if inPlace {
			a.write(f, false, fr)
		} else {
			a.read(f, fr)
		}
	}
}

type sedEffects struct{ reads, writes []string }

// sedScript reads a GNU sed script and reports the files its r, R, w, W
// commands and s///w flags name. It returns a reason when the script runs
// a command (e, s///e) or cannot be read with certainty.
func sedScript(s string) (sedEffects, string) {
	var eff sedEffects
	i := 0
	toEOL := func() string {
		start := i
		for i < len(s) && s[i] != '\n' {
			i++
		}
		return s[start:i]
	}
	skipBlank := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// regex reads a delimited regular expression or replacement; i is at
	// the opening delimiter.
	delimited := func(delim byte) bool {
		for i++; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '\n':
				if delim != '\n' {
					return false
				}
			case delim:
				i++
				return true
			}
		}
		return false
	}
	address := func() bool {
		skipBlank()
		if i >= len(s) {
			return true
		}
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '~') {
				i++
			}
		case c == '$':
			i++
		case c == '/':
			if !delimited('/') {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		case c == '\\':
			i++
			if i >= len(s) || !delimited(s[i]) {
				return false
			}
			for i < len(s) && (s[i] == 'I' || s[i] == 'M') {
				i++
			}
		}
		return true
	}
	for i < len(s) {
		skipBlank()
		if i >= len(s) {
			break
		}
		if s[i] == '\n' || s[i] == ';' || s[i] == '}' {
			i++
			continue
		}
		if s[i] == '#' {
			toEOL()
			continue
		}
		if !address() {
			return eff, "an address cannot be read"
		}
		skipBlank()
		if i < len(s) && s[i] == ',' {
			i++
			skipBlank()
			if i < len(s) && (s[i] == '+' || s[i] == '~') {
				i++
			}
			if !address() {
				return eff, "an address cannot be read"
			}
		}
		skipBlank()
		for i < len(s) && s[i] == '!' {
			i++
			skipBlank()
		}
		if i >= len(s) {
			return eff, "a command is missing"
		}
		c := s[i]
		i++
		switch c {
		case '{', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case 'l', 'q', 'Q', 'L':
			skipBlank()
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case 'a', 'i', 'c':
			// text to the end of the line, continued by a trailing backslash
			for {
				line := toEOL()
				if !strings.HasSuffix(line, `\`) || i >= len(s) {
					break
				}
				i++
			}
		case ':', 'b', 't', 'T', 'v':
			for i < len(s) && s[i] != '\n' && s[i] != ';' {
				i++
			}
		case 'r', 'R', 'w', 'W':
			skipBlank()
			f := toEOL()
			switch f {
			case "", "/dev/stdin", "/dev/stdout", "/dev/stderr":
				continue
			}
			if c == 'r' || c == 'R' {
				eff.reads = append(eff.reads, f)
			} else {
				eff.writes = append(eff.writes, f)
			}
		case 'e':
			return eff, "the e command runs a shell command"
		case 'y':
			if i >= len(s) {
				return eff, "y is incomplete"
			}
			d := s[i]
			if !delimited(d) {
				return eff, "y is incomplete"
			}
			i--
			if !delimited(d) {
				return eff, "y is incomplete"
			}
		case 's':
			if i >= len(s) || s[i] == '\\' || s[i] == '\n' {
				return eff, "s has an unusual delimiter"
			}
			d := s[i]
			if !delimited(d) {
				return eff, "s is incomplete"
			}
			i--
			if !delimited(d) {
				return eff, "s is incomplete"
			}
		flags:
			for i < len(s) {
				switch f := s[i]; {
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || (f >= '0' && f <= '9'):
					i++
				case f == 'e':
					return eff, "the s///e flag runs the pattern space as a shell command"
				case f == 'w':
					i++
					skipBlank()
					if file := toEOL(); file != "" && file != "/dev/stdout" && file != "/dev/stderr" {
						eff.writes = append(eff.writes, file)
					}
					break flags
				default:
					break flags
				}
			}
		default:
			return eff, "the command " + quote(string(c)) + " is not known"
		}
	}
	return eff, ""
}

// addRead lists one read, once. A line reads a few files: they are
// compared one by one until there are many, then through a map.
func (a *analyzer) addRead(r Read) {
	if a.seenReads == nil {
		if slices.Contains(a.out.Reads, r) {
			return
		}
		if len(a.out.Reads) < smallSet {
			a.out.Reads = append(a.out.Reads, r)
			return
		}
		a.seenReads = make(map[Read]bool, 2*smallSet)
		for _, x := range a.out.Reads {
			a.seenReads[x] = true
		}
	}
	if a.seenReads[r] {
		return
	}
	if len(a.seenReads) >= maxCommands {
		a.fail(CodeTooComplex, "the line reads more than %d files", maxCommands)
		return
	}
	a.seenReads[r] = true
	a.out.Reads = append(a.out.Reads, r)
}

// smallSet is how many reads or writes are compared one by one.
const smallSet = 16
