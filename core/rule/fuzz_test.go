package rule

import (
	"net/url"
	"path"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var parseSeeds = []string{
	"Bash", "Bash(go test:*)", "Bash(npm run *)", "Bash(git status)", "Bash(*)",
	`Bash(git commit -m "a b" 'c d' e\ f)`, `Bash(echo "it's")`, "Bash(a::*)", "Bash(a: *)",
	"Bash(rm -rf:*)", "Bash(git push --force:*)", "Bash(x -- -f)", "Bash(go test:* -v)",
	"Read", "Read(**)", "Read(./src/**)", "Read(//etc/**)", "Read(~/.ssh/**)", "Read(~)", "Read(/)",
	"Read([!a-c]?.go)", `Read(\*x\[)`, "Read(*.{a,b})", "Read([[:alpha:]])", "Read(a/**/b)",
	"Edit(src/**)", "NotebookEdit(x.ipynb)", "WebFetch", "WebFetch(domain:example.com)",
	"WebFetch(domain:*.Example.COM.)", "WebFetch(domain:0x7f.1)", "WebFetch(domain:[::ffff:1.2.3.4])",
	"WebSearch", "mcp__github__get_issue", "mcp__github__*", "mcp__github", "Task", "bash(ls)",
	"", "Bash(", "Bash)", "Read(src/)", "\xff",
}

// FuzzParse checks that Parse never panics, that its errors name the rule,
// and that a rule's canonical text parses back to the same rule.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	roots := Roots{Workspace: "/nonexistent-fuzz/ws", Home: "/nonexistent-fuzz/home"}
	u, _ := url.Parse("https://a.example.com:8/x")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "rule \"") {
				t.Fatalf("Parse(%q) error %q does not name the rule", s, err)
			}
			return
		}
		text := r.String()
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", s, text, err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("Parse(%q) = %#v\nParse(%q) = %#v", s, r, text, again)
		}
		if again.String() != text {
			t.Fatalf("canonical text not stable: %q then %q", text, again.String())
		}
		// Matching any parsed rule must not panic.
		for _, m := range []Mode{Allow, Ask, Deny} {
			r.MatchCommand(argv("git -C $D push -rf -- x"), m)
			r.MatchPath(ReadTree, "/nonexistent-fuzz/ws/src/a", roots, m)
			r.MatchPath(Write, "/nonexistent-fuzz/home/.x", roots, m)
			r.MatchURL(u, m)
		}
		r.MatchTool(s)
	})
}

// FuzzResolve checks that Resolve never panics and that what it returns is
// absolute, clean, within the length limit and already resolved. The working
// directory is a workspace full of symlinks, a loop among them.
func FuzzResolve(f *testing.F) {
	ws, _ := symlinkFixture(f)
	for _, s := range []string{
		".", "src/ok/a", "src/dirlink/x", "src/rellink/../x", "src/filelink/y", "src/dangling",
		"src/chain1/x", "src/loop1/x", "../../..", "/", "//a//b/./c/..", "~/x", "a\x00b", "\xff",
		"src/ok/" + strings.Repeat("n", 300), strings.Repeat("a/", 2100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := Resolve(ws, p)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Resolve(%q): empty error", p)
			}
			return
		}
		if !path.IsAbs(got) || path.Clean(got) != got {
			t.Fatalf("Resolve(%q) = %q, not absolute and clean", p, got)
		}
		if len(got) > maxPathLen {
			t.Fatalf("Resolve(%q) = %d bytes, over the limit", p, len(got))
		}
		// Only the fixture is known not to change under us.
		if Within(got, path.Dir(ws)) {
			again, err := Resolve("/", got)
			if err != nil || again != got {
				t.Fatalf("Resolve(%q) = %q, but resolving that gives %q, %v", p, got, again, err)
			}
		}
	})
}

