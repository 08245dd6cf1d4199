package hook

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Quote writes s as one word for the POSIX shell that runs a hook command
// (/bin/sh, or the $SHELL Codex starts), with mvdan.cc/sh's quoter: a
// word with nothing special in it (an ordinary path) stays as it is, any
// other is single-quoted, or double-quoted when it holds a single quote.
// It fails for what no POSIX word can carry printably: a NUL byte, a
// newline or another non-printing character.
func Quote(s string) (string, error) {
	q, err := syntax.Quote(s, syntax.LangPOSIX)
	if err != nil {
		return "", fmt.Errorf("%q cannot be written as a POSIX shell word: %w", s, err)
	}
	return q, nil
}

// Check reports the first path of s that a hook command line cannot carry
// (Quote fails for it), so that an install fails before it writes a line
// the host's shell would read as something else.
func (s Scope) Check() error {
	for _, p := range []struct{ name, path string }{
		{"joule binary", s.Joule}, {"hook client", s.Client}, {"JOULE_HOME", s.JouleHome}, {"project", s.Project},
	} {
		if p.path == "" {
			continue
		}
		if _, err := Quote(p.path); err != nil {
			return fmt.Errorf("the %s path %w: rename it to use joule hooks", p.name, err)
		}
	}
	return nil
}

// bashWord is ShellQuote's word for a string Quote refuses: bash's $'…'
// form (which bash, zsh and ksh read; Check keeps such strings out of the
// lines an install writes). A NUL byte ends the string there, as it ends an
// exec(2) argument.
func bashWord(p string) string {
	p, _, _ = strings.Cut(p, "\x00")
	q, _ := syntax.Quote(p, syntax.LangBash) // only a NUL byte fails LangBash
	return q
}
