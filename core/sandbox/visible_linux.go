//go:build linux

package sandbox

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The visibility check after the command (visible.go says what it
// undoes). It runs in the sweep, once every process of the command has
// ended: the index and the replace refs first, then the walk, which notes
// the .gitignore files the command wrote or moved, then those.

func fileIDOf(p string) fileID {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return fileID{}
	}
	return fileID{exists: true, ino: st.Ino, size: uint64(st.Size), ctimeS: st.Ctim.Sec, ctimeNs: st.Ctim.Nsec}
}

// freshMargin is how long before the command started a change time still
// counts as the command's: the kernel's clock for file times is coarser
// than time.Now.
const freshMargin = 100 * time.Millisecond

// ignoreCand is a .gitignore the walk found that the command may have
// written: its own change time is after the start (self), or it lies below
// a directory whose is (anc, the innermost: one moved into place).
type ignoreCand struct {
	path string
	self bool
	anc  string
}

// fresh reports whether a change time is the command's.
func (s *sweeper) fresh(st *unix.Stat_t) bool {
	return !s.since.IsZero() && !time.Unix(st.Ctim.Sec, st.Ctim.Nsec).Before(s.since)
}

// viewRepo is the report's entry for the work tree of v.
func (s *sweeper) viewRepo(v *gitView) *sweptRepo {
	s.repos++
	return &sweptRepo{n: s.repos, gitdir: v.wt}
}

// fixViews undoes in every repository noted before the run what the
// command set in its index and replace refs.
func (s *sweeper) fixViews() {
	for i := range s.views {
		v := &s.views[i]
		r := s.viewRepo(v)
		g := currentGitdir(v)
		if fd, err := unix.Open(g, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			if !v.lock {
				var st unix.Stat_t
				if unix.Fstatat(fd, "index.lock", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					s.move(r, fd, "index.lock", "index.lock")
				}
			}
			s.fixIndexOf(r, v, fd, g)
			unix.Close(fd)
		}
		s.fixReplace(r, v)
		s.fixObjects(r, v)
		if len(r.what) > 0 {
			r.qdir = s.qdir
			s.hid = append(s.hid, *r)
		}
	}
}

// currentGitdir is the git directory of v's work tree now: the command may
// have put a .git file or link in place of the directory.
func currentGitdir(v *gitView) string {
	if filepath.Base(v.gitdir) != ".git" || filepath.Dir(v.gitdir) != v.wt {
		return v.gitdir
	}
	p := filepath.Join(v.wt, ".git")
	t, err := filepath.EvalSymlinks(p)
	if err != nil {
		return v.gitdir
	}
	if fi, err := os.Stat(t); err == nil && !fi.IsDir() {
		if b, ok := readSmall(t, maxGitFile); ok {
			if gd, ok := gitfileTarget(b, t); ok {
				return gd
			}
		}
	}
	return t
}

// fixIndexOf compares the index of git directory fd (path g) with v's.
func (s *sweeper) fixIndexOf(r *sweptRepo, v *gitView, fd int, g string) {
	if !v.indexRead || g == v.gitdir && fileIDOf(filepath.Join(g, "index")) == v.indexID {
		return
	}
	b, typ, ok := readAtMax(fd, "index", maxIndex)
	var f fixedIndex
	switch {
	case typ == 0:
		return // none: git shows every file as untracked
	case typ != unix.S_IFREG:
		s.move(r, fd, "index", "index")
		f = restoreIndex(v.index)
	case !ok:
		f = restoreIndex(v.index)
	default:
		f = fixIndex(v.index, b, v.hashLen)
	}
	if f.out == nil && !f.restore {
		return
	}
	r.what = append(r.what, f.what...)
	if s.dry {
		return
	}
	if f.restore && ok && len(b) <= maxQuarantined {
		s.keep(r, "index", b)
	}
	if f.out == nil {
		unix.Unlinkat(fd, "index", 0)
		return
	}
	// Written as git writes it: to index.lock, then renamed into place.
	// Where the person's git holds the lock now, to a name of its own.
	tmp := "index.lock"
	w, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		tmp = ".index.joule-visible"
		unix.Unlinkat(fd, tmp, 0)
		w, err = unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	}
	if err == nil {
		_, err = unix.Write(w, f.out)
		unix.Close(w)
		if err == nil {
			err = unix.Renameat(fd, tmp, fd, "index")
		}
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		r.what = append(r.what, "index: could not be rewritten ("+err.Error()+")")
	}
}

