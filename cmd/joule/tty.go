package main

import (
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/mattn/go-isatty"
)

// Output is plain unless it goes to a terminal: tables are aligned either
// way (tabwriter), colour is added only on a terminal, and never when
// NO_COLOR is set to anything (https://no-color.org) or TERM is "dumb".

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// colour reports whether output to w may be coloured.
func colour(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isTerminal(w)
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// cell makes text that came from a payload or a receipt (a summary, a
// session id, a tool name) safe for one table cell: a newline or tab would
// break the row and the columns, and an escape sequence or a bidi override
// would reach the terminal as a command, so every rune that is not graphic
// (or a plain space), and every invalid byte, is written as its Go escape.
func cell(s string) string {
	if strings.IndexFunc(s, unsafeInCell) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case !unsafeInCell(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// unsafeInCell reports whether r may not be printed in a cell as it is.
// (An invalid byte decodes as utf8.RuneError, which is graphic itself.)
func unsafeInCell(r rune) bool {
	return r == utf8.RuneError || r != ' ' && !unicode.IsGraphic(r)
}

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiPlain  = "\x1b[39m" // the default colour: as long as the others, so columns align
	ansiReset  = "\x1b[0m"
)

// paint wraps s in an ANSI colour when e's stdout may be coloured. The
// escape sequences are zero-width for the terminal but not for tabwriter,
// so painted cells pad as if a few columns wider; every cell of a column
// is painted alike or not at all, which keeps the columns aligned.
func paint(e *env, code, s string) string {
	if code == "" || !colour(e.stdout) {
		return s
	}
	return code + s + ansiReset
}

func paintDecision(e *env, d string) string {
	switch d {
	case "allow", "rewrite":
		return paint(e, ansiGreen, d)
	case "deny":
		return paint(e, ansiRed, d)
	case "ask":
		return paint(e, ansiYellow, d)
	}
	return paint(e, ansiPlain, d)
}

func paintVerdict(e *env, v string) string {
	if v == "ok" {
		return paint(e, ansiGreen, v)
	}
	return paint(e, ansiRed, v)
}
