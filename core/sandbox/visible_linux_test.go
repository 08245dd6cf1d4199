//go:build linux

package sandbox

import (
	"crypto/sha1"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// visRepo is a workspace repository for the visibility check: main.go and
// src/a.go committed, third_party/ and .venv/ ignored by the committed
// .gitignore.
type visRepo struct {
	root, home, ws string
}

func newVisRepo(t testing.TB) *visRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, _ := filepath.EvalSymlinks(t.TempDir())
	r := &visRepo{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "home", "ws")}
	os.MkdirAll(filepath.Join(r.ws, "src"), 0o755)
	os.WriteFile(filepath.Join(r.ws, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(r.ws, "src", "a.go"), []byte("package src\n"), 0o644)
	os.WriteFile(filepath.Join(r.ws, ".gitignore"), []byte("third_party/\n.venv/\n"), 0o644)
	r.sh(t, "git init -q && git add -A && git commit -qm init")
	return r
}

func (r *visRepo) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
	return append(env, "HOME="+r.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
}

func (r *visRepo) sh(t testing.TB, script string) string {
	t.Helper()
	c := exec.Command("/bin/bash", "-c", "set -e\n"+script)
	c.Dir, c.Env = r.ws, r.env()
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

func (r *visRepo) getenv(k string) string {
	for _, kv := range r.env() {
		if strings.HasPrefix(kv, k+"=") {
			return kv[len(k)+1:]
		}
	}
	return ""
}

// run runs the discovery, then cmd (as the contained command would, but
// unconfined), then, when check, the visibility check and the sweep; it
// returns the report.
func (r *visRepo) run(t testing.TB, cmd string, fn func(ws string), check bool) string {
	t.Helper()
	spec := Spec{Layers: []Layer{{Write: []string{r.ws}}}, LayerDir: filepath.Join(r.root, "layers", "s"),
		persist: persistIn{home: r.home, getenv: r.getenv, grant: []string{r.ws}}}
	spec.started = time.Now()
	spec.guards()
	if cmd != "" {
		r.sh(t, cmd)
	}
	if fn != nil {
		fn(r.ws)
	}
	if !check {
		return ""
	}
	var report strings.Builder
	spec.sweep(&report)
	return report.String()
}

// forgeStat writes into the index the stat data of the work tree's file
// p (which the command changed) on p's entry, keeping its object name: git
// then trusts the entry without hashing the file.
func forgeStat(t testing.TB, ws, p string) {
	idx := filepath.Join(ws, ".git", "index")
	b, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	// Older than the index, so that git does not take the entry for
	// racily clean and hash the file anyway.
	old := time.Now().Add(-10 * time.Second)
	os.Chtimes(filepath.Join(ws, p), old, old)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(ws, p), &st); err != nil {
		t.Fatal(err)
	}
	found := false
	indexWalk(b, 20, func(e rawEntry) {
		if string(e.path) != p {
			return
		}
		found = true
		o := b[e.off:]
		for i, v := range []uint32{uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec), uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec),
			uint32(st.Dev), uint32(st.Ino), st.Mode, st.Uid, st.Gid, uint32(st.Size)} {
			if i == 6 {
				continue // the mode is git's, not the file's
			}
			binary.BigEndian.PutUint32(o[4*i:], v)
		}
	})
	if !found {
		t.Fatalf("no entry %s", p)
	}
	b = b[:len(b)-20]
	b = append(b, sha1Sum(b)...)
	os.WriteFile(idx, b, 0o644)
}

