package command

import (
	"slices"
	"strings"
)

// The go command's model (go help build, testflag, test, run, vet, list,
// mod, work, env, clean, tool; go doc cmd/cover, cmd/pprof …).

// goBuildFlags are the build flags every building subcommand shares, by
// what their value is.
var goBuildFlags = map[string]effect{
	"a": noFile, "n": noFile, "p": noFile, "race": noFile, "msan": noFile, "asan": noFile, "cover": noFile,
	"covermode": noFile, "coverpkg": noFile, "v": noFile, "work": noFile, "x": noFile, "asmflags": noFile,
	"buildmode": noFile, "buildvcs": noFile, "compiler": noFile, "gccgoflags": noFile, "gcflags": noFile,
	"installsuffix": noFile, "json": noFile, "ldflags": noFile, "linkshared": noFile, "mod": noFile,
	"modcacherw": noFile, "modfile": readsFile, "overlay": readsList, "pgo": readsFile, "pkgdir": writesDir,
	"tags": noFile, "trimpath": noFile, "toolexec": runsProgram, "i": noFile,
	"debug-actiongraph": writesFile, "debug-runtime-trace": writesFile, "debug-trace": writesFile,
}

// goValueFlags are the go flags that take a value (the others are
// booleans, which take one only after "=").
var goValueFlags = map[string]bool{
	"C": true, "o": true, "p": true, "covermode": true, "coverpkg": true, "asmflags": true, "buildmode": true,
	"compiler": true, "gccgoflags": true, "gcflags": true, "installsuffix": true, "ldflags": true, "mod": true,
	"modfile": true, "overlay": true, "pgo": true, "pkgdir": true, "tags": true, "toolexec": true, "exec": true,
	"vettool": true, "debug-actiongraph": true, "debug-runtime-trace": true, "debug-trace": true,
	"bench": true, "benchtime": true, "blockprofile": true, "blockprofilerate": true, "count": true,
	"coverprofile": true, "cpu": true, "cpuprofile": true, "fuzz": true, "fuzzminimizetime": true,
	"fuzztime": true, "list": true, "memprofile": true, "memprofilerate": true, "mutexprofile": true,
	"mutexprofilefraction": true, "outputdir": true, "parallel": true, "run": true, "skip": true,
	"timeout": true, "trace": true, "vet": true, "f": true, "reuse": true, "go": true, "compat": true,
	"fix": true, "c": false, "shuffle": true, "module": true, "toolchain": true, "require": true,
	"droprequire": true, "exclude": true, "dropexclude": true, "replace": true, "dropreplace": true,
	"retract": true, "dropretract": true, "godebug": true, "dropgodebug": true, "tool": true, "droptool": true,
	"ignore": true, "dropignore": true, "use": true, "dropuse": true, "json": false,
}

// goTestFlags are go test's own flags and the testing package's
// (go help testflag), by what their value is; the -test.NAME spelling of
// the testing flags is accepted too, before and after -args.
var goTestFlags = map[string]effect{
	"args": noFile, "c": noFile, "exec": runsProgram, "json": noFile, "o": writesFile, "vet": noFile,
	"bench": noFile, "benchmem": noFile, "benchtime": noFile, "blockprofile": writesFile, "blockprofilerate": noFile,
	"count": noFile, "coverprofile": writesFile, "cpu": noFile, "cpuprofile": writesFile, "failfast": noFile,
	"fullpath": noFile, "fuzz": noFile, "fuzzminimizetime": noFile, "fuzztime": noFile, "list": noFile,
	"memprofile": writesFile, "memprofilerate": noFile, "mutexprofile": writesFile, "mutexprofilefraction": noFile,
	"outputdir": writesDir, "parallel": noFile, "run": noFile, "short": noFile, "shuffle": noFile, "skip": noFile,
	"timeout": noFile, "trace": writesFile, "v": noFile, "artifacts": noFile,
	// only as -test.NAME, for the test binary
	"test.gocoverdir": writesDir, "test.testlogfile": writesFile, "test.paniconexit0": noFile,
	"test.fuzzcachedir": writesDir, "test.fuzzworker": noFile,
}

