package hosts

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
	"github.com/joulehook/joule/plugins/hosts/internal/denytable"
)

func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range All() {
		if h.Name == "" || strings.ContainsAny(h.Name, " /\t") {
			t.Errorf("host %q: want a plain command-line name", h.Name)
		}
		if seen[h.Name] {
			t.Errorf("host %q is registered twice", h.Name)
		}
		seen[h.Name] = true
		if got, ok := Lookup(h.Name); !ok || got.Name != h.Name {
			t.Errorf("Lookup(%q) = %q, %v", h.Name, got.Name, ok)
		}
		if h.Adapter != nil {
			// The adapter names its host as the registry does, and
			// answers a deny in the host's own form.
			a := h.Adapter(t.TempDir())
			if a.Host() != h.Name {
				t.Errorf("host %q: its adapter says it is %q", h.Name, a.Host())
			}
			out := hook.Fallback(a, nil, hook.Deny(gate.CodeInternal, "registry test"))
			if !strings.Contains(string(out.Stdout)+out.Stderr, "registry test") {
				t.Errorf("host %q: the adapter's deny does not carry the reason: %+v", h.Name, out)
			}
		}
		if h.Adapter == nil && h.Installer == nil && len(h.Config.Project)+len(h.Config.User) == 0 {
			t.Errorf("host %q: nothing joule does with it", h.Name)
		}
		if Contained(h) {
			if h.Adapter == nil {
				t.Errorf("host %q: --contain without a hook adapter", h.Name)
			}
			if strings.Count(h.Contain, "%s") != 1 || !strings.HasPrefix(h.Contain, "containment: ") {
				t.Errorf("host %q: Contain %q wants one %%s for the sandbox mode and the containment: label", h.Name, h.Contain)
			}
		}
		if h.Resident && h.Adapter == nil {
			t.Errorf("host %q: resident without a hook adapter", h.Name)
		}
		if h.TrustProjectOnly && h.Trust == "" {
			t.Errorf("host %q: TrustProjectOnly without Trust", h.Name)
		}
		if len(h.Config.Project)+len(h.Config.User)+len(h.UserDirs) == 0 {
			t.Errorf("host %q: no configuration paths for the gate to protect", h.Name)
		}
		for _, list := range [][]string{h.Config.Project, h.Config.Walk, h.Config.User} {
			for _, p := range list {
				if !relativeClean(p) {
					t.Errorf("host %q: configuration path %q is not relative and clean", h.Name, p)
				}
			}
		}
		if len(h.Config.Abs) > 0 {
			t.Errorf("host %q: Abs %q in the registry; a moved directory is a UserDir", h.Name, h.Config.Abs)
		}
		for _, d := range h.UserDirs {
			if d.Env == "" || strings.ToUpper(d.Env) != d.Env || strings.ContainsAny(d.Env, "=$ ") {
				t.Errorf("host %q: UserDir variable %q is not an environment variable's name", h.Name, d.Env)
			}
			if d.Home != "" && d.Home != "." && !relativeClean(d.Home) {
				t.Errorf("host %q: UserDir %s: default %q is not relative and clean", h.Name, d.Env, d.Home)
			}
			for _, p := range d.Paths {
				if !relativeClean(p) {
					t.Errorf("host %q: UserDir %s: path %q is not relative and clean", h.Name, d.Env, p)
				}
			}
			if d.Home == "" && d.Env == "" {
				t.Errorf("host %q: a UserDir with neither variable nor default place", h.Name)
			}
			// One place per fact: what a variable moves is not listed
			// again as fixed, where it would stop following the variable.
			if d.Home != "" && d.Home != "." {
				for _, u := range h.Config.User {
					if underAny(u, []string{d.Home}) {
						t.Errorf("host %q: User path %s lies in %s, which $%s moves: list it in that UserDir", h.Name, u, d.Home, d.Env)
					}
				}
			}
		}
		for _, p := range h.Managed {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				t.Errorf("host %q: managed settings %q are not absolute and clean", h.Name, p)
			}
		}
	}
	if _, ok := Lookup("no-such-host"); ok {
		t.Error("Lookup found no-such-host")
	}
	// The hosts joule served when this was written, by what they offer:
	// none may lose a seam. A new host adds to these lists without an edit
	// here (its package and its registry line are all it takes).
	for _, tt := range []struct {
		name string
		keep func(hook.Host) bool
		want string
	}{
		{"hooked", Hooked, "antigravity claude-code cline codex cursor gemini-cli opencode windsurf"},
		{"installable", Installable, "antigravity claude-code cline codex cursor gemini-cli jetbrains neovim opencode windsurf zed"},
		{"contained", Contained, "claude-code cline codex gemini-cli opencode"},
		{"resident", func(h hook.Host) bool { return h.Resident }, "claude-code"},
		{"trust", func(h hook.Host) bool { return h.Trust != "" }, "codex gemini-cli"},
	} {
		got := Names(tt.keep)
		for _, want := range strings.Fields(tt.want) {
			if !slices.Contains(got, want) {
				t.Errorf("%s hosts: %s, which lack %s", tt.name, strings.Join(got, " "), want)
			}
		}
	}
}

// TestConfig: the union holds every host's paths once each, among them the
// files each installer writes.
func TestConfig(t *testing.T) {
	c := Config(nil, "")
	for _, list := range [][]string{c.Project, c.User} {
		seen := map[string]bool{}
		for _, p := range list {
			if seen[p] {
				t.Errorf("%s twice", p)
			}
			seen[p] = true
		}
	}
	home, ws := t.TempDir(), t.TempDir()
	// joule's own home apart: the protected set of the hosts alone.
	protected := gate.ProtectedPaths(filepath.Join(t.TempDir(), "jh"), home, []string{ws}, c)[1:]
	checked := map[string]bool{}
	for _, h := range All() {
		if h.Installer == nil {
			continue
		}
		for _, s := range []hook.Scope{{Home: home, Joule: "/bin/joule"}, {Home: home, Project: ws, Joule: "/bin/joule"}} {
			changes, err := h.Installer.Plan(s, false)
			if err != nil {
				// Some hosts install only one scope; those say why.
				continue
			}
			for _, ch := range changes {
				checked[h.Name] = true
				if !underAny(ch.Path, protected) {
					t.Errorf("%s: joule install writes %s, which the gate does not protect", h.Name, ch.Path)
				}
			}
		}
	}

	if n := len(Names(Installable)); len(checked) != n {
		t.Errorf("checked the files of %d installers, want all %d: %v", len(checked), n, checked)
	}
}

func relativeClean(p string) bool {
	return p != "" && p != "." && !filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.HasPrefix(p, "..")
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, r+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// TestDenyTableIsFresh: the thin client's deny table is what the registry's
// adapters generate now.
func TestDenyTableIsFresh(t *testing.T) {
	want, err := denytable.Generate(All())
	if err != nil {
		t.Fatal(err)
	}
	const file = "../hook/resident/deny_table.go"
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v: run %s", err, denytable.Command)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run %s", file, denytable.Command)
	}
}

func ExampleNames() {
	fmt.Println(strings.Join(Names(Contained), ", "))
	// Output: claude-code, cline, codex, gemini-cli, opencode
}
