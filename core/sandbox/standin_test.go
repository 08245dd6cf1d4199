//go:build linux

package sandbox

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestWantStandIns pins where stand-ins are made: at the first missing
// name of each absent protected or denied path whose deepest existing
// directory is a writable root (or, for a deny rule, anywhere in a
// writable tree), at a node that is not a directory on the way (a file
// named .cursor where .cursor/hooks.json would be) and at a protected name
// that is a socket node (a stand-in a killed command left); not at an
// existing protected file or directory (.env, .gemini/), not where a frozen
// path's directory below the root is made read-only instead, not outside
// the writable trees, not in a cache's layer, and not for a workspace
// nested in the temp dir's tree any differently from one elsewhere.
func TestWantStandIns(t *testing.T) {
	root := tree(t, "tmp/ws/src/", "tmp/ws/.claude/", "tmp/ws/.gemini/", "tmp/ws/.env", "tmp/ws/.cursor", "home/.cache/", "out/")
	tmp, home := filepath.Join(root, "tmp"), filepath.Join(root, "home")
	ws := filepath.Join(tmp, "ws")
	j := filepath.Join
	if err := syscall.Mknod(j(ws, "opencode.jsonc"), syscall.S_IFSOCK|0o644, 0); err != nil {
		t.Fatal(err)
	}
	frozen := []string{j(ws, ".mcp.json"), j(ws, ".claude", "settings.json"), j(ws, ".vscode", "mcp.json"), j(ws, ".gemini"),
		j(ws, ".env"), j(ws, "opencode.json"), j(ws, "opencode.jsonc"), j(ws, ".cursor", "hooks.json"), j(home, ".cache", "x", "y"), j(root, "out", "z")}
	deny := []string{j(ws, "src", "gen", "x.go"), j(ws, "dist")}
	spec := Spec{Layers: []Layer{{Write: []string{ws, tmp, j(home, ".cache")}, WriteDeny: append(slices.Clone(frozen), deny...), Frozen: frozen}},
		Caches: []string{j(home, ".cache")}}
	got, dirs := spec.wantStandIns()
	want := compact([]string{j(ws, ".mcp.json"), j(ws, ".vscode"), j(ws, ".cursor"), j(ws, "opencode.json"), j(ws, "opencode.jsonc"),
		j(ws, "src", "gen"), j(ws, "dist")})
	if !slices.Equal(got, want) {
		t.Errorf("stand-ins\n got %v\nwant %v", got, want)
	}
	// Directories where a protected path goes on below the name.
	if wantDirs := map[string]bool{j(ws, ".vscode"): true, j(ws, ".cursor"): true, j(ws, "src", "gen"): true}; !maps.Equal(dirs, wantDirs) {
		t.Errorf("directory stand-ins\n got %v\nwant %v", dirs, wantDirs)
	}
}

// TestPlanStandIns: with stand-ins held, each is bound read-only and
// pinned on the way, and Landlock carves nothing: the workspace root is a
// writable tree as a whole, also where the workspace lies inside the temp
// dir (which is not made read-only around it). Without them the root is
// carved, as before.
func TestPlanStandIns(t *testing.T) {
	root := tree(t, "tmp/ws/main.go", "tmp/ws/.claude/settings.json", "tmp/ws/.mcp.json/", "tmp/ws/.gemini/")
	tmp := filepath.Join(root, "tmp")
	ws := filepath.Join(tmp, "ws")
	j := filepath.Join
	frozen := []string{j(ws, ".mcp.json"), j(ws, ".claude", "settings.json"), j(ws, ".claude", "settings.local.json"), j(ws, ".gemini", "settings.json")}
	spec := Spec{Layers: []Layer{{Write: []string{ws, tmp}, WriteDeny: frozen, Frozen: frozen}}}
	spec.standIns = map[string]bool{j(ws, ".mcp.json"): true, j(ws, ".gemini"): true}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	mounts := map[string]MountKind{}
	for _, m := range plan.Mounts {
		mounts[m.Path] = m.Kind
	}
	for _, p := range []string{j(ws, ".mcp.json"), j(ws, ".gemini"), j(ws, ".claude")} {
		if k, ok := mounts[p]; !ok || k != MountReadOnly {
			t.Errorf("%s: mount %v (present %v), want read-only", p, k, ok)
		}
	}
	if k, ok := mounts[ws]; ok && k != MountPin {
		t.Errorf("the workspace inside the temp dir is mounted %v: it must stay writable", k)
	}
	got := map[string]uint64{}
	for _, r := range plan.Rules[0] {
		got[r.Path] |= r.Access
	}
	if got[ws] != writeRights || got[tmp] != writeRights || len(got) > 2+len(devFiles)+1 {
		t.Errorf("rules %v: want the workspace and the temp dir writable as wholes, no carve", plan.Rules[0])
	}

	spec.standIns = nil
	os.Remove(j(ws, ".mcp.json"))
	spec.stats = nil
	plan, err = spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	got = map[string]uint64{}
	for _, r := range plan.Rules[0] {
		got[r.Path] |= r.Access
	}
	if _, ok := got[ws]; ok || got[j(ws, "main.go")] == 0 {
		t.Errorf("without a stand-in for .mcp.json the root must be carved: %v", plan.Rules[0])
	}
	for _, m := range plan.Mounts {
		if m.Path == ws && m.Kind != MountPin {
			t.Errorf("the workspace inside the temp dir is mounted %v: it must stay writable (carved)", m.Kind)
		}
	}
}

