package command

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// argWords analyzes "echo <arg>" and returns the argument words.
func argWords(t *testing.T, args string) []Word {
	t.Helper()
	an, err := Analyze("echo " + args)
	if err != nil {
		t.Fatalf("Analyze(%q): %v", "echo "+args, err)
	}
	return an.Commands[len(an.Commands)-1].Args[1:]
}

func TestWords(t *testing.T) {
	lit := func(s string) Word { return Word{Text: s, Literal: true} }
	src := func(s string) Word { return Word{Text: s} }
	cases := []struct {
		in   string
		want []Word
	}{
		{`a "b c" 'd e' f\ g`, []Word{lit("a"), lit("b c"), lit("d e"), lit("f g")}},
		{`r''m "r"m \r\m`, []Word{lit("rm"), lit("rm"), lit("rm")}},
		{`"a\$b\"c\\d\e\` + "`" + `"`, []Word{lit(`a$b"c\d\e` + "`")}},
		{`'a\nb' "x\ty"`, []Word{lit(`a\nb`), lit(`x\ty`)}},
		{`$'a\tb' $'\x41\102\u0043' $'\cA' $'it\'s'`, []Word{lit("a\tb"), lit("ABC"), lit("\x01"), lit("it's")}},
		{`$'\0' $'\x' $'\u00e9' $'\c?'`, []Word{src(`$'\0'`), src(`$'\x'`), src(`$'\u00e9'`), src(`$'\c?'`)}},
		{`$x "$x" ${x} $(x) $((1)) $"t"`, []Word{src("$x"), src(`"$x"`), src("${x}"), src("$(x)"), src("$((1))"), src(`$"t"`)}},
		{`~ ~/a a=~ b:~ a~ "~" \~`, []Word{src("~"), src("~/a"), src("a=~"), src("b:~"), lit("a~"), lit("~"), lit("~")}},
		{`* a?b [ab] a[ ] \* "*" '?'`, []Word{src("*"), src("a?b"), src("[ab]"), lit("a["), lit("]"), lit("*"), lit("*"), lit("?")}},
		{`{a,b} x{1..3} {} {a} \{a,b}`, []Word{src("{a,b}"), src("x{1..3}"), lit("{}"), lit("{a}"), lit("{a,b}")}},
		{`a$ $ "$"`, []Word{lit("a$"), lit("$"), lit("$")}}, // a $ that ends the word is literal in every shell
		{`a$b $~x $=y`, []Word{src("a$b"), src("$~x"), src("$=y")}},
		{`-run=^$ x$\y`, []Word{lit("-run=^$"), src(`x$\y`)}},
		{`""`, []Word{lit("")}},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got := argWords(t, tc.in)
			if !slices.Equal(got, tc.want) {
				t.Errorf("words of %s:\n got %+v\nwant %+v", tc.in, got, tc.want)
			}
		})
	}
}

func TestDecodeANSIC(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{`plain`, "plain", true},
		{`\a\b\e\E\f\n\r\t\v\\\'\"\?`, "\a\b\x1b\x1b\f\n\r\t\v\\'\"?", true},
		{`\141\1411`, "aa1", true},
		{`\x41\x414`, "AA4", true},
		{`\u41\U00000041`, "AA", true},
		{`\cz\cZ`, "\x1a\x1a", true},
		{`\q`, `\q`, true},
		{`\0`, "", false},
		{`\x00`, "", false},
		{`\xff`, "", false},
		{`\777`, "", false},
		{`\u20ac`, "", false},
		{`\xg`, "", false},
		{`\c`, "", false},
		{`\c1`, "", false},
		{`trailing\`, "", false},
	}
	for _, tc := range cases {
		got, ok := decodeANSIC(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("decodeANSIC(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestOptionParse(t *testing.T) {
	sp := spec("ab:c::l#", "long", "value=", "opt?", "verbose")
	words := func(s ...string) []word {
		out := make([]word, len(s))
		for i, x := range s {
			out[i] = literalWord(x)
		}
		return out
	}
	cases := []struct {
		args      []word
		opts      string // name=arg,…
		operands  string
		uncertain bool
	}{
		{words("-a", "x"), "-a", "x", false},
		{words("-ab", "v", "x", "-a"), "-a,-b=v", "x -a", false},
		{words("-bv", "x"), "-b=v", "x", false},
		{words("-c", "x"), "-c", "x", false},
		{words("-cval", "x"), "-c=val", "x", false},
		{words("-l017a"), "-l=017,-a", "", false},
		{words("--long", "--value", "v", "--value=w", "--opt=o", "--", "-a"), "--long,--value=v,--value=w,--opt=o", "-a", false},
		{words("--verb", "x"), "--verbose", "x", false},
		{words("--v", "x"), "", "", true}, // ambiguous: value, verbose
		{words("--long=x"), "", "", true},
		{words("-z"), "", "", true},
		{words("-b"), "", "", true},
		{words("--value"), "", "", true},
		{words("-", "x"), "", "- x", false},
		{append(words("-a"), opaqueWord("$X"), literalWord("y")), "-a", "", true},
		{append(words("-b"), opaqueWord("$X"), literalWord("y")), "", "", true},
		{append(words("-b"), word{Word: Word{Text: `"$X"`}, expands: true}, literalWord("y")), "-b=\"$X\"", "y", false},
		{append(words("-a"), word{Word: Word{Text: `./$X`}, lead: '.', expands: true}), "-a", "./$X", false},
	}
	for _, tc := range cases {
		p := sp.parse(tc.args)
		var opts []string
		for _, o := range p.opts {
			s := o.name
			if o.hasArg {
				s += "=" + o.arg.Text
			}
			opts = append(opts, s)
		}
		var ops []string
		for _, o := range p.operands {
			ops = append(ops, o.Text)
		}
		if (p.uncertain != "") != tc.uncertain {
			t.Errorf("parse(%v) uncertain = %q, want %v", tc.args, p.uncertain, tc.uncertain)
			continue
		}
		if tc.uncertain {
			continue
		}
		if strings.Join(opts, ",") != tc.opts || strings.Join(ops, " ") != tc.operands {
			t.Errorf("parse(%v) = %q %q, want %q %q", tc.args, opts, ops, tc.opts, tc.operands)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	cases := map[string][]string{
		"x + y*2":          {"x", "y"},
		"0x1f + 16#ff + a": {"a"},
		"a[i] = b_2":       {"a", "i", "b_2"},
		"":                 nil,
		"1e5":              nil,
	}
	for in, want := range cases {
		if got := identifiers(in); !slices.Equal(got, want) {
			t.Errorf("identifiers(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProgramName(t *testing.T) {
	cases := []struct {
		prog, base string
		known      bool
	}{
		{"timeout", "timeout", true},
		{"/usr/bin/timeout", "timeout", true},
		{"/usr//bin/../bin/sudo", "sudo", true},
		{"./timeout", "timeout", false},
		{"/tmp/sudo", "sudo", false},
		{"bin/sh", "sh", false},
	}
	for _, tc := range cases {
		base, known := programName(tc.prog)
		if base != tc.base || known != tc.known {
			t.Errorf("programName(%q) = %q, %v; want %q, %v", tc.prog, base, known, tc.base, tc.known)
		}
	}
}

func TestHarmlessTarget(t *testing.T) {
	for p, want := range map[string]bool{
		"/dev/null": true, "/dev/stderr": true, "/dev/fd/3": true, "/dev/tty": true,
		"/dev/fd/": false, "/dev/fd/3-": false, "/dev/fd/../../etc/passwd": false, "/dev//null": false,
		"/dev/sda": false, "null": false,
	} {
		if harmlessTarget(p) != want {
			t.Errorf("harmlessTarget(%q) = %v", p, !want)
		}
	}
}

// TestOptionWordShapes checks the hand-written matchers for nice's and
// find's special words against the regular expressions they replace.
func TestOptionWordShapes(t *testing.T) {
	nice := regexp.MustCompile(`^-[-+]?[0-9]+$`)
	newer := regexp.MustCompile(`^-newer[aBcmt][aBcmt]$`)
	for _, w := range []string{"", "-", "--", "-+", "-5", "-10", "--5", "-+5", "-+-5", "-5x", "5", "-٣", " -5", "-5 ",
		"-newer", "-newermt", "-newerBa", "-newerxy", "-newermtt", "-newerm", "newermt", "-neweraa", "-NEWERmt"} {
		if got, want := legacyNice(w), nice.MatchString(w); got != want {
			t.Errorf("legacyNice(%q) = %v, want %v", w, got, want)
		}
		if got, want := findNewer(w), newer.MatchString(w); got != want {
			t.Errorf("findNewer(%q) = %v, want %v", w, got, want)
		}
	}
}

// TestAnalyzeConcurrent analyzes lines that build option tables on first
// use from many goroutines at once (run with -race).
func TestAnalyzeConcurrent(t *testing.T) {
	lines := []string{"timeout -s KILL 5 ls", "sudo -u x ls", "env -i ls", "xargs -0 ls", "nice -n 5 ls", "nice -5 ls",
		"python3 -c 'x'", "node -e x", "awk '{print}' f", "watch -n 1 ls", "flock -x f ls", "su -c ls", "perl -e 1"}
	want := make([]string, len(lines))
	for i, l := range lines {
		want[i] = analysisString(Analyze(l))
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range lines {
				i = (i + g) % len(lines)
				if got := analysisString(Analyze(lines[i])); got != want[i] {
					t.Errorf("%q: concurrent %s, sequential %s", lines[i], got, want[i])
				}
			}
		}()
	}
	wg.Wait()
}

func analysisString(a *Analysis, err error) string { return fmt.Sprintf("%+v %v", a, err) }

// TestSpecBuildsOnce parses with a fresh option table from many goroutines
// at once (run with -race): the table is built once, on first use.
func TestSpecBuildsOnce(t *testing.T) {
	s := spec("k:s:fpv", "kill-after=", "signal=", "verbose").stopping("-f")
	args := []word{literalWord("--sig=KILL"), literalWord("-k5"), literalWord("-f"), literalWord("ls")}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := s.parse(args)
			if p.uncertain != "" || len(p.opts) != 3 || len(p.operands) != 1 || p.get("--signal").arg.Text != "KILL" {
				t.Errorf("parse: %+v", p)
			}
		}()
	}
	wg.Wait()
}
