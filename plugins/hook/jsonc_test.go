package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// jsoncFiles are host files as users write them: the edits below must keep
// every byte of theirs.
var jsoncFiles = map[string]string{
	"plain": `{
  "theme": "dark",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "mine"
          }
        ]
      }
    ]
  }
}
`,
	"comments": `// my settings
{
  /* the look */
  "theme": "dark", // dark is best
  "hooks": {
    // my own gate
    "PreToolUse": [
      { "matcher": "Bash", "hooks": [ { "type": "command", "command": "mine" } ] }, // keep
    ],
  },
  // the end
}
`,
	"odd indentation":  "{\n   \"theme\":\"dark\" ,\n\t\t\"mcpServers\" :  {\n\t\t\t\"other\": {\"command\": \"x\"}\n\t\t}\n}",
	"crlf":             "{\r\n    \"theme\": \"dark\",\r\n    \"other\": {}\r\n}\r\n",
	"inline":           `{"theme":"dark","hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"mine"}]}]}}`,
	"empty object":     "{}\n",
	"trailing comment": "{\n  \"theme\": \"dark\" // last\n}\n",
}

func isTestJoule(v any) bool {
	m, _ := v.(map[string]any)
	return m["command"] == "/opt/joule hook test"
}

// edit does what an install (or, with remove, an uninstall) does to f.
func editTestFile(t *testing.T, path string, remove bool) Change {
	t.Helper()
	f, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := Object(f.Doc, "hooks", path)
	if err != nil {
		t.Fatal(err)
	}
	h := map[string]any{"type": "command", "command": "/opt/joule hook test", "timeout": 30}
	if err := SetGroups(hooks, []string{"PreToolUse", "BeforeTool"}, "*", h, isTestJoule, !remove, path); err != nil {
		t.Fatal(err)
	}
	PruneEmpty(f.Doc, "hooks")
	if err := MCPServer(f, map[string]any{"command": "/opt/joule", "args": []any{"mcp"}}, remove); err != nil {
		t.Fatal(err)
	}
	return f.Change(false)
}

func TestJSONCEditKeepsTheUsersBytes(t *testing.T) {
	for name, text := range jsoncFiles {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			c := editTestFile(t, path, false)
			if _, err := Apply([]Change{c}, time.Now(), t.TempDir()); err != nil {
				t.Fatal(err)
			}
			installed, _ := os.ReadFile(path)
			f, err := ReadJSON(path)
			if err != nil {
				t.Fatalf("the installed file does not parse: %v\n%s", err, installed)
			}
			hooks, _ := f.Doc["hooks"].(map[string]any)
			if !HasHandler(hooks, "BeforeTool", func(m map[string]any) bool { return isTestJoule(m) }) {
				t.Fatalf("no joule handler in\n%s", installed)
			}
			for _, keep := range []string{"// my settings", "/* the look */", "// dark is best", "// my own gate", "// keep", "// the end", "// last"} {
				if strings.Contains(text, keep) && !strings.Contains(string(installed), keep) {
					t.Errorf("install dropped %q:\n%s", keep, installed)
				}
			}
			if strings.Contains(text, "\r\n") && strings.Count(string(installed), "\n") != strings.Count(string(installed), "\r\n") {
				t.Errorf("install mixed line endings into a CRLF file:\n%q", installed)
			}
			// Standard JSON stays standard, so a strict host still reads it.
			if !strings.Contains(text, "//") && !json.Valid(installed) {
				t.Errorf("install made invalid JSON of standard JSON:\n%s", installed)
			}
			c = editTestFile(t, path, true)
			if !bytes.Equal(c.After, []byte(text)) {
				t.Errorf("uninstall did not give back the file:\nwant %q\ngot  %q\ninstalled %q", text, c.After, installed)
			}
		})
	}
}

// TestJSONCEditLaysOutAsTheFileDoes checks the added entries follow the
// file's own indentation.
func TestJSONCEditLaysOutAsTheFileDoes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	os.WriteFile(path, []byte("{\n    \"a\": 1\n}\n"), 0o644)
	f, err := ReadJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Doc["b"] = map[string]any{"c": []any{1}}
	got := string(f.Change(false).After)
	want := "{\n    \"a\": 1,\n    \"b\": {\n        \"c\": [\n            1\n        ]\n    }\n}\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var doc map[string]any
	json.Unmarshal([]byte(got), &doc)
	if !reflect.DeepEqual(doc["a"], float64(1)) {
		t.Errorf("a changed: %v", doc)
	}
}
