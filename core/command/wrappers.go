package command

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// unwrapped is what a wrapper runs.
type unwrapped struct {
	inner     []word   // the command it runs; empty when it runs none
	script    *word    // shell code it runs with sh -c instead
	env       []word   // NAME=VALUE words it sets for the command
	writes    []word   // files it writes itself (time -o)
	reads     []word   // files it reads itself (xargs -a)
	appends   bool     // writes append
	chdir     *word    // the directory the command starts in
	mode      execMode // how the command's name is looked up
	sameShell bool     // command, builtin: the command runs in this shell
}

// wrapperFunc parses a wrapper's arguments. It reports false after
// recording why the arguments cannot be judged.
type wrapperFunc func(a *analyzer, name string, args []word) (unwrapped, bool)

// wrappers are the programs that run another program given as their
// arguments, by name.
var wrappers = map[string]wrapperFunc{
	"timeout": runs(spec("k:s:fpv", "foreground", "kill-after=", "preserve-status", "signal=", "verbose", "help", "version"),
		1, "--help", "--version"),
	"nice":    nice,
	"nohup":   runs(spec("", "help", "version"), 0, "--help", "--version"),
	"env":     env,
	"command": command,
	"builtin": builtin,
	"exec":    runs(spec("cla:"), 0),
	"time": runs(spec("af:hlo:pqvV", "append", "format=", "output=", "portability", "quiet", "verbose", "version", "help"),
		0, "-V", "--version", "--help"),
	"xargs":    xargs,
	"stdbuf":   runs(spec("i:o:e:", "input=", "output=", "error=", "help", "version"), 0, "--help", "--version"),
	"setsid":   runs(spec("cfwhV", "ctty", "fork", "wait", "help", "version"), 0, "-h", "-V", "--help", "--version"),
	"ionice":   runs(spec("c:n:p:P:tu:hV", "class=", "classdata=", "pid=", "pgid=", "ignore", "uid=", "help", "version"), 0, "-p", "-P", "-u", "--pid", "--pgid", "--uid", "-h", "-V", "--help", "--version"),
	"chrt":     runs(spec("abdefimoprRvT:P:D:hV", "all-tasks", "batch", "deadline", "ext", "fifo", "idle", "other", "rr", "reset-on-fork", "max", "pid", "verbose", "sched-runtime=", "sched-period=", "sched-deadline=", "help", "version"), 1, "-p", "--pid", "-m", "--max", "-h", "-V", "--help", "--version"),
	"taskset":  runs(spec("acphV", "all-tasks", "cpu-list", "pid", "help", "version"), 1, "-p", "--pid", "-h", "-V", "--help", "--version"),
	"unbuffer": runs(spec("p"), 0),
	"sudo":     sudo,
	"doas":     doas,
	"su":       su,
	"watch":    watch,
	"flock":    flock,
	"busybox":  multiCall,
	"toybox":   multiCall,
}

// runs handles the common wrapper shape: options, a fixed number of
// operands (timeout's duration), then the command. noCommand lists options
// with which it runs none (--help).
func runs(sp *optSpec, operands int, noCommand ...string) wrapperFunc {
	return func(a *analyzer, name string, args []word) (unwrapped, bool) {
		p, ok := a.parseWrapper(name, sp, args)
		if !ok || p.has(noCommand...) {
			return unwrapped{}, ok
		}
		u := unwrapped{mode: byProgram}
		if o := p.get("-o", "--output"); o != nil && name == "time" {
			u.writes, u.appends = []word{o.arg}, p.has("-a", "--append")
		}
		if len(p.operands) <= operands {
			return u, true // the wrapper fails without a command
		}
		for _, w := range p.operands[:operands] {
			if w.split {
				a.fail(CodeWrapperOptions, "cannot parse the arguments of %s: %s may split into several words", name, quote(w.Text))
				return u, false
			}
		}
		u.inner = p.operands[operands:]
		return u, true
	}
}

