// Package e2e tests the VS Code extension in plugins/vscode: its TypeScript
// compiled against the published @types/vscode API, its logic run against
// the real joule binary (node --test), and its .vsix packaged with
// @vscode/vsce, published with ovsx to a loopback stand-in for Open VSX
// (openvsx_test.go), and installed into a real VS Code host (code-server)
// whose workbench chromium drives (host_test.go).
package e2e

import (
	"archive/zip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// modules is plugins/vscode's node_modules (61-vscode.sh), as a path
// from this directory's parent, where tsc and vsce run.
func modules() string {
	abs, _ := filepath.Abs(filepath.Join("..", "node_modules"))
	return abs
}

func need(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, p := range []string{"typescript", "@types/vscode", "@vscode/vsce", "ovsx"} {
		if _, err := os.Stat(filepath.Join(modules(), p, "package.json")); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "missing " + strings.Join(missing, ", ") + ": run .ci/setup.d/61-vscode.sh"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// artifacts are what the tests share: the joule binary, the extension
// compiled against @types/vscode (out), the directory it is packaged from
// (pkg) and its .vsix, built once.
type artifacts struct{ bin, out, pkg, vsix string }

var (
	buildOnce sync.Once
	built     artifacts
	buildErr  error
	buildDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

func build(t *testing.T) artifacts {
	t.Helper()
	buildOnce.Do(func() { built, buildErr = buildArtifacts() })
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

func buildArtifacts() (artifacts, error) {
	dir, err := os.MkdirTemp("", "joule-vscode-e2e-")
	if err != nil {
		return artifacts{}, err
	}
	buildDir = dir
	a := artifacts{bin: filepath.Join(dir, "joule"), out: filepath.Join(dir, "out"), pkg: filepath.Join(dir, "pkg"), vsix: filepath.Join(dir, "joule-vscode.vsix")}
	build := exec.Command("go", "build", "-trimpath", "-o", a.bin, "../../../cmd/joule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return a, fmt.Errorf("build joule: %v\n%s", err, out)
	}
	// tsc type-checks the extension against @types/vscode.
	tsc := exec.Command("node", filepath.Join(modules(), "typescript/bin/tsc"), "-p", ".", "--outDir", a.out)
	tsc.Dir = ".."
	if b, err := tsc.CombinedOutput(); err != nil {
		return a, fmt.Errorf("tsc: %v\n%s", err, b)
	}
	// The .vsix, packaged from a copy of what it is made of, so the
	// checkout is left as it was.
	if err := copyPackage(a.pkg, a.out); err != nil {
		return a, err
	}
	vsce := exec.Command("node", filepath.Join(modules(), "@vscode/vsce/vsce"), "package", "--no-dependencies", "-o", a.vsix)
	vsce.Dir = a.pkg
	if b, err := vsce.CombinedOutput(); err != nil {
		return a, fmt.Errorf("vsce package: %v\n%s", err, b)
	}
	return a, nil
}

// copyPackage copies what the .vsix is made of into pkg: plugins/vscode
// less its sources' build output, its node_modules and the e2e tests (the
// LICENSE link is followed), then the compiled out.
func copyPackage(pkg, out string) error {
	err := filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", p)
		switch rel {
		case "node_modules", "e2e", "out":
			return filepath.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(pkg, rel), 0o755)
		}
		b, err := os.ReadFile(p) // follows a link
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(pkg, rel), b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("copy the package: %v", err)
	}
	if b, err := exec.Command("cp", "-r", out, filepath.Join(pkg, "out")).CombinedOutput(); err != nil {
		return fmt.Errorf("copy out: %v %s", err, b)
	}
	return nil
}

func TestExtension(t *testing.T) {
	need(t)
	a := build(t)
	dir := t.TempDir()
	// node runs the extension's logic against the real binary.
	test := exec.Command("node", "--test", "--test-reporter=spec", filepath.Join(a.out, "test", "joule.test.js"))
	test.Dir = ".."
	test.Env = append(os.Environ(), "JOULE_BIN="+a.bin, "TMPDIR="+dir)
	b, err := test.CombinedOutput()
	t.Logf("node --test:\n%s", b)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
	z, err := zip.OpenReader(a.vsix)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	have := map[string]bool{}
	for _, f := range z.File {
		have[f.Name] = true
	}
	for _, want := range []string{"extension/package.json", "extension/out/extension.js", "extension/out/joule.js", "extension.vsixmanifest",
		"extension/readme.md", "extension/changelog.md", "extension/LICENSE.txt", "extension/images/icon.png"} {
		if !have[want] {
			t.Errorf("the .vsix has no %s: %v", want, have)
		}
	}
	for name := range have {
		if strings.HasPrefix(name, "extension/out/test/") || strings.HasPrefix(name, "extension/src/") || strings.HasPrefix(name, "extension/e2e/") ||
			strings.HasSuffix(name, ".go") || strings.HasSuffix(name, ".svg") || strings.HasSuffix(name, ".sh") {
			t.Errorf("the .vsix carries %s (tests, sources or the icon's making)", name)
		}
	}
}
