package command

import (
	"strings"
)

// rgModel is ripgrep's (rg --help, ripgrep 14): the first operand is the
// pattern unless -e or -f gives one, or --files or --type-list make it
// search nothing; with no path it searches the working directory.
func rgModel() *model {
	negatable := []string{"binary", "block-buffered", "byte-offset", "column", "context-separator", "crlf",
		"encoding", "fixed-strings", "follow", "glob-case-insensitive", "hidden", "ignore-file-case-insensitive",
		"include-zero", "invert-match", "line-buffered", "max-columns-preview", "mmap", "multiline",
		"multiline-dotall", "one-file-system", "pcre2", "pcre2-unicode", "pre", "search-zip", "sort-files",
		"stop-on-nonmatch", "text", "trim", "auto-hybrid-regex", "heading", "hyperlink-format", "unicode",
		"require-git", "config", "messages", "ignore-messages", "line-number", "filename"}
	long := []string{"after-context=", "before-context=", "context=", "case-sensitive", "color=", "colour=",
		"colors=", "count", "count-matches", "debug", "dfa-size-limit=", "engine=", "field-context-separator=",
		"field-match-separator=", "file=", "files", "files-with-matches", "files-without-match", "generate=",
		"glob=", "help", "iglob=", "ignore-case", "ignore-file=", "json", "line-regexp", "max-columns=",
		"max-count=", "max-depth=", "maxdepth=", "max-filesize=", "no-ignore", "no-ignore-dot",
		"no-ignore-exclude", "no-ignore-files", "no-ignore-global", "no-ignore-parent", "no-ignore-vcs", "null",
		"null-data", "only-matching", "passthru", "passthrough", "path-separator=", "pcre2-version",
		"hostname-bin=", "pre-glob=", "pretty", "quiet", "regex-size-limit=", "regexp=", "replace=",
		"smart-case", "sort=", "sortr=", "stats", "threads=", "trace", "type=", "type-add=", "type-clear=",
		"type-list", "type-not=", "unrestricted", "version", "vimgrep", "with-filename", "word-regexp",
		"no-heading", "no-filename", "no-line-number", "no-messages", "no-ignore-messages", "no-config",
		"no-require-git", "no-unicode", "no-pcre2-unicode", "no-hyperlink"}
	for _, n := range negatable {
		long = append(long, n, "no-"+n)
	}
	long = append(long, "encoding=", "pre=", "hyperlink-format=")
	m := reader(spec("A:B:C:E:M:T:d:e:f:g:j:m:r:t:abcFhHiIlLnNopPqsSuUvVwxz0.", long...),
		merge(on(readsFile, "-f", "--file", "--ignore-file"), on(runsProgram, "--pre", "--hostname-bin")))
	m.pattern, m.given = true, []string{"-e", "--regexp", "-f", "--file", "--files", "--type-list"}
	m.bare = bareCwd
	return m
}

// findPrimaries are find's options, tests and actions (GNU findutils
// 4.9, find(1)) by the number of words they take after them.
var findPrimaries = map[string]int{
	"-d": 0, "-depth": 0, "-follow": 0, "-help": 0, "--help": 0, "-ignore_readdir_race": 0, "-maxdepth": 1,
	"-mindepth": 1, "-mount": 0, "-noignore_readdir_race": 0, "-noleaf": 0, "-version": 0, "--version": 0,
	"-xdev": 0, "-regextype": 1, "-warn": 0, "-nowarn": 0, "-files0-from": 1, "-daystart": 0,
	"-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-context": 1, "-ctime": 1, "-empty": 0,
	"-executable": 0, "-false": 0, "-fstype": 1, "-gid": 1, "-group": 1, "-ilname": 1, "-iname": 1, "-inum": 1,
	"-ipath": 1, "-iregex": 1, "-iwholename": 1, "-links": 1, "-lname": 1, "-mmin": 1, "-mtime": 1, "-name": 1,
	"-newer": 1, "-nogroup": 0, "-nouser": 0, "-path": 1, "-perm": 1, "-readable": 0, "-regex": 1,
	"-samefile": 1, "-size": 1, "-true": 0, "-type": 1, "-uid": 1, "-used": 1, "-user": 1, "-wholename": 1,
	"-writable": 0, "-xtype": 1, "-delete": 0, "-fls": 1, "-fprint": 1, "-fprint0": 1, "-fprintf": 2, "-ls": 0,
	"-print": 0, "-print0": 0, "-printf": 1, "-prune": 0, "-quit": 0, "(": 0, ")": 0, "!": 0, "-not": 0,
	"-a": 0, "-and": 0, "-o": 0, "-or": 0, ",": 0,
}

