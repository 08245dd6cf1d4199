package command

import (
	"slices"
	"strings"
)

// The option tables of the programs joule's templates grant (see
// core/grant/template.go): for each, the options and arguments that run
// another program (listed as a command of its own, or refused when it is
// computed or cannot be listed), write a file (a Write, judged like a
// redirection) or read one (a Read). Sources: go help build / test / vet /
// env / generate / tool, git(1) and git-diff(1), sed(1) and the GNU sed
// manual, sort(1), make(1), npm-run-script(1) and npm-config(7), npx(1),
// cargo(1), pytest --help, grep(1), rg(1), tar(1), find(1), gofmt, touch(1),
// mkdir(1).

// programOptions judges a known program's options and returns the words
// to list for it (git -C DIR is listed without -C DIR; see gitOptions).
func (a *analyzer) programOptions(base string, words []word, fr frame) []word {
	switch base {
	case "go":
		a.goOptions(words, fr)
	case "git":
		return a.gitOptions(words, fr)
	case "sed":
		a.sedOptions(words, fr)
	case "sort":
		a.sortOptions(words, fr)
	case "make", "gmake":
		a.makeOptions(words, fr)
	case "touch", "mkdir":
		a.createOptions(base, words, fr)
	case "gofmt":
		a.gofmtOptions(words, fr)
	case "cat", "head", "tail", "wc", "diff", "ls":
		a.readerOptions(base, words, fr)
	case "grep", "egrep", "fgrep":
		a.grepOptions(words, fr)
	case "rg":
		a.rgOptions(words, fr)
	case "npm", "npx", "pnpm", "yarn":
		a.npmOptions(base, words)
	case "cargo":
		a.cargoOptions(words, fr)
	case "pytest", "py.test":
		a.pytestOptions(words, fr)
	case "tar", "gtar", "bsdtar":
		a.tarOptions(words)
	}
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

// optionValue is the value of the option at args[*i]: given inline after
// "=", or the next argument, which it consumes; false when there is none.
func optionValue(args []word, i *int, value string, hasValue bool) (word, bool) {
	if hasValue {
		return literalWord(value), true
	}
	if *i+1 >= len(args) {
		return word{}, false
	}
	*i++
	return args[*i], true
}

// goValueFlags are the go command's flags that take a value (go help
// build, go help testflag).
var goValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "exec": true, "toolexec": true, "vettool": true, "ldflags": true,
	"gcflags": true, "asmflags": true, "gccgoflags": true, "tags": true, "mod": true, "modfile": true,
	"overlay": true, "pgo": true, "pkgdir": true, "installsuffix": true, "buildmode": true, "compiler": true,
	"coverpkg": true, "covermode": true, "coverprofile": true, "cpuprofile": true, "memprofile": true,
	"memprofilerate": true, "blockprofile": true, "blockprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "trace": true, "outputdir": true, "run": true, "bench": true,
	"benchtime": true, "count": true, "cpu": true, "parallel": true, "timeout": true, "list": true,
	"skip": true, "shuffle": true, "fuzz": true, "fuzztime": true, "fuzzminimizetime": true, "vet": true,
	"fuzzcachedir": true, "test.coverprofile": true, "test.cpuprofile": true, "test.memprofile": true,
	"test.blockprofile": true, "test.mutexprofile": true, "test.trace": true, "test.outputdir": true,
	"test.run": true, "test.count": true, "test.timeout": true, "test.bench": true, "test.v": false,
	"json": false, "modcacherw": false, "reqs": false, "f": true, "debug-actiongraph": true,
	"debug-runtime-trace": true, "debug-trace": true, "benchmem": false,
}

