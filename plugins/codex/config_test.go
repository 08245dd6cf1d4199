package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hook"
)

func TestConfigTOML(t *testing.T) {
	const joule = `/opt/my tools/joule`
	user := "# my settings\nmodel = \"o3\" # pinned\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\n"
	tests := []struct {
		name    string
		before  string // "" means no file
		wantErr string
		same    bool // install changes nothing
	}{
		{name: "no file", before: ""},
		{name: "user's comments and servers", before: user},
		{name: "no trailing newline", before: "model = \"o3\""},
		{name: "added by codex mcp add", before: "[mcp_servers.joule]\ncommand = \"" + joule + "\"\nargs = [\"mcp\"]\n", same: true},
		{name: "another joule server", before: "[mcp_servers.joule]\ncommand = \"other\"\n", wantErr: "already defines [mcp_servers.joule]"},
		{name: "invalid TOML", before: "model = \n", wantErr: "not valid TOML"},
		{name: "begin marker without end", before: beginMarker + "\n[mcp_servers.joule]\n", wantErr: "no \"# joule: end\" line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := hook.Scope{Home: dir, Joule: joule}
			t.Setenv("CODEX_HOME", filepath.Join(dir, ".codex"))
			path := configPath(s)
			if tt.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(tt.before), 0o600)
			}
			c, err := planConfig(s, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.same {
				if string(c.After) != tt.before {
					t.Fatalf("changed a config that already runs this joule:\n%s", c.After)
				}
				return
			}
			after := string(c.After)
			if !strings.HasPrefix(after, tt.before) {
				t.Fatalf("the user's text is not kept verbatim:\n%s", after)
			}
			if !strings.Contains(after, "[mcp_servers.joule]\ncommand = \"/opt/my tools/joule\"\nargs = [\"mcp\"]\n") {
				t.Fatalf("no joule server:\n%s", after)
			}
			os.MkdirAll(filepath.Dir(path), 0o700)
			os.WriteFile(path, c.After, 0o600)
			again, err := planConfig(s, false)
			if err != nil || string(again.After) != after {
				t.Fatalf("second install changed the file (%v):\n%s", err, again.After)
			}
			u, err := planConfig(s, true)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.before
			if want != "" && !strings.HasSuffix(want, "\n") {
				want += "\n" // install ended the user's last line; that stays
			}
			if string(u.After) != want {
				t.Fatalf("uninstall left\n%q\nwant\n%q", u.After, want)
			}
		})
	}
}
