package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodexContain runs joule install codex (contained, the default)
// against the real CLI: an allowed shell command comes back from the hook as allow +
// updatedInput running it under joule exec, so with a grant that lets
// every command through analysis (Bash allowed outright: the analyser
// switched off) the kernel still refuses what the grant does not cover,
// and ordinary work runs.
func TestCodexContain(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	r := newRig(t, fake)
	t.Cleanup(r.stopGate)
	os.MkdirAll(filepath.Join(r.ws, "src"), 0o755) // as joule init's workspace in the Claude Code test
	if res := r.joule("grant", "issue", "--allow", "Read", "--allow", "Write", "--allow", "Bash", "--budget", "50J", "--workspace", r.ws, "--use"); res.code != 0 {
		t.Fatalf("grant issue: %+v", res)
	}
	res := r.joule("install", "codex", "--project", r.ws, "--trust")
	if res.code != 0 || !strings.Contains(res.stdout, "ok   containment: allowed shell commands run under joule exec (landlock ABI") ||
		!strings.Contains(res.stdout, "armed: every codex tool call is decided by joule, and the shell commands it allows run contained by the kernel") {
		t.Fatalf("install: %+v", res)
	}
	hooksJSON, _ := os.ReadFile(filepath.Join(r.ws, ".codex", "hooks.json"))
	if !strings.Contains(string(hooksJSON), ` codex --contain"`) {
		t.Fatalf("hooks.json has no contained hook:\n%s", hooksJSON)
	}

	t.Run("ordinary work runs contained", func(t *testing.T) {
		os.WriteFile(filepath.Join(r.ws, "main.txt"), nil, 0o644)
		res := r.exec("do it", call{Name: "exec_command", Args: `{"cmd":"mkdir -p src/sub && echo ran > src/sub/allowed.txt && echo more >> main.txt; cat src/sub/allowed.txt"}`})
		if b, err := os.ReadFile(filepath.Join(r.ws, "src", "sub", "allowed.txt")); err != nil || string(b) != "ran\n" {
			t.Fatalf("the contained command did not run (%v, %q)\n%+v\n%+v", err, b, res, fake.outputs())
		}
		if got := r.receipts(sessionOf(t, res)); !strings.Contains(got, " rewrite ") {
			t.Fatalf("the receipt does not record the rewrite:\n%s", got)
		}
	})
	t.Run("the kernel refuses what analysis let through", func(t *testing.T) {
		key, _ := os.ReadFile(filepath.Join(r.jhome, "steward.key"))
		makefile := "leak:\n\t-@cat $$JOULE_HOME/steward.key\n\t-@cp /dev/null .codex/hooks.json\n" +
			"\t-@rm -f .codex/hooks.json\n\t-@touch $$HOME/outside.txt\n\t@echo done\n"
		if err := os.WriteFile(filepath.Join(r.ws, "Makefile"), []byte(makefile), 0o644); err != nil {
			t.Fatal(err)
		}
		res := r.exec("do it", call{Name: "exec_command", Args: `{"cmd":"make -s leak"}`})
		outs := fake.outputs()
		if len(outs) != 1 {
			t.Fatalf("tool outputs %+v\n%+v", outs, res)
		}
		for _, want := range []string{"steward.key: Permission denied", "cannot create regular file '.codex/hooks.json': ",
			"cannot remove '.codex/hooks.json': ", "outside.txt': ", "done"} {
			if !strings.Contains(outs[0].Text, want) {
				t.Errorf("tool output lacks %q: %q", want, outs[0].Text)
			}
		}
		if len(key) > 0 && strings.Contains(outs[0].Text, strings.TrimSpace(string(key))) {
			t.Fatal("the steward key reached the model")
		}
		if b, _ := os.ReadFile(filepath.Join(r.ws, ".codex", "hooks.json")); string(b) != string(hooksJSON) {
			t.Fatalf("hooks.json changed:\n%s", b)
		}
		if _, err := os.Stat(filepath.Join(r.uhome, "outside.txt")); err == nil {
			t.Fatal("a file was written outside the workspace")
		}
	})
	if res := r.joule("receipts", "verify"); res.code != 0 || !strings.Contains(res.stdout, "receipts verified") {
		t.Fatalf("receipts verify: %+v", res)
	}
}
