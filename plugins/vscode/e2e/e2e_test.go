// Package e2e tests the VS Code extension in plugins/vscode: its TypeScript
// compiled against the published @types/vscode API, its logic run against
// the real joule binary (node --test), and its .vsix packaged with
// @vscode/vsce, and the .vsix installed into a real VS Code host
// (code-server) whose workbench chromium drives (host_test.go).
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

	"github.com/joulehook/joule/internal/testdeps"
)

func need(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, p := range []string{"typescript", "@types/vscode", "@vscode/vsce"} {
		if _, err := os.Stat(filepath.Join(testdeps.NodeModules(".."), p, "package.json")); err != nil {
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
// compiled against @types/vscode (out) and packaged (vsix), built once.
type artifacts struct{ bin, out, vsix string }

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
	a := artifacts{bin: filepath.Join(dir, "joule"), out: filepath.Join(dir, "out"), vsix: filepath.Join(dir, "joule-vscode.vsix")}
	build := exec.Command("go", "build", "-trimpath", "-o", a.bin, "../../../cmd/joule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return a, fmt.Errorf("build joule: %v\n%s", err, out)
	}
	// A copy of the extension beside its packages (make deps keeps them
	// outside the checkout), so the checkout is left as it was.
	pkg := filepath.Join(dir, "pkg")
	if b, err := exec.Command("cp", "-r", "..", pkg).CombinedOutput(); err != nil {
		return a, fmt.Errorf("copy: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "e2e"))
	os.RemoveAll(filepath.Join(pkg, "node_modules"))
	if err := testdeps.Link(pkg, ".."); err != nil {
		return a, err
	}
	// tsc type-checks the extension against @types/vscode.
	tsc := exec.Command("node", "node_modules/typescript/bin/tsc", "-p", ".", "--outDir", a.out)
	tsc.Dir = pkg
	if b, err := tsc.CombinedOutput(); err != nil {
		return a, fmt.Errorf("tsc: %v\n%s", err, b)
	}
	// The .vsix.
	if b, err := exec.Command("cp", "-r", a.out, filepath.Join(pkg, "out")).CombinedOutput(); err != nil {
		return a, fmt.Errorf("copy out: %v %s", err, b)
	}
	vsce := exec.Command("node", "node_modules/@vscode/vsce/vsce", "package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", a.vsix)
	vsce.Dir = pkg
	if b, err := vsce.CombinedOutput(); err != nil {
		return a, fmt.Errorf("vsce package: %v\n%s", err, b)
	}
	return a, nil
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
	for _, want := range []string{"extension/package.json", "extension/out/extension.js", "extension/out/joule.js", "extension.vsixmanifest"} {
		if !have[want] {
			t.Errorf("the .vsix has no %s: %v", want, have)
		}
	}
	if have["extension/out/test/joule.test.js"] || have["extension/src/extension.ts"] {
		t.Errorf("the .vsix carries tests or sources: %v", have)
	}
}
