package command

import (
	"slices"
	"strings"
)

// progSource says where an interpreter takes its program from.
type progSource int

const (
	fromStdin     progSource = iota // no program argument: standard input
	fromCode                        // program text in an argument (-c, -e)
	fromFile                        // a script file
	fromElsewhere                   // a module, subcommand or built-in tool (python -m, node --test)
	noProgram                       // it prints something and exits (--version)
)

// program is what an interpreter's arguments say about its program.
type program struct {
	from        progSource
	arg         *word  // the code or script word
	explicit    bool   // stdin named explicitly: "-", sh -s, /dev/stdin
	codeFlag    bool   // sh -c: the first operand is the program
	interactive bool   // it reads more code from stdin after the program
	uncertain   string // why the options could not be parsed with certainty
	refuse      string // an option that loads files or changes how code is read
}

// interp describes an interpreter's command line.
type interp struct {
	opts        *optSpec
	code        []string // options whose argument is program text
	files       []string // options whose argument is a program file
	elsewhere   []string // options that take the program from somewhere else
	interactive []string // options that make it read code from stdin too
	exits       []string // options that make it print and exit
	operandCode bool     // the first operand is program text (awk)
	subcommands []string // first operands that run a built-in tool (R CMD)
}

var (
	python = &interp{
		opts: spec("3bBdEhiIOPqRsStuvVxc:m:Q:W:X:", "check-hash-based-pycs=", "help", "help-env",
			"help-xoptions", "help-all", "version").stopping("-c", "-m"),
		code: []string{"-c"}, elsewhere: []string{"-m"}, interactive: []string{"-i"},
		exits: []string{"-h", "-V", "--help", "--help-env", "--help-xoptions", "--help-all", "--version"},
	}
	node = &interp{
		opts: spec("e:p:ivhcr:C:", "eval=", "print=", "interactive", "version", "help", "check", "require=",
			"import=", "loader=", "experimental-loader=", "input-type=", "conditions=", "env-file=",
			"env-file-if-exists=", "test", "run=", "watch", "watch-path=", "inspect?", "inspect-brk?",
			"inspect-wait?", "inspect-port=", "title=", "enable-source-maps", "experimental-strip-types",
			"experimental-transform-types", "no-warnings", "trace-warnings", "trace-uncaught",
			"experimental-vm-modules", "max-old-space-size?", "stack-size?", "expose-gc", "preserve-symlinks",
			"pending-deprecation", "throw-deprecation", "no-deprecation", "abort-on-uncaught-exception",
			"test-name-pattern=", "test-reporter=", "test-only", "test-concurrency=", "disable-warning=",
			"permission", "allow-fs-read=", "allow-fs-write=", "allow-child-process", "allow-worker",
			"unhandled-rejections=", "dns-result-order=", "prof", "cpu-prof", "heap-prof"),
		code: []string{"-e", "-p", "--eval", "--print"}, elsewhere: []string{"--test", "--run"},
		exits: []string{"-v", "-h", "--version", "--help"}, interactive: []string{"-i", "--interactive"},
	}
	perl = &interp{
		opts: spec("0#aC::cd::D::e:E:fF::hi::I:l#m::M::npsStTuUvV::wWx::X"),
		code: []string{"-e", "-E"}, exits: []string{"-v", "-V", "-h"},
	}
	ruby = &interp{
		opts: spec("0#aC:cdE:e:F::hi::I:K:lnpr:sSvwW::x::y", "version", "help", "verbose", "copyright", "disable=",
			"enable=", "dump=", "encoding=", "external-encoding=", "internal-encoding=", "jit", "yjit",
			"backtrace-limit=", "crash-report=", "parser=", "disable-gems", "enable-frozen-string-literal",
			"disable-frozen-string-literal"),
		code: []string{"-e"}, exits: []string{"-v", "-h", "--version", "--help", "--copyright"},
	}
	php = &interp{
		opts: spec("aB:c:d:eE:f:F:hHilmnqr:R:sS:t:vwz:", "ini?", "rf=", "rc=", "re=", "rz=", "ri=", "help",
			"version", "info", "modules", "interactive", "syntax-check", "no-php-ini", "php-ini=", "define=",
			"file=", "run=", "process-begin=", "process-code=", "process-file=", "process-end=", "server=",
			"docroot=", "strip", "hide-args", "zend-extension=", "no-header"),
		code:        []string{"-r", "-B", "-R", "-E", "--run", "--process-begin", "--process-code", "--process-end"},
		files:       []string{"-f", "-F", "--file", "--process-file"},
		elsewhere:   []string{"-S", "--server"},
		interactive: []string{"-a", "--interactive"},
		exits: []string{"-h", "-i", "-m", "-v", "--help", "--info", "--modules", "--version", "--ini",
			"--rf", "--rc", "--re", "--rz", "--ri"},
	}
	lua = &interp{
		opts: spec("e:l:iEvW"),
		code: []string{"-e"}, interactive: []string{"-i"}, exits: []string{"-v"},
	}
	rLang = &interp{
		opts: spec("d:e:f:g:hqsv", "save", "no-save", "no-environ", "no-site-file", "no-init-file", "restore",
			"no-restore", "no-restore-data", "no-restore-history", "vanilla", "no-readline", "min-vsize=",
			"max-vsize=", "max-ppsize=", "min-nsize=", "max-connections=", "quiet", "silent", "no-echo",
			"slave", "verbose", "args", "debugger=", "debugger-args=", "gui=", "interactive", "file=",
			"version", "help", "encoding=").stopping("--args"),
		code: []string{"-e"}, files: []string{"-f", "--file"}, interactive: []string{"--interactive"},
		exits: []string{"-h", "--help", "--version"}, subcommands: []string{"CMD"},
	}
	rscript = &interp{
		opts: spec("e:", "verbose", "default-packages=", "version", "help", "vanilla", "no-environ",
			"no-site-file", "no-init-file", "no-restore", "no-save", "no-echo"),
		code: []string{"-e"}, exits: []string{"--version", "--help"},
	}
	osascript = &interp{
		opts: spec("e:il:s:"),
		code: []string{"-e"}, interactive: []string{"-i"},
	}
	awk = &interp{
		opts: spec("bcCd::D::e:E:f:F:ghi:Il:L::MnNo::Op::PrsStv:VW:", "file=", "field-separator=", "assign=",
			"source=", "exec=", "include=", "load=", "characters-as-bytes", "traditional", "copyright",
			"dump-variables?", "debug?", "gen-pot", "help", "lint?", "bignum", "non-decimal-data",
			"use-lc-numeric", "optimize", "pretty-print?", "profile?", "posix", "re-interval", "no-optimize",
			"sandbox", "lint-old", "version", "csv", "trace"),
		code: []string{"-e", "--source"}, files: []string{"-f", "-E", "--file", "--exec"},
		exits: []string{"-V", "-C", "-h", "--version", "--help", "--copyright"}, operandCode: true,
	}
	fish = &interp{
		opts: spec("c:C:d:f:ilnNo:p:Pvh", "command=", "init-command=", "debug=", "debug-output=", "features=",
			"interactive", "login", "no-execute", "no-config", "profile=", "profile-startup=", "private",
			"print-rusage-self", "version", "help"),
		code: []string{"-c", "--command"}, interactive: []string{"-i", "--interactive"},
		exits: []string{"-v", "-h", "--version", "--help", "-n", "--no-execute"},
	}
)

