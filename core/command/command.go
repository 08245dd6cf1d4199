package command

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Analysis is what a command line would do, as far as the gate is concerned.
type Analysis struct {
	// Commands lists every simple command the line can run, wrappers
	// unwrapped. A command's own substitutions are listed before it, since
	// the shell runs them first; otherwise the order is the source order.
	Commands []Command `json:"commands"`
	// Writes lists every file a redirection can write, excluding /dev/null,
	// /dev/stdout, /dev/stderr, /dev/tty and /dev/fd/N, and the files
	// granted programs write because of their options or arguments (sort -o,
	// sed -i, touch, mkdir, go build -o …).
	Writes []Write `json:"writes"`
	// Reads lists every file the line reads through a redirection (<, <>,
	// $(<file)) and the files granted programs read because of their
	// options or arguments (grep -f, sed r, cat FILE …).
	Reads []Read `json:"reads"`
}

// Read is a file a redirection or a program opens for reading. Paths under
// /dev/tcp/ and /dev/udp/ are network connections bash opens itself; they
// are listed as reads or writes like any other target.
type Read struct {
	// Path is the file after quote removal, joined onto the directory the
	// line changed to with cd when that can be followed; the source text
	// when Literal is false.
	Path string `json:"path"`
	// Literal is false when the path has expansions or is relative to a
	// directory the line changed to in a way that cannot be followed.
	Literal bool `json:"literal"`
	// Unknown is set when the path is known only when the line runs: a
	// relative path in a directory the line changed to in a way that
	// cannot be followed, or files a program derives itself (the files
	// sort --files0-from F lists). Path then says where they come from.
	Unknown bool `json:"unknown,omitempty"`
	// Names is set when the program lists the directory or works in it
	// (ls, find, go build, git status in the directory it runs in) rather
	// than reading every file below it (grep -r, tar c): the directory
	// itself is what a rule judges.
	Names bool `json:"names,omitempty"`
}

// Command is one program run with its argument words.
type Command struct {
	// Args is the argument vector; Args[0] is the program as written
	// ("/bin/rm", "./x", "rm") and is always literal.
	Args []Word `json:"args"`
	// Wrappers names the wrappers peeled off to reach the command, outermost
	// first, without directory (["sudo", "timeout"]).
	Wrappers []string `json:"wrappers,omitempty"`
	// Dirs are the directories the command may run in, each relative to
	// the line's starting directory or absolute, when the line changed
	// directory before it; nil means the starting directory only.
	Dirs []string `json:"-"`
	// DirUnknown is set when a directory change before the command cannot
	// be followed (cd $X, cd ~, cd -): its relative paths may be anywhere.
	DirUnknown bool `json:"-"`
}

// Word is one argument word.
type Word struct {
	// Text is the word after quote removal when Literal, and the word's
	// source text otherwise.
	Text string `json:"text"`
	// Literal reports whether Text is exactly what the program receives: no
	// parameter, command, arithmetic, tilde, brace or glob expansion.
	Literal bool `json:"literal"`
}

// Write is a file a redirection opens for writing.
type Write struct {
	// Path is the target after quote removal, joined onto the directory the
	// line changed to with cd when that can be followed. It is the source
	// text when Literal is false.
	Path string `json:"path"`
	// Literal is false when the target has expansions or is relative to a
	// directory the line changed to in a way that cannot be followed.
	Literal bool `json:"literal"`
	// Append is true for >> and &>>, which do not truncate the file.
	Append bool `json:"append"`
	// Tree is set when the program writes, replaces or removes everything
	// below Path too (rm -r, cp -r into it, rsync, chmod -R).
	Tree bool `json:"tree,omitempty"`
	// Match narrows a Tree write to the entries whose name matches every
	// one of these NUL-separated glob patterns (find -name … -delete); an
	// "i:" prefix matches without regard to case.
	Match string `json:"match,omitempty"`
	// Unknown is set when the path is known only when the line runs (see
	// Read.Unknown); Path then says where the writes come from.
	Unknown bool `json:"unknown,omitempty"`
}