// goVetAnalyzers are the analyzers of go vet (go tool vet help), whose
// -NAME and -NAME.FLAG flags go vet passes to its tool.
var goVetAnalyzers = []string{"appends", "asmdecl", "assign", "atomic", "bools", "buildtag", "cgocall",
	"composites", "copylocks", "defers", "directive", "errorsas", "framepointer", "hostport", "httpresponse",
	"ifaceassert", "loopclosure", "lostcancel", "nilfunc", "printf", "shift", "sigchanyzer", "slog",
	"stdmethods", "stdversion", "stringintconv", "structtag", "testinggoroutine", "tests", "timeformat",
	"unmarshal", "unreachable", "unsafeptr", "unusedresult", "waitgroup", "c", "json", "V", "flags"}

// goSubcommands lists each subcommand's own flags beside the build flags
// (nil: it takes no build flags).
var goSubcommands = map[string]map[string]effect{
	"build":     {"o": writesFile},
	"test":      goTestFlags,
	"run":       {"exec": runsProgram},
	"vet":       {"vettool": runsProgram},
	"install":   {},
	"generate":  {"run": noFile, "skip": noFile, "n": noFile, "v": noFile, "x": noFile},
	"list":      {"f": noFile, "m": noFile, "u": noFile, "e": noFile, "deps": noFile, "test": noFile, "compiled": noFile, "export": noFile, "find": noFile, "retracted": noFile, "reuse": readsFile, "versions": noFile},
	"get":       {"t": noFile, "u": noFile, "tool": noFile, "d": noFile, "insecure": noFile},
	"clean":     {"i": noFile, "r": noFile, "cache": noFile, "testcache": noFile, "modcache": noFile, "fuzzcache": noFile},
	"fmt":       nil,
	"fix":       {"fix": noFile, "diff": noFile},
	"doc":       nil,
	"env":       nil,
	"version":   nil,
	"help":      nil,
	"mod":       nil,
	"work":      nil,
	"tool":      nil,
	"telemetry": nil,
}

// goOwnFlags are the flags of subcommands that take no build flags.
var goOwnFlags = map[string]map[string]effect{
	"fmt":     {"n": noFile, "x": noFile, "mod": noFile},
	"doc":     {"all": noFile, "c": noFile, "cmd": noFile, "short": noFile, "src": noFile, "u": noFile},
	"env":     {"json": noFile, "changed": noFile},
	"version": {"m": noFile, "v": noFile, "json": noFile},
	"help":    {},
}

func goModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		a.goCommand(words, fr)
		return nil
	}}
}

// goArgs parses a go subcommand's flags. With permute, flags may follow
// operands, as go test and go vet allow; otherwise the first operand ends
// them (go run . -flag passes -flag to the program). A flag outside known
// is unknown unless pass accepts it. rest reports -args (or --): what
// follows belongs to the test binary or the program.
func goArgs(args []word, known map[string]effect, build, permute bool, pass func(string) bool) (p parsedArgs, rest bool) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.mayBeOption() && p.computed == "" {
				p.computed = w.Text
			}
			p.operands = append(p.operands, w)
			if !permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p, false
			}
			continue
		}
		t := w.Text
		if t == "--" || t == "-args" || t == "--args" {
			return p, true // the rest belongs to the program or test binary
		}
		if len(t) < 2 || t[0] != '-' {
			p.operands = append(p.operands, w)
			if !permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p, false
			}
			continue
		}
		n, value, hasValue := strings.Cut(strings.TrimPrefix(t[1:], "-"), "=")
		if _, ok := known[n]; !ok && strings.HasPrefix(n, "test.") {
			if _, ok := known[strings.TrimPrefix(n, "test.")]; ok {
				n = strings.TrimPrefix(n, "test.") // go test -test.v is -v
			}
		}
		_, own := known[n]
		_, shared := goBuildFlags[n]
		switch {
		case own || build && shared:
		case pass != nil && pass(n):
			p.operands = append(p.operands, w)
			continue
		default:
			p.unknown = t
			return p, false
		}
		o := parsedOpt{name: "-" + n}
		switch {
		case hasValue:
			o.arg, o.hasArg = literalWord(value), true
		case goValueFlags[strings.TrimPrefix(n, "test.")] && i+1 < len(args):
			i++
			o.arg, o.hasArg = args[i], true
			if args[i].ifs && p.computed == "" {
				p.computed = args[i].Text
			}
		}
		p.opts = append(p.opts, o)
	}
	return p, false
}