// FuzzSegment compares single-segment glob matching with path.Match, whose
// syntax it shares, and checks that case folding only ever adds matches.
func FuzzSegment(f *testing.F) {
	for _, s := range [][2]string{
		{"*.go", "main.go"}, {"a*b*c", "aXbYc"}, {"[a-c]?", "bz"}, {"[^a-c]", "d"}, {`\*`, "*"},
		{"*", ".hidden"}, {"?", "é"}, {"[é-ü]x", "ñx"}, {"*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaa"},
		{"[a-]", "a"}, {"[]", "x"}, {"a[", "a["}, {"A*", "abc"}, {"a*", "a"}, {"[^0c]", "C"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		// Skip what the two mean differently on purpose: braces, "**" and
		// [:name:] are rejected here, '!' negates a class here, "" is no
		// segment, and an invalid byte is not U+FFFD here.
		if pattern == "" || strings.ContainsAny(pattern, "{}!") || strings.Contains(pattern, "**") ||
			strings.Contains(pattern, "[:") || strings.Contains(pattern+name, "/") ||
			!utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return
		}
		seg, err := parseSegment(pattern)
		want, stdErr := path.Match(pattern, name)
		if (err != nil) != (stdErr != nil) {
			if err != nil && strings.Contains(err.Error(), "is not allowed") {
				return // "." and ".." name no file
			}
			if err != nil && strings.Contains(err.Error(), "invalid range") {
				return // path.Match accepts [z-a] and never matches it
			}
			t.Fatalf("pattern %q: parseSegment error %v, path.Match error %v", pattern, err, stdErr)
		}
		if err != nil {
			return
		}
		if got := seg.match(name, false); got != want {
			t.Fatalf("segment %q vs %q: match = %v, path.Match = %v", pattern, name, got, want)
		}
		if want && !seg.match(name, true) {
			t.Fatalf("segment %q vs %q: matches, but not when folding case", pattern, name)
		}
	})
}

// FuzzModes checks that an ask or deny rule is never narrower than the same
// rule in an allow list: whatever an allow rule matches, the deny rule
// matches too.
func FuzzModes(f *testing.F) {
	for _, s := range [][2]string{
		{"Bash(rm -rf:*)", "rm -rf x"}, {"Bash(git status)", "/usr/bin/git status"},
		{"Bash(x -- -f)", "x -- -f"}, {"Bash(go test:*)", "go test $P"},
		{"Read(src/**)", "src/a"}, {"Write(*.go)", "a.go"}, {"Read(~/.ssh/*)", "~/.ssh/id"},
		{"Read(/etc/*)", "/etc/passwd"}, {"WebFetch(domain:example.com)", "http://EXAMPLE.com./"},
		{"WebFetch(domain:*.example.com)", "http://a.example.com/"},
	} {
		f.Add(s[0], s[1])
	}
	roots := Roots{Workspace: "/nonexistent-fuzz/ws", Home: "/nonexistent-fuzz/home"}
	f.Fuzz(func(t *testing.T, text, input string) {
		r, err := Parse(text)
		if err != nil {
			return
		}
		switch r.kind {
		case kindBash:
			args := argv(input)
			if r.MatchCommand(args, Allow) && !r.MatchCommand(args, Deny) {
				t.Fatalf("%s matches %q as allow but not as deny", r, input)
			}
		case kindRead, kindWrite:
			abs := input
			if rest, ok := strings.CutPrefix(input, "~/"); ok {
				abs = roots.Home + "/" + rest
			} else if !path.IsAbs(input) {
				abs = roots.Workspace + "/" + input
			}
			abs = path.Clean(abs)
			for _, kind := range []Access{Read, ReadTree, Write} {
				if r.MatchPath(kind, abs, roots, Allow) && !r.MatchPath(kind, abs, roots, Deny) {
					t.Fatalf("%s matches %v of %q as allow but not as deny", r, kind, abs)
				}
			}
		case kindWebFetch:
			u, err := url.Parse(input)
			if err != nil {
				return
			}
			if r.MatchURL(u, Allow) && !r.MatchURL(u, Deny) {
				t.Fatalf("%s matches %q as allow but not as deny", r, input)
			}
		}
	})
}

// TestSegmentInvalidBytes: a byte that is not UTF-8 is not U+FFFD; only ?,
// * and negated classes match it.
func TestSegmentInvalidBytes(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"?", "\xff", true},
		{"*", "a\xffb", true},
		{"[^a]", "\xff", true},
		{"[a-z\uFFFD]", "\xff", false},
		{"\uFFFD*", "\xffx", false},
		{"\uFFFD*", "\uFFFDx", true},
	}
	for _, tt := range tests {
		seg, err := parseSegment(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, fold := range []bool{false, true} {
			if got := seg.match(tt.name, fold); got != tt.want {
				t.Errorf("segment %q vs %q (fold %v) = %v, want %v", tt.pattern, tt.name, fold, got, tt.want)
			}
		}
	}
}
