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

// TestApplyKeepsModesAndLinks writes over a file with its own mode and
// over a symbolic link: the mode stays (Change.Mode is for new files), the
// link stays a link to the file it names, and a created file's directories
// are reported for an uninstall to take back.
func TestApplyKeepsModesAndLinks(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.json")
	os.WriteFile(own, []byte("{}\n"), 0o644)
	target := filepath.Join(dir, "dotfiles", "settings.json")
	os.MkdirAll(filepath.Dir(target), 0o755)
	os.WriteFile(target, []byte("{}\n"), 0o640)
	link := filepath.Join(dir, "settings.json")
	os.Symlink(target, link)
	fresh := filepath.Join(dir, "a", "b", "new.json")
	_, applied, err := ApplyRecorded([]Change{
		{Path: own, Before: []byte("{}\n"), After: []byte("{\"x\":1}\n"), Mode: 0o600},
		{Path: link, Before: []byte("{}\n"), After: []byte("{\"y\":1}\n"), Mode: 0o600},
		{Path: fresh, After: []byte("{}\n"), Mode: 0o600},
	}, time.Now(), filepath.Join(dir, "backups"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(own); st.Mode().Perm() != 0o644 {
		t.Errorf("the user's 0644 file became %v", st.Mode().Perm())
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "{\"y\":1}\n" {
		t.Errorf("the linked file: %q", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o640 {
		t.Errorf("the linked file's mode became %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o600 {
		t.Errorf("a new file got %v, not the change's mode", st.Mode().Perm())
	}
	want := []string{filepath.Join(dir, "a", "b"), filepath.Join(dir, "a")}
	if len(applied) != 3 || !reflect.DeepEqual(applied[2].Dirs, want) || applied[2].Existed || !applied[0].Existed || applied[0].Mode != 0o644 || applied[0].Backup == "" {
		t.Fatalf("applied: %+v", applied)
	}
	os.Remove(fresh)
	os.WriteFile(filepath.Join(dir, "a", "kept"), nil, 0o644)
	RemoveEmptyDirs(applied[2].Dirs)
	if _, err := os.Stat(filepath.Join(dir, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("an empty directory the install created is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Errorf("a directory that is not empty was removed")
	}
}

// FuzzJSONCEdit adds an entry to any JSON(C) object and takes it out again:
// the edited file must parse to exactly the document asked for, and the
// file with the entry taken out to the document it started as.
func FuzzJSONCEdit(f *testing.F) {
	for _, s := range jsoncFiles {
		f.Add(s)
	}
	f.Add("{\"a\":[1,2,],}")
	f.Add("/*x*/{/*y*/}/*z*/")
	f.Add("{\"a\":1 // c\n}")
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(t.TempDir(), "f.json")
		os.WriteFile(path, []byte(text), 0o644)
		jf, err := ReadJSON(path)
		if err != nil || jf.Doc["zz joule"] != nil {
			return
		}
		orig, _ := normalize(jf.Doc)
		jf.Doc["zz joule"] = map[string]any{"hooks": []any{map[string]any{"command": "j"}}}
		want, _ := normalize(jf.Doc)
		c := jf.Change(false)
		os.WriteFile(path, c.After, 0o644)
		back, err := ReadJSON(path)
		if err != nil {
			t.Fatalf("the edit does not parse: %v\n%q\n%q", err, text, c.After)
		}
		if got, _ := normalize(back.Doc); !reflect.DeepEqual(got, want) {
			t.Fatalf("the edit reads back as %v, want %v\n%q", got, want, c.After)
		}
		delete(back.Doc, "zz joule")
		c = back.Change(false)
		os.WriteFile(path, c.After, 0o644)
		again, err := ReadJSON(path)
		if err != nil {
			t.Fatalf("the removal does not parse: %v\n%q", err, c.After)
		}
		if got, _ := normalize(again.Doc); !reflect.DeepEqual(got, orig) {
			t.Fatalf("the removal reads back as %v, want %v\n%q", got, orig, c.After)
		}
	})
}

// TestJSONCEditLineComments puts an entry after, and takes one out from
// under, a line comment on a line shared with other members: the comment
// must not swallow the member that follows it.
func TestJSONCEditLineComments(t *testing.T) {
	for _, tt := range []struct{ text, add, remove string }{
		{"{\"a\":1 // c\n}", "zz", ""},
		{"{\"a\":1,// c\n\"joule\":2,\"b\":3}", "", "joule"},
		{"{\"a\":1,\"joule\":2 // c\n}", "", "joule"},
	} {
		path := filepath.Join(t.TempDir(), "f.json")
		os.WriteFile(path, []byte(tt.text), 0o644)
		f, err := ReadJSON(path)
		if err != nil {
			t.Fatal(err)
		}
		if tt.add != "" {
			f.Doc[tt.add] = true
		}
		delete(f.Doc, tt.remove)
		want, _ := normalize(f.Doc)
		after := f.Change(false).After
		os.WriteFile(path, after, 0o644)
		back, err := ReadJSON(path)
		if err != nil {
			t.Fatalf("%q: %v\n%q", tt.text, err, after)
		}
		if got, _ := normalize(back.Doc); !reflect.DeepEqual(got, want) || !bytes.Contains(after, []byte("// c")) {
			t.Errorf("%q became %q", tt.text, after)
		}
	}
}
