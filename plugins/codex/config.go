package codex

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/joulehook/joule/plugins/hook"
)

// Codex keeps MCP servers in config.toml, a file users edit by hand and
// comment. A TOML round trip would drop their comments, so joule appends its
// own table between two marker lines and takes exactly those lines out on
// uninstall; the parser only checks the file before and after.
const (
	beginMarker = "# joule: begin (written by `joule install codex`; `joule install codex --uninstall` removes it)"
	endMarker   = "# joule: end"
)

func configPath(s hook.Scope) string {
	if s.Project != "" {
		return filepath.Join(s.Project, ".codex", "config.toml")
	}
	return filepath.Join(codexHome(s), "config.toml")
}

type mcpServer struct {
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// EnvVars are passed through from Codex's environment: Codex starts an
	// MCP server with only a few variables of its own (HOME, PATH, …), and
	// without JOULE_HOME joule mcp would open another home, or none.
	EnvVars []string `toml:"env_vars,omitempty"`
}

// planConfig adds (or removes) joule's MCP server in config.toml.
func planConfig(s hook.Scope, uninstall bool) (hook.Change, error) {
	path := configPath(s)
	before, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return hook.Change{}, err
	}
	c := hook.Change{Path: path, Before: before, After: before, Mode: 0o600}
	if before == nil {
		c.Before = nil
	}
	var doc map[string]any
	if _, err := toml.Decode(string(before), &doc); err != nil {
		return c, fmt.Errorf("%s is not valid TOML (%v); fix it, joule will not edit it", path, err)
	}
	kept, had, err := withoutBlock(before, path)
	if err != nil {
		return c, err
	}
	if uninstall {
		if had {
			c.After = kept
			if len(bytes.TrimSpace(kept)) == 0 {
				c.After = nil // the block was all there was: no empty file is left
			}
		}
		return c, nil
	}
	if had {
		return c, nil // already installed; re-install keeps the user's edits to it
	}
	if servers, ok := doc["mcp_servers"].(map[string]any); ok {
		if existing, ok := servers["joule"]; ok {
			if m, ok := existing.(map[string]any); ok && m["command"] == s.Joule {
				return c, nil // added by `codex mcp add`; it already runs this joule
			}
			return c, fmt.Errorf("%s already defines [mcp_servers.joule] for another command; remove it or rename it, joule will not overwrite it", path)
		}
	}
	var body bytes.Buffer
	if err := toml.NewEncoder(&body).Encode(mcpServer{Command: s.Joule, Args: []string{"mcp"}, EnvVars: []string{"JOULE_HOME"}}); err != nil {
		return c, err
	}
	var out bytes.Buffer
	out.Write(before)
	if len(before) > 0 && !bytes.HasSuffix(before, []byte("\n")) {
		out.WriteByte('\n')
	}
	if len(before) > 0 {
		out.WriteByte('\n')
	}
	fmt.Fprintf(&out, "%s\n[mcp_servers.joule]\n%s%s\n", beginMarker, body.Bytes(), endMarker)
	var check struct {
		MCPServers map[string]mcpServer `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(out.String(), &check); err != nil || check.MCPServers["joule"].Command != s.Joule {
		return c, fmt.Errorf("%s: adding [mcp_servers.joule] would not parse back (%v); add it by hand with: codex mcp add joule -- %s mcp", path, err, hook.ShellQuote(s.Joule))
	}
	c.After = out.Bytes()
	return c, nil
}

// withoutBlock returns the file without joule's marked MCP block, and
// whether there was one.
func withoutBlock(b []byte, path string) ([]byte, bool, error) {
	return withoutMarked(b, beginMarker, endMarker, path)
}

// withoutMarked returns the file without the lines from begin to end, and
// whether there were any. A begin marker with no end is refused rather
// than guessed.
func withoutMarked(b []byte, beginMarker, endMarker, path string) ([]byte, bool, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	in, had := false, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case !in && t == beginMarker:
			in, had = true, true
			// Take back the blank line install put before the block.
			if kept := out.String(); strings.HasSuffix(kept, "\n\n") {
				out.Reset()
				out.WriteString(kept[:len(kept)-1])
			}
		case in && t == endMarker:
			in = false
		case !in:
			out.WriteString(l)
		}
	}
	if in {
		return nil, false, fmt.Errorf("%s has joule's begin marker but no %q line; fix the file by hand", path, endMarker)
	}
	return []byte(out.String()), had, nil
}
