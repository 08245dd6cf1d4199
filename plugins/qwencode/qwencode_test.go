package qwencode

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestGolden(t *testing.T) { hooktest.Golden(t, Adapter{}) }

func FuzzParse(f *testing.F) { hooktest.Fuzz(f, Adapter{}) }

// TestAnswersPassTheWrapper: every answer joule gives Qwen, and the
// wrapper's own deny, is of the form the installed wrapper passes through;
// anything else it replaces with a deny.
func TestAnswersPassTheWrapper(t *testing.T) {
	sh, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash: Qwen Code runs its hooks with bash -c")
	}
	call, err := Adapter{}.Parse([]byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`))
	if err != nil {
		t.Fatal(err)
	}
	outs := map[string]string{"wrapper deny": string(Deny(FailedReason)), "unreadable": string(Adapter{}.Answer(nil, hook.Deny(gate.CodeMalformed, "bad")).Stdout)}
	for _, res := range hooktest.Results {
		outs[res.Decision] = string(Adapter{}.Answer(call, res).Stdout)
	}
	for name, out := range outs {
		out = strings.TrimSuffix(out, "\n")
		got, err := exec.Command(sh, "-c", "case $1 in "+guard.Pass+") echo pass ;; *) echo deny ;; esac", "sh", out).Output()
		if err != nil || string(got) != "pass\n" {
			t.Errorf("%s: the wrapper does not pass %s (%v)", name, out, err)
		}
	}
	for _, bad := range []string{"", "{", `{"decision":"allow"}`, "garbage", `{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"allow"}}`} {
		got, _ := exec.Command(sh, "-c", "case $1 in "+guard.Pass+") echo pass ;; *) echo deny ;; esac", "sh", bad).Output()
		if string(got) != "deny\n" {
			t.Errorf("the wrapper passes %q", bad)
		}
	}
}
