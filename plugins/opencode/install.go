package opencode

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/joulehook/joule/plugins/hook"
)

// Installer copies joule.ts into OpenCode's plugin directory, with the path
// of this joule binary, and registers joule's MCP server in opencode.json.
type Installer struct{}

var _ hook.Installer = Installer{}

func paths(s hook.Scope) (plugin, config string) {
	if s.Project != "" {
		return filepath.Join(s.Project, ".opencode", "plugins", "joule.ts"), filepath.Join(s.Project, "opencode.json")
	}
	dir := filepath.Join(s.Home, ".config", "opencode")
	return filepath.Join(dir, "plugins", "joule.ts"), filepath.Join(dir, "opencode.json")
}

// PluginFor is joule.ts with the binary's path filled in.
func PluginFor(joule string) []byte {
	q, _ := json.Marshal(joule)
	return bytes.Replace(Plugin, []byte(`process.env.JOULE_BIN ?? "joule"`), []byte(`process.env.JOULE_BIN ?? `+string(q)), 1)
}

// pluginFor is PluginFor with the thin client's path filled in too, when
// s has one.
func pluginFor(s hook.Scope) []byte {
	b := PluginFor(s.Joule)
	if f := strings.TrimSpace(s.Contain.Flag()); f != "" {
		q, _ := json.Marshal(f)
		b = bytes.Replace(b, []byte(`const MODE: string = ""`), []byte(`const MODE: string = `+string(q)), 1)
	}
	if s.Client == "" {
		return b
	}
	q, _ := json.Marshal(s.Client)
	return bytes.Replace(b, []byte(`process.env.JOULE_HOOK_CLIENT ?? ""`), []byte(`process.env.JOULE_HOOK_CLIENT ?? `+string(q)), 1)
}

// schema is the $schema an install puts in an opencode.json it creates.
const schema = "https://opencode.ai/config.json"

// Plan implements hook.Installer.
func (Installer) Plan(s hook.Scope, uninstall bool) ([]hook.Change, error) {
	pp, cp := paths(s)
	before, err := os.ReadFile(pp)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	c := hook.Change{Path: pp, Before: before}
	if !uninstall {
		c.After = pluginFor(s)
	}
	f, err := hook.ReadJSON(cp)
	if err != nil {
		return nil, err
	}
	mcp, err := hook.Object(f.Doc, "mcp", f.Path)
	if err != nil {
		return nil, err
	}
	if uninstall {
		delete(mcp, JouleServer)
	} else {
		mcp[JouleServer] = map[string]any{"type": "local", "command": []any{s.Joule, "mcp"}, "enabled": true}
	}
	hook.PruneEmpty(f.Doc, "mcp")
	if len(f.Doc) > 0 && f.Doc["$schema"] == nil && f.Before == nil {
		f.Doc["$schema"] = schema
	}
	if uninstall && len(f.Doc) == 1 && f.Doc["$schema"] == schema {
		// Only the line an install adds to a file it creates is left.
		delete(f.Doc, "$schema")
		return []hook.Change{c, f.Change(true)}, nil
	}
	return []hook.Change{c, f.Change(false)}, nil
}

// Check implements hook.Installer: the plugin on disk must be the one this
// install writes (this binary, and containment as asked), and OpenCode must
// be free to load it.
func (Installer) Check(s hook.Scope) []hook.Finding {
	pp, _ := paths(s)
	out := []hook.Finding{hook.Executable(s.Joule)}
	b, err := os.ReadFile(pp)
	switch {
	case err == nil && bytes.Equal(b, pluginFor(s)):
		text := "plugin " + pp + " runs " + hook.Command(s, Host)
		out = append(out, hook.Finding{OK: true, Text: text})
	case err == nil && bytes.Contains(b, []byte(strconv.Quote(s.Joule))):
		out = append(out, hook.Finding{Text: "the plugin at " + pp + " is not the one this install writes: run joule install again"})
	default:
		out = append(out, hook.Finding{Text: "no joule plugin at " + pp})
	}
	if s.Project != "" && os.Getenv("OPENCODE_DISABLE_PROJECT_CONFIG") != "" {
		out = append(out, hook.Finding{Text: "OPENCODE_DISABLE_PROJECT_CONFIG is set: OpenCode then loads no project plugin; unset it or install with --user"})
	}
	return append(out, hook.Finding{OK: true, Text: "OpenCode loads the plugin at its next start, with no step to enable it; every tool call then waits for joule's answer"})
}
