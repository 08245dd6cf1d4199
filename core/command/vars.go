package command

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// riskyEnv names variables that make programs load or run code the gate
// cannot see, or read and write files it does not judge: loader and
// interpreter hooks, programs named by the environment (editors, pagers,
// askpass, compilers), startup and config files, search paths, and flags
// that can do any of these. A trailing * makes an entry a prefix: a whole
// family is risky except the names in harmlessEnv. The list is derived,
// per program a template grants, from that program's own documentation
// (cited per group).
var riskyEnv = []string{
	// ld.so(8): LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT …; glibc: GCONV_PATH
	// loads iconv modules, GLIBC_TUNABLES (CVE-2023-4911), LOCPATH and
	// NLSPATH load locale data and message catalogs, HOSTALIASES a file.
	"LD_*", "DYLD_*", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "MALLOC_*",
	// bash(1) "Shell Variables" and dash(1): startup files, code run at
	// prompts and traces (PS4 expands $(…) under set -x), options, word
	// splitting, cd and glob behaviour, imported functions, history and
	// temporary files, compatibility levels that change evaluation.
	"BASH_ENV", "ENV", "SHELL", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "PS0", "PS1", "PS2", "PS3", "PS4",
	"IFS", "CDPATH", "GLOBIGNORE", "EXECIGNORE", "FIGNORE", "BASH_FUNC_*", "BASH_CMDS", "BASH_ALIASES",
	"BASH_LOADABLES_PATH", "BASH_XTRACEFD", "BASH_COMPAT", "BASH_ARGV0", "HISTFILE", "INPUTRC", "POSIXLY_CORRECT",
	"TMPDIR", "PATH", "HOME", "ZDOTDIR",
	// XDG Base Directory spec: where git, npm, pip … find config files.
	"XDG_*",
	// programs named by the environment: editors and pagers (git-var(1),
	// less(1), man(1)), askpass helpers (ssh(1), sudo(8)), browsers.
	"EDITOR", "VISUAL", "PAGER", "MANPAGER", "MANOPT", "BROWSER", "SSH_ASKPASS", "SSH_ASKPASS_REQUIRE",
	"SUDO_ASKPASS", "SUDO_EDITOR", "SYSTEMD_PAGER", "SYSTEMD_EDITOR",
	// less(1) "ENVIRONMENT VARIABLES": LESSOPEN/LESSCLOSE run input
	// preprocessors, LESS holds options (+cmd, !cmd), LESSKEY* bind keys,
	// LESSEDIT names the editor, LESSHISTFILE is written.
	"LESS", "LESS*",
	// git(1) "ENVIRONMENT VARIABLES": repository and config location
	// (GIT_DIR, GIT_COMMON_DIR, GIT_CONFIG_*, GIT_CONFIG_PARAMETERS,
	// GIT_ALTERNATE_OBJECT_DIRECTORIES …), programs (GIT_EXTERNAL_DIFF,
	// GIT_EXEC_PATH, GIT_ASKPASS, GIT_EDITOR, GIT_PAGER, GIT_SSH*,
	// GIT_PROXY_COMMAND), templates, trace files (GIT_TRACE=/path writes).
	// Every GIT_ name is risky but the identity and pathspec ones below.
	"GIT_*",
	// go help environment: GOFLAGS and GOENV hold options, GOTOOLCHAIN runs
	// another toolchain, GOCACHEPROG and GOAUTH run programs, CC/CXX/FC/AR/
	// PKG_CONFIG and CGO_*FLAGS pick the compilers and their plugins;
	// GOROOT, GOPATH, GOBIN, GOCACHE, GOMODCACHE, GOTMPDIR, GOCOVERDIR,
	// GOTELEMETRYDIR move reads and writes; GOPROXY, GOSUMDB, GOPRIVATE,
	// GONOPROXY, GONOSUMDB, GOINSECURE, GOVCS change what is fetched and run.
	"GOFLAGS", "GOENV", "GOTOOLCHAIN", "GOCACHEPROG", "GOAUTH", "GOROOT", "GOPATH", "GOBIN", "GOCACHE",
	"GOMODCACHE", "GOTMPDIR", "GOCOVERDIR", "GOTELEMETRY", "GOTELEMETRYDIR", "GOPROXY", "GOSUMDB", "GOPRIVATE",
	"GONOPROXY", "GONOSUMDB", "GONOSUMCHECK", "GOINSECURE", "GOVCS", "GOWORK", "GOEXPERIMENT", "GO111MODULE",
	"GCCGO", "GCCGOTOOLDIR", "GO_EXTLINK_ENABLED", "CGO_*",
	// make(1) and the GNU make manual "Implicit Variables": the compilers
	// and tools of built-in rules, MAKEFLAGS/MFLAGS/GNUMAKEFLAGS options,
	// MAKEFILES read first, SHELL/MAKESHELL run every recipe.
	"CC", "CXX", "CPP", "FC", "AR", "AS", "LD", "NM", "RANLIB", "STRIP", "OBJCOPY", "OBJDUMP", "PKG_CONFIG",
	"PKG_CONFIG_PATH", "YACC", "LEX", "M4", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "FFLAGS", "LDLIBS",
	"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKE", "MAKESHELL", "MAKEOVERRIDES", "MAKELEVEL",
	// npm-config(7): every npm_config_* is a config key (script-shell,
	// node-options, userconfig, prefix …); node(1) "Environment": NODE_OPTIONS,
	// NODE_PATH, NODE_REPL_EXTERNAL_MODULE …; yarn, pnpm and corepack
	// read their config from YARN_*, PNPM_* and COREPACK_*.
	"npm_config_*", "NPM_CONFIG_*", "NODE_*", "YARN_*", "PNPM_*", "COREPACK_*", "npm_package_*", "npm_lifecycle_*",
	// cargo "Environment Variables": CARGO_* configure every key
	// (CARGO_BUILD_RUSTC_WRAPPER, CARGO_TARGET_*_RUNNER …); RUSTC,
	// RUSTC_WRAPPER, RUSTDOC, RUSTFLAGS; rustup's RUSTUP_TOOLCHAIN and
	// RUSTUP_HOME choose the toolchain.
	"CARGO_*", "RUSTC", "RUSTC_*", "RUSTDOC", "RUSTDOCFLAGS", "RUSTFLAGS", "RUSTUP_*",
	// python(1) "ENVIRONMENT VARIABLES" (PYTHONPATH, PYTHONSTARTUP,
	// PYTHONHOME, PYTHONWARNINGS and PYTHONBREAKPOINT import modules …),
	// pytest "Environment variables" (PYTEST_ADDOPTS, PYTEST_PLUGINS).
	"PYTHON*", "PYTEST_*", "VIRTUAL_ENV", "PIP_*",
	// perl(1), ruby(1), lua(1), R, php, the JVM: options and library paths
	// that load code (PERL5OPT -M, RUBYOPT -r, LUA_INIT runs code).
	"PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "PERL_*", "RUBYOPT", "RUBYLIB", "LUA_*",
	"R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "R_LIBS*", "PHPRC", "PHP_INI_SCAN_DIR",
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
	// grep(1) GREP_OPTIONS (older grep reads options from it), rg(1)
	// RIPGREP_CONFIG_PATH (options such as --pre), tar(1) TAR_OPTIONS
	// (--to-command), curl's CURL_HOME and wget's WGETRC (config files),
	// rsync/cvs/svn remote shells.
	"GREP_OPTIONS", "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "CURL_HOME", "WGETRC", "RSYNC_RSH",
	"RSYNC_CONNECT_PROG", "CVS_RSH", "SVN_SSH",
}