// goWrites are go flags whose value is a file or directory go writes.
var goWrites = map[string]bool{
	"o": true, "coverprofile": true, "cpuprofile": true, "memprofile": true, "blockprofile": true,
	"mutexprofile": true, "trace": true, "outputdir": true, "pkgdir": true, "test.coverprofile": true,
	"test.cpuprofile": true, "test.memprofile": true, "test.blockprofile": true, "test.mutexprofile": true,
	"test.trace": true, "test.outputdir": true, "debug-actiongraph": true, "debug-runtime-trace": true,
	"debug-trace": true, "fuzzcachedir": true,
}

// goReads are go flags whose value is a file go reads.
var goReads = map[string]bool{"modfile": true, "overlay": true, "pgo": true}

// goTools are the tools of the Go distribution that go tool runs.
var goTools = map[string]bool{
	"addr2line": true, "asm": true, "buildid": true, "cgo": true, "compile": true, "covdata": true,
	"cover": true, "doc": true, "fix": true, "link": true, "nm": true, "objdump": true, "pack": true,
	"pprof": true, "preprofile": true, "test2json": true, "trace": true, "vet": true,
}

// goOptions judges go's subcommand and flags: -exec, -toolexec and
// -vettool run the program they name (listed as a command), -o and the
// profile flags write files, -modfile, -overlay and -pgo read them. go
// generate runs the commands of //go:generate comments and go env -w
// changes go's settings for later runs: both are refused, as are -C (go
// runs elsewhere), external linkers in -ldflags and -compiler.
func (a *analyzer) goOptions(words []word, fr frame) {
	args := words[1:]
	sub := ""
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if sub == "" || w.optionLike() {
				a.refuseOption("go", "is given %s, which is computed when the line runs and may be an option such as -toolexec", quote(w.Text))
				return
			}
			continue
		}
		if w.Text == "--" || (sub == "test" && w.Text == "-args") {
			break
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag {
			if sub == "" {
				sub = w.Text
				switch sub {
				case "generate":
					a.refuseOption("go", "generate runs the commands in //go:generate comments, which the gate cannot see")
				case "tool":
					if i+1 < len(args) && args[i+1].Literal && !goTools[args[i+1].Text] {
						a.refuseOption("go", "tool %s runs a tool that is not part of the Go distribution", quote(args[i+1].Text))
					} else if i+1 < len(args) && !args[i+1].Literal {
						a.refuseOption("go", "tool is given %s, which is computed when the line runs", quote(args[i+1].Text))
					}
					return
				}
			}
			continue
		}
		takes, known := goValueFlags[name]
		if sub == "env" && (name == "w" || name == "u") {
			a.refuseOption("go", "env -%s changes go's settings (GOFLAGS, GOTOOLCHAIN …) for every later go command", name)
			return
		}
		if !known || !takes || hasValue {
			if !known && hasValue {
				continue
			}
		} else if i+1 < len(args) {
			i++
			value, hasValue = args[i].Text, true
			if !args[i].Literal {
				if name == "exec" || name == "toolexec" || name == "vettool" || goWrites[name] || goReads[name] || name == "ldflags" || name == "C" {
					a.refuseOption("go", "-%s is given %s, which is computed when the line runs", name, quote(value))
					return
				}
				continue
			}
		}
		if !hasValue {
			continue
		}
		switch {
		case name == "exec" || name == "toolexec" || name == "vettool":
			prog := strings.Fields(value)
			if len(prog) == 0 {
				continue
			}
			cmd := make([]word, 0, len(prog)+1)
			for _, f := range prog {
				cmd = append(cmd, literalWord(f))
			}
			cmd = append(cmd, inputWord("{}"))
			a.exec(cmd, nil, fr.wrapped("go"), byProgram)
		case goWrites[name]:
			a.write(literalWord(value), false, fr)
		case goReads[name]:
			a.read(literalWord(value), fr)
		case name == "C":
			a.refuseOption("go", "-C %s runs go in another directory, whose go.mod and settings the gate does not judge", quote(value))
		case name == "ldflags" && (strings.Contains(value, "extld") || strings.Contains(value, "extar")):
			a.refuseOption("go", "-ldflags %s names an external linker program", quote(value))
		case name == "compiler" && value != "gc":
			a.refuseOption("go", "-compiler %s runs another compiler", quote(value))
		}
	}
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