// Codes of [UnanalyzableError]. Each names one reason a line cannot be
// judged safely.
const (
	CodeParse            = "parse-error"       // the line is not valid bash
	CodeInvalidUTF8      = "invalid-utf8"      // the line is not valid UTF-8
	CodeControlChar      = "control-character" // NUL, CR or another control character the parser and the shell treat differently
	CodeTooComplex       = "too-complex"       // a size, nesting or count limit was reached
	CodeEval             = "eval"              // eval runs a string as code
	CodeSource           = "source"            // source or . runs a file as code
	CodeAlias            = "alias"             // alias defines a word that expands to code
	CodeTrap             = "trap"              // trap runs a string as code on a signal
	CodeBuiltin          = "builtin"           // enable, hash -p, fc, mapfile -C: builtins that load or run hidden code
	CodeDynamicCommand   = "dynamic-command"   // the program name is computed when the line runs
	CodeDynamicCode      = "dynamic-code"      // program text (sh -c, python -c, watch) is computed when the line runs
	CodeInterpreterStdin = "interpreter-stdin" // an interpreter reads its program from a pipe, heredoc, redirection or stdin
	CodeRiskyEnv         = "risky-env"         // a variable from RiskyEnvVars is assigned
	CodeValueAsCode      = "value-as-code"     // a value the gate cannot see is evaluated as code (arithmetic, ${!x}, ${x@P})
	CodeWrapperOptions   = "wrapper-options"   // a wrapper's options cannot be parsed with certainty
	CodeExtGlob          = "extglob"           // an extended glob such as *(…), which zsh reads as a glob qualifier that can run code
	CodeShellOption      = "shell-option"      // a shell option or dialect that loads files or changes how code is read
	CodeProgramOption    = "program-option"    // a granted program's option runs code or loads settings the gate cannot see
	CodeUnknownOption    = "unknown-option"    // a modeled program is given an option or subcommand its model does not list
	CodeResourceBomb     = "resource-bomb"     // the line loops or recurses without end (a fork bomb, a CPU or memory burn)
	CodeUnsupported      = "unsupported"       // a construct this package does not model
)

// UnanalyzableError reports a line the gate cannot judge safely: it must be
// treated as neither allowed nor denied by rules, but escalated.
type UnanalyzableError struct {
	Code   string `json:"code"`   // one of the Code constants
	Reason string `json:"reason"` // what makes the line opaque, for a human
}

func (e *UnanalyzableError) Error() string {
	return "command cannot be analyzed (" + e.Code + "): " + e.Reason
}

// Limits that keep the analysis bounded on hostile input.
const (
	maxLineBytes    = 512 << 10 // larger lines are refused before parsing, which is superlinear on deep nesting
	maxBracketDepth = 128       // nesting of ( and { checked before parsing, which is slow on deep nesting
	maxDepth        = 64        // nesting of statements and words
	maxShellDepth   = 8         // sh -c inside sh -c …
	maxCommands     = 10000     // commands listed
	maxDirs         = 8         // candidate working directories followed through cd
)

