package cline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/core/identity"
	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes the PreToolUse file hook Cline runs (a script that runs
// joule hook cline and answers a deny itself when joule fails) and
// registers joule's MCP server in Cline's MCP settings.
type Installer struct{}

// Timeout is Cline 3.0.65's limit on a tool_call hook (@cline/core:
// toolCallTimeoutMs, 120 s, not configurable): past it Cline kills the hook
// and runs the tool (docs/hosts.md, Cline), so the script bounds joule well
// below it.
const Timeout = 120

// scriptLimit is how long the script lets joule take (seconds; SIGKILL two
// seconds later): below Timeout, above joule-hook's own 20 s budget. A variable
// only so that tests can shorten it.
var scriptLimit = "25"

// MCPSettingsPath is the file Cline reads its MCP servers from, in the CLI
// as in the hub (@cline/shared resolveMcpSettingsPath):
// $CLINE_MCP_SETTINGS_PATH, else $CLINE_DATA_DIR/settings, else
// $CLINE_DIR/data/settings, else ~/.cline/data/settings. It is the user's:
// Cline has no project MCP file.
func MCPSettingsPath(home string) string {
	if p := strings.TrimSpace(os.Getenv("CLINE_MCP_SETTINGS_PATH")); p != "" {
		return p
	}
	data := strings.TrimSpace(os.Getenv("CLINE_DATA_DIR"))
	if data == "" {
		dir := strings.TrimSpace(os.Getenv("CLINE_DIR"))
		if dir == "" {
			dir = filepath.Join(home, ".cline")
		}
		data = filepath.Join(dir, "data")
	}
	return filepath.Join(data, "settings", "cline_mcp_settings.json")
}

// mcpEntry is joule's server in Cline's MCP settings: joule mcp, with the
// JOULE_HOME of the install (the hub that may start it keeps another
// environment). It works in the directory Cline starts it in.
func mcpEntry(s hook.Scope) map[string]any {
	e := map[string]any{"command": s.Joule, "args": []any{"mcp"}}
	if home, err := identity.Home(); err == nil && home != "" {
		e["env"] = map[string]any{"JOULE_HOME": home}
	}
	return e
}

var _ hook.Installer = Installer{}

func hookPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".cline", "hooks", HookFile)
	}
	return filepath.Join(s.Home, ".cline", "hooks", HookFile)
}

// guard is what the script does when joule fails: Cline reads only its
// stdout and takes an empty one as no objection, so the script answers a
// deny itself when joule is missing, crashes or prints no JSON. Past its own
// timeout Cline runs the tool, so joule is bounded by timeout(1), where the
// machine has it, well before (Limit).
func guard() hook.Guard {
	return hook.Guard{Pass: `'{'*'}'`, Limit: scriptLimit,
		Deny: `{"cancel":true,"errorMessage":"joule gave no decision (exit status %s); the task is stopped"}`}
}

// script is the hook Cline runs. Cline may run it from its hub daemon, a
// process that outlives the CLI and keeps another environment, so the
// script carries the JOULE_HOME it was installed with (Scope.JouleHome).
func script(s hook.Scope) []byte {
	return guard().Script(s, Host, hook.Command(s, Host), "joule gate: decides every Cline tool call from the active grant (joule install cline)")
}

func isOurs(b []byte) bool {
	return bytes.Contains(b, []byte("joule")) && (bytes.Contains(b, []byte(" hook "+Host)) || bytes.Contains(b, []byte("joule-hook "+Host)) || bytes.Contains(b, []byte("joule-hook' "+Host)))
}

// Plan implements hook.Installer. A PreToolUse hook of the user's own is
// never replaced.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	path := hookPath(s)
	before, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if before != nil && !isOurs(before) {
		if uninstall {
			return nil, nil
		}
		return nil, fmt.Errorf("%s is a PreToolUse hook that is not joule's; merge 'exec %s' into it yourself or move it", path, hook.Command(s, Host))
	}
	c := hook.Change{Path: path, Before: before, Mode: 0o755}
	if !uninstall {
		c.After = script(s)
	}
	f, err := hook.ReadJSON(MCPSettingsPath(s.Home))
	if err != nil {
		return nil, err
	}
	if err := hook.MCPServer(f, mcpEntry(s), uninstall); err != nil {
		return nil, err
	}
	// The file may hold other servers' tokens: 0600, as a user's secrets.
	mc := f.Change(uninstall)
	mc.Mode = 0o600
	return []hook.Change{c, mc}, nil
}

// Check implements hook.Installer: the hook on disk must be the script this
// install writes (this binary, this JOULE_HOME) and executable.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	path := hookPath(s)
	b, err := os.ReadFile(path)
	st, serr := os.Stat(path)
	switch {
	case err == nil && serr == nil && bytes.Equal(b, script(s)) && st.Mode()&0o111 != 0:
		out = append(out, hook.Finding{OK: true, Text: "executable PreToolUse hook " + path})
	case err == nil && isOurs(b):
		out = append(out, hook.Finding{Text: "the PreToolUse hook at " + path + " is not the one this install writes (another joule or JOULE_HOME, or not executable): run joule install again"})
	default:
		out = append(out, hook.Finding{Text: "no executable joule PreToolUse hook at " + path})
	}
	out = append(out, mcpFinding(s))
	return append(out, hook.Finding{OK: true, Text: "Cline ignores a hook's exit code and takes empty output as no objection: the hook answers a deny itself when joule fails"})
}

// mcpFinding checks joule's server in Cline's MCP settings: this binary,
// joule mcp, this JOULE_HOME, not disabled.
func mcpFinding(s hook.Scope) hook.Finding {
	path := MCPSettingsPath(s.Home)
	f, err := hook.ReadJSON(path)
	if err != nil {
		return hook.Finding{Text: err.Error()}
	}
	servers, _ := f.Doc["mcpServers"].(map[string]any)
	got, _ := servers[JouleServer].(map[string]any)
	if got == nil {
		return hook.Finding{Text: "joule's MCP server is not in " + path + ": run joule install cline again"}
	}
	if d, _ := got["disabled"].(bool); d {
		return hook.Finding{Text: "joule's MCP server is disabled in " + path + ": run joule install cline again"}
	}
	want := mcpEntry(s)
	have := map[string]any{}
	for k := range want {
		have[k] = got[k]
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(have)
	if !bytes.Equal(a, b) {
		return hook.Finding{Text: "joule's MCP server in " + path + " is not the one this install writes (another joule or JOULE_HOME): run joule install cline again"}
	}
	return hook.Finding{OK: true, Text: "joule's MCP server in " + path}
}
