package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// persistTree is a home with a workspace repository, a temp dir and a
// cache, and the Spec that makes the workspace, the temp dir and the cache
// writable (the cache a private layer).
type persistTree struct {
	root, home, ws, tmp, cache string
	env                        map[string]string
}

func newPersistTree(t *testing.T) *persistTree {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	p := &persistTree{root: root, home: filepath.Join(root, "home"), tmp: filepath.Join(root, "tmp"), env: map[string]string{"GIT_CONFIG_NOSYSTEM": "1"}}
	p.ws = filepath.Join(p.home, "ws")
	p.cache = filepath.Join(p.home, ".cache")
	for _, d := range []string{p.ws, p.tmp, p.cache} {
		os.MkdirAll(d, 0o755)
	}
	p.git(t, "init", "-q")
	return p
}

func (p *persistTree) git(t *testing.T, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = p.ws
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_WORK_TREE=")
	})
	c.Env = append(env, "HOME="+p.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// guards runs the discovery with the workspace (and extra) as the grant's
// trees.
func (p *persistTree) guards(extra ...string) map[string]placeholder {
	spec := Spec{Layers: []Layer{{Write: compact(append([]string{p.ws, p.tmp, p.cache}, extra...))}}, Caches: []string{p.cache},
		persist: persistIn{home: p.home, getenv: func(k string) string { return p.env[k] }, grant: compact(append([]string{p.ws}, extra...))}}
	out := map[string]placeholder{}
	for _, g := range spec.guards() {
		out[g.path] = g.make
	}
	return out
}

// TestGuards pins what the discovery finds in a workspace: the layout,
// the paths it must guard (with their placeholders) and paths it must not.
func TestGuards(t *testing.T) {
	rel := func(p *persistTree, s string) string {
		s = strings.NewReplacer("{ws}", p.ws, "{home}", p.home, "{tmp}", p.tmp, "{cache}", p.cache, "{root}", p.root).Replace(s)
		return filepath.Clean(s)
	}
	tests := []struct {
		name   string
		layout func(t *testing.T, p *persistTree)
		want   map[string]byte // path → placeholder kind (0, 'd', 'f')
		not    []string
	}{
		{"a repository", func(t *testing.T, p *persistTree) {},
			map[string]byte{"{ws}/.git/config": 'f', "{ws}/.git/hooks": 'd', "{ws}/.git/info": 'd', "{ws}/.git/commondir": 'f'},
			[]string{"{ws}/.git/config.worktree", "{ws}/.git", "{ws}"}},
		{"worktree configuration", func(t *testing.T, p *persistTree) {
			p.git(t, "config", "extensions.worktreeConfig", "true")
			p.git(t, "config", "core.hooksPath", "tools/hooks")
			p.git(t, "config", "include.path", "../extra.cfg")
			p.git(t, "config", "includeIf.gitdir:/.path", "~/inc.cfg")
		}, map[string]byte{"{ws}/.git/config.worktree": 'f', "{ws}/tools/hooks": 'd', "{ws}/extra.cfg": 'f'},
			[]string{"{home}/inc.cfg"}},
		{"nested repositories two deep, not three", func(t *testing.T, p *persistTree) {
			p.git(t, "init", "-q", "a/b")
			p.git(t, "init", "-q", "x/y/z")
			p.git(t, "init", "-q", "--bare", "srv.git")
			p.git(t, "init", "-q", "node_modules/dep")
		}, map[string]byte{"{ws}/a/b/.git/config": 'f', "{ws}/a/b/.git/hooks": 'd', "{ws}/srv.git": 0},
			[]string{"{ws}/x/y/z/.git/config", "{ws}/srv.git/config", "{ws}/node_modules/dep/.git/config"}},
		{"submodules and committed bare repositories at any depth", func(t *testing.T, p *persistTree) {
			p.git(t, "init", "-q", "d1/d2/d3/old")
			p.git(t, "-C", "d1/d2/d3/old", "commit", "-q", "--allow-empty", "-m", "i")
			p.git(t, "init", "-q", "--bare", "d1/d2/d3/fx.git")
			p.git(t, "add", "d1")
			p.git(t, "commit", "-q", "-m", "c")
			os.RemoveAll(filepath.Join(p.ws, ".git", "modules"))
			os.MkdirAll(filepath.Join(p.ws, ".git", "modules", "lib", "sub"), 0o755)
			p.git(t, "init", "-q", "--bare", ".git/modules/lib/sub")
		}, map[string]byte{"{ws}/d1/d2/d3/old/.git/config": 'f', "{ws}/d1/d2/d3/fx.git": 0,
			"{ws}/.git/modules/lib/sub/config": 'f', "{ws}/.git/modules/lib/sub/hooks": 'd', "{ws}/.git/modules/lib/sub/commondir": 'f'},
			nil},
		{"linked worktrees", func(t *testing.T, p *persistTree) {
			p.git(t, "commit", "-q", "--allow-empty", "-m", "i")
			p.git(t, "worktree", "add", "-q", "deep/er/wt")
			p.git(t, "worktree", "add", "-q", "../outside")
		}, map[string]byte{"{ws}/deep/er/wt/.git": 0, "{ws}/.git/worktrees/wt/commondir": 0, "{ws}/.git/worktrees/outside/commondir": 0},
			[]string{"{home}/outside/.git", "{ws}/.git/worktrees/wt/config.worktree"}},
		{"a .git that links to the git directory", func(t *testing.T, p *persistTree) {
			p.git(t, "init", "-q", "x/real")
			os.Rename(filepath.Join(p.ws, "x/real/.git"), filepath.Join(p.ws, "x/gd"))
			os.Symlink("../gd", filepath.Join(p.ws, "x/real/.git"))
		}, map[string]byte{"{ws}/x/real/.git": 0, "{ws}/x/gd/config": 'f', "{ws}/x/gd/hooks": 'd'}, nil},
		{"GIT_DIR and the global configuration", func(t *testing.T, p *persistTree) {
			p.git(t, "init", "-q", "--bare", "x/y/g.git")
			p.env["GIT_DIR"] = filepath.Join(p.ws, "x/y/g.git")
			os.WriteFile(filepath.Join(p.home, ".gitconfig"), []byte("[core]\n\thooksPath = .hooks\n[include]\n\tpath = ws/global.cfg\n"), 0o644)
		}, map[string]byte{"{ws}/x/y/g.git/config": 'f', "{ws}/x/y/g.git/hooks": 'd', "{ws}/.hooks": 'd', "{ws}/global.cfg": 'f'},
			[]string{"{home}/.gitconfig"}},
		{"the home inside a writable tree", func(t *testing.T, p *persistTree) {
			os.WriteFile(filepath.Join(p.home, ".bashrc"), nil, 0o644)
			os.MkdirAll(filepath.Join(p.home, ".config"), 0o755)
			os.MkdirAll(filepath.Join(p.home, "notdot"), 0o755)
		}, map[string]byte{"{home}/.bashrc": 0, "{home}/.config": 0, "{home}/.bash_profile": 0, "{home}/.zshenv": 0, "{home}/.local": 0},
			[]string{"{home}/notdot", "{cache}", "{home}/ws"}},
		{"PATH, ENV, BASH_ENV, ZDOTDIR, GOBIN", func(t *testing.T, p *persistTree) {
			p.env["PATH"] = strings.Join([]string{filepath.Join(p.ws, "bin"), "/usr/bin", "relative/bin", "", filepath.Join(p.tmp, "b"), filepath.Join(p.cache, "x", "bin")}, ":")
			p.env["ENV"] = filepath.Join(p.ws, "env.sh")
			p.env["BASH_ENV"] = filepath.Join(p.tmp, "benv")
			p.env["ZDOTDIR"] = filepath.Join(p.ws, "z")
			p.env["GOBIN"] = filepath.Join(p.ws, "gobin")
		}, map[string]byte{"{ws}/bin": 0, "{tmp}/b": 0, "{ws}/env.sh": 0, "{tmp}/benv": 0, "{ws}/z/.zshrc": 0, "{ws}/z/.zshenv": 0, "{ws}/gobin": 0},
			[]string{"/usr/bin", "{cache}/x/bin", "{ws}/relative/bin"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPersistTree(t)
			tc.layout(t, p)
			extra := []string(nil)
			if strings.HasPrefix(tc.name, "the home") {
				extra = []string{p.home}
			}
			got := p.guards(extra...)
			for w, kind := range tc.want {
				w = rel(p, w)
				g, ok := got[w]
				if !ok {
					t.Errorf("%s is not guarded", w)
				} else if g.kind != kind {
					t.Errorf("%s: placeholder %q, want %q", w, g.kind, kind)
				}
			}
			for _, n := range tc.not {
				if _, ok := got[rel(p, n)]; ok {
					t.Errorf("%s is guarded; it must not be", rel(p, n))
				}
			}
			for g := range got {
				if !within(g, p.ws) && !within(g, p.tmp) && !(extra != nil && within(g, p.home)) {
					t.Errorf("%s is guarded outside the writable trees", g)
				}
				if within(g, p.cache) {
					t.Errorf("%s is guarded inside a private layer", g)
				}
			}
		})
	}
}

// TestPlaceholders: the absent names git reads as empty are created so
// that a mount can cover them (commondir naming the git directory
// itself), and git reads the repository as before.
func TestPlaceholders(t *testing.T) {
	p := newPersistTree(t)
	os.RemoveAll(filepath.Join(p.ws, ".git", "hooks"))
	p.git(t, "config", "core.hooksPath", "tools/hooks")
	p.git(t, "commit", "-q", "--allow-empty", "-m", "i")
	spec := Spec{Layers: []Layer{{Write: []string{p.ws}}}, persist: persistIn{home: p.home, getenv: func(string) string { return "" }, grant: []string{p.ws}}, stats: stats{}}
	spec.guarded = spec.guards()
	makePlaceholders(spec.guarded, spec.stats)
	for _, d := range []string{".git/hooks", "tools/hooks", ".git/info"} {
		if fi, err := os.Stat(filepath.Join(p.ws, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(p.ws, ".git", "commondir")); err != nil || string(b) != "." {
		t.Errorf("commondir: %q %v", b, err)
	}
	p.git(t, "status", "--short")
	p.git(t, "commit", "-q", "--allow-empty", "-m", "after")
	c := exec.Command("git", "rev-parse", "--git-common-dir")
	c.Dir = p.ws
	if out, err := c.Output(); err != nil || filepath.Clean(strings.TrimSpace(string(out))) != filepath.Join(p.ws, ".git") {
		t.Errorf("git rev-parse --git-common-dir: %q %v", out, err)
	}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	var ro []string
	for _, m := range plan.Mounts {
		if m.Kind == MountReadOnly {
			ro = append(ro, strings.TrimPrefix(m.Path, p.ws+"/"))
		}
	}
	for _, want := range []string{".git/config", ".git/hooks", ".git/info", ".git/commondir", "tools/hooks"} {
		if !slices.Contains(ro, want) {
			t.Errorf("%s is not a read-only mount: %v", want, ro)
		}
	}
	if !slices.Contains(plan.Mounts, Mount{filepath.Join(p.ws, ".git"), MountPin}) {
		t.Errorf(".git is not pinned: %v", plan.Mounts)
	}
}

// BenchmarkGuards times the discovery of one command start over the
// repository the test runs in (its checkout, as a workspace): the listing,
// the index, the configurations, with nothing learnt beforehand.
func BenchmarkGuards(b *testing.B) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		b.Skip("not in a git checkout")
	}
	ws, _ := filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	home := b.TempDir()
	n := 0
	for i := 0; i < b.N; i++ {
		spec := Spec{Layers: []Layer{{Write: []string{ws}}}, persist: persistIn{home: home, getenv: os.Getenv, grant: []string{ws}}}
		n = len(spec.guards())
	}
	b.ReportMetric(float64(n), "guards")
}