// findReads are find's primaries whose value is a file it reads.
var findReads = map[string]bool{"-anewer": true, "-cnewer": true, "-newer": true, "-samefile": true}

// findModel is find's: a handler, since its arguments are an expression.
func findModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		a.find(words, fr)
		return nil
	}}
}

// sedModel is sed's: the script is a language of its own (sedOptions).
func sedModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		a.sedOptions(words, fr)
		return nil
	}}
}

// jqModel is jq's (jq 1.6–1.7 manual): the first operand is the filter
// unless -f names a file that holds it; --arg and --argjson take two
// words, --slurpfile and --rawfile read the file in their second.
func jqModel() *model {
	m := reader(spec("cnesrjaSCMRL:f:hVb0", "tab", "indent=", "unbuffered", "stream", "stream-errors", "seq",
		"slurp", "raw-input", "null-input", "compact-output", "color-output", "monochrome-output",
		"ascii-output", "sort-keys", "raw-output", "raw-output0", "join-output", "exit-status", "from-file=",
		"arg==", "argjson==", "slurpfile==", "rawfile==", "args", "jsonargs", "help", "version",
		"build-configuration", "debug-dump-disasm", "debug-trace", "binary"),
		on(readsFile, "-f", "--from-file", "-L", "--slurpfile", "--rawfile"))
	m.pattern, m.given = true, []string{"-f", "--from-file"}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		if p.has("-f", "--from-file") || len(p.operands) == 0 {
			return
		}
		// import and include read modules from the library path.
		f := p.operands[0]
		if !f.Literal || strings.Contains(f.Text, "import") || strings.Contains(f.Text, "include") {
			a.unknownRead("jq's filter "+quote(f.Text)+" may import modules from files", fr)
		}
	}
	return m
}

// gofmtFlags are gofmt's flags (go doc cmd/gofmt); flags take a value.
var gofmtFlags = map[string]argKind{"l": noArg, "w": noArg, "d": noArg, "e": noArg, "s": noArg,
	"r": requiredArg, "cpuprofile": requiredArg, "h": noArg, "help": noArg}

// gofmtModel: -w rewrites the files and directories it names, otherwise
// it reads them; with none it reads standard input.
func gofmtModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		p := goFlags(gofmtFlags, words, false)
		if p.unknown != "" {
			a.fail(CodeUnknownOption, "gofmt is given the flag %s, which the gate does not model", quote(p.unknown))
			return nil
		}
		if o := p.get("-cpuprofile"); o != nil {
			a.write(o.arg, false, fr)
		}
		for _, f := range p.operands {
			if p.has("-w") {
				a.write(f, false, fr) // the Go files it names or finds below
			} else {
				a.read(f, fr)
			}
		}
		return nil
	}}
}

