package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestIgnoredCode pins what the discovery finds of a workspace's ignored
// code and configuration: the directories of dependencies and tools'
// configuration it mounts as overlays, the files it binds read-only, and
// what it must leave alone (ignored outputs, tracked or untracked but not
// ignored files, a node_modules that is not ignored, what lies below an
// ignored directory).
func TestIgnoredCode(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	ws := filepath.Join(t.TempDir(), "ws")
	files := map[string]string{
		".gitignore":                   "node_modules/\n.venv/\nenv/\ndist/\n*.log\nlocal.mk\n.npmrc\ngo.work\n.idea/\n__pycache__/\n.envrc.local\nthird_party/\n",
		"pkg/.gitignore":               "vendor/\n.python-version\n",
		"node_modules/lib/index.js":    "",
		"node_modules/.bin/x":          "",
		".venv/pyvenv.cfg":             "",
		"env/pyvenv.cfg":               "",
		"dist/bundle.js":               "",
		"build.log":                    "",
		"local.mk":                     "",
		".npmrc":                       "",
		"go.work":                      "",
		".idea/workspace.xml":          "",
		"src/__pycache__/m.pyc":        "",
		".envrc.local":                 "",
		".envrc":                       "", // not ignored: in the diff
		"pkg/vendor/modules.txt":       "",
		"pkg/.python-version":          "",
		"pkg/sub/.gitignore":           "!node_modules/\n",
		"pkg/sub/node_modules/a/b.js":  "", // not ignored below pkg/sub: shows in git status
		"a/b/c/d/e/node_modules/x.js":  "", // deeper than the discovery looks
		"third_party/lib/README":       "",
		"tools/.vscode/settings.json":  "", // globally excluded
		".config-not-a-config/file.mk": "",
	}
	for p, c := range files {
		writeT(t, filepath.Join(ws, p), c)
	}
	writeT(t, filepath.Join(home, ".config/git/ignore"), ".vscode/\n")
	gitT(t, ws, "init", "-q")
	spec := Spec{Layers: []Layer{{Write: []string{ws}}}, persist: persistIn{home: home, getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, grant: []string{ws}}}
	gs := spec.guards()
	rel := func(ps []string) []string {
		var out []string
		for _, p := range ps {
			if r, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(r, "..") {
				out = append(out, r)
			}
		}
		slices.Sort(out)
		return out
	}
	var ro []string
	for _, g := range gs {
		ro = append(ro, g.path)
	}
	overlays, readOnly := rel(spec.ignoredDirs), rel(ro)
	wantOverlays := []string{".idea", ".venv", "env", "node_modules", "pkg/vendor", "third_party", "tools/.vscode"}
	if !slices.Equal(overlays, wantOverlays) {
		t.Errorf("overlays %v, want %v", overlays, wantOverlays)
	}
	for _, want := range []string{".envrc.local", ".npmrc", "go.work", "local.mk", "pkg/.python-version"} {
		if !slices.Contains(readOnly, want) {
			t.Errorf("%s is not bound read-only: %v", want, readOnly)
		}
	}
	for _, not := range []string{"dist", "build.log", ".envrc", "pkg/sub/node_modules", "src/__pycache__", "a/b/c/d/e/node_modules", ".config-not-a-config/file.mk"} {
		if slices.Contains(readOnly, not) || slices.Contains(overlays, not) {
			t.Errorf("%s is covered, and must not be", not)
		}
	}
}

func writeT(t *testing.T, p, c string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitT(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
