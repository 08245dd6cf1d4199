package hook

import (
	"strings"
	"testing"
)

// TestIsJouleLineQuotedClients: a hook line is recognised as joule's however
// the quoter wrote the client's path, so uninstall finds it again.
func TestIsJouleLineQuotedClients(t *testing.T) {
	for _, dir := range []string{"/usr/local/bin", "/home/o'brien/go/bin", "/tmp/with space", "/opt/naïve", "/x/$HOME"} {
		s := Scope{Joule: dir + "/joule", Client: dir + "/joule-hook"}
		for _, client := range []string{s.Client, ""} {
			for _, m := range []ContainMode{Contained, NoContain, AnalysisOnly, ""} {
				s.Client, s.Contain = client, m
				line := Command(s, "claude-code")
				if !IsJouleLine(line, "claude-code") {
					t.Errorf("%s is not recognised as joule's", line)
				}
				if IsJouleLine(line, "codex") {
					t.Errorf("%s is taken for codex's", line)
				}
				if rest, got := CutMode(line); got != m && (m != AnalysisOnly || got != "") || !strings.HasSuffix(rest, "claude-code") {
					t.Errorf("%s: mode %q, want %q", line, got, m)
				}
			}
		}
	}
}

// TestContainModes: the flag each mode puts on a hook line, and what an
// install from before the record kept the mode says by its bytes.
func TestContainModes(t *testing.T) {
	for _, tc := range []struct {
		mode ContainMode
		flag string
	}{{Contained, " --contain"}, {NoContain, " --no-contain"}, {AnalysisOnly, ""}, {"", ""}} {
		if got := tc.mode.Flag(); got != tc.flag {
			t.Errorf("%q.Flag() = %q, want %q", tc.mode, got, tc.flag)
		}
	}
	for _, tc := range []struct {
		file string
		want ContainMode
	}{
		{`{"command":"'/bin/joule' hook claude-code --contain"}`, Contained},
		{`out=$('/bin/joule' hook gemini-cli --contain); case`, Contained},
		{"const CONTAIN = true\n", Contained}, // the OpenCode plugin before the mode was a flag
		{`const MODE: string = "--contain"`, Contained},
		{`{"command":"'/bin/joule-hook' claude-code"}`, ""},
		{`{"command":"'/bin/joule-hook' claude-code --no-contain"}`, ""},
		{"const CONTAIN = false\n", ""},
	} {
		if got := ModeInBytes([]byte(tc.file)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.file, got, tc.want)
		}
	}
	for _, tc := range []struct {
		mode ContainMode
		path string
	}{{Contained, "/hooks/claude-code/contain"}, {NoContain, "/hooks/claude-code/no-contain"}, {"", "/hooks/claude-code"}} {
		if got := ResidentPath("claude-code", tc.mode); got != tc.path {
			t.Errorf("ResidentPath(%q) = %q", tc.mode, got)
		}
		if !IsResidentURL("http://127.0.0.1:7411"+tc.path, "claude-code") || IsResidentURL("http://127.0.0.1:7411"+tc.path, "codex") {
			t.Errorf("%s is not recognised as claude-code's alone", tc.path)
		}
	}
	if IsResidentURL("http://127.0.0.1:7411/hooks/claude-code/other", "claude-code") {
		t.Error("an unknown mode path is taken for joule's")
	}
}
