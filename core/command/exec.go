package command

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// execMode says how a command name is looked up.
type execMode int

const (
	byShell     execMode = iota // the shell runs it: functions, builtins, then PATH
	noFunctions                 // command and builtin: builtins, then PATH
	byProgram                   // another program runs it: PATH only
)

// systemDirs are where the well-known wrappers and shells live. A program
// elsewhere with the same name (./timeout) is someone's script.
var systemDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true,
	"/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
	"/opt/homebrew/bin": true, "/usr/local/go/bin": true,
}

// programName returns the program's name without directory, and whether
// it is the well-known program of that name: found through PATH, or in a
// system directory.
func programName(prog string) (string, bool) {
	i := strings.LastIndexByte(prog, '/')
	if i < 0 {
		return prog, true
	}
	dir := prog[:i]
	if dir == "" {
		dir = "/"
	}
	return prog[i+1:], systemDirs[path.Clean(dir)]
}

func (a *analyzer) call(c *syntax.CallExpr, s *syntax.Stmt, fr frame) {
	words := make([]word, 0, len(c.Args))
	for _, w := range c.Args {
		words = append(words, a.word(w, fr))
	}
	// IFS= read -r line is the one safe use of IFS: it only changes how
	// read splits its input.
	readsInput := len(words) > 0 && words[0].Literal && words[0].Text == "read"
	for _, as := range c.Assigns {
		a.assign(as, fr, readsInput)
	}
	for _, r := range s.Redirs {
		if r.N != nil {
			continue
		}
		for i, w := range c.Args {
			// bash reads {a[$x]}>file as a named-descriptor redirection,
			// which the parser leaves as a word: the subscript is
			// evaluated as code.
			if text := fr.src.slice(w); w.End() == r.OpPos && strings.HasPrefix(text, "{") &&
				strings.HasSuffix(text, "}") && strings.Contains(text, "[") {
				a.fail(CodeValueAsCode, "%s before a redirection names a descriptor variable whose subscript bash evaluates as code", quote(words[i].Text))
				return
			}
		}
	}
	a.redirects(s, &fr)
	if len(words) > 0 {
		a.exec(words, s, fr, byShell)
	}
}

// harmlessShellOptions are the set -o and sh -o options that change
// neither what files the shell reads nor how it reads the line.
var harmlessShellOptions = map[string]bool{
	"errexit": true, "nounset": true, "pipefail": true, "xtrace": true, "verbose": true, "noclobber": true,
	"noglob": true, "noexec": true, "errtrace": true, "functrace": true, "hashall": true, "notify": true,
	"allexport": true, "monitor": true, "physical": true, "privileged": true, "braceexpand": true,
	"ignoreeof": true, "nolog": true,
}

func harmlessShellOption(name string) bool { return harmlessShellOptions[name] }

// assign walks NAME=value, NAME[i]=value or NAME=(…) and returns the
// value word.
func (a *analyzer) assign(as *syntax.Assign, fr frame, ifsAllowed bool) word {
	if as.Name == nil || a.err != nil {
		return word{}
	}
	name := as.Name.Value
	how := quote(fr.src.slice(as))
	if as.Index != nil {
		a.arith(as.Index, fr)
	}
	record := func(v *word, w *syntax.Word) {
		if ifsAllowed && name == "IFS" {
			a.vars.record(name, v, shapeOf(w), how)
			return
		}
		a.setVarShape(name, v, shapeOf(w), how, fr)
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				a.arith(el.Index, fr)
			}
			if el.Value != nil {
				v := a.word(el.Value, fr)
				record(&v, el.Value)
			}
		}
		if len(as.Array.Elems) == 0 {
			empty := literalWord("")
			record(&empty, nil)
		}
		return opaqueWord(fr.src.slice(as.Array))
	}
	v := literalWord("")
	if as.Value != nil {
		v = a.word(as.Value, fr)
	}
	record(&v, as.Value)
	return v
}

