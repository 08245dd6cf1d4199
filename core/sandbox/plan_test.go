package sandbox

import (
	"path/filepath"
	"testing"
)

// TestPlan pins the namespace construction: refused reads are covered
// (directories by a tmpfs, files by /dev/null), existing protected paths
// bound read-only, the directories between a writable tree and either
// pinned, and Landlock carves only where an absent protected path would be
// created: its deepest existing directory and the ones on the way to it.
func TestPlan(t *testing.T) {
	root := tree(t, "ws/main.go", "ws/src/", "ws/.env", "ws/.claude/settings.json", "ws/.claude/agents/",
		"ws/.cursor/rules/", "home/.ssh/id_rsa", "home/.joule/steward.key", "home/.joule/policy/", "tmp/")
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	j := func(p ...string) string { return filepath.Join(p...) }
	spec := Spec{Layers: []Layer{{
		Write:     []string{ws, j(root, "tmp")},
		ReadDeny:  []string{j(home, ".joule"), j(home, ".joule", "policy"), j(home, ".ssh"), j(home, ".aws"), j(ws, ".env")},
		WriteDeny: []string{j(home, ".joule"), j(ws, ".claude", "settings.json"), j(ws, ".claude", "settings.local.json"), j(ws, ".mcp.json"), j(ws, ".cursor", "hooks.json"), j(ws, "src", "gen")},
	}}}
	spec.Layers[0].Frozen = spec.Layers[0].WriteDeny[:5]
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{
		{home + "/.joule", MountHideDir},
		{home + "/.ssh", MountHideDir},
		{ws + "/.claude", MountReadOnly},
		{ws + "/.cursor", MountReadOnly},
		{ws + "/.env", MountHideFile},
		{ws + "/.claude/settings.json", MountReadOnly},
	}
	if len(plan.Mounts) != len(want) {
		t.Fatalf("mounts %v, want %v", plan.Mounts, want)
	}
	for i, m := range want {
		if plan.Mounts[i] != m {
			t.Errorf("mount %d: %v, want %v", i, plan.Mounts[i], m)
		}
	}
	got := map[string]uint64{}
	for _, r := range plan.Rules[0] {
		got[r.Path] |= r.Access
	}
	// The workspace root is carved (.mcp.json is absent there), and src on
	// the way to the absent src/gen of a deny rule (the two host directories
	// are read-only mounts instead); everything else is a writable tree of
	// its own; nothing is carved for reads.
	wantRules := map[string]uint64{
		"/":              readRights,
		j(root, "tmp"):   writeRights,
		j(ws, "main.go"): writeRights & fileRights,
		j(ws, ".env"):    writeRights & fileRights,
		j(ws, ".claude"): writeRights,
		j(ws, ".cursor"): writeRights,
	}
	for p, a := range wantRules {
		if got[p] != a {
			t.Errorf("%s: access %#x, want %#x", p, got[p], a)
		}
	}
	for _, p := range []string{ws, j(ws, "src"), home, j(home, ".joule")} {
		if a, ok := got[p]; ok {
			t.Errorf("%s is granted %#x; it must get no rule of its own", p, a)
		}
	}
	if n := len(plan.Rules[0]); n > len(wantRules)+len(devFiles) {
		t.Errorf("%d rules, want at most %d: %v", n, len(wantRules)+len(devFiles), plan.Rules[0])
	}

	// With every protected path present, the workspace root is writable as
	// a whole: no carve at all.
	tree2 := tree(t, "ws/.mcp.json", "ws/.claude/settings.json")
	ws2 := j(tree2, "ws")
	deny := []string{j(ws2, ".mcp.json"), j(ws2, ".claude", "settings.json"), j(ws2, ".claude", "settings.local.json")}
	plan, err = Spec{Layers: []Layer{{Write: []string{ws2}, WriteDeny: deny, Frozen: deny}}}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]uint64{}
	for _, r := range plan.Rules[0] {
		got[r.Path] |= r.Access
	}
	if got[ws2] != writeRights {
		t.Errorf("workspace root: access %#x, want %#x (rules %v)", got[ws2], writeRights, plan.Rules[0])
	}
}
