package zed

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

func TestInstall(t *testing.T) {
	tests := []struct {
		name, existing string
		keep           string // an entry of the user's that must survive
		err            bool
	}{
		{"fresh", "", "", false},
		{"keeps the user's agents", `{"theme":"One Dark","agent_servers":{"Claude":{"command":"claude-agent-acp", "type": "custom"}}}`, "Claude", false},
		{"not an object", `{"agent_servers":[]}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			s := hook.Scope{Home: home, Joule: "/usr/local/bin/joule"}
			p := filepath.Join(home, ".config", "zed", "settings.json")
			if tt.existing != "" {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(tt.existing), 0o644)
			}
			changes, err := Installer{}.Plan(s, false)
			if tt.err {
				if err == nil {
					t.Fatal("planned an install over a file it cannot read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now()); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Servers map[string]map[string]any `json:"agent_servers"`
			}
			b, _ := os.ReadFile(p)
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			e := doc.Servers[Agent]
			if e["command"] != s.Joule || e["args"].([]any)[0] != "acp" {
				t.Fatalf("entry %v", e)
			}
			if tt.keep != "" && doc.Servers[tt.keep] == nil {
				t.Fatalf("the user's %s entry was lost: %s", tt.keep, b)
			}
			for _, f := range (Installer{}).Check(s)[1:] {
				if !f.OK {
					t.Errorf("check after install: %s", f.Text)
				}
			}
			changes, err = Installer{}.Plan(s, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now()); err != nil {
				t.Fatal(err)
			}
			for _, f := range (Installer{}).Check(s)[1:] {
				if f.OK {
					t.Errorf("check after uninstall: %s", f.Text)
				}
			}
		})
	}
}
