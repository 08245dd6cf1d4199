package gitignore

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestPatterns(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		path    string
		dir     bool
		ignored bool
		decided bool
	}{
		{"*.log", "a.log", false, true, true},
		{"*.log", "deep/dir/a.log", false, true, true},
		{"*.log", "a.log.txt", false, false, false},
		{"build/", "build", true, true, true},
		{"build/", "build", false, false, false}, // a file named build
		{"build/", "src/build", true, true, true},
		{"/build", "build", true, true, true},
		{"/build", "src/build", true, false, false},
		{"doc/*.txt", "doc/a.txt", false, true, true},
		{"doc/*.txt", "doc/sub/a.txt", false, false, false},
		{"doc/*.txt", "x/doc/a.txt", false, false, false}, // a middle slash anchors
		{"**/foo", "foo", false, true, true},
		{"**/foo", "a/b/foo", false, true, true},
		{"**/foo/bar", "a/foo/bar", false, true, true},
		{"abc/**", "abc/x/y", false, true, true},
		{"abc/**", "abc", true, false, false},
		{"a/**/b", "a/b", false, true, true},
		{"a/**/b", "a/x/y/b", false, true, true},
		{"a/**/b", "a/xb", false, false, false},
		{"fo?", "foo", false, true, true},
		{"fo?", "fo/o", false, false, false},
		{"[abc].go", "b.go", false, true, true},
		{"[!abc].go", "d.go", false, true, true},
		{"[!abc].go", "a.go", false, false, false},
		{"[a-c]x", "bx", false, true, true},
		{`\#hash`, "#hash", false, true, true},
		{`\!bang`, "!bang", false, true, true},
		{"# comment", "# comment", false, false, false},
		{"trailing   ", "trailing", false, true, true},
		{`space\ `, "space ", false, true, true},
		{"[unclosed", "[unclosed", false, false, false}, // git: matches nothing
		{`[a\-c]`, "-", false, true, true},
		{`[a\-c]`, "b", false, false, false},
		{"a[/]b", "a/b", false, false, false},
		{"a**b", "axxb", false, true, true},
		{"a**b", "ax/xb", false, false, false},
	} {
		f := Parse("", []byte(tt.pattern))
		ig, dec := f.Match(tt.path, tt.dir)
		if ig != tt.ignored || dec != tt.decided {
			t.Errorf("pattern %q on %q (dir=%v): ignored=%v decided=%v, want %v %v", tt.pattern, tt.path, tt.dir, ig, dec, tt.ignored, tt.decided)
		}
	}
}

func TestNegationAndOrder(t *testing.T) {
	f := Parse("", []byte("*.log\n!keep.log\n"))
	if ig, _ := f.Match("x.log", false); !ig {
		t.Error("x.log should be ignored")
	}
	if ig, dec := f.Match("keep.log", false); ig || !dec {
		t.Error("keep.log should be re-included by the later negation")
	}
	f = Parse("", []byte("!keep.log\n*.log\n"))
	if ig, _ := f.Match("keep.log", false); !ig {
		t.Error("a later pattern wins: keep.log should be ignored")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"*.log", "a/**/b", "[!a-c]x", `\!x`, "[", "**", "/"} {
		f.Add(s, "a/b/c.log")
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if expr, _, ok := translate(pattern); ok {
			if _, err := regexp.Compile(expr); err != nil {
				t.Fatalf("%q translates to %q, which does not compile: %v", pattern, expr, err)
			}
		}
		gi := Parse("", []byte(pattern))
		gi.Match(path, false)
		gi.Match(path, true)
		// The fast forms decide as the expression does.
		for i := range gi.patterns {
			p := &gi.patterns[i]
			if p.fast != 0 && p.matches(path) != p.re.MatchString(path) {
				t.Fatalf("%q on %q: the fast form says %v, the expression %v", pattern, path, p.matches(path), p.re.MatchString(path))
			}
		}
	})
}

