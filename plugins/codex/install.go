package codex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer writes Codex's hooks.json (PreToolUse and PermissionRequest on
// every tool) and joule's MCP server in config.toml, and checks the two
// trusts Codex demands before it runs a project's hook: the project's
// (trust_level = "trusted") and each hook's (a trusted_hash). With --trust
// it records both in the user's config.toml, as Codex's own dialogs do.
type Installer struct{}

var _ hook.Installer = Installer{}

func codexHome(s hook.Scope) string {
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(s.Home, ".codex")
}

// userConfigPath is $CODEX_HOME/config.toml, the only layer whose
// [projects] and [hooks.state] Codex reads.
func userConfigPath(s hook.Scope) string { return filepath.Join(codexHome(s), "config.toml") }

func hooksPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".codex", "hooks.json")
	}
	return filepath.Join(codexHome(s), "hooks.json")
}

// guard is what the hook command does when joule fails. Codex runs the
// tool when a hook fails in any way (a missing binary, a crash, a non-zero
// exit other than 2, a timeout), so when joule exits with anything but 0
// (its answer is on stdout) or 2 (its reason is on stderr) the command
// answers Codex's block itself: exit 2 with a reason on stderr. It runs
// under /bin/sh whatever the user's $SHELL (Codex runs hooks with
// "$SHELL -lc"). Codex also runs the tool when a hook outlives its timeout,
// so joule is bounded by timeout(1) below it (limit): a hung joule, or
// joule hook when no joule-hook with its own budget is beside it, exits
// 124 and is a block.
var guard = hook.Guard{Exit2: true, Limit: limit}

// timeout is the hook timeout joule install writes, in seconds.
const timeout = 30

// limit is how long the hook line lets joule take (seconds; SIGKILL two
// seconds later): below timeout, above joule-hook's own 20 s budget.
const limit = "25"

// Command is the hook command line an install writes for s.
func Command(s hook.Scope) string {
	return guard.Line(s, Host, hook.Command(s, Host))
}

// handler is the command handler an install writes for s.
func handler(s hook.Scope) map[string]any {
	return map[string]any{"type": "command", "command": Command(s), "timeout": timeout, "statusMessage": "joule gate"}
}

// isOurs recognises a handler joule wrote, with or without the fail-closed
// wrapper, in any containment mode, wherever the binary lived.
func isOurs(h any) bool {
	m, _ := h.(map[string]any)
	cmd, _ := m["command"].(string)
	return hook.IsJouleLine(cmd, Host)
}

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	f, err := hook.ReadJSON(hooksPath(s))
	if err != nil {
		return nil, err
	}
	hooks, err := hook.Object(f.Doc, "hooks", f.Path)
	if err != nil {
		return nil, err
	}
	if err := hook.SetGroups(hooks, []string{PreToolUse, PermissionRequest}, ".*", handler(s), isOurs, !uninstall, f.Path); err != nil {
		return nil, err
	}
	hook.PruneEmpty(f.Doc, "hooks")
	cfg, err := planConfig(s, uninstall)
	if err != nil {
		return nil, err
	}
	changes := []hook.Change{f.Change(uninstall), cfg}
	if !s.Trust && !uninstall {
		return changes, nil
	}
	// The trust goes to the user's config.toml, which with --user is the
	// file that also gets the MCP server: then both edits make one change.
	up := userConfigPath(s)
	tc := &cfg
	if cfg.Path != up {
		before, err := os.ReadFile(up)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		changes = append(changes, hook.Change{Path: up, Before: before, After: before, Mode: 0o600})
		tc = &changes[len(changes)-1]
	}
	var want []trustEntry
	if !uninstall {
		want = trustEntries(s, f.Path, hooks)
	}
	// The block may hold other projects' trust: only this install's
	// project and hooks.json are its own.
	own := func(table string) bool {
		return (s.Project != "" && table == "projects."+tomlQuote(s.Project)) ||
			strings.HasPrefix(table, "hooks.state."+strings.TrimSuffix(tomlQuote(f.Path+":"), `"`))
	}
	after, err := planTrust(tc.After, up, want, own)
	if err != nil {
		return nil, err
	}
	if len(after) == 0 && (tc.Before == nil || uninstall) {
		after = nil
	}
	tc.After = after
	if uninstall && cfg.Path != up && string(tc.Before) == string(tc.After) {
		changes = changes[:len(changes)-1]
	}
	return changes, nil
}

// trustEntries are the trusts Codex needs before it runs joule's hooks in
// hooks (the hooks.json at path): the project's, for a project install,
// and each joule handler's hash.
func trustEntries(s hook.Scope, path string, hooks map[string]any) []trustEntry {
	var out []trustEntry
	if s.Project != "" {
		out = append(out, trustEntry{table: "projects." + tomlQuote(s.Project), key: "trust_level", value: "trusted"})
	}
	for _, ev := range []string{PreToolUse, PermissionRequest} {
		for _, h := range jouleHandlers(hooks, path, ev) {
			out = append(out, trustEntry{table: "hooks.state." + tomlQuote(h.key), key: "trusted_hash", value: h.hash})
		}
	}
	return out
}

// located is one joule handler in a hooks.json: its [hooks.state] key and
// the hash Codex computes for it.
type located struct{ key, hash string }

func jouleHandlers(hooks map[string]any, path, event string) []located {
	var out []located
	groups, _ := hooks[event].([]any)
	for gi, g := range groups {
		gm, _ := g.(map[string]any)
		matcher, _ := gm["matcher"].(string)
		hs, _ := gm["hooks"].([]any)
		for hi, h := range hs {
			hm, _ := h.(map[string]any)
			if !isOurs(hm) {
				continue
			}
			sum, err := TrustHash(event, matcher, hm)
			if err != nil {
				continue
			}
			out = append(out, located{HookKey(path, event, gi, hi), sum})
		}
	}
	return out
}