// TestVisibility runs each way of hiding a change twice, in a fresh
// repository each: without the check the person's git status must not
// show the planted path (the attack works), with it it must.
func TestVisibility(t *testing.T) {
	const plant = "printf '\\nfunc init() { println() }\\n' >> main.go"
	tests := []struct {
		name  string
		setup string // before the discovery, more than freshMargin before the command
		cmd   string
		fn    func(ws string)
		shown string // a line git status --porcelain must show
		probe string // or: a script that prints HIDDEN where the attack worked
		says  string // the report must say it
	}{
		{name: "assume-unchanged", cmd: "git update-index --assume-unchanged main.go && " + plant, shown: " M main.go", says: "assume-unchanged or skip-worktree cleared on main.go"},
		{name: "skip-worktree", cmd: "git update-index --skip-worktree main.go && " + plant, shown: " M main.go", says: "cleared on main.go"},
		{name: "assume-unchanged index v4", setup: "git update-index --index-version 4", cmd: "git update-index --assume-unchanged main.go && " + plant, shown: " M main.go", says: "cleared"},
		{name: "skip-worktree index v3 left as v3", cmd: "git update-index --index-version 3 && git update-index --skip-worktree src/a.go && echo 'func init() {}' >> src/a.go", shown: " M src/a.go", says: "cleared on src/a.go"},
		{name: "stat data forged", cmd: plant, fn: func(ws string) { forgeStat(t, ws, "main.go") }, shown: " M main.go"},
		{name: "split index", cmd: "git update-index --split-index && git update-index --assume-unchanged main.go && " + plant, shown: " M main.go", says: "put back as it was"},
		{name: "git dir swapped for a .git file", cmd: "mv .git .g2 && echo 'gitdir: .g2' > .git && git update-index --assume-unchanged main.go && " + plant, shown: " M main.go", says: "cleared on main.go"},
		{name: "replace ref", cmd: plant + ` && git add main.go && t=$(git write-tree) && c=$(git cat-file commit HEAD | sed "s/^tree .*/tree $t/" | git hash-object -t commit -w --stdin) && git replace HEAD "$c"`, shown: "M  main.go", says: "refs/replace/"},
		{name: "replace ref packed", cmd: plant + ` && git add main.go && t=$(git write-tree) && c=$(git cat-file commit HEAD | sed "s/^tree .*/tree $t/" | git hash-object -t commit -w --stdin) && git replace HEAD "$c" && git pack-refs --all`, shown: "M  main.go", says: "packed-refs (refs/replace/"},
		{name: "self-ignoring gitignore", cmd: "echo 'package src' > src/zz.go && printf 'zz.go\\n.gitignore\\n' > src/.gitignore", shown: "?? src/zz.go", says: "src/.gitignore"},
		{name: "star gitignore in a new directory", cmd: "mkdir -p src/gen && echo '*' > src/gen/.gitignore && echo 'package gen' > src/gen/gen.go", shown: "?? src/gen/", says: "src/gen/.gitignore"},
		{name: "gitignore hidden by another", cmd: "mkdir -p src/gen && printf 'gen/\\n.gitignore\\n' > src/.gitignore && echo 'x.go' > src/gen/.gitignore && echo 'package gen' > src/gen/x.go", shown: "?? src/gen/", says: "src/.gitignore"},
		{name: "gitignore moved into place with its directory", setup: "mkdir -p third_party/evil && echo '*' > third_party/evil/.gitignore", cmd: "mv third_party/evil src/evil && echo 'package evil' > src/evil/e.go", shown: "?? src/evil/", says: "src/evil/.gitignore"},
		{name: "loose object swapped", cmd: `o=$(git rev-parse HEAD:main.go) && f=.git/objects/${o:0:2}/${o:2} && rm -f "$f" && (cat main.go; echo 'func init() { println() }') > x && git hash-object -w x >/dev/null && n=$(git hash-object x) && mv .git/objects/${n:0:2}/${n:2} "$f" && rm x`,
			probe: "git cat-file -p HEAD:main.go 2>/dev/null | grep -q 'println()' && echo HIDDEN; true", says: "loose objects whose content is not their name"},
		{name: "alternates", cmd: `d=$(mktemp -d) && git init -q --bare "$d" && o=$(git rev-parse HEAD:main.go) && (cat main.go; echo 'func init() { println() }') > x && n=$(git --git-dir="$d" hash-object -w x) && mkdir -p "$d/objects/${o:0:2}" && mv "$d/objects/${n:0:2}/${n:2}" "$d/objects/${o:0:2}/${o:2}" && rm x .git/objects/${o:0:2}/${o:2} && echo "$d/objects" > .git/objects/info/alternates`,
			probe: "git cat-file -p HEAD:main.go 2>/dev/null | grep -q 'println()' && echo HIDDEN; true", says: "objects/info/alternates"},
		{name: "loose object rewritten in place", cmd: `o=$(git rev-parse HEAD:main.go) && f=.git/objects/${o:0:2}/${o:2} && chmod u+w "$f" && (cat main.go; echo 'func init() { println() }') > x && n=$(git hash-object -w x) && cat .git/objects/${n:0:2}/${n:2} > "$f" && rm x`,
			probe: "git cat-file -p HEAD:main.go 2>/dev/null | grep -q 'println()' && echo HIDDEN; true", says: "loose objects whose content is not their name"},
		{name: "pack with a forged object shadowing a loose one", cmd: forgedPack,
			probe: "git cat-file -p HEAD:main.go 2>/dev/null | grep -q 'println()' && echo HIDDEN; true", says: "packs whose objects do not match their index"},
		{name: "pack index pointing a name at another object", cmd: tamperedIndex,
			probe: "git cat-file -p HEAD:main.go 2>/dev/null | grep -q 'println()' && echo HIDDEN; true", says: "packs whose objects do not match their index"},
		{name: "index.lock left behind", cmd: "echo x > .git/index.lock", says: "index.lock"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, check := range []bool{false, true} {
				r := newVisRepo(t)
				if tc.setup != "" {
					r.sh(t, tc.setup)
					time.Sleep(freshMargin + 20*time.Millisecond)
				}
				report := r.run(t, tc.cmd, tc.fn, check)
				status := r.sh(t, "git status --porcelain 2>&1 || true")
				lockLeft := false
				if _, err := os.Lstat(filepath.Join(r.ws, ".git", "index.lock")); err == nil {
					lockLeft = true
				}
				visible := tc.shown == "" && !lockLeft || tc.shown != "" && strings.Contains("\n"+status, "\n"+tc.shown)
				if tc.probe != "" {
					visible = !strings.Contains(r.sh(t, tc.probe), "HIDDEN")
				}
				if !check {
					if visible {
						t.Fatalf("without the check the change is visible already: not an attack\n%s", status)
					}
					continue
				}
				if !visible {
					t.Errorf("with the check, git status does not show %q:\n%s\nreport:\n%s", tc.shown, status, report)
				}
				if !strings.Contains(report, tc.says) {
					t.Errorf("the report does not say %q:\n%s", tc.says, report)
				}
			}
		})
	}
}