// interpreters maps program names to their command lines. Versioned names
// (python3.12, perl5.36) are looked up without the version.
var interpreters = map[string]*interp{
	"python": python, "pypy": python, "node": node, "nodejs": node, "perl": perl, "ruby": ruby,
	"php": php, "lua": lua, "luajit": lua, "R": rLang, "Rscript": rscript, "osascript": osascript,
	"awk": awk, "gawk": awk, "mawk": awk, "nawk": awk, "fish": fish,
}

// bourneShells run -c strings that this package parses as bash.
var bourneShells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ksh93": true, "mksh": true,
	"lksh": true, "ash": true, "yash": true, "posh": true, "rbash": true,
}

// cShells take -c like sh, but their language is not analyzed.
var cShells = map[string]bool{"csh": true, "tcsh": true}

func interpreterFor(base string) *interp {
	if ip, ok := interpreters[base]; ok {
		return ip
	}
	return interpreters[strings.TrimRight(base, "0123456789.")]
}

// interpreter judges where an interpreter takes its program from. It
// reports whether the command was fully handled; otherwise it is listed as
// a plain command.
func (a *analyzer) interpreter(base string, known bool, words []word, fr frame) bool {
	args := words[1:]
	var prog program
	recurse := false
	switch {
	case bourneShells[base] || cShells[base]:
		prog = shellProgram(args, bourneShells[base])
		recurse = bourneShells[base] && known && prog.from == fromCode
	case base == "pwsh" || base == "powershell":
		prog = pwshProgram(args, base == "pwsh")
	case base == "deno" || base == "bun":
		prog = denoProgram(args, base == "bun")
	default:
		ip := interpreterFor(base)
		if ip == nil {
			return false
		}
		prog = ip.program(args)
	}
	name := base
	if prog.arg != nil && prog.from == fromFile && prog.arg.Literal && (prog.arg.Text == "-" || isStdinPath(prog.arg.Text)) {
		prog.explicit = true
	}
	switch {
	case prog.refuse != "":
		a.fail(CodeShellOption, "%s %s", name, prog.refuse)
	case prog.explicit:
		a.fail(CodeInterpreterStdin, "%s reads its program from standard input", name)
	case prog.uncertain != "" && prog.codeFlag:
		a.fail(CodeDynamicCode, "cannot tell which argument %s -c runs: %s", name, prog.uncertain)
	case prog.uncertain != "" && fr.fed:
		a.fail(CodeInterpreterStdin, "cannot tell where %s takes its program from (%s), and its standard input is fed by the line", name, prog.uncertain)
	case prog.uncertain != "":
		return false
	case prog.from == fromStdin:
		a.fail(CodeInterpreterStdin, "%s has no script or program argument, so it reads its program from standard input", name)
	case prog.interactive && fr.fed:
		a.fail(CodeInterpreterStdin, "%s runs interactively, reading code from its standard input, which the line feeds", name)
	case prog.arg != nil && prog.from == fromCode && !prog.arg.Literal:
		a.fail(CodeDynamicCode, "%s runs the program text %s, which is computed when the line runs", name, quote(prog.arg.Text))
	case prog.arg != nil && prog.from == fromFile && prog.arg.procSubst:
		a.fail(CodeDynamicCode, "%s runs %s, a program produced by process substitution", name, quote(prog.arg.Text))
	case recurse:
		a.shellString(*prog.arg, fr.wrapped(base), base)
		return true
	}
	return a.err != nil
}

