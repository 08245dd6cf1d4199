//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCgroupMadeAndRemoved: where a control group can be made, makeCgroup
// makes one per hierarchy with the bounds written, and remove takes it
// away; one of a joule-exec that is gone is removed by the next, one of a
// live process is not.
func TestCgroupMadeAndRemoved(t *testing.T) {
	hs := cgroupHiers()
	if len(hs) == 0 {
		t.Skip("no control group this process may make")
	}
	// A stale group: a pid that cannot exist. A live one: this process's parent.
	stale := filepath.Join(hs[0].base, "c2147483646")
	live := filepath.Join(hs[0].base, "c"+itoa(os.Getppid()))
	os.MkdirAll(stale, 0o755)
	os.Mkdir(live, 0o755)
	defer syscall.Rmdir(live)
	cg, err := makeCgroup(Limits{Procs: 40, Memory: 300 << 20})
	if err != nil || cg == nil {
		t.Fatalf("makeCgroup: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale group %s is still there (%v)", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's group %s was removed: %v", live, err)
	}
	if len(cg.dirs) != len(hs) || len(cg.enter) != len(hs) || len(cg.leave) != len(hs) {
		t.Fatalf("made %v for %d hierarchies", cg.dirs, len(hs))
	}
	for i, h := range hs {
		if h.v2 || h.controllers[0] == "pids" {
			if b, _ := os.ReadFile(filepath.Join(cg.dirs[i], "pids.max")); string(b) != "41\n" {
				t.Errorf("%s: pids.max %q, want 41", cg.dirs[i], b)
			}
		}
		mem := "memory.max"
		if !h.v2 {
			mem = "memory.limit_in_bytes"
		}
		if h.v2 || h.controllers[0] == "memory" {
			if b, _ := os.ReadFile(filepath.Join(cg.dirs[i], mem)); string(b) != itoa(300<<20)+"\n" {
				t.Errorf("%s: %s %q", cg.dirs[i], mem, b)
			}
		}
	}
	cg.remove()
	for _, d := range cg.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there after remove (%v)", d, err)
		}
	}
}

// BenchmarkCgroup times making and removing a command's groups: what
// the bound costs each command.
func BenchmarkCgroup(b *testing.B) {
	if len(cgroupHiers()) == 0 {
		b.Skip("no control group this process may make")
	}
	l := DefaultLimits()
	for i := 0; i < b.N; i++ {
		cg, err := makeCgroup(l)
		if err != nil {
			b.Fatal(err)
		}
		cg.remove()
	}
}