// gitValueOptions are options of git commit, diff, log and show that take
// the next word as their value (git-commit(1), git-log(1)).
var gitValueOptions = map[string]bool{
	"m": true, "message": true, "F": true, "file": true, "C": true, "c": true, "reuse-message": true,
	"reedit-message": true, "author": true, "date": true, "t": true, "template": true, "fixup": true,
	"squash": true, "trailer": true, "cleanup": true, "S": true, "G": true, "L": true, "O": true, "n": true,
	"max-count": true, "skip": true, "since": true, "until": true, "after": true, "before": true, "grep": true,
	"format": true, "pretty": true, "U": true, "unified": true, "diff-filter": true, "relative": true,
	"encoding": true, "output": true, "committer": true,
}

// gitOptions judges git's global options and the subcommand's file
// options. -c with a key that can run a program, --config-env, --exec-path=
// DIR, --git-dir and --work-tree are refused. -C DIR with a literal
// relative DIR that does not climb out (no ..) is dropped from the listed
// words, so git -C sub status matches Bash(git status:*), and DIR is
// recorded as a read; any other -C stays in the words, where no narrow
// allow rule matches it. Options that change only output or locking (-c
// with a key of gitSafeConfig, --no-pager, -p, --no-optional-locks, the
// pathspec options) are dropped from the listed words too. diff, log, show
// and format-patch --output FILE write FILE; commit -F FILE, --template
// FILE and diff --no-index FILE read.
func (a *analyzer) gitOptions(words []word, fr frame) []word {
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
			a.read(literalWord(value), fr)
			if !rel {
				out = append(out, raw...)
			}
		default:
			out = append(out, raw...)
		}
	}
	rest := args[i:]
	if globals {
		out = append(out, rest...)
	}
	if len(rest) == 0 || !rest[0].Literal {
		return out
	}
	sub, subArgs := rest[0].Text, rest[1:]
	for j := 0; j < len(subArgs) && a.err == nil; j++ {
		w := subArgs[j]
		if w.Literal && w.Text == "--" {
			break
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag {
			prev, _, prevHasValue, prevFlag := flagWord(word{})
			if j > 0 {
				prev, _, prevHasValue, prevFlag = flagWord(subArgs[j-1])
			}
			isValue := prevFlag && !prevHasValue && gitValueOptions[prev]
			if !w.Literal && w.optionLike() && !isValue && (sub == "diff" || sub == "log" || sub == "show" || sub == "commit") {
				a.refuseOption("git", "%s is given %s, which is computed when the line runs and may be an option such as --output", sub, quote(w.Text))
			}
			continue
		}
		next := func() (word, bool) {
			if hasValue {
				return literalWord(value), true
			}
			if j+1 < len(subArgs) {
				j++
				return subArgs[j], true
			}
			return word{}, false
		}
		switch {
		case name == "output" && slices.Contains([]string{"diff", "log", "show", "format-patch", "whatchanged", "range-diff"}, sub):
			if f, ok := next(); ok {
				a.write(f, false, fr)
			}
		case name == "o" && sub == "format-patch" || name == "output-directory" && sub == "format-patch":
			if f, ok := next(); ok {
				a.write(f, false, fr)
			}
		case (name == "F" || name == "file" || name == "t" || name == "template") && sub == "commit":
			if f, ok := next(); ok {
				a.read(f, fr)
			}
		case name == "no-index" && sub == "diff":
			for _, op := range subArgs[j+1:] {
				if !op.Literal || !strings.HasPrefix(op.Text, "-") {
					a.read(op, fr)
				}
			}
		case (name == "ext-diff" || name == "textconv") && sub == "diff":
		}
	}
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
				a.refuseOption("sed", "has the unknown option %s", quote(t))
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
					a.refuseOption("sed", "has the unknown option -%c in %s", c, quote(t))
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

// sortOptions: -o FILE writes, --compress-program runs a program (listed),
// -T DIR writes temporary files there, --files0-from and --random-source
// read; the other operands are read.
func (a *analyzer) sortOptions(words []word, fr frame) {
	p := sortSpec.parse(words[1:])
	if p.uncertain != "" {
		a.refuseOption("sort", "options cannot be parsed with certainty: %s", p.uncertain)
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-o", "--output", "-T", "--temporary-directory":
			a.write(o.arg, false, fr)
		case "--files0-from", "--random-source":
			a.read(o.arg, fr)
		case "--compress-program":
			if !o.arg.Literal {
				a.refuseOption("sort", "--compress-program is given %s, which is computed when the line runs", quote(o.arg.Text))
				return
			}
			a.exec([]word{o.arg}, nil, fr.wrapped("sort"), byProgram)
		}
	}
	for _, f := range p.operands {
		a.read(f, fr)
	}
}