// TestStandIns runs the bookkeeping: stand-ins are made (socket nodes)
// and recorded; a second command that starts meanwhile finds
// them; the first to end leaves them to the second; the last removes
// them. A user's own empty directory is never removed, nor what somebody
// put in a stand-in's place during the run; a killed command's stand-ins
// are removed by the next command that holds them.
func TestStandIns(t *testing.T) {
	root := tree(t, "ws/", "ws/.vscode/", "state/")
	ws, state := filepath.Join(root, "ws"), filepath.Join(root, "state", ".standins")
	j := filepath.Join
	want := []string{j(ws, ".mcp.json"), j(ws, ".gemini"), j(ws, ".vscode"), j(ws, ".claude")}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	st := stats{}
	held, a := takeStandIns(state, want, nil, st)
	for _, p := range want {
		if !held[p] || !exists(p) {
			t.Fatalf("%s: held %v, exists %v", p, held[p], exists(p))
		}
	}
	held2, b := takeStandIns(state, want, nil, stats{})
	if len(held2) != len(want) {
		t.Fatalf("the second command holds %v", held2)
	}
	for _, p := range []string{j(ws, ".mcp.json"), j(ws, ".gemini"), j(ws, ".claude")} {
		if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() != os.ModeSocket {
			t.Errorf("%s: %v, want a socket node", p, fi.Mode())
		}
	}
	// Somebody outside replaces one during the run with their own: it is
	// theirs now, even if its inode number is the stand-in's again.
	os.Remove(j(ws, ".claude"))
	os.Mkdir(j(ws, ".claude"), 0o755)
	os.WriteFile(j(ws, ".claude", "settings.json"), []byte("{}"), 0o644)
	a.release(st)
	for _, p := range want {
		if !exists(p) {
			t.Errorf("%s was removed while another command held it", p)
		}
	}
	b.release(stats{})
	for _, p := range []string{j(ws, ".mcp.json"), j(ws, ".gemini")} {
		if exists(p) {
			t.Errorf("%s was left after the last command", p)
		}
	}
	for _, p := range []string{j(ws, ".vscode"), j(ws, ".claude", "settings.json")} {
		if !exists(p) {
			t.Errorf("%s was removed: it is not joule's", p)
		}
	}

	// A killed command leaves its stand-ins, recorded (the kernel closes
	// its descriptors, and so drops its lock); the next command that holds
	// them removes them when it ends.
	_, killed := takeStandIns(state, want[:2], nil, stats{})
	for _, g := range killed.groups {
		syscall.Close(g.users)
	}
	if !exists(j(ws, ".mcp.json")) {
		t.Fatal("no stand-in")
	}
	held3, c := takeStandIns(state, want[:2], nil, stats{})
	if !held3[j(ws, ".mcp.json")] {
		t.Fatalf("the leftover is not used: %v", held3)
	}
	c.release(stats{})
	if exists(j(ws, ".mcp.json")) || exists(j(ws, ".gemini")) {
		t.Error("a killed command's stand-ins were left after the next command")
	}
	if !exists(j(ws, ".vscode")) {
		t.Error("the user's own .vscode was removed")
	}
}