// fixReplace moves out the replace refs the command made or changed.
func (s *sweeper) fixReplace(r *sweptRepo, v *gitView) {
	for name, content := range looseReplace(v.common) {
		if was, ok := v.replace[name]; ok && was == content {
			continue
		}
		p := filepath.Join(v.common, name)
		fd, err := unix.Open(filepath.Dir(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		s.move(r, fd, filepath.Base(p), name)
		unix.Close(fd)
	}
	fd, err := unix.Open(v.common, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	b, _, ok := readAtMax(fd, "packed-refs", maxIndex)
	if !ok {
		return
	}
	drop := map[string]bool{}
	var names []string
	for name, lines := range packedReplace(b) {
		if v.packed[name] != lines {
			drop[lines] = true
			names = append(names, name)
		}
	}
	if len(drop) == 0 {
		return
	}
	sort.Strings(names)
	r.what = append(r.what, "packed-refs ("+strings.Join(names, ", ")+")")
	if s.dry {
		return
	}
	s.keep(r, "packed-refs", b)
	tmp := ".packed-refs.joule-visible"
	unix.Unlinkat(fd, tmp, 0)
	w, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err == nil {
		_, err = unix.Write(w, withoutLines(b, drop))
		unix.Close(w)
		if err == nil {
			err = unix.Renameat(fd, tmp, fd, "packed-refs")
		}
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		r.what = append(r.what, "packed-refs: could not be rewritten ("+err.Error()+")")
	}
}

// noteIgnore is the walk's: directory fd (path p, anc its innermost fresh
// ancestor or itself) holds a .gitignore.
func (s *sweeper) noteIgnore(fd int, p, anc string) {
	var st unix.Stat_t
	if unix.Fstatat(fd, ".gitignore", &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return
	}
	if self := s.fresh(&st); self || anc != "" {
		s.ignores = append(s.ignores, ignoreCand{path: p + "/.gitignore", self: self, anc: anc})
	}
}

// fixIgnores moves out each .gitignore the command wrote or moved into
// place that the person's git status does not show and that decides that
// some path is ignored. Git itself says both: git status and git
// check-ignore, run unconfined (every process of the command has ended)
// with the repository's configuration, which was read-only during the run.
func (s *sweeper) fixIgnores() {
	if len(s.ignores) == 0 {
		return
	}
	byView := map[int][]ignoreCand{}
	for _, c := range s.ignores {
		best := -1
		for i, v := range s.views {
			if within(c.path, v.wt) && (best < 0 || len(v.wt) > len(s.views[best].wt)) {
				best = i
			}
		}
		if best >= 0 {
			byView[best] = append(byView[best], c)
		}
	}
	for i, cands := range byView {
		v := &s.views[i]
		g := currentGitdir(v)
		b, _ := readSmall(filepath.Join(g, "index"), maxIndex)
		tracked := indexView(b, v.hashLen)
		dirs := map[string]bool{"": true}
		for p := range tracked {
			for d := filepath.Dir(p); d != "." && !dirs[d]; d = filepath.Dir(d) {
				dirs[d] = true
			}
		}
		var check []string
		for _, c := range cands {
			rel, _ := filepath.Rel(v.wt, c.path)
			if _, ok := tracked[rel]; ok {
				continue // tracked: git status shows a change to it
			}
			if !c.self {
				a, _ := filepath.Rel(v.wt, c.anc)
				if a == "." {
					a = ""
				}
				if dirs[a] {
					continue // its directory holds tracked files: not moved into place
				}
			}
			check = append(check, rel)
		}
		if len(check) > 0 {
			s.checkIgnores(v, check)
		}
	}
}

// maxIgnoreRounds bounds the rounds of checkIgnores: moving out one
// .gitignore can show another that it hid.
const maxIgnoreRounds = 4

func (s *sweeper) checkIgnores(v *gitView, cands []string) {
	r := s.viewRepo(v)
	defer func() {
		if len(r.what) > 0 {
			r.qdir = s.qdir
			s.hid = append(s.hid, *r)
		}
	}()
	var spec []string
	for _, c := range cands {
		spec = append(spec, filepath.Dir(c))
	}
	spec = compactRel(spec)
	gone := map[string]bool{}
	for round := 0; round < maxIgnoreRounds; round++ {
		out, err := s.git(v.wt, nil, append([]string{"status", "--porcelain", "-z", "--ignored=matching", "--untracked-files=all", "--"}, spec...)...)
		if err != nil {
			r.what = append(r.what, "could not check the .gitignore files it wrote: git status: "+err.Error())
			return
		}
		shown := map[string]bool{}
		var ignored []byte
		for _, e := range bytes.Split(out, []byte{0}) {
			if len(e) < 4 {
				continue
			}
			switch string(e[:3]) {
			case "?? ":
				shown[string(e[3:])] = true
			case "!! ":
				ignored = append(append(ignored, e[3:]...), 0)
			}
		}
		if len(ignored) == 0 {
			return
		}
		out, err = s.git(v.wt, ignored, "check-ignore", "-v", "-z", "--stdin")
		if err != nil {
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				r.what = append(r.what, "could not check the .gitignore files it wrote: git check-ignore: "+err.Error())
				return
			}
		}
		// source NUL line NUL pattern NUL path NUL
		decides := map[string]bool{}
		f := bytes.Split(out, []byte{0})
		for k := 0; k+3 < len(f); k += 4 {
			decides[string(f[k])] = true
		}
		moved := false
		for _, c := range cands {
			if gone[c] || shown[c] || !decides[c] {
				continue
			}
			p := filepath.Join(v.wt, c)
			fd, err := unix.Open(filepath.Dir(p), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue
			}
			s.move(r, fd, ".gitignore", c)
			unix.Close(fd)
			gone[c], moved = true, true
		}
		if !moved || s.dry {
			return
		}
	}
}

// compactRel drops the relative directories inside another of ps.
func compactRel(ps []string) []string {
	sort.Strings(ps)
	var out []string
	for _, p := range ps {
		if p == "." {
			return []string{"."}
		}
		if len(out) > 0 && within("/"+p, "/"+out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// gitTimeout bounds each git the check runs.
const gitTimeout = 10 * time.Second

// git runs git in work tree wt with the person's configuration (the home
// and where git finds its global configuration) and nothing of the
// command's: no optional locks (it writes no index), no fsmonitor, no
// untracked cache, pathspecs taken literally.
func (s *sweeper) git(wt string, stdin []byte, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	pre := []string{"-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false"}
	if args[0] != "check-ignore" { // which refuses pathspec magic
		pre = append(pre, "--literal-pathspecs")
	}
	cmd := exec.CommandContext(ctx, bin, append(pre, args...)...)
	cmd.Dir = wt
	env := []string{"GIT_OPTIONAL_LOCKS=0", "LC_ALL=C"}
	for _, k := range []string{"HOME", "PATH", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"} {
		if v := s.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	cmd.Env = env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.Output()
}

// fixObjects moves out the objects the command wrote, or rewrote in
// place, that are not what their names say, and an alternates file it
// wrote. What it wrote is what has a change time at or after the start,
// which the command cannot set back: a loose object (created, moved into
// place, or chmod-ed and rewritten in its place, which leaves its
// directory as it was) whose content does not hash to its name; a pack
// or pack index that git's own verify-pack does not find consistent (a
// pack's objects are named by hashing them as it indexes them, so a
// forged object shows as a mismatch with the index), with the files of
// its pack; a multi-pack-index or commit-graph, which name objects by
// offset and tree without being checked on reading (git works without
// them and writes them again) that git's own verification refuses.
func (s *sweeper) fixObjects(r *sweptRepo, v *gitView) {
	objects := filepath.Join(v.common, "objects")
	ofd, err := unix.Open(objects, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(ofd)
	if fileIDOf(filepath.Join(objects, "info", "alternates")) != v.alternates {
		if ifd, err := unix.Openat(ofd, "info", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
			s.move(r, ifd, "alternates", "objects/info/alternates")
			unix.Close(ifd)
		}
	}
	var bad []string
	for _, e := range listFD(ofd, "") {
		if len(e.name) != 2 || !e.dir || e.link || !isHex(e.name) {
			continue
		}
		var st unix.Stat_t
		dfd, err := unix.Openat(ofd, e.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		// Every object's own change time: one rewritten in place leaves
		// its directory's as it was.
		for _, o := range listFD(dfd, "") {
			if len(o.name) != 2*v.hashLen-2 || !isHex(o.name) {
				continue
			}
			if unix.Fstatat(dfd, o.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || !s.fresh(&st) {
				continue
			}
			if st.Mode&unix.S_IFMT == unix.S_IFREG && looseObjectOK(dfd, o.name, e.name+o.name, v.hashLen) {
				continue
			}
			bad = append(bad, e.name+o.name)
			s.move(r, dfd, o.name, "objects/"+e.name+"/"+o.name)
		}
		unix.Close(dfd)
	}
	if len(bad) > 0 {
		r.what = append(r.what, "loose objects whose content is not their name: "+listSome(bad))
	}
	s.fixPacks(r, v, ofd)
}

// packVerifyTimeout bounds git verify-pack on one pack the command wrote
// (git gc inside it writes one of every object); a pack it cannot verify
// in time is taken out as one that failed.
const packVerifyTimeout = 2 * time.Minute

// fixPacks is fixObjects for objects/pack and objects/info: see there.
func (s *sweeper) fixPacks(r *sweptRepo, v *gitView, ofd int) {
	if pfd, err := unix.Openat(ofd, "pack", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		packs := map[string][]string{} // base name to its files
		fresh := map[string]bool{}
		var midx []string
		for _, e := range listFD(pfd, "") {
			var st unix.Stat_t
			if unix.Fstatat(pfd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				continue
			}
			if strings.HasPrefix(e.name, "multi-pack-index") {
				if s.fresh(&st) {
					midx = append(midx, e.name)
				}
				continue
			}
			base, _, ok := strings.Cut(e.name, ".")
			if !ok || !strings.HasPrefix(base, "pack-") {
				continue
			}
			packs[base] = append(packs[base], e.name)
			if s.fresh(&st) {
				fresh[base] = true
			}
		}
		var bad []string
		for base := range fresh {
			if s.packOK(v, filepath.Join(v.common, "objects", "pack", base)) {
				continue
			}
			bad = append(bad, base)
			for _, f := range packs[base] {
				s.move(r, pfd, f, "objects/pack/"+f)
			}
		}
		if len(midx) > 0 && !s.gitVerify(v, "multi-pack-index", "--object-dir="+filepath.Join(v.common, "objects"), "verify") {
			for _, m := range midx {
				s.move(r, pfd, m, "objects/pack/"+m)
			}
			r.what = append(r.what, "a multi-pack-index that git multi-pack-index verify refuses")
		}
		unix.Close(pfd)
		sort.Strings(bad)
		if len(bad) > 0 {
			r.what = append(r.what, "packs whose objects do not match their index: "+listSome(bad))
		}
	}
	if ifd, err := unix.Openat(ofd, "info", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		var graphs []string
		for _, name := range []string{"commit-graph", "commit-graphs"} {
			var st unix.Stat_t
			if unix.Fstatat(ifd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && s.fresh(&st) {
				graphs = append(graphs, name)
			}
		}
		if len(graphs) > 0 && !s.gitVerify(v, "commit-graph", "verify", "--object-dir="+filepath.Join(v.common, "objects")) {
			for _, g := range graphs {
				s.move(r, ifd, g, "objects/info/"+g)
			}
			r.what = append(r.what, "a commit-graph that git commit-graph verify refuses")
		}
		unix.Close(ifd)
	}
}

// gitVerify runs one of git's own verifications of the object store of
// v (verify-pack, commit-graph verify, multi-pack-index verify), with
// none of the person's global configuration, and reports whether it
// passed in time.
func (s *sweeper) gitVerify(v *gitView, args ...string) bool {
	bin, err := exec.LookPath("git")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), packVerifyTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--git-dir=" + v.common}, args...)...)
	cmd.Dir = v.common
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "PATH=" + s.getenv("PATH")}
	return cmd.Run() == nil
}

// packOK reports whether the pack at base (its path without .pack or
// .idx) verifies with git verify-pack: each object it holds hashes to the
// name its index gives it at its offset.
func (s *sweeper) packOK(v *gitView, base string) bool {
	if fi, err := os.Lstat(base + ".pack"); err != nil || !fi.Mode().IsRegular() {
		// An index without its pack names nothing git can read; a pack
		// without its index is not used.
		_, err := os.Lstat(base + ".idx")
		return err != nil
	}
	if fi, err := os.Lstat(base + ".idx"); err != nil || !fi.Mode().IsRegular() {
		return err != nil
	}
	return s.gitVerify(v, "verify-pack", base+".idx")
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// looseObjectOK reports whether loose object name of directory fd
// inflates to content whose hash is want.
func looseObjectOK(fd int, name, want string, hashLen int) bool {
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	file := os.NewFile(uintptr(f), name)
	defer file.Close()
	z, err := zlib.NewReader(file)
	if err != nil {
		return false
	}
	var h hash.Hash
	if hashLen == 32 {
		h = sha256.New()
	} else {
		h = sha1.New()
	}
	if _, err := io.Copy(h, z); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == want
}
