package hooktest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

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

// AgentServerSchema installs the ACP agent entry agent into the settings
// file at rel (below a fresh home, over existing, the user's file) and
// validates what was written against the editor's published settings
// shape, pinned as the JSON schema at schemaPath: the whole file against
// its root, and, when entryDef is not empty, agent's entry against
// #/$defs/entryDef.
func AgentServerSchema(t *testing.T, in hook.Installer, rel, agent, existing, schemaPath, entryDef string) {
	t.Helper()
	home := t.TempDir()
	s := hook.Scope{Home: home, Joule: "/usr/local/bin/joule"}
	p := filepath.Join(home, filepath.FromSlash(rel))
	if existing != "" {
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(existing), 0o644)
	}
	changes, err := in.Plan(s, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hook.Apply(changes, time.Now(), filepath.Join(t.TempDir(), "backups")); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	schemaDoc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("settings.json", schemaDoc); err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(written))
	if err != nil {
		t.Fatalf("%v: %s", err, written)
	}
	check := func(loc string, v any) {
		sch, err := c.Compile(loc)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s does not match %s: %v\n%s", rel, loc, err, written)
		}
	}
	check("settings.json", doc)
	if entryDef != "" {
		servers, _ := doc.(map[string]any)["agent_servers"].(map[string]any)
		check("settings.json#/$defs/"+entryDef, servers[agent])
	}
}