func (a *analyzer) parseWrapper(name string, sp *optSpec, args []word) (parsedArgs, bool) {
	p := sp.parse(args)
	if p.uncertain != "" {
		a.fail(CodeWrapperOptions, "cannot parse the options of %s: %s", name, p.uncertain)
		return p, false
	}
	return p, true
}

// legacyNice reports whether w is nice's historical adjustment: -N, --N
// or -+N.
func legacyNice(w string) bool {
	if len(w) < 2 || w[0] != '-' {
		return false
	}
	digits := w[1:]
	if digits[0] == '-' || digits[0] == '+' {
		digits = digits[1:]
	}
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// nice also accepts the historical nice -10 cmd.
func nice(a *analyzer, name string, args []word) (unwrapped, bool) {
	if len(args) > 0 && args[0].Literal && legacyNice(args[0].Text) {
		args = args[1:]
	}
	return runs(spec("n:", "adjustment=", "help", "version"), 0, "--help", "--version")(a, name, args)
}

var envSpec = spec("0iu:C:S:vP:", "null", "ignore-environment", "unset=", "chdir=", "split-string=", "debug",
	"ignore-signal?", "default-signal?", "block-signal?", "list-signal-handling", "help", "version")

// env sets variables (checked like any assignment) and runs a command.
func env(a *analyzer, name string, args []word) (unwrapped, bool) {
	for len(args) > 0 && args[0].Literal && args[0].Text == "-" {
		args = args[1:] // env - is env -i
	}
	p, ok := a.parseWrapper(name, envSpec, args)
	switch {
	case !ok:
		return unwrapped{}, false
	case p.has("-S", "--split-string"):
		a.fail(CodeDynamicCode, "env -S splits a string into a command line, which is not analyzed")
		return unwrapped{}, false
	case p.has("-P"):
		a.fail(CodeRiskyEnv, "env -P sets the directories searched for the program")
		return unwrapped{}, false
	case p.has("--help", "--version"):
		return unwrapped{}, true
	}
	u := unwrapped{mode: byProgram}
	if o := p.get("-C", "--chdir"); o != nil {
		u.chdir = &o.arg
	}
	ops := p.operands
	for len(ops) > 0 && strings.Contains(ops[0].prefix, "=") {
		u.env = append(u.env, ops[0])
		ops = ops[1:]
	}
	u.inner = ops
	return u, true
}

// command runs a builtin or program, skipping functions; -v and -V only
// look the name up.
func command(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, spec("pvV"), args)
	if !ok || p.has("-v", "-V") {
		return unwrapped{}, ok
	}
	return unwrapped{inner: p.operands, mode: noFunctions, sameShell: true}, true
}

func builtin(a *analyzer, name string, args []word) (unwrapped, bool) {
	if len(args) > 0 && args[0].Literal && args[0].Text == "--" {
		args = args[1:]
	}
	return unwrapped{inner: args, mode: noFunctions, sameShell: true}, true
}

var xargsSpec = spec("0a:d:E:e::I:i::L:l::n:oP:prs:txJ:R:S:", "null", "arg-file=", "delimiter=", "eof?", "replace?",
	"max-lines?", "max-args=", "open-tty", "max-procs=", "interactive", "process-slot-var=", "no-run-if-empty",
	"max-chars=", "show-limits", "verbose", "exit", "help", "version")

