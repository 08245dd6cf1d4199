package hook

import (
	"slices"
	"testing"
)

func TestUserDirResolve(t *testing.T) {
	env := map[string]string{"ABS": "/srv/x", "REL": "conf/x", "TILDE": "~/q", "HOMEITSELF": "~"}
	getenv := func(k string) string { return env[k] }
	for _, tt := range []struct {
		name      string
		dir       UserDir
		cwd       string
		user, abs []string
	}{
		{"unset: the default place", UserDir{Env: "UNSET", Home: ".codex"}, "/w", []string{".codex"}, nil},
		{"set: both places", UserDir{Env: "ABS", Home: ".codex"}, "/w", []string{".codex"}, []string{"/srv/x"}},
		{"paths below", UserDir{Env: "ABS", Home: ".claude", Paths: []string{"settings.json", "hooks"}}, "/w",
			[]string{".claude/settings.json", ".claude/hooks"}, []string{"/srv/x/settings.json", "/srv/x/hooks"}},
		{"the home as default", UserDir{Env: "UNSET", Home: ".", Paths: []string{".claude.json"}}, "", []string{".claude.json"}, nil},
		{"relative to the working directory", UserDir{Env: "REL", Home: ".q"}, "/w", []string{".q"}, []string{"/w/conf/x"}},
		{"relative without one: dropped", UserDir{Env: "REL", Home: ".q"}, "", []string{".q"}, nil},
		{"~ against the home", UserDir{Env: "TILDE", Home: ".qwen", Paths: []string{"settings.json"}}, "/w",
			[]string{".qwen/settings.json", "q/settings.json"}, nil},
		{"~ alone, whole: not the home", UserDir{Env: "HOMEITSELF", Home: ".qwen"}, "/w", []string{".qwen"}, nil},
		{"no default, unset: nothing", UserDir{Env: "UNSET"}, "/w", nil, nil},
		{"no default, set: the file", UserDir{Env: "ABS"}, "/w", nil, []string{"/srv/x"}},
		{"no environment at all", UserDir{Env: "ABS", Home: ".x"}, "/w", []string{".x"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := getenv
			if tt.name == "no environment at all" {
				g = nil
			}
			user, abs := tt.dir.Resolve(g, tt.cwd)
			if !slices.Equal(user, tt.user) || !slices.Equal(abs, tt.abs) {
				t.Errorf("Resolve = %q, %q; want %q, %q", user, abs, tt.user, tt.abs)
			}
		})
	}
}
