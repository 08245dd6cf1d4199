package claudecode

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// The plugin's own files are the single source of what an install writes.
var (
	//go:embed hooks/hooks.json
	pluginHooks []byte
	//go:embed .mcp.json
	pluginMCP []byte
)

// ManagedSettings is where an administrator's policy lives on Linux.
var ManagedSettings = "/etc/claude-code/managed-settings.json"

// Installer writes Claude Code's configuration: the PreToolUse hook (a
// command, or with a Resident the http hook to joule serve), the status
// line, and joule's MCP server.
type Installer struct{}

var _ hook.Installer = Installer{}

// pluginHandler is the hook handler of hooks/hooks.json.
func pluginHandler() map[string]any {
	var f struct {
		Hooks map[string][]struct {
			Hooks []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(pluginHooks, &f); err != nil || len(f.Hooks[PreToolUse]) == 0 || len(f.Hooks[PreToolUse][0].Hooks) == 0 {
		panic("claudecode: hooks/hooks.json has no PreToolUse handler")
	}
	return f.Hooks[PreToolUse][0].Hooks[0]
}

// Handler is the PreToolUse handler an install writes for s.
func Handler(s hook.Scope) map[string]any {
	h := pluginHandler()
	if s.Resident != nil {
		return map[string]any{"type": "http", "url": s.Resident.URL,
			"headers": map[string]any{"Authorization": "Bearer " + s.Resident.Token},
			"timeout": h["timeout"], "onFailure": h["onFailure"], "statusMessage": h["statusMessage"]}
	}
	h["command"] = Command(s)
	return h
}

// The variables of settings.local.json's env that point a project's
// committed hook at this user's joule (Claude Code sets them for the
// session, so its hook processes get them).
const (
	EnvClient = "JOULE_HOOK_CLIENT"
	EnvJoule  = "JOULE_BIN"
)

// Command is the hook command line an install writes for s. For the user
// scope it is the absolute path, with the JOULE_HOME of s. A project's
// settings.json is a file teams commit, so there it names joule-hook (or
// joule) by a variable that the uncommitted settings.local.json sets to
// this user's absolute path, with PATH as the fallback: a teammate without
// that file runs the joule on their PATH, and one with none is blocked by
// onFailure: block (sh: not found, exit 127), never let through.
func Command(s hook.Scope) string {
	if s.Project != "" {
		if s.Client != "" {
			return `"${` + EnvClient + `:-joule-hook}" ` + Host + s.Contain.Flag()
		}
		return `"${` + EnvJoule + `:-joule}" hook ` + Host + s.Contain.Flag()
	}
	return guard.Line(s, Host, hook.Command(s, Host))
}

// guard adds only the JOULE_HOME: with onFailure: block Claude Code blocks
// the call when the hook fails or times out (docs/hosts.md).
var guard = hook.Guard{}

// localEnv is what a project install puts in settings.local.json's env.
func localEnv(s hook.Scope) map[string]string {
	m := map[string]string{EnvJoule: s.Joule}
	if s.Client != "" {
		m[EnvClient] = s.Client
	}
	if s.JouleHome != "" {
		m["JOULE_HOME"] = s.JouleHome
	}
	return m
}

// editEnv removes the env entries an install wrote to settings.local.json
// (JOULE_HOME only beside JOULE_BIN, the mark of joule's) and, with add,
// writes those of s.
func editEnv(f *hook.JSONFile, s hook.Scope, add bool) error {
	env, err := hook.Object(f.Doc, "env", f.Path)
	if err != nil {
		return err
	}
	if _, ours := env[EnvJoule]; ours {
		delete(env, "JOULE_HOME")
	}
	delete(env, EnvJoule)
	delete(env, EnvClient)
	if add {
		for k, v := range localEnv(s) {
			env[k] = v
		}
	}
	hook.PruneEmpty(f.Doc, "env")
	return nil
}

// commandFindings check that the installed command runs this joule from
// this JOULE_HOME: the line itself for the user scope, the env of the
// uncommitted settings.local.json for a project.
func commandFindings(s hook.Scope, settings *hook.JSONFile) []hook.Finding {
	hooks, _ := settings.Doc["hooks"].(map[string]any)
	lines := hook.Commands(hooks, []string{PreToolUse}, isOurs)
	if s.Project == "" {
		return hook.HomeCheck(s, lines)
	}
	_, local, _ := Files(s)
	f, err := hook.ReadJSON(local)
	if err != nil {
		return []hook.Finding{{Text: err.Error()}}
	}
	env, _ := f.Doc["env"].(map[string]any)
	want := localEnv(s)
	for _, k := range []string{EnvJoule, EnvClient, "JOULE_HOME"} {
		if got, _ := env[k].(string); got != want[k] {
			return []hook.Finding{{Text: fmt.Sprintf("%s sets %s=%q, not %q, for the committed hook in %s: run joule install again", local, k, got, want[k], settings.Path)}}
		}
	}
	home := "the default JOULE_HOME"
	if s.JouleHome != "" {
		home = "JOULE_HOME=" + s.JouleHome
	}
	for _, l := range lines {
		if l != Command(s) {
			return []hook.Finding{{Text: "joule's hook in " + settings.Path + " is not the line this install writes (an absolute path a teammate does not have?): run joule install again"}}
		}
	}
	return []hook.Finding{{OK: true, Text: "the committed " + settings.Path + " runs joule by name; your uncommitted " + local + " points it at " + want[EnvJoule] + " with " + home + " (a teammate without that file runs the joule on their PATH, and with none there every call is blocked)"}}
}

// isOurs recognises a handler joule wrote, wherever the binary lived.
func isOurs(h any) bool {
	m, ok := h.(map[string]any)
	if !ok {
		return false
	}
	cmd, _ := m["command"].(string)
	url, _ := m["url"].(string)
	return hook.IsJouleLine(cmd, Host) || hook.IsResidentURL(url, Host)
}

func statusCommand(s hook.Scope) string {
	if s.Project != "" {
		return `"${` + EnvJoule + `:-joule}" statusline`
	}
	return hook.Env(s) + hook.ShellQuote(s.Joule) + " statusline"
}

func isOurStatus(v any) bool {
	m, ok := v.(map[string]any)
	cmd, _ := m["command"].(string)
	return ok && strings.HasSuffix(cmd, " statusline") && strings.Contains(cmd, "joule")
}

// Files names the settings files an install touches for s: where the hook
// goes, and the other one joule may have written before.
func Files(s hook.Scope) (target, other, mcp string) {
	if s.Project == "" {
		return filepath.Join(s.Home, ".claude", "settings.json"), "", filepath.Join(s.Home, ".claude.json")
	}
	shared := filepath.Join(s.Project, ".claude", "settings.json")
	local := filepath.Join(s.Project, ".claude", "settings.local.json")
	mcp = filepath.Join(s.Project, ".mcp.json")
	if s.Resident != nil {
		// The bearer token must not be committed: settings.local.json is
		// git-ignored (hook.Ignore).
		return local, shared, mcp
	}
	return shared, local, mcp
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	target, other, mcpPath := Files(s)
	var changes []hook.Change
	for _, path := range []string{target, other} {
		if path == "" {
			continue
		}
		f, err := hook.ReadJSON(path)
		if err != nil {
			return nil, err
		}
		add := path == target && !uninstall
		if err := editSettings(f, s, add); err != nil {
			return nil, err
		}
		if s.Project != "" && strings.HasSuffix(path, "settings.local.json") {
			if err := editEnv(f, s, !uninstall && s.Resident == nil); err != nil {
				return nil, err
			}
		}
		c := f.Change(uninstall)
		c.Local = s.Project != "" && strings.HasSuffix(path, "settings.local.json")
		changes = append(changes, c)
	}
	f, err := hook.ReadJSON(mcpPath)
	if err != nil {
		return nil, err
	}
	servers, err := hook.Object(f.Doc, "mcpServers", mcpPath)
	if err != nil {
		return nil, err
	}
	if uninstall {
		if isOurServer(servers["joule"]) {
			delete(servers, "joule")
		}
	} else {
		servers["joule"] = mcpServer(s)
	}
	hook.PruneEmpty(f.Doc, "mcpServers")
	changes = append(changes, f.Change(s.Project != ""))
	return changes, nil
}

func mcpServer(s hook.Scope) map[string]any {
	var f struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(pluginMCP, &f); err != nil || f.MCPServers["joule"] == nil {
		panic("claudecode: .mcp.json has no joule server")
	}
	srv := f.MCPServers["joule"]
	srv["command"] = s.Joule
	if s.Project != "" && s.Resident == nil {
		// The committed .mcp.json must work for every teammate, so it
		// names no path of this user's: the server's environment has
		// settings.local.json's env (JOULE_BIN), but Claude Code expands
		// ${VAR} in command and args before it applies that env, so the
		// lookup is the shell's, with a bare $JOULE_BIN Claude Code leaves
		// alone (TestClaudeCodeE2E "committed settings" checks the server
		// starts with no joule on PATH).
		srv["command"], srv["args"] = "sh", []any{"-c", mcpShell}
	}
	return srv
}

// mcpShell starts the joule of settings.local.json's JOULE_BIN, else the
// one on PATH.
const mcpShell = `test -n "$` + EnvJoule + `" || ` + EnvJoule + `=joule; exec "$` + EnvJoule + `" mcp`

func isOurServer(v any) bool {
	m, ok := v.(map[string]any)
	cmd, _ := m["command"].(string)
	args, _ := m["args"].([]any)
	if ok && cmd == "sh" && len(args) == 2 && args[0] == "-c" && args[1] == mcpShell {
		return true
	}
	return ok && strings.Contains(filepath.Base(cmd), "joule") && len(args) > 0 && args[0] == "mcp"
}

// editSettings removes every handler joule wrote before and, with add, puts
// the current one in a group of its own that matches every tool.
func editSettings(f *hook.JSONFile, s hook.Scope, add bool) error {
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return err
	}
	groups, err := hook.List(hooks, PreToolUse, f.Path)
	if err != nil {
		return err
	}
	var kept []any
	for _, g := range groups {
		gm, ok := g.(map[string]any)
		if !ok {
			kept = append(kept, g)
			continue
		}
		hs, err := hook.List(gm, "hooks", f.Path)
		if err != nil {
			return err
		}
		var rest []any
		for _, h := range hs {
			if !isOurs(h) {
				rest = append(rest, h)
			}
		}
		if len(rest) == 0 && len(hs) > 0 {
			continue // the group held only joule's handler
		}
		gm["hooks"] = rest
		kept = append(kept, gm)
	}
	if add {
		kept = append(kept, map[string]any{"matcher": "*", "hooks": []any{Handler(s)}})
	}
	hooks[PreToolUse] = kept
	hook.PruneEmpty(hooks, PreToolUse)
	hook.PruneEmpty(f.Doc, "hooks")
	if isOurStatus(f.Doc["statusLine"]) {
		delete(f.Doc, "statusLine")
	}
	if add && f.Doc["statusLine"] == nil {
		f.Doc["statusLine"] = map[string]any{"type": "command", "command": statusCommand(s), "padding": 0}
	}
	return nil
}

// Check implements hook.Installer: the hook is in place with onFailure
// block, the binary runs, no setting disables hooks, the project is
// trusted, and a resident server answers.
func (Installer) Check(s hook.Scope) []hook.Finding {
	var out []hook.Finding
	ok := func(cond bool, yes, no string) {
		if cond {
			out = append(out, hook.Finding{OK: true, Text: yes})
		} else {
			out = append(out, hook.Finding{Text: no})
		}
	}
	target, _, mcpPath := Files(s)
	f, err := hook.ReadJSON(target)
	armed, blocks := false, false
	if err == nil {
		hooks, _ := f.Doc["hooks"].(map[string]any)
		groups, _ := hooks[PreToolUse].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			if m, _ := gm["matcher"].(string); m != "*" && m != "" {
				continue
			}
			hs, _ := gm["hooks"].([]any)
			for _, h := range hs {
				if isOurs(h) {
					armed = true
					blocks = h.(map[string]any)["onFailure"] == "block"
				}
			}
		}
	}
	if f != nil && f.Doc["statusLine"] != nil && !isOurStatus(f.Doc["statusLine"]) {
		out = append(out, hook.Finding{OK: true, Text: "your own statusLine in " + target + " is kept; add `" + statusCommand(s) + "` to it to see joule's line"})
	}
	ok(armed, "PreToolUse hook on every tool in "+target, "no joule PreToolUse hook matching every tool in "+target+": run joule install again")
	ok(blocks, "a failed or timed-out hook blocks the call (onFailure: block)", "the hook in "+target+" lacks onFailure: block, so a crash would let the call run")
	if s.Resident == nil && armed {
		out = append(out, commandFindings(s, f)...)
	}
	if s.Resident == nil {
		st, err := os.Stat(s.Joule)
		ok(err == nil && st.Mode()&0o111 != 0, "the hook runs "+s.Joule, s.Joule+" is not an executable file; the hook would fail (and block every call)")
	}
	settings := []string{filepath.Join(s.Home, ".claude", "settings.json"), ManagedSettings}
	if s.Project != "" {
		settings = append(settings, filepath.Join(s.Project, ".claude", "settings.json"), filepath.Join(s.Project, ".claude", "settings.local.json"))
	}
	for _, p := range settings {
		f, err := hook.ReadJSON(p)
		if err != nil {
			out = append(out, hook.Finding{Text: err.Error()})
			continue
		}
		if f.Doc["disableAllHooks"] == true {
			out = append(out, hook.Finding{Text: p + " sets disableAllHooks: true, so no hook (and no status line) runs; remove it"})
		}
		if p == ManagedSettings && f.Doc["allowManagedHooksOnly"] == true {
			out = append(out, hook.Finding{Text: p + " sets allowManagedHooksOnly: ask your administrator to add joule's hook to the managed settings"})
		}
	}
	if s.Project != "" {
		trusted := false
		if cj, err := hook.ReadJSON(filepath.Join(s.Home, ".claude.json")); err == nil {
			projects, _ := cj.Doc["projects"].(map[string]any)
			p, _ := projects[s.Project].(map[string]any)
			trusted = p["hasTrustDialogAccepted"] == true
		}
		ok(trusted, "the project is trusted in ~/.claude.json",
			"start claude in "+s.Project+" once and accept the trust dialog; the interactive CLI runs no project hooks before that (claude -p does not ask)")
	}
	mf, err := hook.ReadJSON(mcpPath)
	if err == nil {
		servers, _ := mf.Doc["mcpServers"].(map[string]any)
		ok(isOurServer(servers["joule"]), "MCP server 'joule' registered in "+mcpPath, "no joule MCP server in "+mcpPath)
	}
	if s.Resident != nil {
		client := http.Client{Timeout: 2 * time.Second}
		base, _, _ := strings.Cut(s.Resident.URL, "/hooks/")
		resp, err := client.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		ok(err == nil && resp.StatusCode == http.StatusOK, "joule serve answers at "+s.Resident.URL,
			fmt.Sprintf("start 'joule serve'; until it answers at %s every tool call is blocked (onFailure: block)", s.Resident.URL))
	}
	return out
}
