package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/tailscale/hujson"

	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts"
)

// A user's own configuration as people write it, per kind of file: what an
// install then uninstall must give back byte for byte and mode for mode.
var (
	jsonSeeds = map[string]string{
		"plain": "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mine\": {\n      \"command\": \"my-mcp\"\n    }\n  }\n}\n",
		"comments": "// mine\n{\n  /* the look */\n  \"theme\": \"dark\", // best\n  \"mcpServers\": {\n" +
			"    \"mine\": { \"command\": \"my-mcp\" }, // keep\n  },\n}\n",
		"odd indentation": "{\n   \"theme\":\"dark\" ,\n\t\"mcpServers\" :  {\n\t\t\"mine\": {\"command\": \"my-mcp\"}\n\t}\n}",
		"crlf":            "{\r\n    \"theme\": \"dark\",\r\n    \"mcpServers\": {\r\n        \"mine\": {\r\n            \"command\": \"my-mcp\"\r\n        }\r\n    }\r\n}\r\n",
	}
	tomlSeeds = map[string]string{
		"plain":           "model = \"gpt-5\"\n",
		"comments":        "# mine\nmodel = \"gpt-5\" # best\n\n[tui]\n# quiet\nnotifications = false\n",
		"odd indentation": "   model=\"gpt-5\"\n\n\n",
		"crlf":            "model = \"gpt-5\"\r\n[tui]\r\nnotifications = false\r\n",
	}
	seedModes = map[string]os.FileMode{"plain": 0o644, "comments": 0o600, "odd indentation": 0o640, "crlf": 0o664}
)

// tree is every file and directory under roots: mode, and bytes for files.
func tree(t *testing.T, roots ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			v := info.Mode().String()
			if info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				v += " " + string(b)
			}
			m[p] = v
			return nil
		})
	}
	return m
}