// goCommand judges a go command line.
func (a *analyzer) goCommand(words []word, fr frame) {
	args := words[1:]
	// go -C DIR runs in DIR: its reads and writes are relative to it.
	for len(args) > 0 && args[0].Literal && (args[0].Text == "-C" || strings.HasPrefix(args[0].Text, "-C=") || strings.HasPrefix(args[0].Text, "--C")) {
		var dir word
		if v, ok := strings.CutPrefix(strings.TrimPrefix(args[0].Text, "-"), "-C="); ok {
			dir, args = literalWord(v), args[1:]
		} else if v, ok := strings.CutPrefix(args[0].Text, "-C="); ok {
			dir, args = literalWord(v), args[1:]
		} else if len(args) > 1 {
			dir, args = args[1], args[2:]
		} else {
			return
		}
		if !dir.Literal {
			a.refuseOption("go", "-C is given %s, which is computed when the line runs", quote(dir.Text))
			return
		}
		fr.shell = fr.shell.clone()
		fr.shell.chdir(dir)
	}
	if len(args) == 0 {
		return
	}
	sub := args[0]
	if !sub.Literal {
		a.refuseOption("go", "is given the subcommand %s, which is computed when the line runs", quote(sub.Text))
		return
	}
	flags, ok := goSubcommands[sub.Text]
	switch {
	case sub.Text == "bug":
		a.refuseOption("go", "bug opens a web browser")
		return
	case !ok:
		a.fail(CodeUnknownOption, "go %s is not a subcommand the gate models", quote(sub.Text))
		return
	}
	name := "go " + sub.Text
	switch sub.Text {
	case "mod", "work":
		a.goModWork(sub.Text, args[1:], fr)
		return
	case "tool":
		a.goTool(args[1:], fr)
		return
	case "telemetry":
		if len(args) > 1 {
			a.unknownWrite("go telemetry "+quote(args[1].Text)+" changes the telemetry mode in the user's configuration", fr)
		}
		return
	}
	build := flags != nil
	if !build {
		flags = goOwnFlags[sub.Text]
	}
	var pass func(string) bool
	switch sub.Text {
	case "test":
		// Flags the testing package does not define belong to the
		// package's own tests (-update): code the line runs anyway.
		pass = func(n string) bool { return !strings.HasPrefix(n, "test.") }
	case "vet":
		pass = func(n string) bool {
			base, _, _ := strings.Cut(n, ".")
			return slices.Contains(goVetAnalyzers, base)
		}
	case "env":
		for _, w := range args[1:] {
			if w.Literal && (w.Text == "-w" || w.Text == "-u" || strings.HasPrefix(w.Text, "-w=") || strings.HasPrefix(w.Text, "-u=")) {
				a.refuseOption("go", "env %s changes go's settings (GOFLAGS, GOTOOLCHAIN …) for every later go command", w.Text)
				return
			}
		}
	}
	permute := sub.Text == "test" || sub.Text == "vet"
	p, rest := goArgs(args[1:], flags, build, permute, pass)
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "%s is given the flag %s, which the gate does not model", name, quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption("go", "is given %s, which is computed when the line runs and may be a flag such as -toolexec", quote(p.computed))
		return
	}
	for _, o := range p.opts {
		if a.err != nil {
			return
		}
		e, ok := flags[strings.TrimPrefix(o.name, "-")]
		if !ok {
			e = goBuildFlags[strings.TrimPrefix(o.name, "-")]
		}
		if o.hasArg {
			a.goFlagValue(name, o, e, fr)
		}
	}
	if rest && sub.Text == "test" {
		a.goTestBinaryArgs(args, fr)
	}
	if a.err != nil {
		return
	}
	switch sub.Text {
	case "install":
		a.unknownWrite("go install writes binaries into GOBIN (GOPATH/bin), a directory on PATH outside the workspace", fr)
	case "clean":
		for _, c := range []string{"-cache", "-testcache", "-modcache", "-fuzzcache", "-i"} {
			if p.has(c) {
				a.unknownWrite("go clean "+c+" removes what go keeps outside the workspace (its caches, installed binaries)", fr)
			}
		}
		a.write(literalWord("."), false, fr) // object files in the package directories
	case "fmt", "fix":
		a.write(literalWord("."), false, fr) // the packages' Go files
	case "get":
		a.write(literalWord("go.mod"), false, fr)
		a.write(literalWord("go.sum"), false, fr)
	case "generate":
		if !p.has("-n") {
			// What the //go:generate comments run writes where it writes:
			// only the kernel bounds that (unanalyzable unless contained).
			a.unknownWrite("go generate runs the commands of the packages' //go:generate comments, which write what they write", fr)
		}
	case "test":
		if p.has("-c") && !p.has("-o") {
			a.unknownWrite("go test -c writes the test binary into the working directory under the package's name", fr)
		}
	case "version", "env", "help":
		for _, w := range p.operands {
			if sub.Text == "version" {
				a.read(w, fr)
			}
		}
		return
	case "doc":
		return
	}
	// The module in the working directory, and packages named by path.
	a.readPlace(literalWord("."), fr)
	for i, w := range p.operands {
		if sub.Text == "run" && i > 0 && !strings.HasSuffix(p.operands[i-1].Text, ".go") {
			break // the program's own arguments
		}
		t := w.prefix
		switch {
		case strings.HasSuffix(t, ".go") && w.Literal:
			a.read(w, fr)
		case strings.HasPrefix(t, ".") || strings.HasPrefix(t, "/") || w.lead == '/':
			// a package directory, or a pattern below one (./...)
			dir := strings.TrimSuffix(strings.TrimSuffix(w.Text, "..."), "/")
			if dir == "" {
				dir = "/"
			}
			if w.Literal {
				a.readPlace(literalWord(dir), fr)
			} else {
				a.readPlace(w, fr)
			}
		}
	}
}

