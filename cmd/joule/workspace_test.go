package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRun runs git in dir and fails the test on an error.
func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// firstHour is a fresh user: an empty home, a JOULE_HOME in it, and a git
// repository with a package two levels down.
type firstHour struct {
	home, repo, sub string
	env             []string
}

func newFirstHour(t *testing.T) *firstHour {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	f := &firstHour{home: filepath.Join(dir, "home"), repo: filepath.Join(dir, "src", "repo")}
	f.sub = filepath.Join(f.repo, "pkg", "sub")
	for _, d := range []string{f.home, f.sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, f.repo, "init", "-q")
	f.env = []string{"HOME=" + f.home, "JOULE_HOME=", "XDG_DATA_HOME=", "XDG_CONFIG_HOME=", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1"}
	return f
}

// TestInitAndInstallTakeTheProjectRoot: from pkg/sub of a repository,
// joule init grants the repository and joule install --project writes
// where Claude Code reads it, the repository's root; the file with this
// machine's paths is git-ignored, so 'git add -A' does not commit it, and
// the uninstall gives .git/info/exclude back as it was.
func TestInitAndInstallTakeTheProjectRoot(t *testing.T) {
	f := newFirstHour(t)
	r := jouleIn(t, f.sub, nil, f.env, "init")
	if r.code != 0 || !strings.Contains(r.stdout, "workspace      "+f.repo+"\n") || !strings.Contains(r.stdout, "project root   "+f.repo) {
		t.Fatalf("init from pkg/sub: %+v", r)
	}
	exclude := filepath.Join(f.repo, ".git", "info", "exclude")
	before, _ := os.ReadFile(exclude)
	r = jouleIn(t, f.sub, nil, f.env, "install", "claude-code", "--project")
	if r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	for _, p := range []string{".claude/settings.json", ".claude/settings.local.json", ".mcp.json"} {
		if _, err := os.Stat(filepath.Join(f.repo, p)); err != nil {
			t.Errorf("%s not at the root: %v\n%s", p, err, r.stdout)
		}
		if _, err := os.Stat(filepath.Join(f.sub, p)); err == nil {
			t.Errorf("%s written in pkg/sub", p)
		}
	}
	if !strings.Contains(r.stdout, "covers the workspace") || !strings.Contains(r.stdout, "settings.local.json (paths on this machine) is git-ignored") {
		t.Fatalf("install findings: %s", r.stdout)
	}
	added := gitRun(t, f.repo, "add", "-A", "-n")
	if strings.Contains(added, "settings.local.json") || !strings.Contains(added, ".claude/settings.json") {
		t.Fatalf("git add -A would add:\n%s", added)
	}
	// Again: nothing changes, the file stays ignored.
	r = jouleIn(t, f.sub, nil, f.env, "install", "claude-code", "--project")
	if strings.Contains(r.stdout, "wrote ") || !strings.Contains(r.stdout, "is git-ignored") {
		t.Fatalf("second install: %s", r.stdout)
	}
	r = jouleIn(t, f.sub, nil, f.env, "install", "claude-code", "--project", "--uninstall")
	after, _ := os.ReadFile(exclude)
	if r.code != 0 || !bytes.Equal(before, after) {
		t.Fatalf("uninstall: %+v\nexclude before %q, after %q", r, before, after)
	}
	if _, err := os.Stat(filepath.Join(f.repo, ".claude")); err == nil {
		t.Fatalf("uninstall left .claude")
	}
}

// TestInitRefusesDiskAndHome: a workspace at / or at the home directory
// would let every session read and write all of it: init refuses it
// (exit 2, naming --force), and issues no grant; --force grants it with a
// warning. install --project in the home directory would write the user
// files: refused, pointing at --user, and nothing written.
func TestInitRefusesDiskAndHome(t *testing.T) {
	f := newFirstHour(t)
	for _, dir := range []string{"/", f.home} {
		r := jouleIn(t, dir, nil, f.env, "init")
		if r.code != 2 || !strings.Contains(r.stderr, "--force") || !strings.Contains(r.stderr, dir) {
			t.Fatalf("init in %s: %+v", dir, r)
		}
	}
	if r := jouleIn(t, f.home, nil, f.env, "grant", "ls"); strings.Count(r.stdout, "\n") > 1 {
		t.Fatalf("a refused init issued a grant: %+v", r)
	}
	r := jouleIn(t, f.sub, nil, f.env, "init", "--workspace", f.home)
	if r.code != 2 || !strings.Contains(r.stderr, "your whole home directory") {
		t.Fatalf("init --workspace ~: %+v", r)
	}
	r = jouleIn(t, f.home, nil, f.env, "init", "--force")
	if r.code != 0 || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stdout, "workspace      "+f.home+"\n") {
		t.Fatalf("init --force in home: %+v", r)
	}
	r = jouleIn(t, f.home, nil, f.env, "install", "claude-code", "--project")
	if r.code != 2 || !strings.Contains(r.stderr, "--user") {
		t.Fatalf("install --project in home: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(f.home, ".claude")); err == nil {
		t.Fatal("install --project in home wrote the user-level files")
	}
}

// TestHomeRepositoryIsNoProject: a home directory that is itself a git
// repository (dotfiles) is not taken as the project of a directory under
// it that is no repository: that directory is.
func TestHomeRepositoryIsNoProject(t *testing.T) {
	f := newFirstHour(t)
	gitRun(t, f.home, "init", "-q")
	dir := filepath.Join(f.home, "notes")
	os.MkdirAll(dir, 0o755)
	r := jouleIn(t, dir, nil, f.env, "init")
	if r.code != 0 || !strings.Contains(r.stdout, "workspace      "+dir+"\n") {
		t.Fatalf("init under a home repository: %+v", r)
	}
}
