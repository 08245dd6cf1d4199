package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobPattern judges Glob by where its pattern reaches, not only by its
// path.
func TestGlobPattern(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	tests := []struct {
		name           string
		input          map[string]any
		decision, code string
	}{
		{"workspace", map[string]any{"pattern": "**/*.go"}, Allow, CodeAllowed},
		{"subdir", map[string]any{"pattern": "src/**"}, Allow, CodeAllowed},
		{"path and pattern", map[string]any{"path": f.ws + "/src", "pattern": "*.go"}, Allow, CodeAllowed},
		{"absolute outside", map[string]any{"pattern": "/etc/*"}, Deny, CodeOutside},
		{"climbs", map[string]any{"pattern": "../../*"}, Deny, CodeSelfTamper}, // above $JOULE_HOME
		{"climbs after wildcard", map[string]any{"pattern": "*/../../*"}, Deny, CodeUnanalyzable},
		{"brace climbs", map[string]any{"pattern": "{src,../outside}/*"}, Deny, CodeUnanalyzable},
		{"joule home", map[string]any{"pattern": f.jh + "/*"}, Deny, CodeSelfTamper},
		{"joule home by wildcard", map[string]any{"pattern": f.home + "/.local/share/jo*/*"}, Deny, CodeSelfTamper},
		{"above joule home", map[string]any{"pattern": f.home + "/.local/**"}, Deny, CodeSelfTamper},
		{"home", map[string]any{"pattern": "*", "path": f.home}, Deny, CodeSelfTamper},
		{"outside", map[string]any{"pattern": "*", "path": f.outside}, Deny, CodeOutside},
		{"ssh keys", map[string]any{"pattern": f.home + "/.ssh/id_*"}, Deny, CodeOutside},
		{"tilde", map[string]any{"pattern": "~/.ssh/*"}, Deny, CodeMalformed},
		{"symlink out", map[string]any{"pattern": "src/link/*"}, Deny, CodeOutside},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Decide(f.event("Glob", tt.input), f.policy)
			if v.Decision != tt.decision || v.Code != tt.code {
				t.Errorf("Glob %v: %s %s (%s), want %s %s", tt.input, v.Decision, v.Code, v.Reason, tt.decision, tt.code)
			}
		})
	}
}

// TestEventKeysExact refuses keys that encoding/json would match without
// regard to case, or that appear twice: a host reads keys exactly.
func TestEventKeysExact(t *testing.T) {
	tests := []struct {
		event, err string
	}{
		{`{"session_id":"s","tool":"Read","input":{},"cwd":"/"}`, ""},
		{`{"session_id":"s","tool":"Read","Tool":"Bash","input":{},"cwd":"/"}`, `key "Tool" is not "tool"`},
		{`{"session_id":"s","TOOL":"Bash","input":{},"cwd":"/"}`, `key "TOOL" is not "tool"`},
		{`{"session_id":"s","tool":"Read","tool":"Bash","input":{},"cwd":"/"}`, `key "tool" appears twice`},
		{`{"Session_ID":"s","tool":"Read","input":{},"cwd":"/"}`, `key "Session_ID" is not "session_id"`},
		{`{"session_id":"s","tool":"Read","input":{},"cwd":"/","ſession_id":"x"}`, `is not "session_id"`},
		{`[]`, "the event is a JSON array: want one ActionEvent JSON object"},
		{`"x"`, "the event is not a JSON object"},
		{` 12`, "the event is not a JSON object"},
	}
	for _, tt := range tests {
		_, err := ParseEvent([]byte(tt.event))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.event, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one containing %q", tt.event, err, tt.err)
		}
	}
}

// TestProcViews: /proc/self/cwd resolves to the gate's own directory when
// the gate looks and to the command's when it runs; such paths are refused.
func TestProcViews(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	t.Chdir(f.ws) // a hook usually runs in the workspace: the view agrees with it
	for _, line := range []string{
		"cd ~/.local/share/joule && cat /proc/self/cwd/steward.key",
		"cat < /proc/self/cwd/src/a.go",
		"cat /proc/self/root" + f.jh + "/steward.key",
		"grep . /proc/thread-self/cwd/src/a.go",
		"cat /proc/1/cwd/x",
		"echo x > /proc/self/cwd/src/out.txt",
	} {
		if v := Decide(f.event("Bash", map[string]any{"command": line}), f.policy); v.Decision != Deny {
			t.Errorf("%s: %s %s (%s), want deny", line, v.Decision, v.Code, v.Reason)
		}
	}
	if v := Decide(f.event("Read", map[string]any{"file_path": f.jh + "/steward.key"}), f.policy); v.Code != CodeSelfTamper || !strings.Contains(v.Reason, "never readable") {
		t.Errorf("Read steward.key: %s %s (%s), want a self-tamper deny that says it is never readable", v.Decision, v.Code, v.Reason)
	}
	if v := Decide(f.event("Read", map[string]any{"file_path": "/proc/self/cwd/src/a.go"}), f.policy); v.Decision != Deny {
		t.Errorf("Read /proc/self/cwd/src/a.go: %s %s, want deny", v.Decision, v.Code)
	}
}