// goFlags parses arguments as Go's flag package does: -name, --name,
// -name=value, and -name value for a flag that takes one; the first
// operand ends the flags unless permute. Unknown flags are reported.
func goFlags(flags map[string]argKind, words []word, permute bool) parsedArgs {
	var p parsedArgs
	args := words[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Literal {
			if w.mayBeOption() && p.computed == "" {
				p.computed = w.Text
			}
			p.operands = append(p.operands, w)
			if !permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		}
		t := w.Text
		if t == "--" {
			p.operands = append(p.operands, args[i+1:]...)
			return p
		}
		if len(t) < 2 || t[0] != '-' {
			p.operands = append(p.operands, w)
			if !permute {
				p.operands = append(p.operands, args[i+1:]...)
				return p
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(t[1:], "-"), "=")
		kind, ok := flags[name]
		if !ok {
			p.unknown = t
			return p
		}
		o := parsedOpt{name: "-" + name}
		switch {
		case hasValue:
			o.arg, o.hasArg = literalWord(value), true
		case kind == requiredArg && i+1 < len(args):
			i++
			o.arg, o.hasArg = args[i], true
			if args[i].ifs && p.computed == "" {
				p.computed = args[i].Text
			}
		}
		p.opts = append(p.opts, o)
	}
	return p
}

// makeModel is GNU make's (make --help, make 4.3): -f and -I read, -C
// runs it in another directory, --eval runs make code given on the line,
// -t touches targets, and NAME=value operands are judged like
// assignments. It reads the makefile of the directory it runs in.
func makeModel() *model {
	m := &model{opts: spec("bmBC:dDeE:f:hiI:j::kl::Lno:O::pqrRsStvwW:", "always-make", "directory=", "debug?",
		"environment-overrides", "eval=", "file=", "makefile=", "help", "ignore-errors", "include-dir=", "jobs?",
		"keep-going", "load-average?", "max-load?", "check-symlink-times", "just-print", "dry-run", "recon",
		"old-file=", "assume-old=", "output-sync?", "print-data-base", "question", "no-builtin-rules",
		"no-builtin-variables", "silent", "quiet", "no-silent", "no-keep-going", "stop", "touch", "trace", "version",
		"print-directory", "no-print-directory", "what-if=", "new-file=", "assume-new=", "warn-undefined-variables",
		"shuffle?", "jobserver-style=").permuting(),
		values: merge(on(readsFile, "-f", "--file", "--makefile", "-I", "--include-dir"), on(readsPlace, "-C", "--directory")),
		refuse: map[string]string{"-E": "runs make code given on the line, which the gate does not read",
			"--eval": "runs make code given on the line, which the gate does not read"}}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		for _, w := range p.operands {
			if !w.Literal {
				if w.mayBeOption() || strings.Contains(w.prefix, "=") || w.lead == 0 {
					a.refuseOption("make", "is given %s, which is computed when the line runs and may be an option or an assignment", quote(w.Text))
					return
				}
				continue
			}
			if n, _, isAssign := strings.Cut(w.Text, "="); isAssign {
				n = strings.TrimRight(n, ":+?!")
				if isRiskyEnv(n) {
					a.fail(CodeRiskyEnv, "make %s assigns %s, which can make make run code the gate cannot see", quote(w.Text), n)
					return
				}
			}
		}
		if !p.has("-C", "--directory") {
			a.readPlace(literalWord("."), fr)
		}
		if p.has("-t", "--touch") {
			a.unknownWrite("make -t touches the targets its makefile names", fr)
		}
	}
	return m
}

