package hook

import (
	"os/exec"
	"strings"
	"testing"
)

// TestShellQuote runs each quoted word through real shells: printf %s WORD
// must print the original. Plain paths must come back unquoted, as every
// hook line joule wrote before has them.
func TestShellQuote(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
		posix          bool // Quote accepts it, so /bin/sh reads it too
	}{
		{"plain path", "/usr/local/bin/joule", "/usr/local/bin/joule", true},
		{"plain punctuation", "/home/u/.local/bin/joule-hook_2+x:y@z", "/home/u/.local/bin/joule-hook_2+x:y@z", true},
		{"space", "/a b/joule", "'/a b/joule'", true},
		{"single quote", "/it's/joule", `"/it's/joule"`, true},
		{"both quotes", `/it's "x"/joule`, `"/it's \"x\"/joule"`, true},
		{"dollar", "/$HOME/x", "'/$HOME/x'", true},
		{"dollar and quote", "/$x'/`y`\\z", "\"/\\$x'/\\`y\\`\\\\z\"", true},
		{"backticks", "/`id`/joule", "'/`id`/joule'", true},
		{"glob and tilde", "~/*?[a]", "'~/*?[a]'", true},
		{"assignment", "A=b", "'A=b'", true},
		{"keyword", "if", "'if'", true},
		{"comment", "#x", "'#x'", true},
		{"unicode", "/home/josé/日本/joule", "/home/josé/日本/joule", true},
		{"empty", "", "''", true},
		{"newline", "/a\nb", `$'/a\nb'`, false},
		{"tab and quote", "it's\tx", `$'it\'s\tx'`, false},
		{"control", "a\x01b", `$'a\x01b'`, false},
		{"invalid utf-8", "a\xffb", `$'a\xffb'`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ShellQuote(tt.in)
			if got != tt.want {
				t.Errorf("ShellQuote(%q) = %s, want %s", tt.in, got, tt.want)
			}
			q, err := Quote(tt.in)
			if (err == nil) != tt.posix {
				t.Fatalf("Quote(%q) = %s, %v; want an error: %v", tt.in, q, err, !tt.posix)
			}
			shells := []string{"bash"}
			if tt.posix {
				shells = append(shells, "sh")
				if q != got {
					t.Errorf("Quote(%q) = %s, ShellQuote %s", tt.in, q, got)
				}
			}
			for _, sh := range shells {
				out, err := exec.Command(sh, "-c", "printf %s "+got).Output()
				if err != nil || string(out) != tt.in {
					t.Errorf("%s -c 'printf %%s %s' = %q, %v; want %q", sh, got, out, err, tt.in)
				}
			}
		})
	}
}

func TestQuoteRefusesNUL(t *testing.T) {
	if q, err := Quote("a\x00b"); err == nil || !strings.Contains(err.Error(), "null bytes") {
		t.Fatalf("Quote of a NUL byte = %s, %v", q, err)
	}
	// An exec(2) argument ends at its first NUL byte; so does ShellQuote's word.
	if got := ShellQuote("a b\x00c"); got != "'a b'" {
		t.Fatalf("ShellQuote of a NUL byte = %s", got)
	}
}

func TestScopeCheck(t *testing.T) {
	ok := Scope{Joule: "/usr/bin/joule", Client: "/a b/joule-hook", JouleHome: "/it's", Project: "/p"}
	if err := ok.Check(); err != nil {
		t.Fatalf("Check(%+v) = %v", ok, err)
	}
	for _, s := range []Scope{
		{Joule: "/a\nb/joule"},
		{Joule: "/usr/bin/joule", JouleHome: "/h\x00"},
		{Joule: "/usr/bin/joule", Project: "/p\tq"},
	} {
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "cannot be written as a POSIX shell word") {
			t.Errorf("Check(%+v) = %v, want a refusal", s, err)
		}
	}
}

// TestRecordedHomeForms reads the JOULE_HOME back from each form a line
// joule wrote may have, including the one older installs used for a quote.
func TestRecordedHomeForms(t *testing.T) {
	for _, tt := range []struct{ line, home, rest string }{
		{`/usr/bin/env JOULE_HOME=/j /b/joule-hook h`, "/j", "/b/joule-hook h"},
		{`/usr/bin/env JOULE_HOME='/a b' /b/joule-hook h`, "/a b", "/b/joule-hook h"},
		{`/usr/bin/env JOULE_HOME='/a b/it'\''s' /b/joule-hook h`, "/a b/it's", "/b/joule-hook h"},
		{`/usr/bin/env JOULE_HOME="/a b/it's \$x" /b/joule-hook h`, "/a b/it's $x", "/b/joule-hook h"},
		{`out=$(/usr/bin/env JOULE_HOME="/it's" /b/joule-hook h); case $out in *) ;; esac`, "/it's", "/b/joule-hook h); case $out in *) ;; esac"},
		{`/usr/bin/env JOULE_HOME=$HOME/j /b/joule-hook h`, "", `/usr/bin/env JOULE_HOME=$HOME/j /b/joule-hook h`},
		{`/usr/bin/env JOULE_HOME='/unterminated /b/joule-hook h`, "", `/usr/bin/env JOULE_HOME='/unterminated /b/joule-hook h`},
		{`/usr/bin/env JOULE_HOME={a,b} /b/joule-hook h`, "", `/usr/bin/env JOULE_HOME={a,b} /b/joule-hook h`},
		{`/b/joule-hook h`, "", "/b/joule-hook h"},
	} {
		if got := RecordedHome(tt.line); got != tt.home {
			t.Errorf("RecordedHome(%s) = %q, want %q", tt.line, got, tt.home)
		}
		if got := StripEnv(tt.line); !strings.HasSuffix(got, tt.rest) {
			t.Errorf("StripEnv(%s) = %q, want it to end %q", tt.line, got, tt.rest)
		}
	}
}
