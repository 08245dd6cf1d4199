package geminicli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Gemini CLI's settings.json: a BeforeTool hook on every
// tool and joule's MCP server; with Scope.Trust also the folder trust
// Gemini needs before it loads a project's settings.
type Installer struct{}

var _ hook.Installer = Installer{}

// Timeout is the hook timeout joule install writes, in milliseconds. On
// its timeout Gemini CLI runs the tool (docs/hosts.md, Gemini CLI), so the
// wrapper answers a deny itself well before it.
const Timeout = 30000

// wrapperLimit is how long the wrapper lets joule take (seconds; SIGKILL
// two seconds later): below Timeout, above joule-hook's own 20 s budget.
const wrapperLimit = "25"

// FailedReason is the deny the installed wrapper prints when joule gave no
// answer of Gemini's form.
const FailedReason = "joule deny (internal-error): joule gave Gemini CLI no answer (it failed, hung or printed something else), so the hook joule install wrote denies the call"

func settingsPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".gemini", "settings.json")
	}
	return filepath.Join(s.Home, ".gemini", "settings.json")
}

// TrustedFoldersPath is Gemini CLI's folder trust file.
func TrustedFoldersPath(home string) string {
	if p := os.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	return filepath.Join(home, ".gemini", "trustedFolders.json")
}

// inner is the joule command the wrapper runs.
func inner(s hook.Scope) string { return hook.Command(s, Host) }

// Wrapper is the hook command joule install writes: Gemini CLI runs the
// tool when a hook crashes, exits 1, prints nothing or garbage, or times
// out (measured, docs/hosts.md), so the command checks that joule printed
// a decision of Gemini's form and answers an explicit deny itself when it
// did not, with joule bounded by timeout(1) where the machine has it.
func Wrapper(s hook.Scope) string { return guard.Line(s, Host, inner(s)) }

var guard = func() hook.Guard {
	deny, _ := json.Marshal(map[string]string{"decision": "deny", "reason": FailedReason})
	return hook.Guard{Pass: `'{"decision":"'*'}'`, Deny: string(deny), Limit: wrapperLimit}
}()