// goFlagValue applies one go flag's value: files read or written,
// programs run, and the tools' flags inside -gcflags, -ldflags and
// -asmflags.
func (a *analyzer) goFlagValue(name string, o parsedOpt, e effect, fr frame) {
	v := o.arg
	switch o.name {
	case "-gcflags", "-ldflags", "-asmflags", "-gccgoflags":
		if !v.Literal {
			a.refuseOption("go", "%s is given %s, which is computed when the line runs", o.name, quote(v.Text))
			return
		}
		a.goToolFlags(o.name, v.Text, fr)
		return
	case "-compiler":
		if v.Text != "gc" {
			a.refuseOption("go", "-compiler %s runs another compiler", quote(v.Text))
		}
		return
	case "-pgo":
		if v.Literal && (v.Text == "auto" || v.Text == "off") {
			return
		}
	}
	a.effect(name, o.name, e, v, fr)
}

// goTestBinaryArgs judges the words after go test -args: the test
// binary's own flags (-test.cpuprofile=FILE writes FILE); others belong
// to the package's tests.
func (a *analyzer) goTestBinaryArgs(args []word, fr frame) {
	i := slices.IndexFunc(args, func(w word) bool { return w.Literal && (w.Text == "-args" || w.Text == "--args") })
	if i < 0 {
		return
	}
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		w := rest[j]
		if !w.Literal {
			if w.mayBeOption() {
				a.unknownWrite("go test -args is given "+quote(w.Text)+", which may be a -test. flag that writes a file", fr)
				a.unknownRead("go test -args is given "+quote(w.Text), fr)
			}
			continue
		}
		n, value, hasValue := strings.Cut(strings.TrimLeft(w.Text, "-"), "=")
		if !strings.HasPrefix(w.Text, "-") || !strings.HasPrefix(n, "test.") {
			continue
		}
		e, ok := goTestFlags[strings.TrimPrefix(n, "test.")]
		if !ok {
			e, ok = goTestFlags[n]
		}
		if !ok {
			a.fail(CodeUnknownOption, "go test -args is given the test flag %s, which the gate does not model", quote(w.Text))
			return
		}
		var v word
		switch {
		case hasValue:
			v = literalWord(value)
		case goValueFlags[strings.TrimPrefix(n, "test.")] || e != noFile:
			if j+1 >= len(rest) {
				return
			}
			j++
			v = rest[j]
		default:
			continue
		}
		a.effect("go test", w.Text, e, v, fr)
	}
}