// exec judges one command given as words: builtins with special meaning,
// wrappers, shells and interpreters, and finally the plain command.
func (a *analyzer) exec(words []word, s *syntax.Stmt, fr frame, mode execMode) {
	if len(words) == 0 || !a.enter(&fr) {
		return
	}
	raw := fr.raw
	fr.raw = false
	name := words[0]
	if !name.Literal {
		a.fail(CodeDynamicCommand, "the program name %s is computed when the line runs", quote(name.Text))
		return
	}
	prog := name.Text
	bare := !strings.Contains(prog, "/")
	if bare && mode == byShell {
		a.graph.call(fr.fn, prog)
	}
	if bare && mode == byShell && fr.funcs.lookup(prog) {
		return // a function defined earlier in the line: its body is listed
	}
	if bare && !a.builtin(prog, words, s, fr, mode) {
		return
	}
	base, known := programName(prog)
	if w, ok := wrappers[base]; ok && known {
		a.wrapper(base, w, words, s, fr)
		return
	}
	if a.interpreter(base, known, words, fr) {
		return
	}
	if base == "find" && known {
		a.find(words, fr)
		return
	}
	if known && !raw {
		words = a.programOptions(base, words, &fr)
		if a.err != nil {
			return
		}
	}
	a.addCommand(words, fr)
}

// builtin applies what the shell builtin prog does beyond running: code it
// runs, variables it sets, directories it changes. It reports whether the
// command should still be judged and listed.
func (a *analyzer) builtin(prog string, words []word, s *syntax.Stmt, fr frame, mode execMode) bool {
	args := words[1:]
	switch prog {
	case "eval":
		a.fail(CodeEval, "eval runs its arguments as shell code the gate cannot see")
	case "source", ".":
		target := "nothing"
		if len(args) > 0 {
			target = quote(args[0].Text)
		}
		a.fail(CodeSource, "%s runs the file %s as shell code the gate cannot see", prog, target)
	case "alias":
		if len(args) > 0 {
			a.fail(CodeAlias, "alias defines words that expand to shell code when later lines run")
		}
	case "trap":
		a.trap(args)
	case "enable":
		if len(args) > 0 {
			a.fail(CodeBuiltin, "enable loads builtins from shared libraries or swaps builtins for programs")
		}
	case "hash":
		for _, w := range args {
			if w.optionLike() && (!w.Literal || strings.Contains(w.Text, "p")) {
				a.fail(CodeBuiltin, "hash -p maps a command name to any program")
				break
			}
		}
	case "fc":
		list := false
		for _, w := range args {
			list = list || (w.Literal && strings.HasPrefix(w.Text, "-") && strings.Contains(w.Text, "l"))
		}
		if !list {
			a.fail(CodeBuiltin, "fc re-runs commands from the shell history")
		}
	case "compgen":
		for _, w := range args {
			if w.optionLike() && (!w.Literal || strings.Contains(w.Text, "C")) {
				a.fail(CodeBuiltin, "compgen -C runs a string as a command")
				break
			}
		}
	case "mapfile", "readarray":
		p := mapfileSpec.parse(args)
		switch {
		case p.uncertain != "":
			a.fail(CodeWrapperOptions, "cannot parse the options of %s: %s", prog, p.uncertain)
		case p.has("-C"):
			a.fail(CodeBuiltin, "%s -C runs a string as code for every line it reads", prog)
		case len(p.operands) == 0:
			a.setVar("MAPFILE", nil, prog, fr)
		default:
			a.readVar(p.operands[0], prog, fr)
		}
	case "read":
		p := readSpec.parse(args)
		if p.uncertain != "" {
			a.fail(CodeWrapperOptions, "cannot parse the options of read: %s", p.uncertain)
			break
		}
		if o := p.get("-a"); o != nil {
			a.readVar(o.arg, "read -a", fr)
		}
		for _, w := range p.operands {
			a.readVar(w, "read", fr)
		}
		if len(p.operands) == 0 && !p.has("-a") {
			a.setVar("REPLY", nil, "read", fr)
		}
	case "printf":
		if len(args) > 0 && args[0].Literal && strings.HasPrefix(args[0].Text, "-v") {
			if args[0].Text != "-v" {
				a.readVar(literalWord(strings.TrimPrefix(args[0].Text, "-v")), "printf -v", fr)
			} else if len(args) > 1 {
				a.readVar(args[1], "printf -v", fr)
			}
		} else if len(args) > 0 && !args[0].Literal && args[0].optionLike() {
			a.fail(CodeValueAsCode, "printf is given %s, which may be -v naming any variable", quote(args[0].Text))
		}
	case "getopts":
		if len(args) > 1 {
			a.readVar(args[1], "getopts", fr)
		}
	case "test", "[":
		a.testArgs(prog, args)
	case "wait":
		a.wait(args, fr)
	case "jobs":
		for _, w := range args {
			if w.optionLike() && (!w.Literal || strings.Contains(w.Text, "x")) {
				a.fail(CodeBuiltin, "jobs -x runs a command with job specifications replaced")
				break
			}
		}
	case "set":
		a.setOptions(args)
	case "cd", "pushd", "popd":
		if mode != byProgram {
			a.changeDir(prog, args, fr)
		}
	case "unset":
		if mode != byProgram {
			a.unset(args, fr)
		}
	case "declare", "typeset", "local", "export", "readonly":
		a.declareWords(prog, args, fr)
	case "let":
		for _, w := range args {
			a.letWord(w)
		}
	case "history":
		a.history(args, fr)
	}
	return a.err == nil
}

