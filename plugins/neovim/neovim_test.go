package neovim

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

func TestInstall(t *testing.T) {
	home := t.TempDir()
	s := hook.Scope{Home: home, Joule: `/opt/my "tools"/joule`}
	changes, err := Installer{}.Plan(s, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ModulePath(s))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`M.command = "/opt/my \"tools\"/joule"`, `default = { M.command, "acp" }`, `M.avante = { command = M.command, args = { "acp" }`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("module lacks %q:\n%s", want, b)
		}
	}
	if f := (Installer{}).Check(s); !f[1].OK {
		t.Errorf("check: %s", f[1].Text)
	}
	// A file of the user's own is never overwritten.
	other := hook.Scope{Home: t.TempDir(), Joule: s.Joule}
	os.MkdirAll(filepath.Dir(ModulePath(other)), 0o755)
	os.WriteFile(ModulePath(other), []byte("return {}\n"), 0o644)
	if _, err := (Installer{}).Plan(other, false); err == nil {
		t.Error("planned over the user's own joule_acp.lua")
	}
	changes, _ = Installer{}.Plan(s, true)
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ModulePath(s)); !os.IsNotExist(err) {
		t.Error("uninstall left the module")
	}
}

// luaShape runs testdata/shape.lua: the fields an adapter definition holds,
// as "path<TAB>type<TAB>value" lines.
func luaShape(t *testing.T, luajit, plugin, what, file string) []string {
	t.Helper()
	out, err := exec.Command(luajit, "testdata/shape.lua", plugin, what, file).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("shape.lua %s %s %s: %v\n%s", plugin, what, file, err, stderr)
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

// fields is the set of "path<TAB>type" of shape lines.
func fields(lines []string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lines {
		f := strings.SplitN(l, "\t", 3)
		m[f[0]+"\t"+f[1]] = true
	}
	return m
}

// TestModuleMatchesDocumentedAdapters runs the module in LuaJIT (Neovim's
// Lua) beside the adapters CodeCompanion and avante.nvim document (pinned
// in testdata, see testdata/SOURCE.md): joule's CodeCompanion adapter has
// exactly the fields of CodeCompanion's custom ACP adapter, of the same
// types, and its handlers answer as the documented ones do; joule's avante
// provider has only fields of an AvanteACPProvider, of the documented
// types, and starts joule acp.
func TestModuleMatchesDocumentedAdapters(t *testing.T) {
	luajit, err := exec.LookPath("luajit")
	if err != nil {
		msg := "luajit is not installed: run .ci/setup.d/41-acp-clients.sh"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	joule := `/opt/my "tools"/jöule`
	module := filepath.Join(t.TempDir(), "joule_acp.lua")
	if err := os.WriteFile(module, Module(joule), 0o644); err != nil {
		t.Fatal(err)
	}

	doc := fields(luaShape(t, luajit, "codecompanion", "doc", "testdata/codecompanion_custom_adapter.lua"))
	lines := luaShape(t, luajit, "codecompanion", "module", module)
	mine := fields(lines)
	for f := range doc {
		if !mine[f] {
			t.Errorf("joule's CodeCompanion adapter lacks the documented field %q", f)
		}
	}
	for f := range mine {
		if !doc[f] {
			t.Errorf("joule's CodeCompanion adapter has %q, which the documented adapter does not", f)
		}
	}
	for _, want := range []string{"type\tstring\tacp", "name\tstring\tjoule", "commands.default[]\tstring\t" + joule, "commands.default[]\tstring\tacp",
		"parameters.protocolVersion\tnumber\t1", "parameters.clientCapabilities.fs.readTextFile\tboolean\ttrue",
		"parameters.clientCapabilities.fs.writeTextFile\tboolean\ttrue", "call.setup\tboolean\ttrue", "call.auth\tboolean\ttrue",
		"call.form_messages\tstring\thelpers.form_messages"} {
		if !slices.Contains(lines, want) {
			t.Errorf("joule's CodeCompanion adapter lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}

	doc = fields(luaShape(t, luajit, "avante", "doc", "testdata/avante_acp_providers.lua"))
	doc["auth_method\tstring"] = true // AvanteACPProvider's optional field
	lines = luaShape(t, luajit, "avante", "module", module)
	for f := range fields(lines) {
		if !doc[f] {
			t.Errorf("joule's avante provider has %q, which an AvanteACPProvider does not", f)
		}
	}
	for _, want := range []string{"command\tstring\t" + joule, "args[]\tstring\tacp", "env\ttable\t"} {
		if !slices.Contains(lines, want) {
			t.Errorf("joule's avante provider lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}