func treeDiff(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "gone: "+k)
		} else if v != w {
			out = append(out, fmt.Sprintf("changed: %s\n  was %q\n  now %q", k, v, w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "left behind: "+k)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// installHere runs joule install in-process with args (the environment
// names the homes).
func installHere(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := runInstall(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb}, args); err != nil {
		t.Fatalf("joule install %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// traceHomes points every host's files into a fresh directory and returns
// the user's home, a project and the scope an install there sees.
func traceHomes(t *testing.T) (home, project string) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	home, project = filepath.Join(dir, "home"), filepath.Join(dir, "project")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(project, 0o755)
	t.Setenv("HOME", home)
	t.Setenv("JOULE_HOME", filepath.Join(dir, "joulehome"))
	t.Setenv("CODEX_HOME", filepath.Join(home, ".codex"))
	for _, v := range []string{"CLINE_MCP_SETTINGS_PATH", "CLINE_DATA_DIR", "CLINE_DIR", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "OPENCODE_DISABLE_PROJECT_CONFIG"} {
		t.Setenv(v, "")
	}
	return home, project
}

// seedPaths are the files an install of host in the scope touches, as its
// plan says.
func seedPaths(t *testing.T, inst hook.Installer, home, project string) []string {
	t.Helper()
	self, _ := os.Executable()
	changes, err := inst.Plan(hook.Scope{Home: home, Project: project, Joule: self}, false)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	return paths
}

// seed writes the user's own file at p for variant, when p is a kind of
// file a user writes (JSON, TOML); it returns its content ("" for none).
func seed(t *testing.T, p, variant string) string {
	t.Helper()
	var text string
	switch {
	case variant == "no file":
	case strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".jsonc"):
		text = jsonSeeds[variant]
	case strings.HasSuffix(p, ".toml"):
		text = tomlSeeds[variant]
	}
	if text == "" {
		return ""
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, seedModes[variant])
	return text
}

// TestInstallLeavesNoTrace installs every host, in each scope, over the
// user's own files written each way (none at all, plain, with comments,
// oddly indented, CRLF), and uninstalls it: every file and directory under
// the home and the project must be as before, bytes and modes.
func TestInstallLeavesNoTrace(t *testing.T) {
	variants := []string{"no file", "plain", "comments", "odd indentation", "crlf"}
	for _, h := range hosts.All() {
		if h.Installer == nil {
			continue
		}
		host, inst := h.Name, h.Installer
		for _, scope := range []string{"--user", "--project"} {
			for _, variant := range variants {
				t.Run(host+" "+scope+" "+variant, func(t *testing.T) {
					home, project := traceHomes(t)
					where := []string{scope}
					if scope == "--project" {
						where = append(where, project)
					} else {
						project = ""
					}
					for _, p := range seedPaths(t, inst, home, project) {
						seed(t, p, variant)
					}
					before := tree(t, home, filepath.Dir(home)+"/project")
					installHere(t, append([]string{host}, where...)...)
					if d := treeDiff(before, tree(t, home, filepath.Dir(home)+"/project")); d == "" {
						t.Fatal("the install changed nothing")
					}
					// Idempotent: a second install keeps the first state.
					installHere(t, append([]string{host}, where...)...)
					installHere(t, append([]string{host, "--uninstall"}, where...)...)
					if d := treeDiff(before, tree(t, home, filepath.Dir(home)+"/project")); d != "" {
						t.Errorf("install then uninstall left a trace:\n%s", d)
					}
				})
			}
		}
	}
}

// userEdit is an edit a user makes to a JSON file after the install: a
// comment and an entry of their own at the top.
func userEdit(b []byte) []byte {
	nl := "\n"
	if bytes.Contains(b, []byte("\r\n")) {
		nl = "\r\n"
	}
	i := bytes.IndexByte(b, '{')
	return append(append(append([]byte{}, b[:i+1]...), nl+"  // my edit"+nl+"  \"edited\": true,"...), b[i+1:]...)
}

// TestUninstallKeepsAnEdit edits each JSON file an install wrote before
// the uninstall: the uninstall must then keep the edit, and every comment,
// and take out only joule's entries; for a file of the user's it gives
// back exactly the user's file with the same edit.
func TestUninstallKeepsAnEdit(t *testing.T) {
	self, _ := os.Executable()
	for _, h := range hosts.All() {
		if h.Installer == nil {
			continue
		}
		host, inst := h.Name, h.Installer
		for _, variant := range []string{"no file", "plain", "comments", "crlf"} {
			t.Run(host+" "+variant, func(t *testing.T) {
				home, project := traceHomes(t)
				seeds := map[string]string{}
				for _, p := range seedPaths(t, inst, home, project) {
					seeds[p] = seed(t, p, variant)
				}
				installHere(t, host, "--project", project)
				edited := 0
				for p := range seeds {
					if !strings.HasSuffix(p, ".json") {
						continue
					}
					b, err := os.ReadFile(p)
					if err != nil {
						continue // not written by this install
					}
					os.WriteFile(p, userEdit(b), 0o644)
					edited++
				}
				if edited == 0 {
					t.Skip("the install writes no JSON file")
				}
				installHere(t, host, "--project", project, "--uninstall")
				for p, s := range seeds {
					if !strings.HasSuffix(p, ".json") {
						continue
					}
					b, err := os.ReadFile(p)
					if err != nil {
						if s != "" {
							t.Errorf("%s: the user's file is gone: %v", p, err)
						}
						continue
					}
					if strings.Contains(string(b), self) {
						t.Errorf("%s still names joule:\n%s", p, b)
					}
					if !strings.Contains(string(b), "// my edit") || !strings.Contains(string(b), `"edited": true`) {
						t.Errorf("%s lost the user's edit:\n%s", p, b)
					}
					if s == "" {
						continue
					}
					if want := userEdit([]byte(s)); !sameJSON(t, b, want) {
						t.Errorf("%s after uninstall is not the user's file with their edit:\n%s\nwant\n%s", p, b, want)
					}
					for _, c := range []string{"// mine", "/* the look */", "// best", "// keep"} {
						if strings.Contains(s, c) && !strings.Contains(string(b), c) {
							t.Errorf("%s lost the comment %q:\n%s", p, c, b)
						}
					}
				}
			})
		}
	}
}

// sameJSON compares two JSON(C) texts by value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	dec := func(x []byte) any {
		s, err := hujson.Standardize(append([]byte{}, x...))
		if err != nil {
			t.Fatalf("%v:\n%s", err, x)
		}
		var v any
		json.Unmarshal(s, &v)
		return v
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

// TestUninstallRevertsTrust installs with --trust, which writes the host's
// own trust files, and uninstalls without it: the trust the install added
// goes (byte for byte when nothing else changed the file; only that rule
// when the host has written another since), and the user's own stays.
func TestUninstallRevertsTrust(t *testing.T) {
	for _, tt := range []struct {
		host, file, own, later string
	}{
		{"gemini-cli", ".gemini/trustedFolders.json", "", ""},
		{"gemini-cli", ".gemini/trustedFolders.json", "{\n  \"/elsewhere\": \"TRUST_FOLDER\"\n}\n", ""},
		{"gemini-cli", ".gemini/trustedFolders.json", "{\n  \"/elsewhere\": \"TRUST_FOLDER\"\n}\n", "/later"},
		{"codex", ".codex/config.toml", "", ""},
		{"codex", ".codex/config.toml", "# mine\nmodel = \"gpt-5\"\n", ""},
	} {
		t.Run(tt.host+" "+fmt.Sprint(tt.own != "", tt.later != ""), func(t *testing.T) {
			home, project := traceHomes(t)
			path := filepath.Join(home, tt.file)
			if tt.own != "" {
				os.MkdirAll(filepath.Dir(path), 0o755)
				os.WriteFile(path, []byte(tt.own), 0o644)
			}
			before := tree(t, home, project)
			installHere(t, tt.host, "--project", project, "--trust")
			b, _ := os.ReadFile(path)
			if !strings.Contains(string(b), project) {
				t.Fatalf("--trust did not trust the project in %s:\n%s", path, b)
			}
			if tt.later != "" {
				// The host trusts another folder meanwhile.
				f, err := hook.ReadJSON(path)
				if err != nil {
					t.Fatal(err)
				}
				f.Doc[tt.later] = "TRUST_FOLDER"
				os.WriteFile(path, f.Change(false).After, 0o600)
			}
			installHere(t, tt.host, "--project", project, "--uninstall")
			if tt.later == "" {
				if d := treeDiff(before, tree(t, home, project)); d != "" {
					t.Errorf("--trust then uninstall left a trace:\n%s", d)
				}
				return
			}
			b, _ = os.ReadFile(path)
			if strings.Contains(string(b), project) || !strings.Contains(string(b), tt.later) || !strings.Contains(string(b), "/elsewhere") {
				t.Errorf("uninstall did not take out only joule's trust:\n%s", b)
			}
		})
	}
}

// TestUninstallWithoutRecord uninstalls an install whose record is gone (an
// install by an older joule, or a lost $JOULE_HOME): joule's entries are
// taken out of each file of the user's, and the rest of it, comments and
// layout included, is left byte for byte.
func TestUninstallWithoutRecord(t *testing.T) {
	for _, h := range hosts.All() {
		if h.Installer == nil {
			continue
		}
		host, inst := h.Name, h.Installer
		for _, variant := range []string{"plain", "comments", "odd indentation", "crlf"} {
			t.Run(host+" "+variant, func(t *testing.T) {
				home, project := traceHomes(t)
				seeds := map[string]string{}
				for _, p := range seedPaths(t, inst, home, project) {
					if s := seed(t, p, variant); s != "" {
						seeds[p] = s
					}
				}
				installHere(t, host, "--project", project)
				os.Remove(filepath.Join(os.Getenv("JOULE_HOME"), hook.InstallsFile))
				installHere(t, host, "--project", project, "--uninstall")
				for p, s := range seeds {
					b, err := os.ReadFile(p)
					if err != nil || string(b) != s {
						t.Errorf("%s after uninstall (%v):\n%q\nwant\n%q", p, err, b, s)
					}
				}
			})
		}
	}
}
