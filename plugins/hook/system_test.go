package hook

import "testing"

// TestSystemLine: the line a system install writes is recognised in every
// containment mode, with and without a configuration path and a guard
// around it; a user install's line, or another host's, is not.
func TestSystemLine(t *testing.T) {
	for _, c := range []struct {
		s    SystemScope
		host string
	}{
		{SystemScope{Client: "/usr/local/libexec/joule/joule-hook", Contain: Contained}, "claude-code"},
		{SystemScope{Client: "/usr/local/libexec/joule/joule-hook", Contain: NoContain}, "codex"},
		{SystemScope{Client: "/usr/local/libexec/joule/joule-hook"}, "gemini-cli"},
		{SystemScope{Client: "/opt/my tools/joule-hook", Config: "/etc/joule test/system.conf", Contain: Contained}, "codex"},
	} {
		line := SystemCommand(c.s, c.host)
		for _, l := range []string{line, "/bin/sh -c 'guard' " + line, "out=$(/usr/bin/timeout -k 2 25 " + line + "); case $out in x) ;; esac"} {
			if !IsSystemLine(l, c.host) {
				t.Errorf("not recognised: %s", l)
			}
		}
		if IsSystemLine(line, "cursor") {
			t.Errorf("recognised for another host: %s", line)
		}
	}
	for _, l := range []string{"'/usr/bin/joule-hook' claude-code --contain", "joule hook claude-code", "/x/joule-hook --system-other claude-code", "/x/joule-hook --system claude-codex"} {
		if IsSystemLine(l, "claude-code") {
			t.Errorf("recognised: %s", l)
		}
	}
}
