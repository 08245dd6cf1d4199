// Command joule gates, meters and receipts the work of AI coding agents.
//
// Output rules: results go to stdout; errors go to stderr as one line
// prefixed "joule:", lowercase, with a "hint:" line where one helps.
// Exit codes: 0 success; 1 the command ran and the answer is no (a receipt
// or vector failed verification) or it failed; 2 bad usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
)

// Version is set at link time (-ldflags "-X main.Version=v1.2.3"); otherwise
// the module version from the build info is used.
var Version = ""

// command is one subcommand. run gets the arguments after the command name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what a command may touch: its streams, so tests run commands
// in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// usageError marks bad invocations: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// hintError carries a suggestion printed on its own line.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hint string) error { return &hintError{err, hint} }

// exitError sets the exit status without printing anything more.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

var commands []*command

func register(c *command) { commands = append(commands, c) }

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// run executes one invocation and returns the exit status. It never lets a
// panic escape as a crash: a panic is reported as an internal error.
func run(ctx context.Context, e *env, args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(e.stderr, "joule: internal error: %v\n", p)
			code = 1
		}
	}()
	if len(args) == 0 {
		printUsage(e.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if args[1] == "version" {
				fmt.Fprintln(e.stdout, "usage: joule version\n\nPrint the version (also joule -v, joule --version).")
				return 0
			}
			if c := lookup(args[1]); c != nil {
				return report(e, c.run(ctx, e, []string{"-h"}))
			}
			fmt.Fprintf(e.stderr, "joule: unknown command %q\nhint: %s\n", args[1], commandHint(args[1], "joule help "))
			return 2
		}
		printUsage(e.stdout)
		return 0
	case "version", "-v", "-version", "--version":
		fmt.Fprintln(e.stdout, "joule", version())
		return 0
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(e.stderr, "joule: unknown command %q\nhint: %s\n", name, commandHint(name, "joule "))
		return 2
	}
	if code, handled := forwardSystem(ctx, e, args); handled {
		return code
	}
	return report(e, c.run(ctx, e, args[1:]))
}

// report prints err by the output rules and maps it to an exit status.
func report(e *env, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var exit *exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	fmt.Fprintf(e.stderr, "joule: %v\n", err)
	var hint *hintError
	if errors.As(err, &hint) {
		fmt.Fprintf(e.stderr, "hint: %s\n", hint.hint)
	}
	var usage *usageError
	if errors.As(err, &usage) {
		return 2
	}
	return 1
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, "joule gates, meters and receipts the work of AI coding agents.\n\nUsage:\n\n\tjoule <command> [arguments]\n\nCommands:\n\n")
	sorted := append([]*command(nil), commands...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	for _, c := range sorted {
		fmt.Fprintf(w, "\t%-14s %s\n", c.name, c.summary)
	}
	fmt.Fprint(w, "\t"+fmt.Sprintf("%-14s %s", "version", "print the version")+"\n\nRun 'joule <command> -h' for a command's flags.\nExit status: 0 success, 1 failure or a negative verdict, 2 bad usage.\n")
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// newFlags returns a flag set for a command. The flag package prints
// nothing itself: parseFlags reports errors in one line and prints help on -h.
func newFlags(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stdout, "usage: joule %s\n", synopsis)
		// The flags a user may give: those marked internalFlag are for
		// joule's own binaries (joule-hook's fallback) and not shown.
		shown := flag.NewFlagSet(name, flag.ContinueOnError)
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.HasPrefix(f.Usage, internalFlag) {
				shown.Var(f.Value, f.Name, f.Usage)
				shown.Lookup(f.Name).DefValue = f.DefValue
			}
		})
		n := 0
		shown.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintln(e.stdout, "\nflags:")
			shown.SetOutput(e.stdout)
			shown.PrintDefaults()
		}
	}
	return fs
}

// internalFlag starts the usage of a flag that joule's own binaries pass
// (joule-hook to joule hook): -h leaves it out.
const internalFlag = "(internal) "

// parseFlags parses args; -h prints help and returns flag.ErrHelp (exit 0),
// any other problem is a usage error (exit 2).
func parseFlags(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := parseInterspersed(fs, args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return flag.ErrHelp
	case err != nil:
		if bad, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			var names []string
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.HasPrefix(f.Usage, internalFlag) {
					names = append(names, f.Name)
				}
			})
			if s := closest(strings.TrimLeft(bad, "-"), names); s != "" {
				return withHint(usagef("%s: unknown flag --%s", fs.Name(), strings.TrimLeft(bad, "-")), "did you mean --"+s+"? ('joule "+fs.Name()+" -h' lists the flags)")
			}
		}
		return usagef("%s: %v (run 'joule %s -h')", fs.Name(), err, fs.Name())
	}
	return nil
}

// commandHint is the hint for an unknown command: the command meant,
// as prefix+name, when one is close, else where the list is.
func commandHint(name, prefix string) string {
	names := []string{"help", "version"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	if s := closest(name, names); s != "" {
		return "did you mean '" + prefix + s + "'?"
	}
	return "run 'joule help' for the list of commands"
}

// unknownSub is the usage error for a mistyped subcommand of cmd, with
// the one meant when one of subs is close.
func unknownSub(cmd, sub string, subs ...string) error {
	err := usagef("%s: unknown subcommand %q (want %s)", cmd, sub, strings.Join(subs, ", "))
	if s := closest(sub, subs); s != "" {
		return withHint(err, "did you mean 'joule "+cmd+" "+s+"'?")
	}
	return err
}

// closest is the option nearest to word, by edit distance with adjacent
// transpositions ("recepits", "intall", "docter"), when it is near enough
// to be a typo of it: at most one edit in a short word, a third of the
// word in a longer one. "" when none is.
func closest(word string, options []string) string {
	word = strings.ToLower(word)
	best, bestD := "", 1<<30
	for _, o := range options {
		if d := editDistance(word, strings.ToLower(o)); d < bestD {
			best, bestD = o, d
		}
	}
	if bestD == 0 || bestD > max(1, len([]rune(word))/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// parseInterspersed parses flags wherever they stand among the positional
// arguments (joule receipts export SESSION --format jsonl); after "--"
// everything is positional. fs.Args() then holds the positionals in order.
func parseInterspersed(fs *flag.FlagSet, args []string) error {
	// An id (43 characters of base64url) may start with '-': it is an
	// argument, not a flag. It stands in for itself under a name no flag
	// has while the flags are parsed.
	ids := map[string]string{}
	args = slices.Clone(args)
	for i, a := range args {
		if a == "--" {
			break
		}
		if strings.HasPrefix(a, "-") && isID(a) && fs.Lookup(strings.TrimLeft(a, "-")) == nil {
			key := fmt.Sprintf("\x00id%d", i)
			ids[key], args[i] = a, key
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	for i, a := range pos {
		if id, ok := ids[a]; ok {
			pos[i] = id
		}
	}
	return fs.Parse(append([]string{"--"}, pos...))
}

// isID reports the form of grant and receipt ids: 43 characters of
// unpadded base64url (a BLAKE3-256 hash).
func isID(a string) bool {
	if len(a) != 43 {
		return false
	}
	for _, c := range a {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// noArgs rejects positional arguments a command does not take.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}