// patchModel is GNU patch's (patch --help, patch 2.7): it writes the
// files the patch names, which only the patch says, unless an operand
// names the file to patch; -i reads, -o and -r write.
func patchModel() *model {
	m := &model{opts: spec("bcd:D:eEfF:g:i:lnNo:p:r:RsStTuvV:Y:z:Z", "strip=", "fuzz=", "ignore-whitespace",
		"context", "ed", "normal", "unified", "forward", "reverse", "input=", "output=", "reject-file=", "ifdef=",
		"remove-empty-files", "set-utc", "set-time", "backup", "version-control=", "prefix=", "basename-prefix=",
		"suffix=", "get=", "batch", "force", "silent", "quiet", "directory=", "merge?", "dry-run", "posix",
		"verbose", "binary", "follow-symlinks", "backup-if-mismatch", "no-backup-if-mismatch", "quoting-style=",
		"reject-format=", "read-only=", "help", "version").permuting(),
		values: merge(on(readsFile, "-i", "--input"), on(writesFile, "-o", "--output", "-r", "--reject-file"))}
	m.custom = func(a *analyzer, name string, p *parsedArgs, fr frame) {
		ops := p.operands
		if len(ops) > 1 {
			a.read(ops[1], fr)
		}
		switch {
		case p.has("--dry-run"):
		case len(ops) > 0 && !p.has("-d", "--directory"):
			a.write(ops[0], false, fr)
		default:
			a.unknownWrite("patch writes the files its patch names", fr)
		}
	}
	return m
}

// awkFlags are the options of gawk (gawk --help, 5.2) and mawk (mawk -W
// usage) by whether they take a value.
var awkModelSpec = spec("bcCd::D::e:E:f:F:ghi:Il:L::MnNo::Op::PrsStv:VW:", "file=", "field-separator=", "assign=",
	"source=", "exec=", "include=", "load=", "characters-as-bytes", "traditional", "copyright", "dump-variables?",
	"debug?", "gen-pot", "help", "lint?", "bignum", "non-decimal-data", "use-lc-numeric", "optimize",
	"pretty-print?", "profile?", "posix", "re-interval", "no-optimize", "sandbox", "lint-old", "version", "csv",
	"trace")

// awkModel: awk's program is text the gate reads (awkProgram); -f and
// -E run a file it cannot see unless --sandbox, -l loads a shared
// library, -d, -o and -p write files, and operands are files to read
// unless they assign a variable (NAME=value).
func awkModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		p := awkModelSpec.parseStrict(words, false, nil)
		if p.unknown != "" {
			a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", name, quote(p.unknown))
			return nil
		}
		if p.computed != "" {
			a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as -f", quote(p.computed))
			return nil
		}
		sandbox := p.has("-S", "--sandbox")
		var code []word
		for _, o := range p.opts {
			switch o.name {
			case "-l", "--load":
				a.refuseOption(name, "%s loads a shared library, which runs code", o.name)
				return nil
			case "-f", "--file", "-E", "--exec", "-i", "--include":
				if !sandbox {
					a.refuseOption(name, "%s runs the program in %s, which the gate does not read (gawk --sandbox forbids what it could not judge)", o.name, quote(o.arg.Text))
					return nil
				}
				a.read(o.arg, fr)
				code = append(code, literalWord(""))
			case "-W":
				a.refuseOption(name, "-W %s sets an option the gate does not model", quote(o.arg.Text))
				return nil
			case "-e", "--source":
				code = append(code, o.arg)
			case "-d", "--dump-variables", "-o", "--pretty-print", "-p", "--profile":
				if o.hasArg {
					a.write(o.arg, false, fr)
				} else {
					a.unknownWrite(name+" "+o.name+" writes a file of its own naming", fr)
				}
			}
		}
		ops := p.operands
		if len(code) == 0 && len(ops) > 0 {
			code, ops = ops[:1], ops[1:]
		}
		for _, c := range code {
			if sandbox {
				break
			}
			if !c.Literal {
				a.fail(CodeDynamicCode, "%s runs the program text %s, which is computed when the line runs", name, quote(c.Text))
				return nil
			}
			switch eff := awkProgram(c.Text); {
			case eff.runs != "":
				a.refuseOption(name, "program %s %s", quote(c.Text), eff.runs)
				return nil
			default:
				if eff.reads {
					a.unknownRead(name+" program "+quote(c.Text)+" reads files with getline", fr)
				}
				for _, f := range eff.writes {
					a.write(literalWord(f), eff.appends, fr)
				}
				if eff.unknownWrites {
					a.unknownWrite(name+" program "+quote(c.Text)+" prints to files it names", fr)
				}
			}
		}
		for _, w := range ops {
			switch {
			case w.Literal && w.Text == "-":
			case w.Literal && awkAssignment(w.Text):
			case !w.Literal && strings.Contains(w.prefix, "="):
			default:
				a.read(w, fr)
			}
		}
		return nil
	}}
}

