package gate

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzAnalysisInvariants mutates the attack tables, the benign table and
// lines that read the directory they run in, and checks what must hold
// for any line:
//
//   - the gate decides without an internal error (no panic);
//   - a denied line is not allowed once re-printed by mvdan.cc/sh's
//     printer, with its literal words quoted, or with a comment after it:
//     none of these changes what bash runs;
//   - run from a directory outside the workspace that holds a secret
//     (cd ~/.ssh && LINE), a line the gate allows does not print the secret
//     when it runs for real: a program that reads the directory it runs
//     in without naming it is a read the analysis must see.
func FuzzAnalysisInvariants(f *testing.F) {
	for _, c := range loadAttacks(f) {
		f.Add(c.Cmd)
	}
	readJSONL(f, filepath.Join("testdata", "benign.jsonl"), func(c benignCase, _ int) { f.Add(c.Cmd) })
	for _, s := range []string{
		"grep -r .", "grep -rh ''", "grep -R -e x", "grep -d recurse .", "ls", "ls -la", "ls -R", "wc *", "head *",
		"tail -n 1 *", "git grep x", "git status", "git log -p", "git diff --no-index . /dev/null", "du", "find",
		"find . -type f", "tar c .", "sort *", "cat *", "diff -r . /", "rg x", "cd - && grep -r .", "pushd . && grep -r x",
		"(grep -r x)", "grep -r x | head", "{ grep -rh .; }", "grep -r x 2>/dev/null", "echo $(grep -r .)",
	} {
		f.Add(s)
	}
	s := newSandbox(f)
	policies := []*Policy{s.policy(f, "readonly"), s.policy(f, "dev")}
	decide := func(p *Policy, line string) Verdict {
		input, _ := json.Marshal(map[string]string{"command": line})
		return Decide(&Event{SessionID: "fuzz", Tool: "Bash", Input: input, Cwd: s.ws}, p)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return
		}
		for _, p := range policies {
			v := decide(p, line)
			if v.Code == CodeInternal {
				t.Fatalf("internal error on %q: %s", line, v.Reason)
			}
			if v.Decision != Deny {
				continue
			}
			for how, m := range sameMeaning(line) {
				if w := decide(p, m); w.Decision == Allow {
					t.Fatalf("%q is denied (%s: %s) but %s, %q, is allowed (%s)", line, v.Code, v.Reason, how, m, w.Reason)
				}
			}
		}
		// A line the gate allows from a directory outside the workspace
		// must not read it unseen.
		if len(line) > 300 || strings.ContainsAny(line, "\n") || slowWords.MatchString(line) {
			return
		}
		moved := "cd ~/.ssh && " + line
		if v := decide(policies[0], moved); v.Decision != Allow {
			return
		}
		out := s.run(t, moved)
		if bytes.Contains(out, []byte(s.secret)) {
			t.Fatalf("allowed under readonly and it printed the secret of ~/.ssh:\n  %s\n%s", moved, out)
		}
	})
}

// slowWords are programs not worth running for real under a fuzzer.
var slowWords = regexp.MustCompile(`\b(sleep|yes|watch|tail\s+-f|read|cat\s*$|timeout|wait)\b`)

// sameMeaning returns spellings of line that bash runs the same way: the
// printer's, with plain literal words single-quoted, and with a comment
// after it.
func sameMeaning(line string) map[string]string {
	out := map[string]string{}
	if !utf8.ValidString(line) || strings.IndexFunc(line, func(r rune) bool { return r < 0x20 && r != '\t' && r != '\n' || r == 0x7f }) >= 0 {
		return out // the parser reads these otherwise than bash; the gate refuses them before parsing
	}
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
	file, err := parser.Parse(strings.NewReader(line), "")
	if err != nil {
		return out
	}
	var b strings.Builder
	// The printer puts a blank between {name} and a redirection after it,
	// which turns bash's named descriptor into a word: not the same line.
	named := namedFD.MatchString(line)
	if err := syntax.NewPrinter().Print(&b, file); err == nil && b.String() != line && !named {
		out["re-printed"] = b.String()
	}
	quoted := false
	syntax.Walk(file, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		for i, w := range call.Args {
			if i == 0 || len(w.Parts) != 1 {
				continue // a program name quoted is the same, but aliases aside: keep it
			}
			if l, ok := w.Parts[0].(*syntax.Lit); ok && plainWord.MatchString(l.Value) {
				w.Parts[0] = &syntax.SglQuoted{Value: l.Value}
				quoted = true
			}
		}
		return true
	})
	if quoted && !named {
		b.Reset()
		if err := syntax.NewPrinter().Print(&b, file); err == nil {
			out["quoted"] = b.String()
		}
	}
	if !strings.HasSuffix(line, "\\") && !strings.Contains(line, "<<") {
		out["commented"] = line + "\n# a comment"
	}
	return out
}

// namedFD is a word bash may read as {name} before a redirection.
var namedFD = regexp.MustCompile(`\}[0-9]*[<>]`)

// plainWord is a word quoting does not change: no expansion, glob, tilde,
// assignment or brace.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./,:@%+-]+$`)