// isJoule recognises joule's handler: the wrapper (named joule, running
// joule hook or joule-hook for gemini-cli) or a bare command line an older
// install wrote.
func isJoule(v any) bool {
	m, _ := v.(map[string]any)
	cmd, _ := m["command"].(string)
	if hook.IsJouleLine(cmd, Host) {
		return true
	}
	return m["name"] == "joule" && strings.HasPrefix(cmd, "out=$(") && strings.Contains(cmd, "joule") &&
		(strings.Contains(cmd, " "+Host+")") || strings.Contains(cmd, " "+Host+hook.Contained.Flag()+")") ||
			strings.Contains(cmd, " "+Host+hook.NoContain.Flag()+")"))
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(settingsPath(s))
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	handler := map[string]any{"type": "command", "command": Wrapper(s), "name": "joule",
		"description": "joule gate: decides every tool call from the active grant", "timeout": Timeout}
	if err := hook.SetGroups(hooks, []string{BeforeTool}, "*", handler, isJoule, !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if err := hook.MCPServer(f, map[string]any{"command": s.Joule, "args": []any{"mcp"}}, uninstall); err != nil {
		return nil, err
	}
	changes := []hook.Change{f.Change(uninstall)}
	if s.Trust && s.Project != "" {
		c, err := trustChange(s, uninstall)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	return changes, nil
}

// trustChange adds TRUST_FOLDER for the project to trustedFolders.json,
// as Gemini's own trust dialog would (the file is 0600, as Gemini makes it),
// or with uninstall takes that rule out again: an uninstall asks for it
// only when the install added it.
func trustChange(s hook.Scope, uninstall bool) (hook.Change, error) {
	f, err := hook.ReadJSON(TrustedFoldersPath(s.Home))
	if err != nil {
		return hook.Change{}, err
	}
	dir := s.Project
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	switch {
	case uninstall:
		if f.Doc[dir] == "TRUST_FOLDER" {
			delete(f.Doc, dir)
		}
	case trust(f.Doc, dir) != "TRUST_FOLDER" || f.Doc[dir] == "DO_NOT_TRUST":
		f.Doc[dir] = "TRUST_FOLDER"
	}
	c := f.Change(false)
	c.Mode, c.Trust = 0o600, true
	return c, nil
}

// trust is Gemini CLI's reading of its trust rules for dir (checkPathTrust
// in its source): the longest rule path that contains dir wins, a
// TRUST_PARENT rule standing for its parent directory. "" means no rule.
func trust(rules map[string]any, dir string) string {
	best, level := -1, ""
	for p, v := range rules {
		l, _ := v.(string)
		eff := p
		if l == "TRUST_PARENT" {
			eff = filepath.Dir(p)
		}
		if r, err := filepath.EvalSymlinks(eff); err == nil {
			eff = r
		}
		if eff != dir && !strings.HasPrefix(dir, strings.TrimSuffix(eff, "/")+"/") {
			continue
		}
		if len(p) > best {
			best, level = len(p), l
		}
	}
	if level == "TRUST_FOLDER" || level == "TRUST_PARENT" {
		return "TRUST_FOLDER"
	}
	return level
}

// folderTrustEnabled is security.folderTrust.enabled from Gemini's system
// and user settings (on unless one turns it off; the system file wins).
func folderTrustEnabled(home string) bool {
	enabled := true
	for _, p := range []string{filepath.Join(home, ".gemini", "settings.json"), systemSettings} {
		f, err := hook.ReadJSON(p)
		if err != nil {
			continue
		}
		sec, _ := f.Doc["security"].(map[string]any)
		ft, _ := sec["folderTrust"].(map[string]any)
		if v, ok := ft["enabled"].(bool); ok {
			enabled = v
		}
	}
	return enabled
}

const systemSettings = "/etc/gemini-cli/settings.json"

// Check implements hook.Installer: the wrapped hook is there, hooks are
// enabled and joule's is not disabled by name, and for a project the
// folder is trusted: Gemini CLI 0.61 loads no project setting (so no
// project hook) in a folder it does not trust, and a headless run there
// exits 55. It never asks to approve a project hook; it warns once.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	for _, p := range []string{settingsPath(s), filepath.Join(s.Home, ".gemini", "settings.json"), systemSettings} {
		f, err := hook.ReadJSON(p)
		if err != nil {
			out = append(out, hook.Finding{Text: err.Error()})
			continue
		}
		if p == settingsPath(s) {
			hooks, _ := f.Doc["hooks"].(map[string]any)
			switch {
			case hook.HasHandler(hooks, BeforeTool, func(m map[string]any) bool { return isJoule(m) && m["command"] == Wrapper(s) }):
				out = append(out, hook.Finding{OK: true, Text: "BeforeTool hook on every tool in " + p + ", wrapped so that a failed, silent or hung joule is a deny"})
			case hook.HasHandler(hooks, BeforeTool, func(m map[string]any) bool { return isJoule(m) }):
				out = append(out, hook.Finding{Text: "joule's BeforeTool hook in " + p + " is not the one this install writes (Gemini runs the tool when a bare hook fails): run joule install gemini-cli again"})
			default:
				out = append(out, hook.Finding{Text: "no joule BeforeTool hook in " + p})
			}
		}
		cfg, _ := f.Doc["hooksConfig"].(map[string]any)
		if cfg["enabled"] == false {
			out = append(out, hook.Finding{Text: p + " sets hooksConfig.enabled: false; no hook runs"})
		}
		if disabled, _ := cfg["disabled"].([]any); slices.Contains(disabled, any("joule")) {
			out = append(out, hook.Finding{Text: p + " lists joule in hooksConfig.disabled"})
		}
	}
	if s.Project != "" {
		out = append(out, trustFinding(s))
	}
	return out
}

func trustFinding(s hook.Scope) hook.Finding {
	if !folderTrustEnabled(s.Home) {
		return hook.Finding{OK: true, Text: "Gemini's folder trust is off (security.folderTrust.enabled: false): it loads " + s.Project + "'s settings"}
	}
	path := TrustedFoldersPath(s.Home)
	f, err := hook.ReadJSON(path)
	if err != nil {
		return hook.Finding{Text: err.Error() + ": Gemini stops on it"}
	}
	dir := s.Project
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	switch trust(f.Doc, dir) {
	case "TRUST_FOLDER":
		return hook.Finding{OK: true, Text: s.Project + " is a trusted folder in " + path + ": Gemini loads its hook"}
	case "DO_NOT_TRUST":
		return hook.Finding{Text: path + " marks " + s.Project + " DO_NOT_TRUST: Gemini ignores the project's settings, so joule's hook never runs (a headless run exits 55); run 'joule install gemini-cli --project " + hook.ShellQuote(s.Project) + " --trust' to trust it"}
	}
	return hook.Finding{Text: s.Project + " is not a trusted folder: Gemini ignores its .gemini/settings.json, so joule's hook never runs (a headless run exits 55); run 'joule install gemini-cli --project " + hook.ShellQuote(s.Project) + " --trust', or trust the folder when Gemini asks"}
}