// xargs runs its command with words read from input: those become a
// non-literal "{}" word appended to the command, or replace the -I string
// wherever it occurs. With no command it runs echo.
func xargs(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, xargsSpec, args)
	if !ok || p.has("--help", "--version") {
		return unwrapped{}, ok
	}
	u := unwrapped{mode: byProgram}
	if o := p.get("-a", "--arg-file"); o != nil {
		u.reads = append(u.reads, o.arg)
	}
	if o := p.get("--process-slot-var"); o != nil {
		u.env = append(u.env, word{Word: Word{Text: o.arg.Text + "=0", Literal: o.arg.Literal}, prefix: o.arg.prefix + "=0"})
	}
	replace, exact := "", ""
	if o := p.get("-I", "-i", "--replace"); o != nil {
		replace = "{}"
		if o.hasArg {
			replace = o.arg.Text
		}
		if !o.arg.Literal && o.hasArg {
			a.fail(CodeWrapperOptions, "cannot parse the options of xargs: the replacement string %s is computed when the line runs", quote(o.arg.Text))
			return u, false
		}
	}
	if o := p.get("-J"); o != nil {
		exact = o.arg.Text
	}
	u.inner = append([]word(nil), p.operands...)
	if len(u.inner) == 0 {
		u.inner = []word{literalWord("echo")}
	}
	for i, w := range u.inner {
		if (replace != "" && strings.Contains(w.Text, replace)) || (exact != "" && w.Text == exact) {
			u.inner[i] = inputWord(w.Text)
		}
	}
	if replace == "" && exact == "" {
		u.inner = append(u.inner, inputWord("{}"))
	}
	return u, true
}

// foundWord stands for a path find puts in place of {}: one word that
// starts with a starting point, which find never takes from a word
// starting with '-'.
func foundWord(text string) word {
	w := word{Word: Word{Text: text}, expands: true, lead: text[0], input: true}
	if w.lead == '{' {
		w.lead = '.'
	}
	return w
}

// inputWord stands for words a wrapper fills in from its input.
func inputWord(text string) word {
	return word{Word: Word{Text: text}, split: true, expands: true, input: true}
}

var sudoSpec = spec("Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv", "askpass", "auth-type=", "background", "bell",
	"chdir=", "chroot=", "close-from=", "command-timeout=", "edit", "group=", "help", "host=", "list", "login",
	"login-class=", "non-interactive", "other-user=", "preserve-env?", "preserve-groups", "prompt=",
	"remove-timestamp", "reset-timestamp", "role=", "set-home", "shell", "stdin", "type=", "user=", "validate", "version")

// sudo runs a command as another user, with VAR=value words before it.
func sudo(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, sudoSpec, args)
	if !ok {
		return unwrapped{}, false
	}
	if h := p.get("-h"); p.has("-e", "--edit", "-l", "--list", "-v", "--validate", "-K", "--remove-timestamp", "-V", "--version", "--help") || (h != nil && !h.hasArg) {
		return unwrapped{}, true
	}
	u := unwrapped{mode: byProgram}
	if o := p.get("-D", "--chdir"); o != nil {
		u.chdir = &o.arg
	}
	ops := p.operands
	for len(ops) > 0 {
		before, _, isEnv := strings.Cut(ops[0].prefix, "=")
		if !isEnv || !isName(before) {
			break
		}
		u.env = append(u.env, ops[0])
		ops = ops[1:]
	}
	if len(ops) == 0 && p.has("-s", "--shell", "-i", "--login") {
		a.fail(CodeInterpreterStdin, "sudo -s or -i without a command starts a shell that reads commands from standard input")
		return u, false
	}
	u.inner = ops
	return u, true
}

func doas(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, spec("a:C:Lnsu:"), args)
	switch {
	case !ok:
		return unwrapped{}, false
	case p.has("-s"):
		a.fail(CodeInterpreterStdin, "doas -s starts a shell that reads commands from standard input")
		return unwrapped{}, false
	case p.has("-C", "-L"):
		return unwrapped{}, true
	}
	return unwrapped{inner: p.operands, mode: byProgram}, true
}

var suSpec = spec("c:fg:G:lmpPs:w:hV", "command=", "session-command=", "fast", "group=", "supp-group=", "login",
	"preserve-environment", "pty", "shell=", "whitelist-environment=", "help", "version").permuting()