// harmlessEnv are names of a risky family that only change output,
// identity or the build target: CGO_ENABLED=0 go build, GOOS=linux go
// build, NODE_ENV=test npm test, GIT_AUTHOR_NAME=… git commit stay fine.
var harmlessEnv = map[string]bool{
	"CGO_ENABLED":     true,
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true, "GIT_COMMITTER_NAME": true,
	"GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true, "GIT_TERMINAL_PROMPT": true, "GIT_OPTIONAL_LOCKS": true,
	"GIT_LITERAL_PATHSPECS": true, "GIT_GLOB_PATHSPECS": true, "GIT_NOGLOB_PATHSPECS": true,
	"GIT_ICASE_PATHSPECS": true, "GIT_MERGE_AUTOEDIT": true, "GIT_MERGE_VERBOSITY": true, "GIT_FLUSH": true,
	"GIT_PROGRESS_DELAY": true, "GIT_DEFAULT_HASH": true, "GIT_CEILING_DIRECTORIES": true,
	"NODE_ENV": true, "NODE_NO_WARNINGS": true, "NODE_DISABLE_COLORS": true, "NODE_PENDING_DEPRECATION": true,
	"NODE_DEBUG": true, "NODE_TEST_CONTEXT": true,
	"CARGO_TERM_COLOR": true, "CARGO_TERM_VERBOSE": true, "CARGO_TERM_QUIET": true, "CARGO_TERM_PROGRESS_WHEN": true,
	"CARGO_INCREMENTAL": true, "CARGO_BUILD_JOBS": true,
	"PYTHONDONTWRITEBYTECODE": true, "PYTHONUNBUFFERED": true, "PYTHONHASHSEED": true, "PYTHONIOENCODING": true,
	"PYTHONUTF8": true, "PYTHONNOUSERSITE": true, "PYTHONSAFEPATH": true, "PYTHONFAULTHANDLER": true,
	"PYTHONDEVMODE": true, "PYTHONVERBOSE": true, "PYTHONOPTIMIZE": true,
	"PERL_BADLANG": true, "LESSSECURE": true, "LESSCHARSET": true,
}

