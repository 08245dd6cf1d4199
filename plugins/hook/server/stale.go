package server

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"
)

// fileID is what a file's stat says of its version.
type fileID struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64
}

func statID(p string) (fileID, error) {
	st, err := os.Stat(p)
	if err != nil {
		return fileID{}, err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	id := fileID{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys != nil {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
		id.ctime = time.Unix(sys.Ctim.Unix()).UnixNano()
	}
	return id, nil
}

// watch is the configuration a gate read at start: the files it names,
// hashed then, and their stamps as last hashed, so that a request stats
// them instead of reading and hashing them.
type watch struct {
	home  string
	files []string
	hash  [32]byte

	mu      sync.Mutex
	ids     []fileID // the stamps as last hashed
	cur     []fileID // the stamps as a request found them (reused)
	trusted bool
}

func newWatch(home string, files []string) *watch {
	return &watch{home: home, files: files, hash: hashFiles(home, files),
		ids: make([]fileID, len(files)), cur: make([]fileID, len(files))}
}

// hashFiles digests files in home, a missing or unreadable one as such.
func hashFiles(home string, files []string) [32]byte {
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(home, f))
		fmt.Fprintf(h, "%s %d %v\n", f, len(b), err != nil)
		h.Write(b)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// racy is the margin within which a file's timestamps cannot tell two
// versions apart: the kernel stamps files with a coarse clock (a tick, a
// few milliseconds), so a file written again within it can keep its
// stamps. Its stamps are trusted only once it is older than that.
var racy = 2 * time.Second

// changed says whether the files differ from what the gate hashed at
// start. It reads and hashes them only when their stamps (device, inode,
// size, mtime, ctime) changed since they were last hashed, or when one was
// modified so recently that its stamps prove nothing; otherwise a request
// costs a stat per file, not a read.
func (w *watch) changed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, f := range w.files {
		id, err := statID(filepath.Join(w.home, f))
		if err != nil {
			id = fileID{size: -1} // missing or unreadable: hashed as such
		}
		w.cur[i] = id
	}
	if w.trusted && slices.Equal(w.cur, w.ids) {
		return false
	}
	hashed := time.Now()
	if hashFiles(w.home, w.files) != w.hash {
		return true
	}
	copy(w.ids, w.cur)
	w.trusted = true
	for _, id := range w.ids {
		if id.size >= 0 && (hashed.Sub(time.Unix(0, id.mtime)) < racy || hashed.Sub(time.Unix(0, id.ctime)) < racy) {
			w.trusted = false
		}
	}
	return false
}