// su runs a shell as another user: only su [user] -c 'string' is judged.
func su(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, suSpec, args)
	if !ok || p.has("-h", "-V", "--help", "--version") {
		return unwrapped{}, ok
	}
	var ops []word
	for _, w := range p.operands {
		if !(w.Literal && w.Text == "-") {
			ops = append(ops, w)
		}
	}
	switch o := p.get("-c", "--command", "--session-command"); {
	case p.has("-s", "--shell"):
		a.fail(CodeWrapperOptions, "su -s chooses the program that runs the command")
	case o != nil:
		return unwrapped{script: &o.arg}, true
	case len(ops) > 1:
		a.fail(CodeWrapperOptions, "su passes %s to a shell", quote(ops[1].Text))
	default:
		a.fail(CodeInterpreterStdin, "su without -c starts a shell that reads commands from standard input")
	}
	return unwrapped{}, false
}

var watchSpec = spec("bcCd::eghn:pq:rtwxv", "beep", "color", "no-color", "differences?", "errexit", "chgexit",
	"equexit=", "interval=", "precise", "no-rerun", "no-title", "no-wrap", "exec", "help", "version")

// watch runs its arguments joined with spaces through sh -c, or directly
// with -x.
func watch(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, watchSpec, args)
	if !ok || p.has("-h", "-v", "--help", "--version") || len(p.operands) == 0 {
		return unwrapped{}, ok
	}
	if p.has("-x", "--exec") {
		return unwrapped{inner: p.operands, mode: byProgram}, true
	}
	texts := make([]string, len(p.operands))
	for i, w := range p.operands {
		if !w.Literal {
			a.fail(CodeDynamicCode, "watch runs its arguments as a shell string, and %s is computed when the line runs", quote(w.Text))
			return unwrapped{}, false
		}
		texts[i] = w.Text
	}
	script := literalWord(strings.Join(texts, " "))
	return unwrapped{script: &script}, true
}

var flockSpec = spec("sexnoFuw:E:hV", "shared", "exclusive", "unlock", "nonblocking", "nb", "timeout=", "wait=",
	"conflict-exit-code=", "close", "no-fork", "verbose", "help", "version")

// flock holds a lock on a file while it runs a command, or a string with
// sh -c after -c.
func flock(a *analyzer, name string, args []word) (unwrapped, bool) {
	p, ok := a.parseWrapper(name, flockSpec, args)
	if !ok || p.has("-h", "-V", "--help", "--version") || len(p.operands) < 2 {
		return unwrapped{}, ok
	}
	file, rest := p.operands[0], p.operands[1:]
	switch {
	case file.split:
		a.fail(CodeWrapperOptions, "cannot parse the arguments of flock: %s may split into several words", quote(file.Text))
		return unwrapped{}, false
	case !rest[0].Literal && rest[0].optionLike():
		a.fail(CodeWrapperOptions, "cannot parse the arguments of flock: %s may be -c", quote(rest[0].Text))
		return unwrapped{}, false
	case rest[0].Literal && (rest[0].Text == "-c" || rest[0].Text == "--command"):
		if len(rest) != 2 {
			return unwrapped{}, true // flock refuses anything but one string
		}
		return unwrapped{script: &rest[1]}, true
	}
	return unwrapped{inner: rest, mode: byProgram}, true
}

// multiCall handles busybox and toybox, which run the applet named by
// their first argument.
func multiCall(a *analyzer, name string, args []word) (unwrapped, bool) {
	if len(args) == 0 || args[0].optionLike() {
		return unwrapped{}, true
	}
	return unwrapped{inner: args, mode: byProgram}, true
}

// wrapper judges the command a wrapper runs, keeping the wrapper's name.
func (a *analyzer) wrapper(name string, parse wrapperFunc, words []word, s *syntax.Stmt, fr frame) {
	u, ok := parse(a, name, words[1:])
	if !ok || a.err != nil {
		return
	}
	for _, e := range u.env {
		varName, _, _ := strings.Cut(e.prefix, "=")
		v := opaqueWord(e.Text)
		if e.Literal {
			v = literalWord(strings.TrimPrefix(e.Text, varName+"="))
		}
		a.setVarShape(varName, &v, valueShape{substs: !e.Literal}, name+" "+quote(e.Text), fr)
	}
	for _, w := range u.writes {
		a.write(w, u.appends, fr)
	}
	for _, r := range u.reads {
		a.read(r, fr)
	}
	inner := fr.wrapped(name)
	if u.chdir != nil {
		inner.shell = fr.shell.clone()
		inner.shell.chdir(*u.chdir)
	}
	switch {
	case a.err != nil:
	case u.script != nil:
		a.shellString(*u.script, inner, name)
	case len(u.inner) > 0:
		var stmt *syntax.Stmt
		if u.sameShell {
			stmt = s
		}
		a.exec(u.inner, stmt, inner, u.mode)
	case name == "exec":
		// exec with only redirections changes the shell's own descriptors.
		if s != nil {
			for _, r := range s.Redirs {
				if readsStdin(r) {
					fr.shell.stdin = true
				}
			}
		}
	default:
		a.addCommand(words, fr)
	}
}

