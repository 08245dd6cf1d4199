package cline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/plugins/hook"
)

// TestScriptFailsClosed runs the installed hook script with a joule that
// fails in each way Cline would take as no objection, and one that
// answers: the script must print a deny for the first and pass the answer
// through, with the JOULE_HOME of the install, for the second.
func TestScriptFailsClosed(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "joule's home")
	n := 0
	fake := func(body string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("joule-%d", n))
		os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755)
		return p
	}
	for _, tt := range []struct{ name, joule, want string }{
		{"missing", filepath.Join(dir, "nonexistent"), `{"cancel":true,"errorMessage":"joule gave no decision (exit status 127); the task is stopped"}`},
		{"crash", fake(`cat >/dev/null; kill -SEGV $$`), `{"cancel":true,"errorMessage":"joule gave no decision (exit status 139); the task is stopped"}`},
		{"empty", fake(`exit 0`), `"cancel":true`},
		{"garbage", fake(`echo nope`), `"cancel":true`},
		{"answers", fake(`cat >/dev/null; echo '{"cancel":false}' ; echo "$JOULE_HOME" >&2`), `{"cancel":false}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proj := t.TempDir()
			s := hook.Scope{Project: proj, Home: dir, Joule: tt.joule, JouleHome: home}
			changes, err := Installer{}.Plan(s, false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := hook.Apply(changes, time.Now(), t.TempDir()); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(hookPath(s))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "JOULE_HOME=/somewhere/else"}
			cmd.Stdin = strings.NewReader(`{"hookName":"tool_call"}`)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			if !strings.Contains(string(out), tt.want) {
				t.Fatalf("the script printed %q, want %q", out, tt.want)
			}
			if tt.name == "answers" && strings.TrimSpace(stderr.String()) != home {
				t.Fatalf("joule ran with JOULE_HOME %q, not the install's %q", stderr.String(), home)
			}
			if f := (Installer{}).Check(s); !f[1].OK {
				t.Fatalf("check after install: %+v", f)
			}
		})
	}
}