var (
	mapfileSpec = spec("d:n:O:s:tu:C:c:")
	readSpec    = spec("a:d:ei:n:N:p:rst:u:")
)

// wait -p NAME stores a job's pid in NAME, whose subscript bash evaluates.
// $! is the one computed word accepted where an option could be.
func (a *analyzer) wait(args []word, fr frame) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case !w.Literal && (w.Text == "$!" || w.Text == `"$!"`):
		case !w.Literal && w.optionLike():
			a.fail(CodeWrapperOptions, "cannot parse the options of wait: cannot tell whether %s is an option", quote(w.Text))
			return
		case w.Literal && strings.HasPrefix(w.Text, "-") && len(w.Text) > 1 && w.Text != "--":
			if j := strings.IndexByte(w.Text, 'p'); j > 0 {
				name := literalWord(w.Text[j+1:])
				if j+1 == len(w.Text) {
					if i+1 >= len(args) {
						return
					}
					i++
					name = args[i]
				}
				a.readVar(name, "wait -p", fr)
			}
		}
	}
}

// testArgs checks test and [: -v and -R evaluate the subscript of the name
// that follows. A computed word may expand to -v (and a split one to -v
// and a name), so a computed word followed by another computed or
// subscripted word, and any word that may split, are refused.
func (a *analyzer) testArgs(prog string, args []word) {
	for i, w := range args {
		if !w.Literal && w.split {
			a.fail(CodeValueAsCode, "%s is given %s, which may split into -v and a variable name whose subscript is evaluated", prog, quote(w.Text))
			return
		}
		if i+1 >= len(args) {
			break
		}
		next := args[i+1]
		switch {
		case w.Literal && (w.Text == "-v" || w.Text == "-R"):
			if _, ok := a.varName(next, prog+" "+w.Text); !ok {
				return
			}
		case !w.Literal && w.optionLike() && (!next.Literal || strings.Contains(next.Text, "[")):
			a.fail(CodeValueAsCode, "%s is given %s, which may be -v making %s a variable name whose subscript is evaluated", prog, quote(w.Text), quote(next.Text))
			return
		}
	}
}

// setOptions refuses set options that change how the rest of the line is
// read: -k (keyword) makes NAME=value arguments assignments, and options
// set by a computed word are unknown.
func (a *analyzer) setOptions(args []word) {
	for i, w := range args {
		switch {
		case !w.Literal && w.optionLike():
			a.fail(CodeShellOption, "set is given %s, which may turn on an option that changes how the line is read", quote(w.Text))
			return
		case !w.Literal:
			return // positional parameters
		case w.Text == "--" || w.Text == "-" || (!strings.HasPrefix(w.Text, "-") && !strings.HasPrefix(w.Text, "+")):
			return
		case strings.HasPrefix(w.Text, "--"):
			return
		}
		t := w.Text
		if strings.ContainsRune(t[1:], 'k') && t[0] == '-' {
			a.fail(CodeShellOption, "set -k makes every NAME=value argument an assignment the gate does not see")
			return
		}
		if strings.ContainsRune(t[1:], 'o') && i+1 < len(args) {
			if o := args[i+1]; !o.Literal || !harmlessShellOption(o.Text) {
				a.fail(CodeShellOption, "set %s %s changes how the shell reads or runs the line", t, quote(o.Text))
				return
			}
		}
	}
}

// readVar records a variable that a builtin fills from input.
func (a *analyzer) readVar(w word, builtin string, fr frame) {
	if name, ok := a.varName(w, builtin); ok {
		a.setVar(name, nil, builtin, fr)
	}
}

// letWord checks one argument of let given as a word (builtin let …).
func (a *analyzer) letWord(w word) {
	if !w.Literal || strings.ContainsAny(w.Text, "$`") {
		a.fail(CodeValueAsCode, "let evaluates %s as code", quote(w.Text))
		return
	}
	for _, id := range identifiers(w.Text) {
		if isRiskyEnv(id) {
			a.fail(CodeRiskyEnv, "let may assign %s, which can make programs run code the gate cannot see", id)
			return
		}
		a.vars.evaluate(id, "let "+quote(w.Text))
	}
}