// forgedPack writes a pack holding a forged main.go and an index naming
// that object as the committed main.go's blob, which git reads before the
// loose object of that name.
const forgedPack = `python3 -c 'import subprocess as s, sys
x = bytes.fromhex(s.check_output(["git", "rev-parse", "HEAD:main.go"]).decode().strip())
d = open("main.go", "rb").read() + b"\nfunc init() { println() }\n"
y = s.check_output(["git", "hash-object", "-w", "--stdin"], input=d).decode().strip()
h = s.check_output(["git", "pack-objects", ".git/objects/pack/pack"], input=(y + "\n").encode()).decode().strip()
p = ".git/objects/pack/pack-" + h + ".idx"
b = bytearray(open(p, "rb").read())
for i in range(256): b[8 + 4 * i:12 + 4 * i] = (1 if i >= x[0] else 0).to_bytes(4, "big")
b[1032:1052] = x
open(p, "wb").write(b)
import os; os.remove(".git/objects/" + y[:2] + "/" + y[2:])'`

// tamperedIndex packs every object with a forged main.go, then points the
// index's offset for the committed main.go's blob at the forged one's.
const tamperedIndex = `python3 -c 'import subprocess as s, os
x = s.check_output(["git", "rev-parse", "HEAD:main.go"]).decode().strip()
d = open("main.go", "rb").read() + b"\nfunc init() { println() }\n"
y = s.check_output(["git", "hash-object", "-w", "--stdin"], input=d).decode().strip()
objs = s.check_output(["git", "rev-list", "--objects", "--all"]).decode().split("\n")
l = "".join(o.split(" ")[0] + "\n" for o in objs if o) + y + "\n"
h = s.check_output(["git", "pack-objects", ".git/objects/pack/pack"], input=l.encode()).decode().strip()
p = ".git/objects/pack/pack-" + h + ".idx"
b = bytearray(open(p, "rb").read())
n = int.from_bytes(b[8 + 4 * 255:12 + 4 * 255], "big")
names = [bytes(b[1032 + 20 * i:1052 + 20 * i]).hex() for i in range(n)]
off = 1032 + 24 * n
ix, iy = names.index(x), names.index(y)
b[off + 4 * ix:off + 4 * ix + 4] = b[off + 4 * iy:off + 4 * iy + 4]
open(p, "wb").write(b)
[os.remove(".git/objects/" + o[:2] + "/" + o[2:]) for o in (x, y)]'`