var sortSpec = spec("bcCdfghik:mMno:rRsS:t:T:uVz", "ignore-leading-blanks", "dictionary-order", "ignore-case",
	"general-numeric-sort", "ignore-nonprinting", "month-sort", "human-numeric-sort", "numeric-sort", "random-sort",
	"random-source=", "reverse", "sort=", "version-sort", "batch-size=", "check?", "compress-program=", "debug",
	"files0-from=", "key=", "merge", "output=", "stable", "buffer-size=", "field-separator=",
	"temporary-directory=", "parallel=", "unique", "zero-terminated", "help", "version").permuting()

// makeOptions: --eval runs make code given on the line (refused), -f reads
// and runs a makefile (recorded as a read), -C runs in another directory
// (a read of it), and VAR=value arguments are judged like assignments:
// SHELL=…, MAKEFLAGS=…, CC=… are risky.
func (a *analyzer) makeOptions(words []word, fr frame) {
	args := words[1:]
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() || strings.Contains(w.prefix, "=") {
				a.refuseOption("make", "is given %s, which is computed when the line runs and may be an option or an assignment", quote(w.Text))
				return
			}
			continue
		}
		t := w.Text
		if name, _, isAssign := strings.Cut(t, "="); isAssign && !strings.HasPrefix(t, "-") {
			name = strings.TrimRight(name, ":+?!")
			if isRiskyEnv(name) {
				a.fail(CodeRiskyEnv, "make %s assigns %s, which can make make run code the gate cannot see", quote(t), name)
				return
			}
			continue
		}
		value := func(short string, long ...string) (word, bool) {
			for _, l := range long {
				if v, ok := strings.CutPrefix(t, "--"+l+"="); ok {
					return literalWord(v), true
				}
				if t == "--"+l && i+1 < len(args) {
					i++
					return args[i], true
				}
			}
			if strings.HasPrefix(t, short) && !strings.HasPrefix(t, "--") {
				if len(t) > len(short) {
					return literalWord(t[len(short):]), true
				}
				if i+1 < len(args) {
					i++
					return args[i], true
				}
			}
			return word{}, false
		}
		if _, ok := value("-E", "eval"); ok {
			a.refuseOption("make", "--eval runs make code given on the line, which the gate does not read")
			return
		}
		if f, ok := value("-f", "file", "makefile"); ok {
			a.read(f, fr)
			continue
		}
		if d, ok := value("-C", "directory"); ok {
			a.read(d, fr)
			continue
		}
		if f, ok := value("-I", "include-dir"); ok {
			a.read(f, fr)
		}
	}
}