// isStdinPath reports paths that name an inherited descriptor.
func isStdinPath(p string) bool {
	return p == "/dev/stdin" || strings.HasPrefix(p, "/dev/fd/") ||
		(strings.HasPrefix(p, "/proc/") && strings.Contains(p, "/fd/"))
}

// program reads an interpreter's arguments.
func (ip *interp) program(args []word) program {
	p := ip.opts.parse(args)
	prog := program{uncertain: p.uncertain}
	exits := false
	for i := range p.opts {
		o := &p.opts[i]
		switch {
		case slices.Contains(ip.code, o.name):
			prog.from, prog.arg = fromCode, &o.arg
		case slices.Contains(ip.files, o.name):
			if prog.from != fromCode {
				prog.from, prog.arg = fromFile, &o.arg
			}
		case slices.Contains(ip.elsewhere, o.name):
			prog.from = fromElsewhere
		case slices.Contains(ip.interactive, o.name):
			prog.interactive = true
		case slices.Contains(ip.exits, o.name):
			exits = true
		}
	}
	if prog.from == fromStdin && len(p.operands) > 0 {
		op := &p.operands[0]
		switch {
		case op.Literal && op.Text == "-":
			prog.explicit = true
		case op.Literal && slices.Contains(ip.subcommands, op.Text):
			prog.from = fromElsewhere
		case len(ip.subcommands) > 0:
			prog.uncertain = "unknown operand " + quote(op.Text)
		case ip.operandCode:
			prog.from, prog.arg = fromCode, op
		default:
			prog.from, prog.arg = fromFile, op
		}
	}
	if prog.from == fromStdin && !prog.explicit && exits {
		prog.from = noProgram
	}
	return prog
}