// RiskyEnvVars returns the environment variables whose assignment anywhere
// in a line (NAME=v cmd, export, declare, env, sudo, read, for, printf -v…)
// makes it unanalyzable. A trailing * marks a family: every name with that
// prefix except [HarmlessEnvVars]. IFS is allowed only as a prefix of read
// (IFS= read -r line), where it affects nothing else.
func RiskyEnvVars() []string {
	return slices.Clone(riskyEnv)
}

// HarmlessEnvVars returns the names of risky families that may be
// assigned: they change output, identity or the build target only.
func HarmlessEnvVars() []string {
	names := make([]string, 0, len(harmlessEnv))
	for n := range harmlessEnv {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func isRiskyEnv(name string) bool {
	if harmlessEnv[name] {
		return false
	}
	for _, r := range riskyEnv {
		if p, ok := strings.CutSuffix(r, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if name == r {
			return true
		}
	}
	return false
}

// varFacts tracks which shell variables may hold values the gate cannot
// see and which are evaluated as code. Bash evaluates a variable's value as
// an arithmetic expression (in $((x)), ((x)), let, array subscripts, [[ -eq
// ]], declare -i) and as a variable reference (${!x}); an array subscript
// inside that value runs command substitutions: x='a[$(rm -rf ~)]';
// echo $((x)).
type varFacts struct {
	// evaluated maps a name to the first construct that evaluates it.
	evaluated map[string]string
	// opaque maps a name to how it got a value the gate cannot see.
	opaque map[string]string
	// mentions maps a name to the names its literal values mention, which
	// are evaluated in turn.
	mentions map[string][]string
	// integer names variables declared -i: assignments to them are
	// arithmetic.
	integer map[string]bool
	// assigned records every assignment's value, for integer variables.
	assigned []assignment
}

type assignment struct {
	name  string
	value *word // nil when read from input
	shape valueShape
}

// valueShape is what an assigned value's expansions do.
type valueShape struct {
	refs   []string // variables its expansions read, and names in its text
	plain  bool     // only text and simple $x: its content is made of what refs hold
	substs bool     // it holds a command substitution
}

// shapeOf inspects an assigned value, or a word evaluated as arithmetic.
func shapeOf(w *syntax.Word) valueShape {
	sh := valueShape{plain: true}
	if w == nil {
		return sh
	}
	names := map[*syntax.Lit]bool{} // parameter names, not text
	cut := walkLimited(w, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			sh.substs, sh.plain = true, false
			return false
		case *syntax.ArithmExp:
			return false // a number
		case *syntax.ParamExp:
			names[n.Param] = true
			if n.Param != nil && !n.Length {
				sh.refs = append(sh.refs, n.Param.Value)
			}
			if n.Param == nil || n.Excl || n.Index != nil || n.Slice != nil || n.Repl != nil || n.Exp != nil || n.Names != 0 {
				sh.plain = false
			}
		case *syntax.Lit:
			if !names[n] {
				sh.plain = sh.plain && !strings.ContainsAny(n.Value, "$`[\\")
				sh.refs = append(sh.refs, identifiers(n.Value)...)
			}
		case *syntax.SglQuoted:
			sh.plain = sh.plain && !n.Dollar && !strings.ContainsAny(n.Value, "$`[\\")
			sh.refs = append(sh.refs, identifiers(n.Value)...)
		}
		return true
	})
	if cut {
		sh.substs, sh.plain = true, false // assume the worst of what was not seen
	}
	return sh
}

func newVarFacts() *varFacts {
	return &varFacts{
		evaluated: map[string]string{},
		opaque:    map[string]string{},
		mentions:  map[string][]string{},
		integer:   map[string]bool{},
	}
}

// shellSet names variables the shell fills from data the gate cannot see.
var shellSet = map[string]string{
	"_": "the last argument of the previous command", "REPLY": "read", "OPTARG": "getopts",
	"BASH_REMATCH": "[[ =~ ]]", "MAPFILE": "mapfile", "PWD": "cd", "OLDPWD": "cd",
	"BASH_COMMAND": "the shell", "BASH_ARGV": "the shell", "BASH_EXECUTION_STRING": "the shell",
	"FUNCNAME": "the shell", "BASH_SOURCE": "the shell", "COPROC": "coproc",
	"@": "the positional parameters", "*": "the positional parameters",
}

func (v *varFacts) evaluate(name, why string) {
	if _, ok := v.evaluated[name]; !ok {
		v.evaluated[name] = why
	}
}

// check fails when a variable that may hold an unseen value is evaluated
// as code, directly or through the names literal values mention.
func (v *varFacts) check(a *analyzer) {
	for _, as := range v.assigned {
		if !v.integer[as.name] {
			continue
		}
		why := "an assignment to the integer variable " + as.name
		switch {
		case as.value == nil || as.shape.substs:
			a.fail(CodeValueAsCode, "%s is declared an integer, so a value the gate cannot see assigned to it is evaluated as arithmetic", as.name)
			return
		case as.value.Literal && strings.ContainsAny(as.value.Text, "$`["):
			a.fail(CodeValueAsCode, "%s is declared an integer, so the value %s assigned to it is evaluated as arithmetic", as.name, quote(as.value.Text))
			return
		case as.value.Literal:
			for _, id := range identifiers(as.value.Text) {
				v.evaluate(id, why)
			}
		default:
			for _, r := range as.shape.refs {
				v.evaluate(r, why)
			}
		}
	}
	names := make([]string, 0, len(v.evaluated))
	for n := range v.evaluated {
		names = append(names, n)
	}
	slices.Sort(names) // deterministic reasons
	seen := map[string]bool{}
	for _, start := range names {
		why := v.evaluated[start]
		queue := []string{start}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			if seen[n] {
				continue
			}
			seen[n] = true
			how, ok := v.opaque[n]
			if !ok {
				how, ok = shellSet[n]
			}
			if !ok && n != "" && n[0] >= '0' && n[0] <= '9' {
				how, ok = "the positional parameters", true
			}
			if ok {
				if n == start {
					a.fail(CodeValueAsCode, "%s evaluates $%s, whose value comes from %s and may hold code", why, n, how)
				} else {
					a.fail(CodeValueAsCode, "%s evaluates $%s, which refers to $%s, whose value comes from %s and may hold code", why, start, n, how)
				}
				return
			}
			queue = append(queue, v.mentions[n]...)
		}
	}
}