// createOptions: touch and mkdir write every operand; touch -r reads.
func (a *analyzer) createOptions(base string, words []word, fr frame) {
	sp := touchSpec
	if base == "mkdir" {
		sp = mkdirSpec
	}
	// A computed word is taken for a file: none of their options runs
	// anything, and the computed write is judged as such.
	var literal, computed []word
	for _, w := range words[1:] {
		if w.Literal {
			literal = append(literal, w)
		} else {
			computed = append(computed, w)
		}
	}
	p := sp.parse(literal)
	if p.uncertain != "" {
		a.refuseOption(base, "options cannot be parsed with certainty: %s", p.uncertain)
		return
	}
	p.operands = append(p.operands, computed...)
	if o := p.get("-r", "--reference"); o != nil {
		a.read(o.arg, fr)
	}
	for _, f := range p.operands {
		a.write(f, base == "touch", fr)
	}
}

var (
	touchSpec = spec("acd:fhmr:t:", "no-create", "date=", "no-dereference", "reference=", "time=", "help", "version").permuting()
	mkdirSpec = spec("m:pvZ", "mode=", "parents", "verbose", "context?", "help", "version").permuting()
	gofmtSpec = spec("cdelr:sw", "cpuprofile=").permuting()
)

// gofmtOptions: -w rewrites every file operand; otherwise they are read.
func (a *analyzer) gofmtOptions(words []word, fr frame) {
	p := gofmtSpec.parse(words[1:])
	if p.uncertain != "" {
		a.refuseOption("gofmt", "options cannot be parsed with certainty: %s", p.uncertain)
		return
	}
	if o := p.get("--cpuprofile"); o != nil {
		a.write(o.arg, false, fr)
	}
	for _, f := range p.operands {
		if p.has("-w") {
			a.write(f, false, fr)
		} else {
			a.read(f, fr)
		}
	}
}

// readerOptions records the file operands of cat, head, tail, wc, diff and
// ls as reads. Their options run nothing; an option's value that looks
// like an operand (head -n 5) is skipped.
func (a *analyzer) readerOptions(base string, words []word, fr frame) {
	args := words[1:]
	values := map[string]string{"head": "nc", "tail": "ncsF", "diff": "CFDIStUWxXL", "ls": "ITw", "wc": "", "cat": ""}[base]
	ended := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case ended:
			a.read(w, fr)
		case w.Literal && w.Text == "--":
			ended = true
		case w.Literal && strings.HasPrefix(w.Text, "--"):
			name, value, hasValue := strings.Cut(w.Text[2:], "=")
			switch {
			case name == "files0-from" || name == "from-file" || name == "to-file" || name == "exclude-from":
				if hasValue {
					a.read(literalWord(value), fr)
				} else if i+1 < len(args) {
					i++
					a.read(args[i], fr)
				}
			case !hasValue && slices.Contains([]string{"lines", "bytes", "sleep-interval", "pid", "max-unchanged-stats",
				"label", "ignore-matching-lines", "show-function-line", "width", "tabsize", "ignore", "hide",
				"format", "time-style", "block-size", "sort", "color", "quoting-style", "indicator-style",
				"line-format", "horizon-lines", "palette"}, name):
				i++
			}
		case w.Literal && len(w.Text) > 1 && w.Text[0] == '-':
			last := w.Text[len(w.Text)-1]
			if strings.IndexByte(values, last) >= 0 && strings.IndexByte(values, w.Text[1]) >= 0 && len(w.Text) == 2 {
				i++
			}
		default:
			a.read(w, fr)
		}
	}
}

// grepOptions: -f FILE and --exclude-from read files; the operands after
// the pattern are read.
func (a *analyzer) grepOptions(words []word, fr frame) {
	p := grepSpec.parse(words[1:])
	if p.uncertain != "" {
		return // listed as written; rules match it or not
	}
	patternGiven := false
	for _, o := range p.opts {
		switch o.name {
		case "-f", "--file", "--exclude-from":
			a.read(o.arg, fr)
			patternGiven = patternGiven || o.name != "--exclude-from"
		case "-e", "--regexp":
			patternGiven = true
		}
	}
	ops := p.operands
	if !patternGiven && len(ops) > 0 {
		ops = ops[1:]
	}
	for _, f := range ops {
		a.read(f, fr)
	}
}