// goToolFlagEffects are the flags of the compiler, linker and assembler
// that -gcflags, -ldflags and -asmflags may pass, by what their value is;
// true in goToolFlagValues when the value may be the next token.
var goToolFlagEffects = map[string]map[string]effect{
	"-gcflags": {"N": noFile, "l": noFile, "m": noFile, "S": noFile, "B": noFile, "C": noFile, "e": noFile,
		"h": noFile, "w": noFile, "W": noFile, "K": noFile, "L": noFile, "r": noFile, "race": noFile, "msan": noFile,
		"asan": noFile, "shared": noFile, "dynlink": noFile, "std": noFile, "complete": noFile, "live": noFile,
		"wb": noFile, "spectre": noFile, "lang": noFile, "trimpath": noFile, "d": noFile, "c": noFile,
		"cpuprofile": writesFile, "memprofile": writesFile, "memprofilerate": noFile, "trace": writesFile,
		"blockprofile": writesFile, "mutexprofile": writesFile, "asmhdr": writesFile, "bench": writesFile,
		"importcfg": readsFile, "embedcfg": readsFile, "pgoprofile": readsFile, "I": readsFile, "D": noFile,
		"p": noFile, "buildid": noFile, "goversion": noFile, "dwarf": noFile, "dwarflocationlists": noFile,
		"smallframes": noFile, "nolocalimports": noFile, "errorurl": noFile, "json": writesDir, "v": noFile,
		"t": noFile, "installsuffix": noFile, "linkobj": writesFile, "symabis": readsFile, "pack": noFile,
		"coveragecfg": readsFile, "env": noFile, "+": noFile, "%": noFile, "E": noFile, "G": noFile},
	"-ldflags": {"s": noFile, "w": noFile, "X": noFile, "linkmode": noFile, "buildid": noFile, "buildmode": noFile,
		"H": noFile, "r": noFile, "R": noFile, "T": noFile, "E": noFile, "B": noFile, "compressdwarf": noFile,
		"strictdups": noFile, "installsuffix": noFile, "L": readsFile, "I": noFile, "tmpdir": writesDir,
		"o": writesFile, "cpuprofile": writesFile, "memprofile": writesFile, "memprofilerate": noFile,
		"trace": writesFile, "benchmark": noFile, "benchmarkprofile": writesFile, "v": noFile, "race": noFile,
		"msan": noFile, "asan": noFile, "c": noFile, "d": noFile, "f": noFile, "g": noFile, "h": noFile,
		"u": noFile, "n": noFile, "a": noFile, "dumpdep": noFile, "checklinkname": noFile, "pruneldflags": noFile,
		"bindnow": noFile, "aslr": noFile, "debugtramp": noFile, "funcalign": noFile, "linkshared": noFile,
		"importcfg": readsFile, "pluginpath": noFile, "randlayout": noFile, "debugtextsize": noFile,
		"k": noFile, "libgcc": noFile, "capturehostobjs": writesDir, "dumpdep=": noFile},
	"-asmflags": {"I": readsFile, "D": noFile, "S": noFile, "V": noFile, "debug": noFile, "dynlink": noFile,
		"e": noFile, "gensymabis": noFile, "o": writesFile, "p": noFile, "shared": noFile, "spectre": noFile,
		"trimpath": noFile, "compiling-runtime": noFile, "linkshared": noFile, "v": noFile, "std": noFile},
	"-gccgoflags": {},
}

// goToolValueFlags are the tool flags whose value may be the next token.
var goToolValueFlags = map[string]bool{"X": true, "I": true, "D": true, "L": true, "p": true, "o": true,
	"H": true, "r": true, "R": true, "T": true, "E": true, "B": true, "importcfg": true, "embedcfg": true,
	"tmpdir": true, "cpuprofile": true, "memprofile": true, "trace": true, "buildid": true, "installsuffix": true,
	"asmhdr": true, "symabis": true, "linkobj": true, "lang": true, "trimpath": true, "d": true, "c": true,
	"pgoprofile": true, "coveragecfg": true, "libgcc": true, "pluginpath": true, "goversion": true}

