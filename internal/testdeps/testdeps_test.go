package testdeps

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestShellAgrees: the setup scripts' npm_dir and this package put a
// package directory's install in the same place, whichever of
// JOULE_TEST_CACHE, XDG_CACHE_HOME and HOME says where the cache is.
func TestShellAgrees(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	tmp := t.TempDir()
	for _, env := range [][]string{
		{CacheEnv + "=" + filepath.Join(tmp, "c"), "XDG_CACHE_HOME=" + filepath.Join(tmp, "x"), "HOME=" + filepath.Join(tmp, "h")},
		{CacheEnv + "=", "XDG_CACHE_HOME=" + filepath.Join(tmp, "x"), "HOME=" + filepath.Join(tmp, "h")},
		{CacheEnv + "=", "XDG_CACHE_HOME=", "HOME=" + filepath.Join(tmp, "h")},
	} {
		for _, pkg := range []string{"mcpserver/testdata/tsclient", "plugins/claudecode/e2e", "plugins/vscode/e2e/testdata/host"} {
			cmd := exec.Command("bash", "-c", `. .ci/setup.d/lib/npm.sh && npm_dir "$1"`, "bash", pkg)
			cmd.Dir = "../.."
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v npm_dir %s: %v", env, pkg, err)
			}
			for _, kv := range env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			abs, _ := filepath.Abs(filepath.Join("../..", pkg))
			want, err := cacheDir(Cache(), abs)
			if err != nil || strings.TrimSpace(string(out)) != want {
				t.Errorf("%v %s: the shell says %q, Go %q (%v)", env, pkg, out, want, err)
			}
		}
	}
}

// TestNodeModules: a package directory's own node_modules (an install of
// old, a link) comes first; else the cache's, once whole; else none.
func TestNodeModules(t *testing.T) {
	mod := t.TempDir()
	os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644)
	pkg := filepath.Join(mod, "a", "b")
	os.MkdirAll(pkg, 0o755)
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name":"b"}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "package-lock.json"), []byte(`{"lockfileVersion":3}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "client.mjs"), []byte("import 'x'\n"), 0o644)
	defer func(r string) { root = r }(root)
	root = filepath.Join(mod, "cache")
	if got := NodeModules(pkg); got != "" {
		t.Fatalf("nothing installed: %q", got)
	}
	dir, err := cacheDir(root, pkg)
	if err != nil || !strings.HasPrefix(dir, filepath.Join(root, "npm", "a", "b")+string(filepath.Separator)) {
		t.Fatalf("cacheDir %q %v", dir, err)
	}
	os.MkdirAll(filepath.Join(dir, "node_modules", "x"), 0o755)
	if got := NodeModules(pkg); got != "" {
		t.Fatalf("an install without its mark is not whole: %q", got)
	}
	os.WriteFile(filepath.Join(dir, Installed), nil, 0o644)
	if got := NodeModules(pkg); got != filepath.Join(dir, "node_modules") {
		t.Fatalf("cache: %q", got)
	}
	// Another lockfile: another install.
	os.WriteFile(filepath.Join(pkg, "package-lock.json"), []byte(`{"lockfileVersion":3,"x":1}`), 0o644)
	if got := NodeModules(pkg); got != "" {
		t.Fatalf("a changed lockfile found the old install: %q", got)
	}
	os.WriteFile(filepath.Join(pkg, "package-lock.json"), []byte(`{"lockfileVersion":3}`), 0o644)
	stage := t.TempDir()
	if err := Stage(stage, pkg); err != nil {
		t.Fatal(err)
	}
	if l, err := os.Readlink(filepath.Join(stage, "node_modules")); err != nil || l != filepath.Join(dir, "node_modules") {
		t.Fatalf("staged link %q %v", l, err)
	}
	if _, err := os.Stat(filepath.Join(stage, "client.mjs")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(pkg, "node_modules"), 0o755)
	if got := NodeModules(pkg); got != filepath.Join(pkg, "node_modules") {
		t.Fatalf("the package's own node_modules: %q", got)
	}
}