var grepSpec = spec("A:B:C:D:EFGHIJLPRTUVZabcd:e:f:hilm:noqrsuvwxyz", "after-context=", "before-context=",
	"context=", "devices=", "extended-regexp", "fixed-strings", "basic-regexp", "with-filename", "perl-regexp",
	"files-without-match", "initial-tab", "binary", "null", "text", "byte-offset", "count", "directories=",
	"regexp=", "file=", "no-filename", "ignore-case", "no-ignore-case", "files-with-matches", "max-count=",
	"only-matching", "quiet", "silent", "recursive", "dereference-recursive", "no-messages", "invert-match",
	"word-regexp", "line-regexp", "null-data", "color?", "colour?", "exclude=", "exclude-from=",
	"exclude-dir=", "include=", "label=", "line-buffered", "line-number", "help", "version", "binary-files=").permuting()

// rgOptions: --pre and --hostname-bin run the program they name (listed,
// with the searched file as a computed argument); --pre with a computed
// value, and --config-path… no: ripgrep's config comes from
// RIPGREP_CONFIG_PATH (risky); -f and --ignore-file read.
func (a *analyzer) rgOptions(words []word, fr frame) {
	args := words[1:]
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() {
				a.refuseOption("rg", "is given %s, which is computed when the line runs and may be --pre", quote(w.Text))
				return
			}
			continue
		}
		if w.Text == "--" {
			return
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag || strings.HasPrefix(w.Text, "-") && !strings.HasPrefix(w.Text, "--") && name != "f" {
			continue
		}
		switch name {
		case "pre", "hostname-bin", "f", "file", "ignore-file":
			v, ok := optionValue(args, &i, value, hasValue)
			if !ok {
				return
			}
			if name == "pre" || name == "hostname-bin" {
				if !v.Literal {
					a.refuseOption("rg", "--%s is given %s, which is computed when the line runs", name, quote(v.Text))
					return
				}
				if v.Text != "" {
					a.exec([]word{v, inputWord("{}")}, nil, fr.wrapped("rg"), byProgram)
				}
				continue
			}
			a.read(v, fr)
		}
	}
}

// npmConfigRunners are npm configuration keys (npm-config(7)) that name a
// program npm runs or a file it loads settings from.
var npmConfigRunners = []string{"script-shell", "node-options", "userconfig", "globalconfig", "prefix", "shell",
	"editor", "git", "browser", "viewer", "init-module", "onload-script", "call", "package", "node-gyp",
	"cache", "workspace", "workspaces", "w", "c", "p"}

// npmOptions refuses the options that make npm, npx, pnpm or yarn run a
// program the gate does not see: --script-shell, --node-options, another
// config file, npx --package and --call.
func (a *analyzer) npmOptions(base string, words []word) {
	for _, w := range words[1:] {
		if w.Literal && w.Text == "--" {
			return
		}
		if !w.Literal {
			if w.optionLike() && w.lead == '-' {
				a.refuseOption(base, "is given %s, which is computed when the line runs and may be an option such as --script-shell", quote(w.Text))
				return
			}
			continue
		}
		name, _, _, isFlag := flagWord(w)
		if !isFlag {
			continue
		}
		if strings.HasPrefix(w.Text, "--") && slices.Contains(npmConfigRunners, name) ||
			!strings.HasPrefix(w.Text, "--") && (name == "c" || name == "p" || strings.HasPrefix(name, "c") || strings.HasPrefix(name, "p")) && base == "npx" {
			a.refuseOption(base, "%s names a program or a settings file it runs", quote(w.Text))
			return
		}
	}
}