// awkAssignment reports an awk operand of the form NAME=value, which sets
// a variable instead of naming a file.
func awkAssignment(s string) bool {
	n, _, ok := strings.Cut(s, "=")
	return ok && isName(n)
}

// awkEffects is what an awk program does beyond reading its input.
type awkEffects struct {
	runs          string   // why it runs a command: system(), a pipe, @load
	reads         bool     // getline from a file
	writes        []string // print > "file" with a literal file
	appends       bool
	unknownWrites bool // print > expr
}

// awkProgram reads an awk program's tokens: system(), pipes (| and |&),
// @load and @include run code; getline < file reads; print and printf
// with > or >> write. Strings, regular expressions and comments are
// skipped, so /a|b/ and "x > y" are no pipes or redirections.
func awkProgram(src string) awkEffects {
	var eff awkEffects
	operand := false // the previous token ends an operand: / is division
	inPrint, depth, printDepth := false, 0, 0
	i := 0
	readString := func() (string, bool) {
		var b strings.Builder
		for i++; i < len(src); i++ {
			switch src[i] {
			case '\\':
				i++
				if i < len(src) {
					b.WriteByte(src[i])
				}
			case '"':
				i++
				return b.String(), true
			default:
				b.WriteByte(src[i])
			}
		}
		return b.String(), false
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"':
			readString()
			operand = true
			continue
		case c == '/' && !operand:
			inClass := false
			for i++; i < len(src); i++ {
				if src[i] == '\\' {
					i++
					continue
				}
				if src[i] == '[' {
					inClass = true
				} else if src[i] == ']' {
					inClass = false
				} else if src[i] == '/' && !inClass {
					break
				}
			}
			i++
			operand = true
			continue
		case c == '@':
			j := i + 1
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			if w := src[i+1 : j]; w == "load" || w == "include" {
				eff.runs = "loads code with @" + w
				return eff
			}
			i = j
			continue
		case isNameByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			switch w := src[i:j]; w {
			case "system":
				eff.runs = "runs a shell command with system()"
				return eff
			case "getline":
				eff.reads = true
			case "print", "printf":
				inPrint, printDepth = true, depth
			}
			i = j
			operand = true
			continue
		case c >= '0' && c <= '9' || c == '.':
			for i < len(src) && (isNameByte(src[i]) || src[i] == '.') {
				i++
			}
			operand = true
			continue
		case c == '|':
			if i+1 < len(src) && src[i+1] == '|' {
				i += 2
				operand = false
				continue
			}
			eff.runs = "runs a shell command through a pipe (|)"
			return eff
		case c == '(' || c == '[':
			depth++
			operand = false
		case c == ')' || c == ']':
			depth--
			operand = true
			i++
			continue
		case c == ';' || c == '\n' || c == '{' || c == '}':
			inPrint = false
			operand = false
		case c == '>' && inPrint && depth == printDepth:
			appends := i+1 < len(src) && src[i+1] == '>'
			if appends {
				i++
			}
			i++
			for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
				i++
			}
			if i < len(src) && src[i] == '"' {
				if f, ok := readString(); ok && awkTargetEnds(src[i:]) {
					if f != "/dev/stdout" && f != "/dev/stderr" && f != "-" {
						eff.writes = append(eff.writes, f)
						eff.appends = eff.appends || appends
					}
					continue
				}
			}
			eff.unknownWrites = true
			continue
		case c == ' ' || c == '\t' || c == '\\':
		default:
			operand = false
		}
		i++
	}
	return eff
}