// TestVisibilityOrdinary: ordinary git work inside the command keeps its
// effect, and the check undoes and reports nothing.
func TestVisibilityOrdinary(t *testing.T) {
	tests := []struct {
		name, setup, cmd, after string
		status                  string // git status --porcelain afterwards
	}{
		{name: "add and commit", cmd: "echo 'func f() {}' >> main.go && echo 'package src' > src/b.go && git add -A && git commit -qm work",
			after: "git log -1 --format=%s | grep -qx work && git show HEAD:src/b.go | grep -q src"},
		{name: "add only", cmd: "echo 'func f() {}' >> main.go && git add main.go", status: "M  main.go"},
		{name: "new branch", cmd: "git checkout -q -b feat && echo x > src/n.txt && git add src/n.txt && git commit -qm feat",
			after: "git rev-parse --abbrev-ref HEAD | grep -qx feat && git log -1 --format=%s | grep -qx feat"},
		{name: "stash", cmd: "echo 'func f() {}' >> main.go && git stash -q", after: "git stash list | grep -q WIP"},
		{name: "checkout back and forth", cmd: "git checkout -q -b other && echo y > src/o.txt && git add -A && git commit -qm o && git checkout -q - && git checkout -q other",
			after: "test -f src/o.txt"},
		{name: "the person's own assume-unchanged bit stays", setup: "git update-index --assume-unchanged src/a.go",
			cmd: "echo 'func f() {}' >> main.go && git add main.go", status: "M  main.go", after: "git ls-files -v src/a.go | grep -q '^h '"},
		// The new .venv itself is the session's (ignored.go: moved to its
		// layer, or out where there is none, TestSweepIgnored); what
		// matters here is that the visibility check takes nothing.
		{name: "a venv's gitignore in an ignored directory", cmd: "mkdir -p .venv/bin && echo '*' > .venv/.gitignore && echo x > .venv/bin/python"},
		{name: "a tracked gitignore changed: shown", cmd: "echo 'zz.go' >> .gitignore && echo 'package main' > zz.go", status: " M .gitignore",
			after: "grep -q zz.go .gitignore"},
		{name: "a new gitignore shown itself", cmd: "echo 'gen.go' > src/.gitignore && echo 'package src' > src/gen.go", status: "?? src/.gitignore",
			after: "test -f src/.gitignore"},
		{name: "gc", cmd: "echo 'func f() {}' >> main.go && git commit -qam w && git gc -q", after: "git log -1 --format=%s | grep -qx w && test -n \"$(ls .git/objects/pack/*.pack)\""},
		{name: "repack with a multi-pack-index and a commit-graph", cmd: "echo 'func f() {}' >> main.go && git commit -qam w && git repack -adq --write-midx && git commit-graph write --reachable",
			after: "test -f .git/objects/pack/multi-pack-index && test -f .git/objects/info/commit-graph"},
		{name: "rebase", cmd: "git checkout -q -b b2 && echo q > q && git add q && git commit -qm q && git checkout -q - && echo r > r && git add r && git commit -qm r && git checkout -q b2 && git rebase -q -",
			after: "test -f q && test -f r"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newVisRepo(t)
			if tc.setup != "" {
				r.sh(t, tc.setup)
			}
			report := r.run(t, tc.cmd, nil, true)
			if strings.Contains(report, "hides a change from git status") {
				t.Errorf("the check reported on ordinary work:\n%s", report)
			}
			status := strings.TrimRight(r.sh(t, "git status --porcelain"), "\n")
			if status != tc.status {
				t.Errorf("git status: %q, want %q", status, tc.status)
			}
			if tc.after != "" {
				r.sh(t, tc.after)
			}
			r.sh(t, "git fsck --no-dangling >/dev/null")
		})
	}
}

