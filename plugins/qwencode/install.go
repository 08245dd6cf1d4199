package qwencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Qwen Code's settings.json: a PreToolUse hook on every
// tool, wrapped so that a failed or hung joule is a deny, and joule's MCP
// server. Qwen has no hook approval step; project hooks load only in a
// trusted folder, and folder trust is off unless a settings file turns it
// on (Check says which holds).
type Installer struct{}

var _ hook.Installer = Installer{}

// Timeout is the hook timeout joule install writes, in seconds (Qwen reads
// a value of 1000 or more as the milliseconds of older versions). On its
// timeout Qwen runs the tool, so the wrapper answers a deny itself well
// before it.
const Timeout = 30

// wrapperLimit is how long the wrapper lets joule take (seconds; SIGKILL
// two seconds later): below Timeout, above joule-hook's own 20 s budget.
const wrapperLimit = "25"

// FailedReason is the deny the installed wrapper prints when joule gave no
// answer of Qwen's form.
const FailedReason = "joule deny (internal-error): joule gave Qwen Code no answer (it failed, hung or printed something else), so the hook joule install wrote denies the call"

// ManagedSettings are the system files Qwen Code merges over every user's
// (getSystemSettingsPath and getSystemDefaultsPath on Linux; the
// environment variables QWEN_CODE_SYSTEM_SETTINGS_PATH and
// QWEN_CODE_SYSTEM_DEFAULTS_PATH move them). The system settings win over
// user and project settings; a hook there runs for everyone.
var ManagedSettings = []string{"/etc/qwen-code/settings.json", "/etc/qwen-code/system-defaults.json"}

// UserDir is Qwen Code's per-user directory for home: $QWEN_HOME when set
// (relative to the working directory, ~ expanded, as Qwen resolves it),
// else ~/.qwen.
func UserDir(home string) string {
	d := os.Getenv("QWEN_HOME")
	switch {
	case d == "":
		return filepath.Join(home, ".qwen")
	case d == "~" || strings.HasPrefix(d, "~/"):
		return filepath.Join(home, strings.TrimPrefix(d, "~"))
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return d
}

func settingsPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".qwen", "settings.json")
	}
	return filepath.Join(UserDir(s.Home), "settings.json")
}

// systemSettings is where Qwen reads system settings on this machine.
func systemSettings() string {
	if p := os.Getenv("QWEN_CODE_SYSTEM_SETTINGS_PATH"); p != "" {
		return p
	}
	return ManagedSettings[0]
}

// TrustedFoldersPath is Qwen Code's folder-trust file.
func TrustedFoldersPath(home string) string {
	if p := os.Getenv("QWEN_CODE_TRUSTED_FOLDERS_PATH"); p != "" {
		return p
	}
	return filepath.Join(UserDir(home), "trustedFolders.json")
}

// Wrapper is the hook command joule install writes: Qwen Code runs the
// tool when a hook exits with a status other than 0 or 2, prints a broken
// JSON object, crashes or times out (measured with 0.24.4, docs/hosts.md),
// so the command checks that joule printed a decision of Qwen's form and
// prints an explicit deny itself when it did not, with joule bounded by
// timeout(1) where the machine has it.
func Wrapper(s hook.Scope) string { return guard.Line(s, Host, hook.Command(s, Host)) }

var guard = hook.Guard{
	Pass:  `'{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"'*'}}'`,
	Deny:  string(Deny(FailedReason)),
	Limit: wrapperLimit,
}

