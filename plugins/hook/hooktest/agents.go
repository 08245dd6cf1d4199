package hooktest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// AgentServerCase is a settings file an editor's user already has.
type AgentServerCase struct {
	Name, Existing string
	Keep           string // an entry of the user's that must survive
	Err            bool   // the installer must refuse the file
}

// AgentServers installs the ACP agent entry agent into the agent_servers
// object of the settings file at rel (below a fresh home) over each case,
// checks the entry runs `joule acp`, that the user's entries survive and
// that Check agrees, then uninstalls and checks Check agrees again. Zed and
// JetBrains share this shape of configuration.
func AgentServers(t *testing.T, in hook.Installer, rel, agent string, cases []AgentServerCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			home := t.TempDir()
			s := hook.Scope{Home: home, Joule: "/usr/local/bin/joule"}
			p := filepath.Join(home, filepath.FromSlash(rel))
			if tt.Existing != "" {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(tt.Existing), 0o644)
			}
			changes, err := in.Plan(s, false)
			if tt.Err {
				if err == nil {
					t.Fatal("planned an install over a file it cannot read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now(), filepath.Join(t.TempDir(), "backups")); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Servers map[string]map[string]any `json:"agent_servers"`
			}
			b, _ := os.ReadFile(p)
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			e := doc.Servers[agent]
			if e["command"] != s.Joule || e["args"].([]any)[0] != "acp" {
				t.Fatalf("entry %v", e)
			}
			if tt.Keep != "" && doc.Servers[tt.Keep] == nil {
				t.Fatalf("the user's %s entry was lost: %s", tt.Keep, b)
			}
			for _, f := range in.Check(s)[1:] {
				if !f.OK {
					t.Errorf("check after install: %s", f.Text)
				}
			}
			changes, err = in.Plan(s, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now(), filepath.Join(t.TempDir(), "backups")); err != nil {
				t.Fatal(err)
			}
			for _, f := range in.Check(s)[1:] {
				if f.OK {
					t.Errorf("check after uninstall: %s", f.Text)
				}
			}
		})
	}
}