// setVar records an assignment to name. value is nil when it comes from
// input the gate cannot see (read, mapfile, for over "$@").
func (a *analyzer) setVar(name string, value *word, how string, fr frame) {
	a.setVarShape(name, value, valueShape{}, how, fr)
}

func (a *analyzer) setVarShape(name string, value *word, shape valueShape, how string, fr frame) {
	if a.err != nil {
		return
	}
	if isRiskyEnv(name) {
		a.fail(CodeRiskyEnv, "%s assigns %s, which can make programs run code the gate cannot see", how, name)
		return
	}
	a.vars.record(name, value, shape, how)
}

// record notes what name may hold after an assignment.
func (v *varFacts) record(name string, value *word, shape valueShape, how string) {
	v.assigned = append(v.assigned, assignment{name: name, value: value, shape: shape})
	opaque := func(why string) {
		if _, ok := v.opaque[name]; !ok {
			v.opaque[name] = why
		}
	}
	switch {
	case value == nil:
		opaque(how)
	case value.Literal && strings.ContainsAny(value.Text, "$`[\"'\\"):
		opaque("the value " + quote(value.Text))
	case value.Literal:
		v.mentions[name] = append(v.mentions[name], identifiers(value.Text)...)
	case shape.plain:
		v.mentions[name] = append(v.mentions[name], shape.refs...)
	default:
		opaque("the expansion " + quote(value.Text))
	}
}