// BenchmarkVisibility times the sweep after a command in a repository of
// 5000 tracked files in 250 directories (loose objects, as commits leave
// them before a gc), with the visibility check and without it,
// interleaved in one loop; both run the discovery before. "git-add": the
// command staged one changed file (the index is rewritten); "edit": it
// changed a file and left git alone. It reports the medians and the
// ratio with/without, wall and CPU (of the thread).
func BenchmarkVisibility(b *testing.B) {
	r := newVisRepo(b)
	r.sh(b, `for d in $(seq 1 250); do mkdir -p pkg/d$d; for f in $(seq 1 20); do echo "package d$d // $f" > pkg/d$d/f$f.go; done; done
git add -A && git commit -qm many`)
	for _, mode := range []string{"git-add", "edit"} {
		b.Run(mode, func(b *testing.B) { benchVisibility(b, r, mode == "git-add") })
	}
}

func benchVisibility(b *testing.B, r *visRepo, add bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru unix.Rusage
		unix.Getrusage(unix.RUSAGE_THREAD, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var wall, cpus [2][]time.Duration
	file := filepath.Join(r.ws, "pkg", "d1", "f1.go")
	for i := 0; i < b.N; i++ {
		for _, with := range []int{0, 1} {
			spec := Spec{Layers: []Layer{{Write: []string{r.ws}}}, persist: persistIn{home: r.home, getenv: r.getenv, grant: []string{r.ws}}}
			spec.started = time.Now()
			spec.guards()
			os.WriteFile(file, []byte("package d1 // "+itoa(i*2+with)+"\n"), 0o644)
			if add {
				r.sh(b, "git add pkg/d1/f1.go")
			}
			if with == 0 {
				spec.views = nil
			}
			t0, c0 := time.Now(), cpu()
			spec.sweep(nil)
			wall[with] = append(wall[with], time.Since(t0))
			cpus[with] = append(cpus[with], cpu()-c0)
		}
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	w0, w1, c0, c1 := median(wall[0]), median(wall[1]), median(cpus[0]), median(cpus[1])
	b.ReportMetric(float64(w0.Microseconds()), "µs-sweep-wall")
	b.ReportMetric(float64(w1.Microseconds()), "µs-sweep+visibility-wall")
	b.ReportMetric(float64(w1)/float64(w0), "with/without-wall")
	b.ReportMetric(float64(c0.Microseconds()), "µs-sweep-cpu")
	b.ReportMetric(float64(c1.Microseconds()), "µs-sweep+visibility-cpu")
	if c0 > 0 {
		b.ReportMetric(float64(c1)/float64(c0), "with/without-cpu")
	}
}

func sha1Sum(b []byte) []byte {
	s := sha1.Sum(b)
	return s[:]
}