// shellString judges code run by sh -c and the like as a script of its
// own.
func (a *analyzer) shellString(code word, fr frame, shell string) {
	if !code.Literal {
		a.fail(CodeDynamicCode, "%s runs the string %s, which is computed when the line runs", shell, quote(code.Text))
		return
	}
	sub := fr
	sub.shellDepth++
	sub.fn = "" // a new shell: the caller's functions are not its own
	sub.funcs = &funcScope{boundary: true}
	sub.shell = fr.shell.clone()
	a.script(code.Text, sub, shell)
}

// find lists find itself, then the command of every -exec, -execdir, -ok
// and -okdir, where {} stands for found paths. It reads below its
// starting points (the working directory when none is given), -newer and
// the like read the file they name, the -fprint family writes files, and
// -delete removes what it finds. A primary outside findPrimaries makes the
// line unanalyzable, and so does a computed word that could become -exec
// or end one.
func (a *analyzer) find(words []word, fr frame) {
	args := words[1:]
	i := 0
	for i < len(args) && args[i].Literal {
		t := args[i].Text
		if t == "-H" || t == "-L" || t == "-P" || strings.HasPrefix(t, "-O") {
			i++
		} else if t == "-D" {
			i += 2
		} else {
			break
		}
	}
	var starts []word
	for j := i; j < len(args) && !(args[j].Literal && (strings.HasPrefix(args[j].Text, "-") || args[j].Text == "(" || args[j].Text == "!")); j++ {
		starts = append(starts, args[j])
	}
	fromList := slices.ContainsFunc(args[i:], func(w word) bool { return w.Literal && w.Text == "-files0-from" })
	if len(starts) == 0 && !fromList {
		a.readPlace(literalWord("."), fr) // it lists the working directory
		if slices.ContainsFunc(args[i:], func(w word) bool { return w.Literal && w.Text == "-delete" }) {
			match := findNames(args[i:])
			a.place(literalWord("."), fr, func(r Read) {
				a.addWrite(Write{Path: r.Path, Literal: r.Literal, Unknown: r.Unknown, Tree: true, Match: match})
			})
		}
	}
	deletes := slices.ContainsFunc(args[i:], func(w word) bool { return w.Literal && w.Text == "-delete" })
	match := findNames(args[i+len(starts):])
	for _, p := range starts {
		if !p.Literal && (p.split || p.lead == 0 || strings.IndexByte("-()!,;+", p.lead) >= 0) {
			a.fail(CodeWrapperOptions, "find is given %s, which is computed when the line runs and could become an action such as -exec", quote(p.Text))
			return
		}
		if deletes {
			a.place(p, fr, func(r Read) {
				a.addWrite(Write{Path: r.Path, Literal: r.Literal, Unknown: r.Unknown, Tree: true, Match: match})
			})
		}
		a.readPlace(p, fr) // names below it; what -exec reads is its command's
	}
	type execution struct {
		words  []word
		subdir bool
	}
	var runs []execution
	for i += len(starts); i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.split || w.lead == 0 || strings.IndexByte("-()!,;+", w.lead) >= 0 {
				a.fail(CodeWrapperOptions, "find is given %s, which is computed when the line runs and could become an action such as -exec", quote(w.Text))
				return
			}
			continue
		}
		switch t := w.Text; {
		case t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir":
			end := -1
			for j := i + 1; j < len(args); j++ {
				x := args[j]
				if !x.Literal && (x.split || x.lead == 0 || x.lead == ';' || x.lead == '+') {
					a.fail(CodeWrapperOptions, "find %s is given %s, which is computed when the line runs and could end the command", t, quote(x.Text))
					return
				}
				if x.Literal && (x.Text == ";" || (x.Text == "+" && args[j-1].Literal && args[j-1].Text == "{}")) {
					end = j
					break
				}
			}
			if end < 0 {
				a.fail(CodeWrapperOptions, "find %s has no terminating ';' or '+'", t)
				return
			}
			cmd := append([]word(nil), args[i+1:end]...)
			for k, x := range cmd {
				if strings.Contains(x.Text, "{}") {
					cmd[k] = foundWord(x.Text)
				}
			}
			runs = append(runs, execution{cmd, strings.HasSuffix(t, "dir")})
			i = end
		case findNewer(t):
			if i+1 < len(args) {
				if args[i+1].split {
					a.fail(CodeWrapperOptions, "find %s is given %s, which may split into several words", t, quote(args[i+1].Text))
					return
				}
				if t[len(t)-1] != 't' {
					a.read(args[i+1], fr) // -newerXY with a reference file
				}
			}
			i++
		default:
			n, ok := findPrimaries[t]
			if !ok {
				if strings.HasPrefix(t, "-") {
					a.fail(CodeUnknownOption, "find is given %s, which the gate does not model", quote(t))
					return
				}
				continue // a stray operand: find refuses it
			}
			if i+n >= len(args) {
				n = len(args) - 1 - i
			}
			for k := 1; k <= n; k++ {
				if args[i+k].split {
					a.fail(CodeWrapperOptions, "find %s is given %s, which may split into several words", t, quote(args[i+k].Text))
					return
				}
			}
			switch {
			case t == "-fprint" || t == "-fprint0" || t == "-fls" || t == "-fprintf":
				if n > 0 {
					a.write(args[i+1], false, fr)
				}
			case findReads[t] && n > 0:
				a.read(args[i+1], fr)
			case t == "-files0-from" && n > 0:
				a.effect("find", t, readsList, args[i+1], fr)
			}
			i += n
		}
	}
	a.addCommand(words, fr)
	for _, r := range runs {
		if len(r.words) == 0 {
			continue
		}
		inner := fr.wrapped("find")
		if r.subdir {
			inner.shell = fr.shell.clone()
			inner.shell.cd("", false)
		}
		a.exec(r.words, nil, inner, byProgram)
	}
}

