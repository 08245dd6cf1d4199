package geminicli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestTrust reads trust rules as Gemini CLI 0.61's checkPathTrust does.
func TestTrust(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "a", "proj")
	os.MkdirAll(proj, 0o755)
	for _, tc := range []struct {
		name  string
		rules map[string]any
		want  string
	}{
		{"none", map[string]any{}, ""},
		{"folder", map[string]any{proj: "TRUST_FOLDER"}, "TRUST_FOLDER"},
		{"ancestor", map[string]any{dir: "TRUST_FOLDER"}, "TRUST_FOLDER"},
		{"parent rule", map[string]any{filepath.Join(dir, "a", "other"): "TRUST_PARENT"}, "TRUST_FOLDER"},
		{"sibling", map[string]any{filepath.Join(dir, "a", "pro"): "TRUST_FOLDER"}, ""},
		{"refused", map[string]any{proj: "DO_NOT_TRUST"}, "DO_NOT_TRUST"},
		{"longest wins", map[string]any{dir: "TRUST_FOLDER", proj: "DO_NOT_TRUST"}, "DO_NOT_TRUST"},
		{"longest wins the other way", map[string]any{dir: "DO_NOT_TRUST", proj: "TRUST_FOLDER"}, "TRUST_FOLDER"},
		{"not a level", map[string]any{proj: true}, ""},
	} {
		if got := trust(tc.rules, proj); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestInstallTrust: --trust writes the rule once (0600), replaces a
// DO_NOT_TRUST, and the armed check follows the file.
func TestInstallTrust(t *testing.T) {
	t.Setenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", "")
	home, proj := t.TempDir(), t.TempDir()
	s := hook.Scope{Home: home, Project: proj, Joule: "/usr/local/bin/joule", Trust: true}
	finding := func() hook.Finding { return trustFinding(s) }
	if f := finding(); f.OK || !strings.Contains(f.Text, "--trust") {
		t.Fatalf("untrusted: %+v", f)
	}
	path := TrustedFoldersPath(home)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"`+proj+`":"DO_NOT_TRUST","/elsewhere":"TRUST_FOLDER"}`), 0o600)
	if f := finding(); f.OK || !strings.Contains(f.Text, "DO_NOT_TRUST") {
		t.Fatalf("refused: %+v", f)
	}
	changes, err := Installer{}.Plan(s, false)
	if err != nil || len(changes) != 2 {
		t.Fatalf("plan: %v %+v", err, changes)
	}
	if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	var rules map[string]string
	b, _ := os.ReadFile(path)
	if json.Unmarshal(b, &rules) != nil || rules[proj] != "TRUST_FOLDER" || rules["/elsewhere"] != "TRUST_FOLDER" {
		t.Fatalf("trustedFolders.json: %s", b)
	}
	if f := finding(); !f.OK {
		t.Fatalf("trusted: %+v", f)
	}
	again, _ := Installer{}.Plan(s, false)
	for _, c := range again {
		if string(c.Before) != string(c.After) {
			t.Errorf("a second install changes %s", c.Path)
		}
	}
	// The wrapped hook is joule's, and found again by the check.
	for _, c := range (Installer{}).Check(s) {
		if strings.Contains(c.Text, "BeforeTool") && !c.OK {
			t.Errorf("check: %+v", c)
		}
	}
	// A bare line an older install wrote is still joule's, and reported.
	if !isJoule(map[string]any{"command": "/usr/local/bin/joule-hook gemini-cli"}) || isJoule(map[string]any{"command": "my-lint", "name": "joule"}) {
		t.Fatal("isJoule")
	}
}