// history -a and -w write the history list to a file, by default
// $HISTFILE.
func (a *analyzer) history(args []word, fr frame) {
	writes, appends := false, false
	var file *word
	for i, w := range args {
		switch {
		case !w.Literal && w.optionLike():
			a.fail(CodeWrapperOptions, "cannot parse the options of history: cannot tell whether %s is an option", quote(w.Text))
			return
		case w.Literal && strings.HasPrefix(w.Text, "-") && w.Text != "-":
			writes = writes || strings.ContainsAny(w.Text, "aw")
			appends = appends || strings.Contains(w.Text, "a")
		default:
			file = &args[i]
		}
	}
	if !writes {
		return
	}
	if file == nil {
		histfile := opaqueWord("$HISTFILE")
		file = &histfile
	}
	a.write(*file, appends, fr)
}

// trap allows listing and resetting traps; any action string is code the
// shell runs later.
func (a *analyzer) trap(args []word) {
	if len(args) > 0 && args[0].Literal {
		switch args[0].Text {
		case "-l", "-p", "-P":
			return
		case "--":
			args = args[1:]
		}
	}
	if len(args) <= 1 {
		return // print, or reset one signal
	}
	action := args[0]
	if action.Literal && (action.Text == "" || action.Text == "-") {
		return
	}
	a.fail(CodeTrap, "trap runs %s as shell code when a signal arrives", quote(action.Text))
}

// changeDir follows cd, pushd and popd for the writes that come after.
func (a *analyzer) changeDir(prog string, args []word, fr frame) {
	i := 0
	for ; i < len(args); i++ {
		t := args[i].Text
		if !args[i].Literal || len(t) < 2 || t[0] != '-' {
			break
		}
		if t == "--" {
			i++
			break
		}
		if strings.Trim(t[1:], "LPe@n") != "" {
			break
		}
		if strings.Contains(t, "n") && prog != "cd" {
			return // pushd -n, popd -n only edit the stack
		}
	}
	switch {
	case prog == "cd" && i >= len(args):
		fr.shell.cd("~", true) // cd with no argument goes home
	case prog == "popd", i >= len(args):
		fr.shell.cd("", false) // popd, pushd with no argument: swap
	case args[i].Literal && args[i].Text == "":
		// cd "" stays where it is
	case homePath(args[i]) != "":
		fr.shell.cd(homePath(args[i]), true)
	case !args[i].Literal || args[i].Text == "-" || (prog == "pushd" && strings.IndexAny(args[i].Text, "+-") == 0):
		fr.shell.cd("", false)
	case strings.HasPrefix(args[i].Text, "~"):
		fr.shell.cd("./"+args[i].Text, true) // a quoted ~ names a directory called ~
	default:
		fr.shell.cd(args[i].Text, true)
	}
}

// homePath returns the directory a word names below the home directory
// (~ or ~/x, the tilde unquoted, or $HOME, nothing else to expand), which
// the gate knows; "" for any other word.
func homePath(w word) string {
	if w.Literal || w.lead != '/' {
		return ""
	}
	if t := w.decoded; !w.expands && !w.split && (t == "~" || strings.HasPrefix(t, "~/")) {
		return t
	}
	// "$HOME", $HOME/x, "${HOME}/x": the home directory, nothing else
	// expanded
	t := strings.ReplaceAll(w.Text, `"`, "")
	for _, v := range []string{"${HOME}", "$HOME"} {
		if rest, ok := strings.CutPrefix(t, v); ok && (rest == "" || rest[0] == '/') &&
			!strings.ContainsAny(rest, "$`'\\*?[{~") {
			return "~" + rest
		}
	}
	return ""
}

// unset forgets functions, so a later call of that name runs a program.
func (a *analyzer) unset(args []word, fr frame) {
	varsOnly := false
	for _, w := range args {
		switch {
		case w.Literal && w.Text == "-v":
			varsOnly = true
		case w.Literal && strings.HasPrefix(w.Text, "-"):
		case varsOnly:
			a.varName(w, "unset")
		case !w.Literal:
			fr.funcs.unset("")
		default:
			a.varName(w, "unset")
			fr.funcs.unset(w.Text)
		}
	}
}