// awkTargetEnds reports that a redirection's string target is the whole
// target: the statement ends after it.
func awkTargetEnds(rest string) bool {
	rest = strings.TrimLeft(rest, " \t")
	return rest == "" || strings.IndexByte(";}\n", rest[0]) >= 0
}

// tarModel is GNU tar's (tar --help, tar 1.34): the mode says whether the
// archive (-f) is read or written and whether the operands are files it
// reads (-c, -r, -u) or members it writes below the working directory
// or -C DIR (-x); -T reads a list of files; options that run programs are
// refused.
func tarModel() *model {
	return &model{handler: func(a *analyzer, name string, words []word, fr frame) []word {
		a.tar(name, words, fr)
		return nil
	}}
}

var tarSpec = spec("Acdrtuxg:GnSC:T:X:kUWOmpsf:F:L:Mb:BiH:V:aI:jJzZhK:N:PlRvwo", "catenate", "concatenate",
	"create", "delete", "diff", "compare", "append", "test-label", "list", "update", "extract", "get",
	"check-device", "listed-incremental=", "incremental", "hole-detection=", "ignore-failed-read", "level=",
	"no-check-device", "no-seek", "seek", "occurrence?", "sparse-version=", "sparse", "add-file=", "directory=",
	"exclude=", "exclude-backups", "exclude-caches", "exclude-caches-all", "exclude-caches-under",
	"exclude-ignore=", "exclude-ignore-recursive=", "exclude-tag=", "exclude-tag-all=", "exclude-tag-under=",
	"exclude-vcs", "exclude-vcs-ignores", "no-null", "no-recursion", "no-unquote", "no-verbatim-files-from",
	"null", "recursion", "files-from=", "unquote", "verbatim-files-from", "exclude-from=", "anchored",
	"ignore-case", "no-anchored", "no-ignore-case", "no-wildcards", "no-wildcards-match-slash", "wildcards",
	"wildcards-match-slash", "keep-directory-symlink", "keep-newer-files", "keep-old-files", "no-overwrite-dir",
	"one-top-level?", "overwrite", "overwrite-dir", "recursive-unlink", "remove-files", "skip-old-files",
	"unlink-first", "verify", "ignore-command-error", "no-ignore-command-error", "to-stdout", "to-command=",
	"atime-preserve?", "clamp-mtime", "delay-directory-restore", "group=", "group-map=", "mode=", "mtime=",
	"touch", "no-delay-directory-restore", "no-same-owner", "no-same-permissions", "numeric-owner", "owner=",
	"owner-map=", "preserve-permissions", "same-permissions", "same-owner", "sort=", "preserve-order",
	"same-order", "acls", "no-acls", "no-selinux", "no-xattrs", "selinux", "xattrs", "xattrs-exclude=",
	"xattrs-include=", "force-local", "file=", "info-script=", "new-volume-script=", "tape-length=",
	"multi-volume", "rmt-command=", "rsh-command=", "volno-file=", "blocking-factor=", "read-full-records",
	"ignore-zeros", "record-size=", "format=", "old-archive", "portability", "pax-option=", "posix", "label=",
	"auto-compress", "use-compress-program=", "bzip2", "xz", "lzip", "lzma", "lzop", "no-auto-compress", "zstd",
	"gzip", "gunzip", "ungzip", "compress", "uncompress", "backup?", "hard-dereference", "dereference",
	"starting-file=", "newer-mtime=", "newer=", "after-date=", "one-file-system", "absolute-names", "suffix=",
	"strip-components=", "transform=", "xform=", "checkpoint?", "checkpoint-action=", "full-time",
	"index-file=", "check-links", "no-quote-chars=", "quote-chars=", "quoting-style=", "block-number",
	"show-defaults", "show-omitted-dirs", "show-snapshot-field-ranges", "show-transformed-names",
	"show-stored-names", "totals?", "utc", "verbose", "warning=", "interactive", "confirmation", "help",
	"restrict", "usage", "version").permuting()