// userConfig is what Check reads from $CODEX_HOME/config.toml.
type userConfig struct {
	Features map[string]any `toml:"features"`
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			Enabled     *bool  `toml:"enabled"`
			TrustedHash string `toml:"trusted_hash"`
		} `toml:"state"`
	} `toml:"hooks"`
	MCPServers map[string]mcpServer `toml:"mcp_servers"`
}

// Check implements hook.Installer: the hooks are in place, hooks are not
// turned off, the project and every joule hook are trusted as Codex
// requires (with either trust missing Codex makes no hook call at all and
// runs the tool), and the MCP server is registered.
func (Installer) Check(s hook.Scope) []hook.Finding {
	out := []hook.Finding{hook.Executable(s.Joule)}
	f, err := hook.ReadJSON(hooksPath(s))
	if err != nil {
		return append(out, hook.Finding{Text: err.Error()})
	}
	hooks, _ := f.Doc["hooks"].(map[string]any)
	up := userConfigPath(s)
	text, _ := os.ReadFile(up)
	var uc userConfig
	if _, err := toml.Decode(string(text), &uc); err != nil {
		return append(out, hook.Finding{Text: up + " does not parse (" + err.Error() + "); Codex will not start until it does"})
	}
	trustCmd := "joule install codex --user --trust"
	if s.Project != "" {
		trustCmd = "joule install codex --project " + hook.ShellQuote(s.Project) + " --trust"
	}
	for _, path := range []string{up, configPath(s)} {
		b, _ := os.ReadFile(path)
		var c struct {
			Features map[string]any `toml:"features"`
		}
		toml.Decode(string(b), &c)
		for _, k := range []string{"hooks", "codex_hooks"} {
			if v, ok := c.Features[k].(bool); ok && !v {
				out = append(out, hook.Finding{Text: path + " turns hooks off ([features] " + k + " = false): remove it"})
			}
		}
	}
	if s.Project != "" {
		if p, ok := uc.Projects[s.Project]; ok && p.TrustLevel == "trusted" {
			out = append(out, hook.Finding{OK: true, Text: "Codex trusts the project " + s.Project + " (" + up + ")"})
		} else {
			out = append(out, hook.Finding{Text: "Codex ignores " + filepath.Join(s.Project, ".codex") + " (hooks and MCP) until the project is trusted: run " + trustCmd + ", or start codex there and trust the folder"})
		}
	}
	fails := ""
	for _, ev := range []string{PreToolUse, PermissionRequest} {
		hs := jouleHandlers(hooks, f.Path, ev)
		if len(hs) == 0 {
			out = append(out, hook.Finding{Text: "no joule " + ev + " hook in " + f.Path})
			continue
		}
		out = append(out, hook.Finding{OK: true, Text: ev + " hook in " + f.Path})
		for _, h := range hs {
			st, ok := uc.Hooks.State[h.key]
			switch {
			case ok && st.Enabled != nil && !*st.Enabled:
				out = append(out, hook.Finding{Text: "the " + ev + " hook is turned off in Codex (" + up + ", [hooks.state] enabled = false): turn it on in /hooks"})
			case ok && st.TrustedHash == h.hash:
				out = append(out, hook.Finding{OK: true, Text: "Codex trusts joule's " + ev + " hook (trusted_hash in " + up + ")"})
			case ok && st.TrustedHash != "":
				out = append(out, hook.Finding{Text: "Codex's trust of joule's " + ev + " hook is for an older command (Codex skips a modified hook without a word): run " + trustCmd + ", or trust it again in /hooks"})
			default:
				out = append(out, hook.Finding{Text: "Codex has not trusted joule's " + ev + " hook (it skips an untrusted hook without a word): run " + trustCmd + ", or open /hooks in codex and trust it"})
			}
		}
		if fails == "" {
			fails = "checked"
			if wrapped(hooks, ev) {
				out = append(out, hook.Finding{OK: true, Text: "a joule that is missing, crashes or fails answers Codex's block (exit 2): Codex itself runs the tool on any hook failure"})
			} else {
				out = append(out, hook.Finding{Text: "joule's hook in " + f.Path + " is an older line without the fail-closed wrapper (Codex runs the tool when it fails): run joule install codex again"})
			}
		}
	}
	out = append(out, hook.HomeCheck(s, hook.Commands(hooks, []string{PreToolUse, PermissionRequest}, isOurs))...)
	if m, ok := uc.MCPServers["joule"]; ok && m.Command == s.Joule {
		out = append(out, hook.Finding{OK: true, Text: "joule's MCP server in " + up})
	} else if p := configPath(s); p != up {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), beginMarker) {
			out = append(out, hook.Finding{OK: true, Text: "joule's MCP server in " + p})
		} else {
			out = append(out, hook.Finding{Text: "joule's MCP server is not in " + p + ": run joule install codex again"})
		}
	} else {
		out = append(out, hook.Finding{Text: "joule's MCP server is not in " + p + ": run joule install codex again"})
	}
	return out
}

// tomlQuote is s as a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// wrapped reports whether every joule handler of event runs joule inside
// the fail-closed script.
func wrapped(hooks map[string]any, event string) bool {
	groups, _ := hooks[event].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		hs, _ := gm["hooks"].([]any)
		for _, h := range hs {
			hm, _ := h.(map[string]any)
			cmd, _ := hm["command"].(string)
			if isOurs(hm) && !guard.Guarded(Host, cmd) {
				return false
			}
		}
	}
	return true
}