// goToolFlags judges the value of -gcflags, -ldflags or -asmflags: an
// optional PATTERN= prefix, then the tool's own flags, each judged by its
// table; -extld, -extldflags and -extar name or configure a program the
// linker runs and are refused.
func (a *analyzer) goToolFlags(opt, value string, fr frame) {
	table := goToolFlagEffects[opt]
	if i := strings.IndexByte(value, '='); i > 0 && !strings.HasPrefix(value, "-") {
		value = value[i+1:] // all=-N -l, example.com/...=-m
	}
	tokens := strings.Fields(strings.NewReplacer("'", " ", `"`, " ").Replace(value))
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		if !strings.HasPrefix(t, "-") {
			continue // a value of the previous flag, or a bare word
		}
		n, v, hasValue := strings.Cut(strings.TrimLeft(t, "-"), "=")
		switch n {
		case "extld", "extldflags", "extar":
			a.refuseOption("go", "%s %s names a program the linker runs, or its flags", opt, quote(t))
			return
		}
		e, ok := table[n]
		if !ok {
			a.fail(CodeUnknownOption, "go %s is given the tool flag %s, which the gate does not model", opt, quote(t))
			return
		}
		if !hasValue && goToolValueFlags[n] && i+1 < len(tokens) && !strings.HasPrefix(tokens[i+1], "-") {
			i++
			v, hasValue = tokens[i], true
		}
		if n == "d" && (strings.Contains(v, "dump") || strings.Contains(v, "html")) {
			a.unknownWrite("go "+opt+" "+quote(t)+" writes debugging output", fr)
		}
		if n == "json" && hasValue {
			if _, dir, ok := strings.Cut(v, "file://"); ok {
				v = dir
			} else {
				continue
			}
		}
		if hasValue && e != noFile {
			a.effect("go", opt, e, literalWord(v), fr)
		}
	}
	if opt == "-gccgoflags" && strings.TrimSpace(value) != "" {
		a.refuseOption("go", "-gccgoflags passes flags to gccgo, which the gate does not model")
	}
}

// goModWork judges go mod and go work: what they write (go.mod, go.sum,
// go.work, vendor) and the directories a replace or use brings into the
// build.
func (a *analyzer) goModWork(sub string, args []word, fr frame) {
	if len(args) == 0 {
		return
	}
	verb := args[0]
	if !verb.Literal {
		a.refuseOption("go", "%s is given %s, which is computed when the line runs", sub, quote(verb.Text))
		return
	}
	flags := map[string]map[string]effect{
		"mod download": {"x": noFile, "json": noFile, "reuse": readsFile, "modcacherw": noFile},
		"mod edit": {"fmt": noFile, "go": noFile, "toolchain": noFile, "module": noFile, "require": noFile,
			"droprequire": noFile, "exclude": noFile, "dropexclude": noFile, "replace": noFile, "dropreplace": noFile,
			"retract": noFile, "dropretract": noFile, "godebug": noFile, "dropgodebug": noFile, "tool": noFile,
			"droptool": noFile, "ignore": noFile, "dropignore": noFile, "print": noFile, "json": noFile},
		"mod graph":   {"go": noFile, "x": noFile},
		"mod init":    {},
		"mod tidy":    {"e": noFile, "v": noFile, "x": noFile, "go": noFile, "compat": noFile, "diff": noFile},
		"mod vendor":  {"e": noFile, "v": noFile, "o": writesDir},
		"mod verify":  {},
		"mod why":     {"m": noFile, "vendor": noFile},
		"work init":   {},
		"work use":    {"r": noFile},
		"work edit":   {"fmt": noFile, "use": noFile, "dropuse": noFile, "replace": noFile, "dropreplace": noFile, "go": noFile, "toolchain": noFile, "godebug": noFile, "dropgodebug": noFile, "print": noFile, "json": noFile},
		"work sync":   {},
		"work vendor": {"e": noFile, "v": noFile, "o": writesDir},
	}[sub+" "+verb.Text]
	if flags == nil {
		a.fail(CodeUnknownOption, "go %s %s is not a subcommand the gate models", sub, quote(verb.Text))
		return
	}
	name := "go " + sub + " " + verb.Text
	p, _ := goArgs(args[1:], flags, false, true, nil)
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "%s is given the flag %s, which the gate does not model", name, quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption("go", "%s is given %s, which is computed when the line runs and may be a flag", sub, quote(p.computed))
		return
	}
	for _, o := range p.opts {
		if !o.hasArg {
			continue
		}
		switch o.name {
		case "-replace", "-use":
			// a replacement or used module on disk is built with the rest
			if _, dir, ok := strings.Cut(o.arg.Text, "="); ok && o.name == "-replace" {
				if strings.HasPrefix(dir, ".") || strings.HasPrefix(dir, "/") {
					a.read(literalWord(dir), fr)
				}
			} else if o.name == "-use" {
				a.read(o.arg, fr)
			}
		default:
			a.effect(name, o.name, flags[strings.TrimPrefix(o.name, "-")], o.arg, fr)
		}
	}
	file := "go.mod"
	if sub == "work" {
		file = "go.work"
	}
	switch verb.Text {
	case "edit":
		if !p.has("-print", "-json") {
			if len(p.operands) > 0 {
				file = p.operands[0].Text
				a.write(p.operands[0], false, fr)
			} else {
				a.write(literalWord(file), false, fr)
			}
		}
	case "init", "tidy", "use":
		a.write(literalWord(file), false, fr)
		if verb.Text == "tidy" {
			a.write(literalWord("go.sum"), false, fr)
		}
		if sub == "work" {
			for _, w := range p.operands {
				a.read(w, fr)
			}
		}
	case "vendor":
		if !p.has("-o") {
			a.writeTree(literalWord("vendor"), false, true, fr)
		}
	case "sync":
		a.unknownWrite("go work sync writes the go.mod of every module the workspace uses", fr)
	}
	a.readPlace(literalWord("."), fr)
}