// identifiers returns the names an arithmetic expression in s would read.
func identifiers(s string) []string {
	var ids []string
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			ids = append(ids, s[i:j])
			i = j
		case c >= '0' && c <= '9':
			// a number: 10, 0x1f, 16#ff, 64#@_
			j := i + 1
			for j < len(s) && (isNameByte(s[j]) || s[j] == '#' || s[j] == '@') {
				j++
			}
			i = j
		default:
			i++
		}
	}
	return ids
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

func isName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// varName checks a word that a builtin reads as a variable name (read,
// printf -v, declare, test -v …). Bash evaluates a subscript in such a
// name, so `read 'a[$(cmd)]'` runs cmd. It returns the name without
// subscript, or false after failing.
func (a *analyzer) varName(w word, builtin string) (string, bool) {
	if w.expands {
		a.fail(CodeValueAsCode, "%s is given the variable name %s, which is computed when the line runs", builtin, quote(w.Text))
		return "", false
	}
	name, sub, hasSub := strings.Cut(w.decoded, "[")
	if hasSub {
		if strings.ContainsAny(sub, "$`\\\"'") {
			a.fail(CodeValueAsCode, "%s evaluates the subscript in %s as code", builtin, quote(w.decoded))
			return "", false
		}
		for _, id := range identifiers(sub) {
			a.vars.evaluate(id, "the subscript in "+quote(w.decoded))
		}
	}
	return name, true
}

// param walks a parameter expansion.
func (a *analyzer) param(p *syntax.ParamExp, fr frame) {
	name := ""
	if p.Param != nil {
		name = p.Param.Value
	}
	if p.Excl && p.Names == 0 && !multiField(p) {
		a.vars.evaluate(name, "the indirect expansion "+quote(fr.src.slice(p)))
	}
	if p.Index != nil {
		if w, ok := p.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*") {
			a.arith(p.Index, fr)
		}
	}
	if p.Slice != nil {
		if p.Slice.Offset != nil {
			a.arith(p.Slice.Offset, fr)
		}
		if p.Slice.Length != nil {
			a.arith(p.Slice.Length, fr)
		}
	}
	if p.Repl != nil {
		a.word(p.Repl.Orig, fr)
		a.word(p.Repl.With, fr)
	}
	if p.Exp != nil {
		value := a.word(p.Exp.Word, fr)
		switch p.Exp.Op {
		case syntax.OtherParamOps:
			if strings.Contains(value.Text, "P") {
				a.fail(CodeValueAsCode, "%s expands $%s as a prompt string, which runs command substitutions in its value", quote(fr.src.slice(p)), name)
			}
		case syntax.AssignUnset, syntax.AssignUnsetOrNull:
			a.setVar(name, &value, quote(fr.src.slice(p)), fr)
		}
	}
}

