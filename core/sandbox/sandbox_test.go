package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/joulehook/joule/core/rule"
)

func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for _, p := range paths {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			os.MkdirAll(full, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		os.WriteFile(full, nil, 0o644)
	}
	return root
}

// TestCarve pins the construction: the directories on the way to a refused
// path get only the chain rights, their other entries the full ones, the
// refused path nothing, and links are never granted.
func TestCarve(t *testing.T) {
	root := tree(t, "ws/main.go", "ws/src/", "ws/.claude/settings.json", "ws/.claude/agents/", "ws/.git/")
	os.Symlink("/etc", filepath.Join(root, "ws", "link"))
	ws := filepath.Join(root, "ws")
	l := Layer{Write: []string{ws}, WriteDeny: []string{filepath.Join(ws, ".claude", "settings.json"), filepath.Join(ws, ".mcp.json")}}
	rules, err := l.Rules()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, r := range rules {
		if within(r.Path, ws) {
			got[r.Path] |= r.Access
		}
	}
	want := map[string]uint64{
		filepath.Join(ws, "main.go"):           writeRights & fileRights,
		filepath.Join(ws, "src"):               writeRights,
		filepath.Join(ws, ".git"):              writeRights,
		filepath.Join(ws, ".claude", "agents"): writeRights,
	}
	for p, a := range want {
		if got[p] != a {
			t.Errorf("%s: access %#x, want %#x", p, got[p], a)
		}
	}
	for _, p := range []string{ws, filepath.Join(ws, ".claude"), filepath.Join(ws, ".claude", "settings.json"), filepath.Join(ws, "link")} {
		if a, ok := got[p]; ok {
			t.Errorf("%s is granted %#x; it must get no write rule", p, a)
		}
	}
}

// TestBuildDenies: Read and Write deny rules, globs expanded over the files
// that exist, the home's credential stores refused unless a Read allow rule
// names something in one.
func TestBuildDenies(t *testing.T) {
	root := tree(t, "ws/.env", "ws/a/.env", "ws/a/b.key", "ws/main.go", "home/.ssh/id_rsa", "home/.aws/credentials")
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	set, err := rule.ParseSet([]string{"Read", "Write", "Read(~/.aws/**)"}, []string{"Write(a/*.key)"}, []string{"Read(**/.env)", "Write(main.go)"})
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Build(Inputs{Sets: []rule.Set{set}, Roots: []string{ws}, Home: home, Private: []string{filepath.Join(home, "jh")}})
	if err != nil {
		t.Fatal(err)
	}
	l := spec.Layers[0]
	for _, p := range []string{filepath.Join(ws, ".env"), filepath.Join(ws, "a", ".env"), filepath.Join(home, ".ssh"), filepath.Join(home, "jh")} {
		if !slices.Contains(l.ReadDeny, p) {
			t.Errorf("%s is not refused for reading: %v", p, l.ReadDeny)
		}
	}
	if slices.Contains(l.ReadDeny, filepath.Join(home, ".aws")) {
		t.Errorf("~/.aws is refused although Read(~/.aws/**) allows it")
	}
	for _, p := range []string{filepath.Join(ws, "a", "b.key"), filepath.Join(ws, "main.go")} {
		if !slices.Contains(l.WriteDeny, p) {
			t.Errorf("%s is not refused for writing: %v", p, l.WriteDeny)
		}
	}
	if !slices.Contains(l.Write, ws) {
		t.Errorf("the workspace is not writable: %v", l.Write)
	}
	if _, err := Build(Inputs{Sets: []rule.Set{set}}); err == nil {
		t.Error("a grant without a workspace root must not build")
	}
}

// BenchmarkRules times building one layer's rules for a workspace with
// hook configurations to carve, $JOULE_HOME in the home and the tool trees,
// on this machine's real file system: the part of joule exec's start that
// is the confinement itself (the syscalls to load them are not included).
func BenchmarkRules(b *testing.B) {
	root, _ := filepath.EvalSymlinks(b.TempDir())
	home := filepath.Join(root, "home")
	ws := filepath.Join(home, "ws")
	for _, d := range []string{filepath.Join(home, ".local", "share", "joule"), filepath.Join(ws, ".claude"), filepath.Join(ws, "src"), filepath.Join(home, ".cache")} {
		os.MkdirAll(d, 0o755)
	}
	set, _ := rule.ParseSet([]string{"Read", "Write"}, nil, nil)
	jh := filepath.Join(home, ".local", "share", "joule")
	temp, caches := ToolTrees(home, func(string) string { return "" })
	in := Inputs{Sets: []rule.Set{set}, Roots: []string{ws}, Home: home, Private: []string{jh},
		Protected: append([]string{jh}, filepath.Join(ws, ".claude", "settings.json"), filepath.Join(ws, ".mcp.json")),
		Extra:     temp, Caches: caches}
	n := 0
	for i := 0; i < b.N; i++ {
		spec, err := Build(in)
		if err != nil {
			b.Fatal(err)
		}
		rules, err := spec.Layers[0].Rules()
		if err != nil {
			b.Fatal(err)
		}
		n = len(rules)
	}
	b.ReportMetric(float64(n), "rules")
}