// declClause walks declare, local, export, readonly and typeset as parsed.
func (a *analyzer) declClause(c *syntax.DeclClause, fr frame) {
	variant := c.Variant.Value
	naked := make([]word, len(c.Args))
	flags := ""
	for i, as := range c.Args {
		if as.Naked && as.Name == nil && as.Value != nil {
			naked[i] = a.word(as.Value, fr)
			if w := naked[i]; w.Literal && (strings.HasPrefix(w.Text, "-") || strings.HasPrefix(w.Text, "+")) {
				flags += w.Text[1:]
			}
		}
	}
	words := []word{literalWord(variant)}
	for i, as := range c.Args {
		if a.err != nil {
			return
		}
		switch {
		case as.Naked && as.Name == nil:
			words = append(words, naked[i])
			a.declareArg(variant, flags, naked[i], fr)
		case as.Naked:
			w := literalWord(as.Name.Value)
			if as.Index != nil {
				a.arith(as.Index, fr)
				w = opaqueWord(fr.src.slice(as))
				if !hasExpansion(as.Index) {
					w = literalWord(fr.src.slice(as))
				}
			}
			words = append(words, w)
			a.declareName(variant, flags, w)
		default:
			words = append(words, a.declAssign(variant, flags, as, fr))
		}
	}
	if a.err == nil {
		a.addCommand(words, fr)
	}
}

// declAssign walks NAME=value given to a declaration builtin and returns
// the argument word the builtin receives.
func (a *analyzer) declAssign(variant, flags string, as *syntax.Assign, fr frame) word {
	name := as.Name.Value
	src := fr.src.slice(as)
	var v word
	if strings.Contains(flags, "n") {
		if as.Value == nil || as.Index != nil || as.Array != nil {
			a.fail(CodeValueAsCode, "%s -n %s does not name a variable", variant, quote(src))
			return word{}
		}
		v = a.word(as.Value, fr)
		a.nameref(variant, v)
	} else {
		v = a.assign(as, fr, false)
	}
	if strings.Contains(flags, "i") {
		a.vars.integer[name] = true
	}
	if as.Index != nil || as.Array != nil || !v.Literal {
		return opaqueWord(src)
	}
	op := "="
	if as.Append {
		op = "+="
	}
	return literalWord(name + op + v.Text)
}

// declareName checks a bare argument of a declaration builtin: an option,
// or a name (possibly with a subscript bash evaluates).
func (a *analyzer) declareName(variant, flags string, w word) {
	switch {
	case w.Literal && (strings.HasPrefix(w.Text, "-") || strings.HasPrefix(w.Text, "+")):
	case !w.Literal:
		a.fail(CodeValueAsCode, "%s is given %s, which is computed when the line runs and may assign any variable", variant, quote(w.Text))
	case strings.ContainsAny(flags, "fF"):
	default:
		if name, ok := a.varName(w, variant); ok && strings.Contains(flags, "i") {
			a.vars.integer[name] = true
		}
	}
}

// nameref checks the target of declare -n: assigning through the
// reference assigns the target.
func (a *analyzer) nameref(variant string, target word) {
	name, ok := a.varName(target, variant+" -n")
	if ok && isRiskyEnv(name) {
		a.fail(CodeRiskyEnv, "%s -n makes a reference to %s, which can make programs run code the gate cannot see", variant, name)
	}
}

// declareWords applies a declaration builtin given as plain words
// (builtin export X=1, \declare …), which the parser does not see as one.
func (a *analyzer) declareWords(variant string, args []word, fr frame) {
	flags := ""
	for _, w := range args {
		if w.Literal && (strings.HasPrefix(w.Text, "-") || strings.HasPrefix(w.Text, "+")) {
			flags += w.Text[1:]
		}
	}
	for _, w := range args {
		if a.err != nil {
			return
		}
		a.declareArg(variant, flags, w, fr)
	}
}

// declareArg applies one word given to a declaration builtin: an option, a
// name, or NAME=value however it is quoted (export "PATH=/x" assigns PATH).
func (a *analyzer) declareArg(variant, flags string, w word, fr frame) {
	name, value, isAssign := strings.Cut(w.prefix, "=")
	name = strings.TrimSuffix(name, "+")
	if !isAssign || !isName(strings.SplitN(name, "[", 2)[0]) {
		a.declareName(variant, flags, w)
		return
	}
	base, ok := a.varName(literalWord(name), variant)
	if !ok {
		return
	}
	v := literalWord(value)
	if !w.Literal {
		v = opaqueWord(w.Text)
	}
	if strings.Contains(flags, "n") {
		a.nameref(variant, v)
	} else {
		a.setVarShape(base, &v, valueShape{substs: !w.Literal}, variant+" "+quote(w.Text), fr)
	}
	if strings.Contains(flags, "i") {
		a.vars.integer[base] = true
	}
}
