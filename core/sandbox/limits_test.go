//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/joulehook/joule/core/rule"
	"golang.org/x/sys/unix"
)

// TestLimits: a policy's limits replace the defaults one by one, a limit
// is never raised above the caller's, RLIMIT_NPROC is set only where
// asked (a user namespace of the command's own), and RLIMIT_CPU's hard
// limit is a second above the soft one, so that SIGXCPU comes first.
func TestLimits(t *testing.T) {
	d := DefaultLimits()
	if d.Procs < 384 || d.CPU < 600 || d.FileSize == 0 || d.Data < 1<<30 {
		t.Errorf("defaults too narrow for ordinary builds: %+v", d)
	}
	m := Limits{Procs: 64, CPU: 2}.merged(d)
	if m.Procs != 64 || m.CPU != 2 || m.Data != d.Data || m.FileSize != d.FileSize {
		t.Errorf("merged %+v", m)
	}
	var cur unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_FSIZE, &cur)
	for _, tc := range []struct {
		name  string
		l     Limits
		procs bool
		want  map[int]unix.Rlimit
	}{
		{"namespace", Limits{Procs: 64, CPU: 2, Data: 1 << 30}, true, map[int]unix.Rlimit{
			unix.RLIMIT_NPROC: {Cur: 64, Max: 64}, unix.RLIMIT_CPU: {Cur: 2, Max: 3}, unix.RLIMIT_DATA: {Cur: 1 << 30, Max: 1 << 30}}},
		{"landlock alone", Limits{Procs: 64, CPU: 2}, false, map[int]unix.Rlimit{unix.RLIMIT_CPU: {Cur: 2, Max: 3}}},
		{"never raised", Limits{FileSize: ^uint64(0) - 1}, true, map[int]unix.Rlimit{
			unix.RLIMIT_FSIZE: {Cur: min(cur.Cur, ^uint64(0)-1), Max: min(cur.Max, ^uint64(0)-1)}}},
		{"none", Limits{}, true, map[int]unix.Rlimit{}},
	} {
		got := map[int]unix.Rlimit{}
		for _, r := range tc.l.rlimits(tc.procs) {
			got[r.resource] = r.value
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for res, w := range tc.want {
			if got[res] != w {
				t.Errorf("%s: resource %d: %+v, want %+v", tc.name, res, got[res], w)
			}
		}
	}
}

// TestPlanWritable: the trees bound writable again are the layers' Write
// trees that exist, each once, parents first; links and absent trees are
// left out.
func TestPlanWritable(t *testing.T) {
	root := tree(t, "ws/src/", "tmp/", "home/.cache/go-build/")
	os.Symlink(filepath.Join(root, "tmp"), filepath.Join(root, "link"))
	set, _ := rule.ParseSet([]string{"Read", "Write"}, nil, nil)
	spec, err := Build(Inputs{Sets: []rule.Set{set, set}, Roots: []string{filepath.Join(root, "ws")}, Home: filepath.Join(root, "home"),
		Extra: []string{filepath.Join(root, "tmp"), filepath.Join(root, "home", ".cache", "go-build"), filepath.Join(root, "home", ".cache"), filepath.Join(root, "home", ".npm"), filepath.Join(root, "link")}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Plan()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "ws"), filepath.Join(root, "tmp"), filepath.Join(root, "home", ".cache"), filepath.Join(root, "home", ".cache", "go-build")}
	got := slices.Clone(plan.Writable)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Writable %v, want %v", plan.Writable, want)
	}
	for i, p := range plan.Writable {
		for _, q := range plan.Writable[i+1:] {
			if within(p, q) {
				t.Errorf("%s comes before %s, which holds it", p, q)
			}
		}
	}
}

// TestKernelAtLeast: pid_max is written only where the release says Linux
// 6.14 or later; a release that cannot be read is older.
func TestKernelAtLeast(t *testing.T) {
	for _, tc := range []struct {
		release string
		want    bool
	}{
		{"6.14.0", true}, {"6.18.0-1-amd64", true}, {"6.14-rc1", true}, {"7.0.0", true}, {"6.13.12-arch1", false},
		{"5.15.0-91-generic", false}, {"6", false}, {"", false}, {"x.y", false}, {"6.x", false}, {"10.1", true},
	} {
		if got := kernelAtLeast(tc.release, 6, 14); got != tc.want {
			t.Errorf("kernelAtLeast(%q, 6, 14) = %v, want %v", tc.release, got, tc.want)
		}
	}
	if n, ok := pidMax(512); ok && n != 812 {
		t.Errorf("pidMax(512) = %d", n)
	}
	if _, ok := pidMax(0); ok {
		t.Error("pidMax(0) sets pid_max")
	}
}
