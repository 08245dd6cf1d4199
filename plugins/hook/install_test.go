package hook

import "testing"

// TestIsJouleLineQuotedClients: a hook line is recognised as joule's however
// the quoter wrote the client's path, so uninstall finds it again.
func TestIsJouleLineQuotedClients(t *testing.T) {
	for _, dir := range []string{"/usr/local/bin", "/home/o'brien/go/bin", "/tmp/with space", "/opt/naïve", "/x/$HOME"} {
		s := Scope{Joule: dir + "/joule", Client: dir + "/joule-hook"}
		for _, client := range []string{s.Client, ""} {
			s.Client = client
			line := Command(s, "claude-code")
			if !IsJouleLine(line, "claude-code") {
				t.Errorf("%s is not recognised as joule's", line)
			}
			if IsJouleLine(line, "codex") {
				t.Errorf("%s is taken for codex's", line)
			}
		}
	}
}