// TestFastForms holds the forms matched without the expression to it.
func TestFastForms(t *testing.T) {
	paths := []string{"", "a", "node_modules", "x/node_modules", "x/node_modules/y", "xnode_modules", "a.log", ".log", "b/a.log",
		"b/a.log/c", "a.logx", "scripts/local", "x/scripts/local", "scripts/localx", "forks", "a/forks", "settings_local.py", "a/b/settings_local.py"}
	n := 0
	for _, line := range []string{"node_modules", "node_modules/", "*.log", "/scripts/local/", "scripts/local", "/forks/", "settings_local.py", "!*.log", "a.log"} {
		f := Parse("", []byte(line))
		for i := range f.patterns {
			p := &f.patterns[i]
			if p.fast == 0 {
				t.Errorf("%q is not matched in a fast form", line)
				continue
			}
			n++
			for _, rel := range paths {
				if p.matches(rel) != p.re.MatchString(rel) {
					t.Errorf("%q on %q: the fast form says %v, the expression %v", line, rel, p.matches(rel), p.re.MatchString(rel))
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no fast form")
	}
}

// TestAgainstGit walks trees with this engine and compares the files it
// keeps with the untracked, not ignored files real git lists for the same
// tree (git ls-files --others --exclude-standard, which like a walk here
// does not enter an ignored directory). An empty file content makes a file;
// ".gitignore" and ".git/info/exclude" contents are patterns.
func TestAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, tt := range []struct {
		name  string
		files map[string]string
	}{
		{"anchoring", map[string]string{
			".gitignore": "/top.txt\ndocs/*.md\nmid/file.txt\na/**/z.txt\n/anch/deep/\n",
			"top.txt":    "", "sub/top.txt": "", "docs/a.md": "", "docs/x/b.md": "", "x/docs/c.md": "",
			"mid/file.txt": "", "q/mid/file.txt": "", "a/z.txt": "", "a/b/z.txt": "", "a/b/c/z.txt": "", "b/a/z.txt": "",
			"anch/deep/f": "", "q/anch/deep/f": "",
		}},
		{"negation", map[string]string{
			".gitignore": "*.log\n!keep.log\nneg/\n!neg/inner.txt\nexdir/*\n!exdir/keep/\nlib/**\n!lib/keep.c\n",
			"a.log":      "", "keep.log": "", "sub/keep.log": "", "neg/inner.txt": "", "neg/other.txt": "",
			"exdir/a": "", "exdir/keep/b": "", "exdir/sub/c": "", "lib/keep.c": "", "lib/x/keep.c": "", "lib/a.h": "",
		}},
		{"nested files", map[string]string{
			".gitignore":            "*.log\n*.o\n!/sub/x.o\n",
			"sub/.gitignore":        "!important.log\nlocal.txt\n/anch.txt\n!x.o\n*.c\n",
			"sub/deeper/.gitignore": "!*.c\nd.txt\n",
			"a.log":                 "", "sub/important.log": "", "sub/other.log": "", "x.o": "", "sub/x.o": "", "sub/y.o": "",
			"local.txt": "", "sub/local.txt": "", "sub/q/local.txt": "", "sub/anch.txt": "", "sub/q/anch.txt": "",
			"sub/e.c": "", "sub/deeper/e.c": "", "sub/deeper/d.txt": "", "d.txt": "",
		}},
		{"directory only", map[string]string{
			".gitignore": "build/\ndironly/\nstar*/\n*.bak/\nx/**/\n",
			"build/x.c":  "", "sub/build/y.c": "", "sub2/build": "", "dironly/f": "", "z/dironly": "",
			"starA/f": "", "starfile": "", "f.bak/g": "", "g.bak": "", "x/y/z": "", "x/f": "",
		}},
		{"double star", map[string]string{
			".gitignore": "**/gen/**\n**/deep.md\na**b\nabc/**\n",
			"gen/a.go":   "", "p/gen/b.go": "", "p/gen/q/c.go": "", "gen.go": "", "r/deep.md": "", "deep.md": "",
			"axxb": "", "ax/xb": "", "abc/x/y": "", "abc.txt": "",
		}},
		{"classes and escapes", map[string]string{
			".gitignore": "[abc].c\n[!x]y.go\nq?.txt\n\\#hash\n\\!bang\ntrailing   \nsp\\ \n# comment\nA.TXT\n[z-a].t\n[unclosed\n",
			"a.c":        "", "d.c": "", "ay.go": "", "xy.go": "", "q1.txt": "", "q12.txt": "", "#hash": "", "!bang": "",
			"trailing": "", "sp ": "", "sp": "", "# comment": "", "A.TXT": "", "a.txt": "", "b.t": "", "[unclosed": "",
		}},
		{"bracket forms", map[string]string{
			".gitignore": "[]x]1\n[a-]2\n[\\]]3\nd[[:digit:]]\nu[[:upper:]]\ntrail\\\n*.[ch]\n[!]]5\n[a\\-c]6\n[+--]7\na[[:punct:]]b\nc[+-0]d\n",
			"]1":         "", "x1": "", "y1": "", "a2": "", "-2": "", "b2": "", "]3": "", "\\3": "", "d1": "", "dx": "",
			"uA": "", "ua": "", "trail\\": "", "trail": "", "f.c": "", "f.h": "", "f.o": "", "a5": "", "]5": "", "-6": "", "b6": "", ",7": "", "-7": "", "c7": "", "a/b": "", "a%b": "", "c/d": "", "c.d": "",
		}},
		{"exclude file", map[string]string{
			".git/info/exclude": "secret.env\n*.tmp\n",
			".gitignore":        "!keep.tmp\n",
			"secret.env":        "", "sub/secret.env": "", "a.tmp": "", "keep.tmp": "", "a.go": "",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			git := func(args ...string) []byte {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("git %s: %v", strings.Join(args, " "), err)
				}
				return out
			}
			git("init", "-q")
			for rel, data := range tt.files {
				p := filepath.Join(root, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := strings.Split(strings.TrimSuffix(string(git("ls-files", "--others", "--exclude-standard", "-z")), "\x00"), "\x00")
			slices.Sort(want)
			got := walk(t, root)
			for _, f := range want {
				if !slices.Contains(got, f) {
					t.Errorf("ignores %q, which git keeps", f)
				}
			}
			for _, f := range got {
				if !slices.Contains(want, f) {
					t.Errorf("keeps %q, which git ignores", f)
				}
			}
		})
	}
}

// walk lists the files of the tree at root this engine keeps, the way a
// scan walks it: ignored directories skipped whole.
func walk(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	var dir func(rel string, s Stack)
	dir = func(rel string, s Stack) {
		s = s.Enter(root, rel)
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			r := e.Name()
			if rel != "" {
				r = rel + "/" + r
			}
			switch {
			case e.IsDir() && e.Name() != ".git" && !s.Ignored(r, true):
				dir(r, s)
			case !e.IsDir() && !s.Ignored(r, false):
				out = append(out, r)
			}
		}
	}
	dir("", Exclude(root))
	slices.Sort(out)
	return out
}
