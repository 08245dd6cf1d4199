package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestParseGitConfig pins the reading of git's configuration syntax: what
// git itself reports with `git config --list` for the same file.
func TestParseGitConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // section.sub.key=value
	}{
		{"plain", "[core]\n\thooksPath = .githooks\n", []string{"core..hookspath=.githooks"}},
		{"case", "[Core]\n\tHooksPath=x\n", []string{"core..hookspath=x"}},
		{"subsection", "[includeIf \"gitdir:~/w/\"]\n\tpath = ../x.cfg\n", []string{"includeif.gitdir:~/w/.path=../x.cfg"}},
		{"legacy subsection", "[branch.Main]\nremote = o\n", []string{"branch.main.remote=o"}},
		{"quoted with comment chars", "[core]\nfsmonitor = \"touch a; b # c\" ; comment\n", []string{"core..fsmonitor=touch a; b # c"}},
		{"comment ends value", "[core]\nx = a b   # c\n", []string{"core..x=a b"}},
		{"escapes", "[a]\nx = \"a\\tb\\\\c\\\"d\"\n", []string{"a..x=a\tb\\c\"d"}},
		{"continuation", "[a]\nx = one \\\ntwo\n", []string{"a..x=one two"}},
		{"boolean key", "[extensions]\n\tworktreeConfig\n", []string{"extensions..worktreeconfig=true"}},
		{"comments and blank lines", "# top\n; also\n\n[a] ; c\n  b = 1\n", []string{"a..b=1"}},
		{"section on one line", "[a] b = 1\n", []string{"a..b=1"}},
		{"escaped quote in subsection", "[s \"a\\\"b\"]\nk = v\n", []string{"s.a\"b.k=v"}},
		{"no final newline", "[a]\nb = c", []string{"a..b=c"}},
		{"bad line stops", "[a]\nb = c\n!x\n[d]\ne = f\n", []string{"a..b=c"}},
		{"unterminated quote stops", "[a]\nb = \"c\n", nil},
		{"key before any section", "b = c\n[a]\nd = e\n", []string{"a..d=e"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			parseGitConfig([]byte(tc.in), func(section, sub, key, value string) {
				got = append(got, section+"."+sub+"."+key+"="+value)
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			// Where git reads the file, it reads the same.
			if _, err := exec.LookPath("git"); err != nil || strings.Contains(tc.name, "stops") || strings.Contains(tc.name, "before any") {
				return
			}
			f := filepath.Join(t.TempDir(), "cfg")
			os.WriteFile(f, []byte(tc.in), 0o644)
			out, err := exec.Command("git", "config", "--file", f, "--list").Output()
			if err != nil {
				t.Fatalf("git config --list: %v", err)
			}
			var gits []string
			for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
				if l != "" && !strings.Contains(l, "=") {
					l += "=true" // a key without a value
				}
				if l != "" {
					gits = append(gits, l)
				}
			}
			var ours []string
			parseGitConfig([]byte(tc.in), func(section, sub, key, value string) {
				k := section + "." + key
				if sub != "" {
					k = section + "." + sub + "." + key
				}
				ours = append(ours, k+"="+value)
			})
			if !slices.Equal(ours, gits) {
				t.Errorf("ours %q, git's %q", ours, gits)
			}
		})
	}
}

func TestConfigPath(t *testing.T) {
	for _, tc := range []struct{ v, base, home, want string }{
		{".githooks", "/ws", "/h", "/ws/.githooks"},
		{"~/hooks", "/ws", "/h", "/h/hooks"},
		{"~", "/ws", "/h", "/h"},
		{"~other/x", "/ws", "/h", ""},
		{"/abs/x/../y", "/ws", "/h", "/abs/y"},
		{"%(prefix)/etc/x", "/ws", "/h", ""},
		{"rel", "", "/h", ""},
		{"", "/ws", "/h", ""},
	} {
		if got := configPath(tc.v, tc.base, tc.home); got != tc.want {
			t.Errorf("configPath(%q, %q, %q) = %q, want %q", tc.v, tc.base, tc.home, got, tc.want)
		}
	}
}