// Analyze parses line as bash and returns every program it would run and
// every file its redirections would write. The error is always an
// *UnanalyzableError.
func Analyze(line string) (analysis *Analysis, err error) {
	if e := precheck(line); e != nil {
		return nil, e
	}
	a := &analyzer{vars: newVarFacts()}
	defer func() {
		// A panic here is a bug in this package or the parser; the gate
		// must still fail closed rather than crash.
		if r := recover(); r != nil {
			analysis, err = nil, &UnanalyzableError{Code: CodeUnsupported, Reason: fmt.Sprintf("internal error analyzing the line: %v", r)}
		}
	}()
	a.script(line, newFrame(), "")
	if a.err == nil {
		a.checkRecursion()
	}
	if a.err == nil {
		a.vars.check(a)
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.out.Commands == nil {
		a.out.Commands = []Command{}
	}
	if a.out.Writes == nil {
		a.out.Writes = []Write{}
	}
	if a.out.Reads == nil {
		a.out.Reads = []Read{}
	}
	return &a.out, nil
}

// precheck rejects input the parser must not see: too large, not UTF-8,
// control characters it reads differently from bash, or nesting deep enough
// to make parsing slow.
func precheck(line string) *UnanalyzableError {
	if len(line) > maxLineBytes {
		return &UnanalyzableError{Code: CodeTooComplex, Reason: fmt.Sprintf("the line is %d bytes, more than the %d analyzed", len(line), maxLineBytes)}
	}
	if !utf8.ValidString(line) {
		i := 0
		for i < len(line) {
			r, size := utf8.DecodeRuneInString(line[i:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			i += size
		}
		return &UnanalyzableError{Code: CodeInvalidUTF8, Reason: fmt.Sprintf("the line is not valid UTF-8: byte %d is %q", i, line[i])}
	}
	depth := 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '\t', '\n':
		case '(', '{':
			depth++
			if depth > maxBracketDepth {
				return &UnanalyzableError{Code: CodeTooComplex, Reason: fmt.Sprintf("brackets nest more than %d deep", maxBracketDepth)}
			}
		case ')', '}':
			if depth > 0 {
				depth--
			}
		default:
			if c < 0x20 || c == 0x7f {
				// mvdan.cc/sh splits words at CR and drops NUL, while bash
				// keeps both in the word: judge nothing the shell would read
				// differently.
				return &UnanalyzableError{Code: CodeControlChar, Reason: fmt.Sprintf("the line contains the control character %q at byte %d", c, i)}
			}
		}
	}
	return nil
}

// analyzer holds the state of one Analyze call, shared by nested shells.
type analyzer struct {
	out        Analysis
	vars       *varFacts
	seenWrites map[Write]bool // made on the first write
	seenReads  map[Read]bool  // made on the first read
	err        *UnanalyzableError
	// args is where the listed commands' argument vectors are cut from:
	// one allocation for a typical line rather than one per command.
	args []Word
	// graph records the functions the line defines and what they call.
	graph callGraph
}

// minArgs is the least the argument arena grows by once the line's own
// count is used up (by the commands of sh -c strings, for example).
const minArgs = 16

// maxSizeHint caps what the first allocations are sized for.
const maxSizeHint = 1024

// fail records the first reason the line is unanalyzable; the walk stops
// soon after.
func (a *analyzer) fail(code, format string, args ...any) {
	if a.err == nil {
		a.err = &UnanalyzableError{Code: code, Reason: fmt.Sprintf(format, args...)}
	}
}

// script parses text as bash and walks it. via names the program that
// runs text as a script ("" for the line itself).
func (a *analyzer) script(text string, fr frame, via string) {
	if a.err != nil {
		return
	}
	if fr.shellDepth > maxShellDepth {
		a.fail(CodeTooComplex, "shells nest more than %d deep", maxShellDepth)
		return
	}
	if via != "" {
		// Strings given to sh -c were checked as part of the line, but
		// decoding ($'…') can produce anything.
		if e := precheck(text); e != nil {
			e.Reason = "the string given to " + via + " -c: " + e.Reason
			a.err = e
			return
		}
	}
	lang := syntax.LangBash
	if via != "" {
		var refuse string
		lang, refuse = dialect(via)
		if refuse != "" {
			a.fail(CodeShellOption, "%s", refuse)
			return
		}
	}
	pool := parsers[lang]
	parser := pool.Get().(*syntax.Parser)
	file, err := parser.Parse(strings.NewReader(text), "")
	pool.Put(parser)
	if err != nil {
		reason := "cannot parse the line: " + err.Error()
		if via != "" {
			reason = fmt.Sprintf("cannot parse the string given to %s -c as %s: %v", via, lang, err)
		}
		a.fail(CodeParse, "%s", reason)
		return
	}
	if lang == syntax.LangPOSIX {
		if w := dollarQuote(file); w != nil {
			a.fail(CodeShellOption, "the string given to %s -c holds %s: dash reads $'…' and $\"…\" as a dollar sign and a quoted string, bash decodes them", via, quote(text[w.Pos().Offset():min(w.End().Offset(), uint(len(text)))]))
			return
		}
	}
	fr.src = newSource(text, file)
	if a.out.Commands == nil {
		// The line's simple commands and their words are what a typical
		// line lists: size for them once (a hostile line grows as it goes).
		a.out.Commands = make([]Command, 0, min(fr.src.calls, maxSizeHint))
		a.args = make([]Word, 0, min(fr.src.words, maxSizeHint))
	}
	a.stmts(file.Stmts, fr)
}

// parsers are reused: a parser is several kilobytes, more than the rest of
// a typical analysis. Parse resets all of its state.
var parsers = map[syntax.LangVariant]*sync.Pool{
	syntax.LangBash:       newParserPool(syntax.LangBash),
	syntax.LangPOSIX:      newParserPool(syntax.LangPOSIX),
	syntax.LangMirBSDKorn: newParserPool(syntax.LangMirBSDKorn),
}

func newParserPool(lang syntax.LangVariant) *sync.Pool {
	return &sync.Pool{New: func() any {
		return syntax.NewParser(syntax.Variant(lang), syntax.KeepComments(false))
	}}
}

// dialect is the language a program runs a -c string in: bash for bash,
// mksh's for mksh; POSIX for sh (dash on Debian and Ubuntu, bash elsewhere),
// dash, ash and posh, and for strings run through the user's shell (watch,
// flock, su), which may be either. A POSIX parse refuses what only bash
// accepts, and $'…' is refused on top (see dollarQuote), so what passes
// reads the same in dash and bash. zsh, ksh93 and yash are not modeled.
func dialect(via string) (syntax.LangVariant, string) {
	switch via {
	case "bash", "rbash":
		return syntax.LangBash, ""
	case "mksh", "lksh":
		return syntax.LangMirBSDKorn, ""
	case "zsh", "ksh", "ksh93", "yash":
		return syntax.LangBash, via + "'s language is not modeled: its expansions and globs can run code that bash's cannot"
	}
	return syntax.LangPOSIX, ""
}

// dollarQuote finds a word with $'…' or $"…" in a POSIX parse, which sees
// a literal $ before a quoted string.
func dollarQuote(file *syntax.File) *syntax.Word {
	var found *syntax.Word
	walkLimited(file, func(n syntax.Node) bool {
		w, ok := n.(*syntax.Word)
		if !ok || found != nil {
			return found == nil
		}
		for i := 0; i+1 < len(w.Parts); i++ {
			lit, ok := w.Parts[i].(*syntax.Lit)
			if !ok || !strings.HasSuffix(lit.Value, "$") {
				continue
			}
			if n := len(lit.Value) - len(strings.TrimRight(strings.TrimSuffix(lit.Value, "$"), `\`)) - 1; n%2 == 1 {
				continue // \$ is a quoted dollar sign
			}
			switch w.Parts[i+1].(type) {
			case *syntax.SglQuoted, *syntax.DblQuoted:
				found = w
			}
		}
		return found == nil
	})
	return found
}

// addCommand lists one command.
func (a *analyzer) addCommand(words []word, fr frame) {
	wrappers := fr.wrappers
	if len(a.out.Commands) >= maxCommands {
		a.fail(CodeTooComplex, "the line runs more than %d commands", maxCommands)
		return
	}
	if cap(a.args)-len(a.args) < len(words) {
		a.args = make([]Word, 0, max(minArgs, len(words)))
	}
	start := len(a.args)
	for _, w := range words {
		a.args = append(a.args, w.Word)
	}
	args := a.args[start:len(a.args):len(a.args)]
	var wr []string
	if len(wrappers) > 0 {
		wr = append([]string(nil), wrappers...)
	}
	c := Command{Args: args, Wrappers: wr}
	switch sh := fr.shell; {
	case sh.unknownDir:
		c.DirUnknown = true
	case len(sh.dirs) != 1 || sh.dirs[0] != "":
		c.Dirs = slices.Clone(sh.dirs)
	}
	a.out.Commands = append(a.out.Commands, c)
}

// addWrite lists one write, once, as addRead does.
func (a *analyzer) addWrite(w Write) {
	if a.seenWrites == nil {
		if slices.Contains(a.out.Writes, w) {
			return
		}
		if len(a.out.Writes) < smallSet {
			a.out.Writes = append(a.out.Writes, w)
			return
		}
		a.seenWrites = make(map[Write]bool, 2*smallSet)
		for _, x := range a.out.Writes {
			a.seenWrites[x] = true
		}
	}
	if a.seenWrites[w] {
		return
	}
	if len(a.seenWrites) >= maxCommands {
		a.fail(CodeTooComplex, "the line writes more than %d files", maxCommands)
		return
	}
	a.seenWrites[w] = true
	a.out.Writes = append(a.out.Writes, w)
}