// cargoOptions: --config sets any configuration key (build.rustc-wrapper,
// target runners) and -Z unstable flags are refused; --target-dir and
// --artifact-dir write, --manifest-path reads.
func (a *analyzer) cargoOptions(words []word, fr frame) {
	args := words[1:]
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if w.Literal && w.Text == "--" {
			return
		}
		if !w.Literal {
			if w.optionLike() && w.lead == '-' {
				a.refuseOption("cargo", "is given %s, which is computed when the line runs and may be --config", quote(w.Text))
				return
			}
			continue
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag {
			continue
		}
		if !strings.HasPrefix(w.Text, "--") && strings.HasPrefix(name, "Z") {
			a.refuseOption("cargo", "-Z enables unstable options that can run other programs")
			return
		}
		switch name {
		case "config":
			a.refuseOption("cargo", "--config sets configuration keys, which can name a compiler wrapper or a runner")
			return
		case "target-dir", "artifact-dir", "out-dir", "manifest-path", "lockfile-path":
			v, ok := optionValue(args, &i, value, hasValue)
			if !ok {
				return
			}
			if name == "manifest-path" {
				a.read(v, fr)
			} else {
				a.write(v, false, fr)
			}
		}
	}
}

// pytestOptions: -p loads a plugin module, -c and --config-file load
// settings, -o overrides them and --pdbcls imports a class: refused.
// --basetemp (which pytest empties), --junitxml and --junit-xml write.
func (a *analyzer) pytestOptions(words []word, fr frame) {
	args := words[1:]
	for i := 0; i < len(args) && a.err == nil; i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() && w.lead == '-' {
				a.refuseOption("pytest", "is given %s, which is computed when the line runs and may be -p", quote(w.Text))
				return
			}
			continue
		}
		name, value, hasValue, isFlag := flagWord(w)
		if !isFlag {
			continue
		}
		short := !strings.HasPrefix(w.Text, "--")
		switch {
		case short && (strings.HasPrefix(name, "p") || strings.HasPrefix(name, "c") || strings.HasPrefix(name, "o")),
			!short && (name == "config-file" || name == "override-ini" || name == "pdbcls" || name == "rootdir" || name == "confcutdir" || name == "pyargs"):
			a.refuseOption("pytest", "%s loads plugins, modules or settings the gate cannot see", quote(w.Text))
			return
		case !short && (name == "basetemp" || name == "junitxml" || name == "junit-xml" || name == "resultlog" || name == "debug"):
			if name == "debug" && !hasValue {
				continue // --debug's file is optional and never the next argument
			}
			if v, ok := optionValue(args, &i, value, hasValue); ok {
				a.write(v, false, fr)
			}
		}
	}
}

// tarOptions refuses tar's options that run programs: --to-command,
// --use-compress-program / -I, --checkpoint-action=exec, --info-script /
// --new-volume-script / -F, --rsh-command, --rmt-command.
func (a *analyzer) tarOptions(words []word) {
	for i, w := range words[1:] {
		if !w.Literal {
			if w.optionLike() {
				a.refuseOption("tar", "is given %s, which is computed when the line runs and may be --to-command", quote(w.Text))
				return
			}
			continue
		}
		t := w.Text
		for _, bad := range []string{"--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
			"--new-volume-script", "--rsh-command", "--rmt-command", "--use-compress", "--to-com", "--info", "--new-vol"} {
			if strings.HasPrefix(t, bad) {
				a.refuseOption("tar", "%s runs a program", quote(t))
				return
			}
		}
		short := strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--")
		bundled := i == 0 && !strings.HasPrefix(t, "-") // tar xIf: the first word is old-style options
		if (short || bundled) && strings.ContainsAny(strings.TrimPrefix(t, "-"), "IF") {
			a.refuseOption("tar", "%s may run a program (-I, -F)", quote(t))
			return
		}
	}
}

// addRead lists one read, once.
func (a *analyzer) addRead(r Read) {
	if a.seenReads[r] {
		return
	}
	if a.seenReads == nil {
		a.seenReads = map[Read]bool{}
	}
	if len(a.seenReads) >= maxCommands {
		a.fail(CodeTooComplex, "the line reads more than %d files", maxCommands)
		return
	}
	a.seenReads[r] = true
	a.out.Reads = append(a.out.Reads, r)
}