func TestGitfileAndCommondir(t *testing.T) {
	for _, tc := range []struct {
		in, file, want string
		ok             bool
	}{
		{"gitdir: ../.git/worktrees/a\n", "/ws/wt/.git", "/ws/.git/worktrees/a", true},
		{"gitdir: /abs/g\r\n", "/ws/.git", "/abs/g", true},
		{"gitdir:/abs/g\n", "/ws/.git", "", false},
		{"", "/ws/.git", "", false},
		{"gitdir: \n", "/ws/.git", "", false},
	} {
		got, ok := gitfileTarget([]byte(tc.in), tc.file)
		if got != tc.want || ok != tc.ok {
			t.Errorf("gitfileTarget(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if got, ok := commondirTarget([]byte("../..\n"), "/ws/.git/worktrees/a"); !ok || got != "/ws/.git" {
		t.Errorf("commondir ../..: %q %v", got, ok)
	}
	if got, ok := commondirTarget([]byte("."), "/ws/.git"); !ok || got != "/ws/.git" {
		t.Errorf("commondir .: %q %v", got, ok)
	}
}

// TestIndexEntries reads real indexes, of versions 2, 3 and 4, and
// compares each entry with git ls-files --stage.
func TestIndexEntries(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ws := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", args...)
		c.Dir = ws
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	for i := 0; i < 40; i++ {
		p := filepath.Join(ws, "dir", fmt.Sprintf("sub%d", i%5), fmt.Sprintf("file-with-a-long-name-%d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644)
	}
	os.WriteFile(filepath.Join(ws, "a"), nil, 0o755)
	git("init", "-q", "--bare", "fx/repo.git")
	git("init", "-q", "nested")
	git("-C", "nested", "commit", "-q", "--allow-empty", "-m", "n")
	git("add", "-A")
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			if version == "3" {
				// An intent-to-add entry has extended flags: version 3.
				os.WriteFile(filepath.Join(ws, "new.txt"), []byte("n"), 0o644)
				git("add", "-N", "new.txt")
			} else {
				git("update-index", "--index-version", version)
			}
			b, err := os.ReadFile(filepath.Join(ws, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if v := b[7]; fmt.Sprint(v) != version {
				t.Fatalf("index version %d, want %s", v, version)
			}
			var got []string
			if err := indexEntries(b, 20, func(mode uint32, path []byte) {
				got = append(got, fmt.Sprintf("%o %s", mode, path))
			}); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, l := range strings.Split(strings.TrimSpace(git("ls-files", "--stage")), "\n") {
				f := strings.Fields(l)
				want = append(want, f[0]+" "+f[len(f)-1])
			}
			if !slices.Equal(got, want) {
				t.Errorf("entries:\n%q\nwant (git ls-files --stage):\n%q", got, want)
			}
			if !slices.Contains(got, "160000 nested") || !slices.Contains(got, "100644 fx/repo.git/HEAD") {
				t.Errorf("the gitlink or the committed HEAD is missing: %q", got)
			}
		})
	}
	for _, bad := range [][]byte{nil, []byte("DIRC"), []byte("DIRC\x00\x00\x00\x05\x00\x00\x00\x01"), []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x09")} {
		if err := indexEntries(bad, 20, func(uint32, []byte) {}); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzParseGitConfig: any input parses without panicking, and every key
// reported is one git's syntax allows.
func FuzzParseGitConfig(f *testing.F) {
	for _, s := range []string{"[core]\n\thooksPath = .githooks\n", "[includeIf \"gitdir:~/\"]\npath=x\n", "[a.b]\nc=\"d\\\"e\"\\\n;x", "[a]\nb"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		parseGitConfig(b, func(section, sub, key, value string) {
			if section == "" || key == "" || !isAlpha(key[0]) {
				t.Fatalf("bad key %q.%q.%q", section, sub, key)
			}
		})
		submodulePaths(b)
		gitfileTarget(b, "/ws/.git")
	})
}

// FuzzIndexEntries: any input is read without panicking or reading past
// its end.
func FuzzIndexEntries(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01" + strings.Repeat("\x00", 62) + "\x00a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, h := range []int{20, 32} {
			indexEntries(b, h, func(mode uint32, path []byte) {
				if len(path) > len(b) {
					t.Fatalf("a path longer than the index")
				}
			})
		}
	})
}
