//go:build unix

package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallWritesTheClient: with joule-hook beside joule, every hook
// host's install writes the client's absolute path (not 'joule hook'), and
// the command Claude Code would run answers through the gate.
func TestInstallWritesTheClient(t *testing.T) {
	f := newFixture(t)
	userHome := strings.TrimPrefix(f.env[1], "HOME=")
	os.MkdirAll(userHome, 0o755)
	client := filepath.Join(f.bin, "joule-hook")
	for _, host := range []string{"claude-code", "codex", "gemini-cli", "cursor", "windsurf", "antigravity", "cline", "opencode"} {
		r := f.joule(nil, "install", host, "--project", f.ws)
		if r.code != 0 {
			t.Errorf("install %s: %+v", host, r)
			continue
		}
		if !strings.Contains(r.stdout, "hooks run the thin client "+client) {
			t.Errorf("install %s does not say it wrote the client:\n%s", host, r.stdout)
		}
	}
	found := map[string]bool{}
	for _, root := range []string{f.ws, userHome} {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(p, ".bak") || strings.Contains(p, "node_modules") {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, host := range []string{"claude-code", "codex", "gemini-cli", "cursor", "windsurf", "antigravity", "cline", "opencode"} {
				// The OpenCode plugin keeps joule hook as its fallback
				// when no client path was filled in.
				if !strings.HasSuffix(p, ".ts") && strings.Contains(string(b), "joule hook "+host) {
					t.Errorf("%s still runs joule hook %s", p, host)
				}
				// A project's committed Claude Code settings name the client
				// by PATH; the uncommitted settings.local.json says which.
				if strings.Contains(string(b), client+" "+host) || host == "opencode" && strings.Contains(string(b), `JOULE_HOOK_CLIENT ?? "`+client+`"`) ||
					host == "claude-code" && strings.HasSuffix(p, filepath.Join(".claude", "settings.local.json")) && strings.Contains(string(b), `"JOULE_HOOK_CLIENT": "`+client+`"`) {
					found[host] = true
				}
			}
			return nil
		})
	}
	for _, host := range []string{"claude-code", "codex", "gemini-cli", "cursor", "windsurf", "antigravity", "cline", "opencode"} {
		if !found[host] {
			t.Errorf("no installed configuration runs %s %s", client, host)
		}
	}
	// The line Claude Code runs, through a shell as Claude Code does.
	cmd := exec.Command("sh", "-c", client+" claude-code")
	cmd.Env = append(os.Environ(), f.env...)
	cmd.Dir = f.ws
	cmd.Stdin = strings.NewReader(string(f.claude("inst", "go test ./...")))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "deny") {
		t.Fatalf("the installed command: %v %s", err, out)
	}
	// Installing again changes nothing.
	if r := f.joule(nil, "install", "claude-code", "--project", f.ws); !strings.Contains(r.stdout, "unchanged") || strings.Contains(r.stdout, "wrote") {
		t.Fatalf("second install wrote:\n%s", r.stdout)
	}
}