// findNames returns the -name and -iname patterns an expression requires
// of every entry it acts on, NUL-separated ("i:" marks -iname), when it
// is a conjunction of those and of tests that narrow further (-type,
// -mtime, -size, -empty …); "" when it may act on any name (no pattern,
// or !, -not, -o, -or, a comma, a computed pattern).
func findNames(expr []word) string {
	var pats []string
	for k := 0; k < len(expr); k++ {
		w := expr[k]
		if !w.Literal {
			return ""
		}
		switch t := w.Text; t {
		case "!", "-not", "-o", "-or", ",", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname", "-ilname":
			return ""
		case "-name", "-iname":
			if k+1 >= len(expr) || !expr[k+1].Literal {
				return ""
			}
			p := expr[k+1].Text
			if t == "-iname" {
				p = "i:" + strings.ToLower(p)
			}
			pats = append(pats, p)
			k++
		default:
			if n, ok := findPrimaries[t]; ok {
				k += n
			}
		}
	}
	return strings.Join(pats, "\x00")
}

// findNewer reports whether w is find's -newerXY test, which takes a value.
func findNewer(w string) bool {
	rest, ok := strings.CutPrefix(w, "-newer")
	return ok && len(rest) == 2 && strings.IndexByte("aBcmt", rest[0]) >= 0 && strings.IndexByte("aBcmt", rest[1]) >= 0
}
