package opencode

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/internal/testdeps"
)

// tsc finds the TypeScript compiler .ci/setup.d/10-hosts.sh installs for
// this directory (internal/testdeps).
func tsc(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is missing: .ci/setup.d/10-hosts.sh installs it")
		}
		t.Skip("node is missing: install Node.js and run .ci/setup.d/10-hosts.sh to type-check the OpenCode plugin")
	}
	bin := filepath.Join(testdeps.NodeModules("."), ".bin", "tsc")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("TypeScript is not installed for plugins/opencode: run .ci/setup.d/10-hosts.sh")
	}
	return bin
}

// TestPluginTypeChecks type-checks joule.ts against the published
// @opencode-ai/plugin types, and checks that a plugin with the wrong hook
// signature is rejected, so the types really are the ones checked against.
func TestPluginTypeChecks(t *testing.T) {
	bin := tsc(t)
	// From a copy beside the packages: tsc resolves them from the
	// project's directory up.
	good := t.TempDir()
	if err := testdeps.Stage(good, "."); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-p", good).CombinedOutput(); err != nil {
		t.Fatalf("joule.ts does not type-check: %v\n%s", err, out)
	}
	bad := strings.Replace(string(Plugin), `"tool.execute.before": async (input, output) => {`, `"tool.execute.before": async (input: { tool: number }, output) => {`, 1)
	if bad == string(Plugin) {
		t.Fatal("the negative case did not change the plugin")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.ts"), []byte(bad), 0o644)
	if err := testdeps.Link(dir, "."); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(`{"compilerOptions":{"target":"ES2022","module":"ESNext","moduleResolution":"Bundler","strict":true,"noEmit":true,"skipLibCheck":true,"types":["node"]},"files":["bad.ts"]}`), 0o644)
	out, err := exec.Command(bin, "-p", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "tool.execute.before") && !strings.Contains(string(out), "number") {
		t.Fatalf("a wrong hook signature type-checked: %v\n%s", err, out)
	}
}

// TestPluginFor checks the installed plugin names the binary and nothing
// else changed.
func TestPluginFor(t *testing.T) {
	got := string(PluginFor("/opt/joule's/bin/joule"))
	if !strings.Contains(got, `process.env.JOULE_BIN ?? "/opt/joule's/bin/joule"`) {
		t.Fatalf("binary path not substituted:\n%s", got)
	}
	if len(got)-len(Plugin) != len(`"/opt/joule's/bin/joule"`)-len(`"joule"`) {
		t.Fatal("PluginFor changed more than the path")
	}
}