// shellProgram reads the arguments of a Bourne or C shell: options, then
// with -c the command string, otherwise a script file.
func shellProgram(args []word, bourne bool) program {
	letters := "abefhklmnprtuvxBCDEHPT"
	if !bourne {
		letters = "bdefFlmnqvVxX"
	}
	var prog program
	code, stdin, exits := false, false, false
	var operands []word
	i := 0
loop:
	for ; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if code {
				break // whatever it is, the string sh -c runs is not literal
			}
			if w.optionLike() {
				prog.uncertain = "cannot tell whether " + quote(w.Text) + " is an option"
				return prog
			}
			break
		}
		t := w.Text
		switch {
		case t == "-" || t == "--":
			i++
			break loop
		case bourne && (t == "--rcfile" || t == "--init-file"):
			prog.refuse = t + " runs a file of shell code the gate cannot see"
			return prog
		case bourne && (t == "--login" || t == "--debugger"):
			prog.refuse = t + " runs profile or debugger files the gate cannot see"
			return prog
		case bourne && (t == "--version" || t == "--help"):
			exits = true
		case bourne && slices.Contains([]string{"--noprofile", "--norc", "--posix", "--restricted",
			"--verbose", "--noediting", "--dump-strings", "--dump-po-strings", "--pretty-print"}, t):
		case strings.HasPrefix(t, "--"):
			prog.uncertain = "unknown option " + quote(t)
			return prog
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			for _, c := range t[1:] {
				switch {
				case c == 'c':
					code = code || t[0] == '-'
					prog.codeFlag = code
				case c == 's' || (c == 't' && !bourne):
					stdin = stdin || t[0] == '-'
				case c == 'i' && bourne:
					prog.refuse = "-i runs the rc file ($ENV, ~/.bashrc) as shell code the gate cannot see"
					return prog
				case c == 'i':
					prog.interactive = true
				case bourne && c == 'l':
					prog.refuse = "-l runs the login profile files as shell code the gate cannot see"
					return prog
				case bourne && c == 'k':
					prog.refuse = "-k makes every NAME=value argument an assignment the gate does not see"
					return prog
				case bourne && c == 'O':
					prog.refuse = quote(t) + " sets a shopt option, which can change how the string is parsed"
					return prog
				case bourne && c == 'o':
					i++
					if i >= len(args) || !args[i].Literal {
						prog.uncertain = "option " + quote(t) + " needs a literal value"
						return prog
					}
					if !harmlessShellOption(args[i].Text) {
						prog.refuse = quote(t+" "+args[i].Text) + " changes how the shell reads or runs the string"
						return prog
					}
				case !strings.ContainsRune(letters, c):
					prog.uncertain = "unknown option " + quote(t)
					return prog
				}
			}
		default:
			break loop
		}
	}
	operands = args[i:]
	switch {
	case code && len(operands) > 0:
		prog.from, prog.arg = fromCode, &operands[0]
	case code:
		prog.from = noProgram // sh -c with no string is an error
	case stdin:
		prog.explicit = true
	case len(operands) > 0:
		prog.from, prog.arg = fromFile, &operands[0]
	case exits:
		prog.from = noProgram
	}
	return prog
}