// isJoule recognises joule's handler: the wrapper (named joule, running
// joule hook or joule-hook for qwen-code) or a bare command line.
func isJoule(v any) bool {
	m, _ := v.(map[string]any)
	cmd, _ := m["command"].(string)
	if hook.IsJouleLine(cmd, Host) {
		return true
	}
	return m["name"] == "joule" && strings.HasPrefix(cmd, "out=$(") && strings.Contains(cmd, "joule") &&
		strings.Contains(cmd, " "+Host+")")
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
	if err := hook.SetGroups(hooks, []string{PreToolUse}, "*", handler, isJoule, !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	if err := hook.MCPServer(f, map[string]any{"command": s.Joule, "args": []any{"mcp"}}, uninstall); err != nil {
		return nil, err
	}
	return []hook.Change{f.Change(uninstall)}, nil
}

// Check implements hook.Installer: the wrapped hook is there, no settings
// file Qwen reads turns every hook off, and for a project, Qwen loads the
// project's settings (folder trust off, or the folder trusted).
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	files := []string{settingsPath(s), filepath.Join(UserDir(s.Home), "settings.json"), systemSettings()}
	if s.Project == "" {
		files = files[1:]
	}
	trustOn := false
	for _, p := range files {
		f, err := hook.ReadJSON(p)
		if err != nil {
			out = append(out, hook.Finding{Text: err.Error()})
			continue
		}
		if p == settingsPath(s) {
			out = append(out, hookFinding(s, f))
		}
		if f.Doc["disableAllHooks"] == true {
			out = append(out, hook.Finding{Text: p + " sets disableAllHooks: true; Qwen Code runs no hook"})
		}
		sec, _ := f.Doc["security"].(map[string]any)
		ft, _ := sec["folderTrust"].(map[string]any)
		if v, ok := ft["enabled"].(bool); ok && p != settingsPath(s) {
			trustOn = v // the system file, read last, wins
		}
	}
	if s.Project != "" {
		out = append(out, trustFinding(s, trustOn))
	}
	return out
}

func hookFinding(s hook.Scope, f *hook.JSONFile) hook.Finding {
	hooks, _ := f.Doc["hooks"].(map[string]any)
	switch {
	case hook.HasHandler(hooks, PreToolUse, func(m map[string]any) bool { return isJoule(m) && m["command"] == Wrapper(s) }):
		return hook.Finding{OK: true, Text: "PreToolUse hook on every tool in " + f.Path + ", wrapped so that a failed, silent or hung joule is a deny"}
	case hook.HasHandler(hooks, PreToolUse, func(m map[string]any) bool { return isJoule(m) }):
		return hook.Finding{Text: "joule's PreToolUse hook in " + f.Path + " is not the one this install writes (Qwen Code runs the tool when a bare hook fails): run joule install qwen-code again"}
	}
	return hook.Finding{Text: "no joule PreToolUse hook in " + f.Path}
}

// trustFinding: with folder trust on, Qwen Code loads no project setting
// (so no project hook) in a folder its trust file does not trust.
func trustFinding(s hook.Scope, on bool) hook.Finding {
	if !on {
		return hook.Finding{OK: true, Text: "Qwen Code's folder trust is off (its default): it loads " + s.Project + "'s settings"}
	}
	path := TrustedFoldersPath(s.Home)
	b, err := os.ReadFile(path)
	var rules map[string]string
	if err == nil {
		err = json.Unmarshal(b, &rules)
	}
	dir := s.Project
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	if err == nil && trusted(rules, dir) {
		return hook.Finding{OK: true, Text: s.Project + " is a trusted folder in " + path + ": Qwen Code loads its hook"}
	}
	return hook.Finding{Text: "Qwen Code's folder trust is on and " + s.Project + " is not a trusted folder in " + path + ": Qwen ignores its .qwen/settings.json, so joule's hook never runs there; trust the folder in Qwen (/trust) or install with --user"}
}

// trusted reads Qwen's trust rules as its resolveTrustDecision does
// (packages/cli/src/config/trust-precedence.ts): of the rules whose
// folder contains dir (TRUST_PARENT standing for its parent), the deepest
// folder decides, DO_NOT_TRUST winning a tie; no rule is not trusted.
func trusted(rules map[string]string, dir string) bool {
	depth, level := -1, ""
	for p, l := range rules {
		eff := p
		switch l {
		case "TRUST_PARENT":
			eff = filepath.Dir(p)
		case "TRUST_FOLDER", "DO_NOT_TRUST":
		default:
			continue
		}
		if r, err := filepath.EvalSymlinks(eff); err == nil {
			eff = r
		}
		eff = filepath.Clean(eff)
		if eff != dir && !strings.HasPrefix(dir, strings.TrimSuffix(eff, "/")+"/") {
			continue
		}
		d := len(strings.FieldsFunc(eff, func(r rune) bool { return r == '/' }))
		if d > depth || d == depth && l == "DO_NOT_TRUST" {
			depth, level = d, l
		}
	}
	return level == "TRUST_FOLDER" || level == "TRUST_PARENT"
}