// arith walks an arithmetic expression: every variable it reads is
// evaluated, and command substitutions in it run.
func (a *analyzer) arith(x syntax.ArithmExpr, fr frame) {
	if x == nil || !a.enter(&fr) {
		return
	}
	switch x := x.(type) {
	case *syntax.Word:
		a.arithWord(x, a.word(x, fr), fr)
	case *syntax.BinaryArithm:
		if isArithAssign(x.Op) {
			if w, ok := x.X.(*syntax.Word); ok {
				if name := arithTarget(w); name != "" {
					// the result is a number: only the name matters
					num := literalWord("0")
					a.setVar(name, &num, "the arithmetic assignment "+quote(fr.src.slice(x)), fr)
					if x.Op != syntax.Assgn {
						a.vars.evaluate(name, "the arithmetic "+quote(fr.src.slice(x)))
					}
					if pe, ok := w.Parts[0].(*syntax.ParamExp); ok && pe.Index != nil {
						a.arith(pe.Index, fr)
					}
					a.arith(x.Y, fr)
					return
				}
			}
		}
		a.arith(x.X, fr)
		a.arith(x.Y, fr)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			if w, ok := x.X.(*syntax.Word); ok {
				if name := arithTarget(w); name != "" {
					num := literalWord("0")
					a.setVar(name, &num, "the arithmetic "+quote(fr.src.slice(x)), fr)
				}
			}
		}
		a.arith(x.X, fr)
	case *syntax.ParenArithm:
		a.arith(x.X, fr)
	default:
		a.fail(CodeUnsupported, "the arithmetic %q is not supported", fr.src.slice(x))
	}
}

func isArithAssign(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn,
		syntax.ShrAssgn, syntax.AndBoolAssgn, syntax.OrBoolAssgn, syntax.XorBoolAssgn, syntax.PowAssgn:
		return true
	}
	return false
}

// arithTarget returns the variable an arithmetic assignment writes.
func arithTarget(w *syntax.Word) string {
	if len(w.Parts) != 1 {
		return ""
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		if isName(p.Value) {
			return p.Value
		}
	case *syntax.ParamExp:
		if p.Param != nil && !p.Dollar.IsValid() {
			return p.Param.Value // a[i] inside arithmetic
		}
	}
	return ""
}

// arithWord records the variables an arithmetic word reads: bare names,
// names in its literal text (let "x = y"), and expanded parameters, whose
// values are evaluated again.
func (a *analyzer) arithWord(w *syntax.Word, info word, fr frame) {
	why := "the arithmetic " + quote(fr.src.slice(w))
	if info.Literal {
		if strings.ContainsAny(info.Text, "$`") {
			a.fail(CodeValueAsCode, "%s evaluates %s as code", why, quote(info.Text))
			return
		}
		for _, id := range identifiers(info.Text) {
			a.vars.evaluate(id, why)
		}
		return
	}
	sh := shapeOf(w)
	if sh.substs {
		a.fail(CodeValueAsCode, "%s evaluates command output as an arithmetic expression, which can run code", why)
		return
	}
	for _, r := range sh.refs {
		a.vars.evaluate(r, why)
	}
}

// test walks a [[ ]] expression.
func (a *analyzer) test(x syntax.TestExpr, fr frame) {
	if x == nil || !a.enter(&fr) {
		return
	}
	switch x := x.(type) {
	case *syntax.Word:
		a.word(x, fr)
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{x.X, x.Y} {
				if w, ok := side.(*syntax.Word); ok {
					a.arithWord(w, a.word(w, fr), fr)
				} else {
					a.test(side, fr)
				}
			}
			return
		}
		a.test(x.X, fr)
		a.test(x.Y, fr)
	case *syntax.UnaryTest:
		if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
			if w, ok := x.X.(*syntax.Word); ok {
				a.varName(a.word(w, fr), "[[ "+x.Op.String()+" ]]")
				return
			}
		}
		a.test(x.X, fr)
	case *syntax.ParenTest:
		a.test(x.X, fr)
	default:
		a.fail(CodeUnsupported, "the test %q is not supported", fr.src.slice(x))
	}
}

// quote renders s for a reason: %q-style, cut short when long.
func quote(s string) string {
	const max = 80
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		return strings.TrimSuffix(strconv.Quote(s[:cut]), `"`) + `…"`
	}
	return strconv.Quote(s)
}