// goDistTools are the tools of the Go distribution go tool may run, with
// their flags (go doc cmd/NAME) by what their value is. compile, link,
// asm, cgo and dist are the build's own and are not modeled.
var goDistTools = map[string]map[string]effect{
	"cover":      {"func": readsFile, "html": readsFile, "mode": noFile, "o": writesFile, "var": noFile, "pkgcfg": readsFile, "outfilelist": readsList, "V": noFile},
	"covdata":    nil,
	"nm":         {"n": noFile, "size": noFile, "sort": noFile, "type": noFile},
	"objdump":    {"s": noFile, "S": noFile, "gnu": noFile},
	"addr2line":  {},
	"buildid":    {"w": noFile},
	"test2json":  {"p": noFile, "t": noFile},
	"doc":        {"all": noFile, "c": noFile, "cmd": noFile, "short": noFile, "src": noFile, "u": noFile},
	"fix":        {"diff": noFile, "force": noFile, "go": noFile, "r": noFile},
	"vet":        {},
	"preprofile": {"i": readsFile, "o": writesFile, "V": noFile},
	"pack":       nil,
	"pprof": {"output": writesFile, "text": noFile, "top": noFile, "list": noFile, "peek": noFile, "tree": noFile,
		"traces": noFile, "raw": noFile, "proto": noFile, "svg": noFile, "png": noFile, "pdf": noFile, "dot": noFile,
		"nodecount": noFile, "nodefraction": noFile, "edgefraction": noFile, "focus": noFile, "ignore": noFile,
		"show": noFile, "hide": noFile, "tagfocus": noFile, "tagignore": noFile, "sample_index": noFile,
		"mean": noFile, "cum": noFile, "flat": noFile, "lines": noFile, "functions": noFile, "files": noFile,
		"addresses": noFile, "unit": noFile, "seconds": noFile, "symbolize": noFile, "source_path": readsFile,
		"trim_path": noFile, "diff_base": readsFile, "base": readsFile, "drop_negative": noFile, "relative_percentages": noFile,
		"noinlines": noFile, "call_tree": noFile, "compact_labels": noFile, "divide_by": noFile, "granularity": noFile,
		"sort": noFile, "weblist": noFile, "disasm": noFile, "tags": noFile, "timeout": noFile, "no_browser": noFile},
}