// pwshParams are PowerShell's parameters by full name; any unambiguous
// prefix, in any case, selects one.
var pwshParams = map[string]string{
	"command": "code", "commandwithargs": "code", "encodedcommand": "code", "file": "file",
	"noprofile": "", "nologo": "", "noninteractive": "", "noexit": "interactive", "interactive": "interactive",
	"executionpolicy": "arg", "workingdirectory": "arg", "inputformat": "arg", "outputformat": "arg",
	"windowstyle": "arg", "configurationname": "arg", "configurationfile": "arg", "settingsfile": "arg",
	"custompipename": "arg", "psconsolefile": "arg", "version": "exit", "help": "exit", "login": "",
	"mta": "", "sta": "", "nonewline": "",
}

// pwshAliases are PowerShell's documented short names.
var pwshAliases = map[string]string{
	"c": "command", "cwa": "commandwithargs", "e": "encodedcommand", "ec": "encodedcommand", "f": "file",
	"nop": "noprofile", "nol": "nologo", "noni": "noninteractive", "noe": "noexit", "i": "interactive",
	"ex": "executionpolicy", "ep": "executionpolicy", "wd": "workingdirectory", "inp": "inputformat",
	"if": "inputformat", "o": "outputformat", "of": "outputformat", "w": "windowstyle",
	"config": "configurationname", "settings": "settingsfile", "v": "version", "h": "help", "?": "help",
	"l": "login",
}

func pwshProgram(args []word, pwsh bool) program {
	var prog program
	exits := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.optionLike() {
				prog.uncertain = "cannot tell whether " + quote(w.Text) + " is a parameter"
				return prog
			}
		}
		if !w.Literal || !strings.HasPrefix(w.Text, "-") || w.Text == "-" {
			// The first positional argument is a script file for pwsh and
			// a command for Windows PowerShell.
			prog.from, prog.arg = fromFile, &args[i]
			if !pwsh {
				prog.from = fromCode
			}
			break
		}
		name := strings.ToLower(strings.TrimLeft(w.Text, "-"))
		full, ok := pwshAliases[name]
		if !ok {
			for p := range pwshParams {
				if strings.HasPrefix(p, name) {
					if full != "" {
						prog.uncertain = "ambiguous parameter " + quote(w.Text)
						return prog
					}
					full = p
				}
			}
		}
		role, ok := pwshParams[full]
		if !ok {
			prog.uncertain = "unknown parameter " + quote(w.Text)
			return prog
		}
		switch role {
		case "arg":
			i++
		case "exit":
			exits = true
		case "interactive":
			prog.interactive = true
		case "code", "file":
			if i+1 >= len(args) {
				prog.uncertain = "parameter " + quote(w.Text) + " needs a value"
				return prog
			}
			prog.arg = &args[i+1]
			prog.from = fromCode
			if role == "file" {
				prog.from = fromFile
			}
			if args[i+1].Literal && args[i+1].Text == "-" {
				prog.explicit = true
			}
			return prog
		}
	}
	if prog.from == fromStdin && exits {
		prog.from = noProgram
	}
	return prog
}

// denoProgram reads deno and bun command lines: a subcommand or a script
// first. Their many options are not modeled, so options before it make the
// result uncertain.
func denoProgram(args []word, bun bool) program {
	var prog program
	for i, w := range args {
		if w.Literal && w.Text == "-" {
			prog.explicit = true
			return prog
		}
		if w.optionLike() {
			if w.Literal && slices.Contains([]string{"-v", "-V", "-h", "--version", "--help"}, w.Text) {
				prog.from = noProgram
				return prog
			}
			if prog.from == fromStdin {
				prog.uncertain = "options of " + map[bool]string{true: "bun", false: "deno"}[bun] + " are not modeled"
			}
			continue
		}
		if prog.from != fromStdin {
			continue
		}
		if w.Literal && w.Text == "repl" {
			prog.explicit = true
			return prog
		}
		prog.from, prog.arg = fromElsewhere, &args[i]
	}
	if prog.from == fromStdin && bun && prog.uncertain == "" {
		prog.from = noProgram // bun alone prints its help
	}
	return prog
}