// TestShellListings judges what a glob word makes the shell list, and a
// directory a reader may read whole.
func TestShellListings(t *testing.T) {
	f := newFixture(t, append([]string{"Read(~/**)"}, testAllow...), testAsk, testDeny)
	tests := []struct {
		line, decision, code string
	}{
		{"echo *.go src/*", Allow, CodeAllowed},
		{"ls src/*.go", Allow, CodeAllowed},
		{"echo /etc/*", Deny, CodeOutside},
		{"ls " + f.outside + "/*", Deny, CodeOutside},
		{"echo ~/.local/share/joule/*", Deny, CodeSelfTamper},
		{"grep -r secret ~", Deny, CodeSelfTamper},
		{"grep -r secret ~/.local", Deny, CodeSelfTamper},
		{"cat ~/notes.txt", Allow, CodeAllowed}, // Read(~/**) grants it
		{"ls ~/*", Deny, CodeSelfTamper},        // ~/Documents is above Cline's hooks: rm -rf ~/* would take them
	}
	for _, tt := range tests {
		v := Decide(f.event("Bash", map[string]any{"command": tt.line}), f.policy)
		if v.Decision != tt.decision || tt.code != "" && v.Code != tt.code {
			t.Errorf("%s: %s %s (%s), want %s %s", tt.line, v.Decision, v.Code, v.Reason, tt.decision, tt.code)
		}
	}
}

// TestReaderOperands: the pattern or script of grep and sed is not a file;
// dd names its files in if= and of=.
func TestReaderOperands(t *testing.T) {
	f := newFixture(t, append([]string{"Bash(sed:*)", "Bash(dd:*)", "Bash(jq:*)"}, testAllow...), testAsk, testDeny)
	tests := []struct {
		line, decision, code string
	}{
		{"sed -n '/^func/,/^}/p' src/a.go", Allow, CodeAllowed},
		{"grep -n '/usr/local' src/a.go", Allow, CodeAllowed},
		{"grep -A 3 /etc src/a.go", Allow, CodeAllowed}, // -A takes 3: /etc is the pattern
		{"grep -A 3 x /etc src/a.go", Deny, CodeOutside},
		{"grep -e /x/ /etc/passwd", Deny, CodeOutside},
		{"sed -n -e p /etc/passwd", Deny, CodeOutside},
		{"sed -n 1p ~/.local/share/joule/steward.key", Deny, CodeSelfTamper},
		{"jq .name /etc/os-release", Deny, CodeOutside},
		{"jq '.a' src/x.json", Allow, CodeAllowed},
		{"dd if=src/a.go of=src/b.go", Allow, CodeAllowed},
		{"dd if=" + f.jh + "/steward.key", Deny, CodeSelfTamper},
		{"dd if=~/.ssh/id_rsa", Deny, CodeOutside},
		{"dd if=/dev/zero of=.claude/settings.json", Deny, CodeSelfTamper},
		{"dd if=/dev/zero of=" + f.outside + "/x", Deny, CodeOutside},
		{"dd if=/dev/zero of=$HOME/x", Deny, CodeOutside},
		{"dd if=/dev/zero of=$HOME/$X", Deny, CodeUnanalyzable},
	}
	for _, tt := range tests {
		v := Decide(f.event("Bash", map[string]any{"command": tt.line}), f.policy)
		if v.Decision != tt.decision || tt.code != "" && v.Code != tt.code {
			t.Errorf("%s: %s %s (%s), want %s %s", tt.line, v.Decision, v.Code, v.Reason, tt.decision, tt.code)
		}
	}
}

// TestReaderGlobsAndDenyRules: a glob operand is judged by what it matches,
// so a Read deny rule below the workspace holds without denying every glob.
func TestReaderGlobsAndDenyRules(t *testing.T) {
	f := newFixture(t, testAllow, testAsk, testDeny)
	if err := os.WriteFile(filepath.Join(f.ws, ".env"), []byte("KEY=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line, decision, code string
	}{
		{"cat src/*.go", Allow, CodeAllowed},
		{"cat *", Allow, CodeAllowed}, // bash's * skips .env
		{"cat .e*", Deny, CodeDenyRule},
		{"cat .en?", Deny, CodeDenyRule},
		{"cat {.env,x}", Deny, ""},
		{"grep -h . $PWD/.env", Deny, CodeDenyRule},
		{"shopt -s dotglob; cat *", Deny, ""},
		{"cat .env", Deny, CodeDenyRule},
		{"cat < .env", Deny, CodeDenyRule},
	}
	for _, tt := range tests {
		v := Decide(f.event("Bash", map[string]any{"command": tt.line}), f.policy)
		if v.Decision != tt.decision || tt.code != "" && v.Code != tt.code {
			t.Errorf("%s: %s %s (%s), want %s %s", tt.line, v.Decision, v.Code, v.Reason, tt.decision, tt.code)
		}
	}
}

// TestGitConfigProtected: git runs what .git/config and .git/hooks name on
// the next git status or commit, so no tool may write them.
func TestGitConfigProtected(t *testing.T) {
	f := newFixture(t, append([]string{"Write", "Bash(git status)"}, testAllow...), testAsk, testDeny)
	for _, ev := range []*Event{
		f.event("Write", map[string]any{"file_path": f.ws + "/.git/config", "content": "[core]\n\tfsmonitor = touch x\n"}),
		f.event("Edit", map[string]any{"file_path": f.ws + "/.git/hooks/pre-commit", "old_string": "", "new_string": "x"}),
		f.event("Write", map[string]any{"file_path": f.ws + "/.git/info/attributes", "content": "* filter=x\n"}),
		f.event("Bash", map[string]any{"command": "echo '[core] fsmonitor = \"touch x\"' >> .git/config; git status"}),
	} {
		if v := Decide(ev, f.policy); v.Decision != Deny || v.Code != CodeSelfTamper {
			t.Errorf("%s %s: %s %s (%s), want deny self-tamper", ev.Tool, ev.Input, v.Decision, v.Code, v.Reason)
		}
	}
	if v := Decide(f.event("Write", map[string]any{"file_path": f.ws + "/.gitignore", "content": "x\n"}), f.policy); v.Decision != Allow {
		t.Errorf("Write .gitignore: %s %s (%s), want allow", v.Decision, v.Code, v.Reason)
	}
}
