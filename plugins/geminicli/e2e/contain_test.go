package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeminiContainE2E runs the real Gemini CLI with joule installed by
// `joule install gemini-cli` (contained, the default), under a grant whose bare Bash rule
// lets analysis allow any command: what is then stopped is stopped by the
// kernel, under joule exec, inside the CLI's own run.
func TestGeminiContainE2E(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if r := f.joule("grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash", "--budget", "50J", "--workspace", f.ws, "--use"); r.code != 0 {
		t.Fatalf("grant issue: %+v", r)
	}
	r := f.joule("install", "gemini-cli", "--project", "--trust")
	if r.code != 0 || !strings.Contains(r.stdout, "ok   containment: allowed shell commands run under joule exec (landlock ABI") ||
		!strings.Contains(r.stdout, "armed: every gemini-cli tool call is decided by joule, and the shell commands it allows run contained by the kernel") {
		t.Fatalf("install: %+v", r)
	}
	settings, _ := os.ReadFile(filepath.Join(f.ws, ".gemini", "settings.json"))
	if !strings.Contains(string(settings), " gemini-cli --contain)") {
		t.Fatalf("settings.json has no contained hook:\n%s", settings)
	}
	key, _ := os.ReadFile(filepath.Join(f.jhome, "steward.key"))
	// make is granted, and what a Makefile runs is the workspace's, which
	// the analysis cannot see: only the kernel stands between its recipe
	// and the gate's files.
	makefile := "leak:\n\t-@cat $$JOULE_HOME/steward.key\n\t-@cp /dev/null .gemini/settings.json\n" +
		"\t-@rm -f .gemini/settings.json\n\t-@touch $$HOME/outside.txt\n\t@echo done\n"
	if err := os.WriteFile(filepath.Join(f.ws, "Makefile"), []byte(makefile), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.ws, "main.txt"), nil, 0o644)
	f.api.play(
		call{"run_shell_command", map[string]any{"command": "mkdir -p src/sub && echo ran > src/sub/allowed.txt && echo more >> main.txt; cat src/sub/allowed.txt"}},
		call{"run_shell_command", map[string]any{"command": "make -s leak"}},
	)
	g := f.gemini(nil, "-p", "do it", "--approval-mode", "yolo")
	if g.code != 0 {
		t.Fatalf("gemini: %d\n%s\n%s", g.code, g.stdout, g.stderr)
	}
	res := f.api.got()
	for i, r := range res {
		t.Logf("tool response %d %s: %.600s", i, r.Name, r.text())
	}
	if len(res) != 2 {
		t.Fatalf("%d tool responses, want 2\n%s", len(res), g.stderr)
	}
	t.Run("ordinary work runs contained", func(t *testing.T) {
		if b, err := os.ReadFile(filepath.Join(f.ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the contained command did not run (%v, %q): %s", err, b, res[0].text())
		}
		if b, _ := os.ReadFile(filepath.Join(f.ws, "main.txt")); string(b) != "more\n" {
			t.Fatalf("main.txt: %q", b)
		}
		if !strings.Contains(res[0].text(), "ran") {
			t.Fatalf("tool result %s", res[0].text())
		}
		if rs := f.receipts(t); !strings.Contains(rs, " rewrite ") {
			t.Fatalf("the receipt does not record the rewrite:\n%s", rs)
		}
	})
	t.Run("the kernel refuses what analysis let through", func(t *testing.T) {
		out := res[1].text()
		for _, want := range []string{"steward.key: Permission denied", "cannot create regular file '.gemini/settings.json': ", "cannot remove '.gemini/settings.json': ", "outside.txt': ", "done"} {
			if !strings.Contains(out, want) {
				t.Errorf("tool result lacks %q", want)
			}
		}
		if k := strings.TrimSpace(string(key)); k == "" || strings.Contains(out, k) {
			t.Fatal("the steward key reached the model")
		}
		if b, _ := os.ReadFile(filepath.Join(f.ws, ".gemini", "settings.json")); string(b) != string(settings) {
			t.Fatalf("settings.json changed:\n%s", b)
		}
		if _, err := os.Stat(filepath.Join(f.home, "outside.txt")); err == nil {
			t.Fatal("a file was written outside the workspace")
		}
	})
	t.Run("the host still asks", func(t *testing.T) {
		// Headless without yolo, Gemini offers the shell only for what a
		// rule of its own allows: here "touch". Uncontained, the rule
		// matches and the command runs; contained, Gemini's policy judges
		// the joule exec line, which the rule does not match, so the
		// rewrite approved nothing in Gemini's place.
		user := filepath.Join(f.home, ".gemini", "settings.json")
		b, _ := os.ReadFile(user)
		var doc map[string]any
		json.Unmarshal(b, &doc)
		doc["tools"] = map[string]any{"allowed": []any{"run_shell_command(touch)"}}
		b, _ = json.Marshal(doc)
		os.WriteFile(user, b, 0o644)

		f.api.play(call{"run_shell_command", map[string]any{"command": "touch asked.txt"}})
		g := f.gemini(nil, "-p", "do it")
		if _, err := os.Stat(filepath.Join(f.ws, "asked.txt")); err == nil {
			t.Fatalf("the contained command ran without Gemini's approval\n%s", g.stderr)
		}
		res := f.api.got()
		if len(res) != 1 {
			t.Fatalf("exit %d, tool responses %+v\n%s\n%s", g.code, res, g.stdout, g.stderr)
		}
		t.Logf("contained, without yolo, the model saw: %s", res[0].text())
		if rs := f.receipts(t); !strings.Contains(rs, "Bash: touch asked.txt") {
			t.Fatalf("joule was not asked first:\n%s", rs)
		}

		// The control: the same run uncontained (--no-contain), where the
		// rule matches; the receipt says it was not contained.
		if r := f.joule("install", "gemini-cli", "--project", "--trust", "--no-contain"); r.code != 0 || !strings.Contains(r.stdout, "warn not contained (--no-contain)") {
			t.Fatalf("install --no-contain: %+v", r)
		}
		f.api.play(call{"run_shell_command", map[string]any{"command": "touch asked.txt"}})
		g = f.gemini(nil, "-p", "do it")
		if _, err := os.Stat(filepath.Join(f.ws, "asked.txt")); err != nil {
			t.Fatalf("uncontained, Gemini's own rule did not run the command: %v %+v\n%s", err, f.api.got(), g.stderr)
		}
	})
}