// goTool judges go tool NAME: a tool of the distribution by its own
// model, any other (a tool of the module, or a program go builds) refused.
func (a *analyzer) goTool(args []word, fr frame) {
	if len(args) == 0 {
		return
	}
	t := args[0]
	if !t.Literal {
		a.refuseOption("go", "tool is given %s, which is computed when the line runs", quote(t.Text))
		return
	}
	flags, ok := goDistTools[t.Text]
	if !ok {
		a.refuseOption("go", "tool %s runs a tool the gate does not model (a module's tool is code it builds and runs; compile, link, asm, cgo write and run what their own flags say)", quote(t.Text))
		return
	}
	name := "go tool " + t.Text
	switch t.Text {
	case "covdata":
		a.goCovdata(args[1:], fr)
		return
	case "pack":
		a.goPack(args[1:], fr)
		return
	}
	kinds := map[string]argKind{}
	for n, e := range flags {
		kinds[n] = noArg
		if e != noFile || goValueFlags[n] || slices.Contains([]string{"mode", "var", "nodecount", "nodefraction",
			"edgefraction", "focus", "ignore", "show", "hide", "tagfocus", "tagignore", "sample_index", "unit",
			"seconds", "symbolize", "trim_path", "divide_by", "granularity", "sort", "timeout", "p", "type", "go", "r"}, n) {
			kinds[n] = requiredArg
		}
	}
	p := goFlags(kinds, append([]word{t}, args[1:]...), t.Text != "test2json")
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "%s is given the flag %s, which the gate does not model", name, quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption("go", "tool %s is given %s, which is computed when the line runs and may be a flag", t.Text, quote(p.computed))
		return
	}
	for _, o := range p.opts {
		if o.hasArg {
			a.effect(name, o.name, flags[strings.TrimPrefix(o.name, "-")], o.arg, fr)
		}
	}
	switch t.Text {
	case "test2json":
		// test2json runs the test binary it is given.
		if len(p.operands) > 0 {
			a.exec(p.operands, nil, fr.wrapped("go"), byProgram)
		}
	case "buildid":
		for _, w := range p.operands {
			if p.has("-w") {
				a.write(w, false, fr)
			} else {
				a.read(w, fr)
			}
		}
	case "pprof":
		for _, w := range p.operands {
			if !strings.Contains(w.Text, "://") {
				a.read(w, fr)
			}
		}
	case "doc", "vet", "fix":
		a.readPlace(literalWord("."), fr)
	default:
		for _, w := range p.operands {
			a.read(w, fr)
		}
	}
}

// goCovdata: go tool covdata MODE -i=DIRS [-o OUT]: -i reads, -o writes.
func (a *analyzer) goCovdata(args []word, fr frame) {
	if len(args) == 0 {
		return
	}
	p := goFlags(map[string]argKind{"i": requiredArg, "o": requiredArg, "pkg": requiredArg, "v": requiredArg,
		"cpuprofile": requiredArg, "memprofile": requiredArg, "hw": noArg}, args, true)
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "go tool covdata is given the flag %s, which the gate does not model", quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption("go", "tool covdata is given %s, which is computed when the line runs", quote(p.computed))
		return
	}
	for _, o := range p.opts {
		switch o.name {
		case "-i":
			for _, d := range strings.Split(o.arg.Text, ",") {
				if o.arg.Literal {
					a.read(literalWord(d), fr)
				} else {
					a.unknownRead("go tool covdata -i "+quote(o.arg.Text), fr)
				}
			}
		case "-o", "-cpuprofile", "-memprofile":
			a.writeTree(o.arg, false, true, fr)
		}
	}
}

// goPack: go tool pack OP FILE.a [NAME…]: c and r write the archive from
// the named files, x writes the members into the working directory.
func (a *analyzer) goPack(args []word, fr frame) {
	if len(args) < 2 || !args[0].Literal {
		if len(args) > 0 && !args[0].Literal {
			a.refuseOption("go", "tool pack is given %s, which is computed when the line runs", quote(args[0].Text))
		}
		return
	}
	op, archive, names := strings.TrimPrefix(args[0].Text, "-"), args[1], args[2:]
	switch {
	case strings.ContainsAny(op, "cr"):
		a.write(archive, false, fr)
		for _, n := range names {
			a.read(n, fr)
		}
	case strings.Contains(op, "x"):
		a.read(archive, fr)
		a.unknownWrite("go tool pack x writes the archive's members into the working directory", fr)
	case strings.ContainsAny(op, "tp"):
		a.read(archive, fr)
	default:
		a.fail(CodeUnknownOption, "go tool pack is given the operation %s, which the gate does not model", quote(args[0].Text))
	}
}
