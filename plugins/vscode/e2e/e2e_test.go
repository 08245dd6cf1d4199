// Package e2e tests the VS Code extension in plugins/vscode: its TypeScript
// compiled against the published @types/vscode API, its logic run against
// the real joule binary (node --test), and its .vsix packaged with
// @vscode/vsce. It does not run VS Code itself: see docs/hosts.md, "VS Code".
package e2e

import (
	"archive/zip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func need(t *testing.T) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, p := range []string{"typescript", "@types/vscode", "@vscode/vsce"} {
		if _, err := os.Stat(filepath.Join("..", "node_modules", p, "package.json")); err != nil {
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

func TestExtension(t *testing.T) {
	need(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "joule")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "../../../cmd/joule")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build joule: %v\n%s", err, out)
	}
	// tsc type-checks the extension against @types/vscode, then node runs
	// its logic against the real binary.
	out := filepath.Join(dir, "out")
	tsc := exec.Command("node", "node_modules/typescript/bin/tsc", "-p", ".", "--outDir", out)
	tsc.Dir = ".."
	if b, err := tsc.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, b)
	}
	test := exec.Command("node", "--test", "--test-reporter=spec", filepath.Join(out, "test", "joule.test.js"))
	test.Dir = ".."
	test.Env = append(os.Environ(), "JOULE_BIN="+bin, "TMPDIR="+dir)
	b, err := test.CombinedOutput()
	t.Logf("node --test:\n%s", b)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
	// The .vsix, packaged from a copy so the checkout is left as it was.
	pkg := filepath.Join(dir, "pkg")
	cp := exec.Command("cp", "-r", "..", pkg)
	if b, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, b)
	}
	os.RemoveAll(filepath.Join(pkg, "e2e"))
	if b, err := exec.Command("cp", "-r", out, filepath.Join(pkg, "out")).CombinedOutput(); err != nil {
		t.Fatalf("copy out: %v %s", err, b)
	}
	vsix := filepath.Join(dir, "joule-vscode.vsix")
	vsce := exec.Command("node", "node_modules/@vscode/vsce/vsce", "package", "--no-dependencies", "--allow-missing-repository", "--skip-license", "-o", vsix)
	vsce.Dir = pkg
	if b, err := vsce.CombinedOutput(); err != nil {
		t.Fatalf("vsce package: %v\n%s", err, b)
	}
	z, err := zip.OpenReader(vsix)
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
