package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestPrepareLayers: a session's layer is made 0700 below $JOULE_HOME's
// layers, one upper and work pair per cache; while a command holds it the
// next one of the session gets the next slot; an absent layer directory or
// one that others can read is refused.
func TestPrepareLayers(t *testing.T) {
	jh := filepath.Join(t.TempDir(), "joule")
	dir := LayerDir(jh, "session-1")
	caches := []string{"/c/one", "/c/two"}
	now := time.Now()
	ovs, fd, _, err := prepareLayers(dir, caches, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(ovs) != 2 || ovs[0].Path != "/c/one" || filepath.Dir(filepath.Dir(ovs[0].Upper)) != dir || ovs[0].Upper == ovs[1].Upper {
		t.Fatalf("overlays %+v", ovs)
	}
	for _, o := range ovs {
		for _, d := range []string{o.Upper, o.Work} {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v", d, fi.Mode(), err)
			}
		}
	}
	// Held: the next command of the session gets slot 1, and the one after
	// that slot 1 again once it is released.
	ovs2, fd2, _, err := prepareLayers(dir, caches, now)
	if err != nil || filepath.Dir(filepath.Dir(ovs2[0].Upper)) != dir+".1" {
		t.Fatalf("second command: %+v %v", ovs2, err)
	}
	syscall.Close(fd2)
	ovs3, fd3, _, err := prepareLayers(dir, caches, now)
	if err != nil || filepath.Dir(filepath.Dir(ovs3[0].Upper)) != dir+".1" {
		t.Fatalf("third command: %+v %v", ovs3, err)
	}
	syscall.Close(fd3)
	syscall.Close(fd)
	// Written in another boot, the layer is set aside and starts empty;
	// the collection removes what was set aside.
	os.WriteFile(filepath.Join(ovs[0].Upper, "entry"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, ".boot"), []byte("another boot"), 0o600)
	ovs4, fd4, _, err := prepareLayers(dir, caches, now)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd4)
	if _, err := os.Stat(filepath.Join(ovs4[0].Upper, "entry")); err == nil {
		t.Error("a layer of another boot was kept")
	}
	old, _ := filepath.Glob(filepath.Join(filepath.Dir(ovs4[0].Upper), "old.*"))
	if len(old) != 1 {
		t.Fatalf("set aside: %v", old)
	}
	gcLayers(filepath.Dir(dir), now.Add(2*layerGCEach))
	if _, err := os.Stat(old[0]); err == nil {
		t.Error("the collection left a layer of another boot")
	}
	if _, _, _, err := prepareLayers("", caches, now); err == nil {
		t.Error("no layer directory: no error")
	}
	os.Chmod(dir, 0o755)
	if _, _, _, err := prepareLayers(dir, caches, now); err == nil {
		t.Error("a layer others can read: no error")
	}
	os.Chmod(dir, 0o700)
	if _, ok := (Overlay{Path: "/a,b", Upper: "/u", Work: "/w"}).options(); ok {
		t.Error("a comma in a path: accepted in the overlay's options")
	}
	if o, ok := (Overlay{Path: "/a", Upper: "/u", Work: "/w"}).options(); !ok || o != "lowerdir=/a,upperdir=/u,workdir=/w,userxattr,volatile" {
		t.Errorf("options %q", o)
	}
}

// TestGCLayers: at most once an hour, layers unused for a day, and all but
// the layerKeep most recent, are removed, unless a command holds one;
// overlayfs's mode-000 work directories are no obstacle.
func TestGCLayers(t *testing.T) {
	root := filepath.Join(t.TempDir(), "layers")
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Join(p, "c", "work", "work"), 0o700)
		os.Chmod(filepath.Join(p, "c", "work", "work"), 0)
		os.Chtimes(p, now.Add(-age), now.Add(-age))
		return p
	}
	old := mk("old", 48*time.Hour)
	held := mk("held", 48*time.Hour)
	fresh := mk("fresh", time.Minute)
	var many []string
	for i := 0; i < layerKeep+2; i++ {
		many = append(many, mk("m"+itoa(i), time.Duration(i+2)*time.Minute))
	}
	fd, err := openLayer(held)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(fd, syscall.LOCK_EX)
	gcLayers(root, now)
	syscall.Close(fd)
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	if exists(old) {
		t.Error("a layer unused for two days was kept")
	}
	if !exists(held) {
		t.Error("a layer a command holds was removed")
	}
	if !exists(fresh) {
		t.Error("the most recent layer was removed")
	}
	var kept []string
	for _, p := range many {
		if exists(p) {
			kept = append(kept, filepath.Base(p))
		}
	}
	if len(kept) != layerKeep-1 || slices.Contains(kept, "m"+itoa(layerKeep+1)) {
		t.Errorf("kept %v of the recent ones, want the %d most recent besides fresh", kept, layerKeep-1)
	}
	// Within the hour nothing more is removed.
	again := mk("again", 48*time.Hour)
	gcLayers(root, now.Add(time.Minute))
	if !exists(again) {
		t.Error("a second collection ran within the hour")
	}
	gcLayers(root, now.Add(2*time.Hour))
	if exists(again) {
		t.Error("the collection an hour later did not remove an old layer")
	}
}

// TestPlanOverlays: a cache is not a writable tree of its own; the overlay
// over it gets the writable rule, other trees their own, and the
// background rights are withheld everywhere.
func TestPlanOverlays(t *testing.T) {
	root := tree(t, "ws/", "tmp/", "home/.cache/go-build/", "jh/")
	ws, tmp, cache := filepath.Join(root, "ws"), filepath.Join(root, "tmp"), filepath.Join(root, "home", ".cache")
	spec := Spec{Layers: []Layer{{Write: []string{ws, tmp, cache, filepath.Join(cache, "go-build")}}}, Caches: []string{cache}}
	spec.overlays = []Overlay{{Path: cache, Upper: filepath.Join(root, "jh", "u"), Work: filepath.Join(root, "jh", "w")}}
	for _, background := range []bool{false, true} {
		spec.Background = background
		plan, err := spec.Plan()
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(plan.Writable, cache) || slices.Contains(plan.Writable, filepath.Join(cache, "go-build")) || !slices.Contains(plan.Writable, ws) {
			t.Errorf("writable %v", plan.Writable)
		}
		if len(plan.Overlays) != 1 {
			t.Errorf("overlays %v", plan.Overlays)
		}
		want := uint64(writeRights)
		if background {
			want &^= fsMakeSym | fsRemoveDir
		}
		got := map[string]uint64{}
		for _, r := range plan.Rules[0] {
			got[r.Path] = r.Access
		}
		for _, p := range []string{ws, tmp, cache} {
			if got[p] != want {
				t.Errorf("background=%v: %s access %#x, want %#x", background, p, got[p], want)
			}
		}
	}
}