// tarRunners are tar's options that run a program.
var tarRunners = map[string]string{
	"-I": "runs a compression program", "--use-compress-program": "runs a compression program",
	"-F": "runs a script at the end of each volume", "--info-script": "runs a script at the end of each volume",
	"--new-volume-script": "runs a script at the end of each volume", "--to-command": "runs a command for each file",
	"--checkpoint-action": "can run a command at checkpoints", "--rsh-command": "runs a remote shell",
	"--rmt-command": "runs a remote tape server",
}

func (a *analyzer) tar(name string, words []word, fr frame) {
	args := words[1:]
	// tar xzf a.tgz: the first word holds old-style option letters, whose
	// values follow in order.
	if len(args) > 0 && args[0].Literal && args[0].Text != "" && !strings.HasPrefix(args[0].Text, "-") {
		tarSpec.build()
		var expanded []word
		rest := args[1:]
		for _, c := range []byte(args[0].Text) {
			kind, ok := tarSpec.short[c]
			if !ok {
				a.fail(CodeUnknownOption, "%s is given the option letter %q in %s, which the gate does not model", name, c, quote(args[0].Text))
				return
			}
			expanded = append(expanded, literalWord("-"+string(c)))
			if kind == requiredArg && len(rest) > 0 {
				expanded = append(expanded, rest[0])
				rest = rest[1:]
			}
		}
		args = append(expanded, rest...)
	}
	p := tarSpec.parseStrict(append([]word{words[0]}, args...), false, nil)
	switch {
	case p.unknown != "":
		a.fail(CodeUnknownOption, "%s is given the option %s, which the gate does not model", name, quote(p.unknown))
		return
	case p.computed != "":
		a.refuseOption(name, "is given %s, which is computed when the line runs and may be an option such as --to-command", quote(p.computed))
		return
	}
	for _, o := range p.opts {
		if why, ok := tarRunners[o.name]; ok {
			a.refuseOption(name, "%s %s", o.name, why)
			return
		}
	}
	create := p.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete")
	extract := p.has("-x", "--extract", "--get")
	if o := p.get("-f", "--file"); o != nil && !(o.arg.Literal && o.arg.Text == "-") {
		if i := strings.IndexByte(o.arg.Text, ':'); i > 0 && !strings.Contains(o.arg.Text[:i], "/") && !p.has("--force-local") {
			a.refuseOption(name, "-f %s names a remote archive, which tar reaches by running a remote shell", quote(o.arg.Text))
			return
		}
		if create {
			a.write(o.arg, false, fr)
		}
		if !p.has("-c", "--create") {
			a.read(o.arg, fr)
		}
	}
	for _, o := range p.opts {
		switch o.name {
		case "-T", "--files-from":
			a.effect(name, o.name, readsList, o.arg, fr)
		case "-X", "--exclude-from", "-N", "--newer", "--after-date", "--newer-mtime":
			a.read(o.arg, fr)
		case "-g", "--listed-incremental", "--index-file", "--volno-file":
			a.write(o.arg, false, fr)
			a.read(o.arg, fr)
		case "-C", "--directory":
			a.read(o.arg, fr)
		}
	}
	dir := literalWord(".")
	if o := p.get("-C", "--directory"); o != nil {
		dir = o.arg
	}
	switch {
	case extract && !p.has("-O", "--to-stdout"):
		a.write(dir, false, fr)
		a.unknownWrite(name+" extracts the members its archive names", fr)
	case create:
		if p.has("--remove-files") {
			for _, w := range p.operands {
				a.writeTree(w, false, true, fr)
			}
		}
		for _, w := range p.operands {
			if p.has("-C", "--directory") && w.Literal && !strings.HasPrefix(w.Text, "/") {
				continue // relative to -C DIR, read whole above
			}
			a.read(w, fr)
		}
	case p.has("-d", "--diff", "--compare"):
		a.read(dir, fr)
	}
}
