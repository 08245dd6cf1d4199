package core

import (
	"io/fs"
	"os"
	"sync"
	"time"
)

// DirCache reads one directory tree again and again, as ReadDir does, but
// reads and hashes only what changed since its last read: a file whose
// size, modification time (and, on Linux, inode and change time) are as
// they were keeps its content and its BLAKE3 sum. A coding
// agent reads the whole workspace for every request; on a large one that
// was seconds of reading and hashing per request.
//
// As with git's index, a file modified within racyWindow of being read may
// change again without its modification time moving: such a file is read
// again on the next Read.
type DirCache struct {
	root string

	mu      sync.Mutex
	entries map[string]*cached
}

type cached struct {
	stat    fileStat
	content []byte
	sum     ID
	summed  bool
	racy    bool
}

// racyWindow is how close to its read a modification must be for the file
// to be read again rather than trusted: generous for file systems with
// coarse timestamps.
const racyWindow = 2 * time.Second

// NewDirCache returns a cache of the tree below root.
func NewDirCache(root string) *DirCache {
	return &DirCache{root: root, entries: map[string]*cached{}}
}

// Read returns every regular file below the root, .git skipped, as ReadDir
// does. Contents of unchanged files are the ones returned before; callers
// must not modify them (nothing in this package does).
func (c *DirCache) Read() (Files, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	files := Files{}
	seen := make(map[string]*cached, len(c.entries))
	err := walkRegular(c.root, func(rel, abs string) error {
		fi, err := os.Lstat(abs)
		if err != nil {
			return err
		}
		st := statOf(fi)
		if e, ok := c.entries[rel]; ok && !e.racy && e.stat == st {
			files[rel] = e.content
			seen[rel] = e
			return nil
		}
		before := time.Now()
		b, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		// The stat taken before the read describes what was read only if
		// the file did not change meanwhile; otherwise it is racy too.
		after, err := os.Lstat(abs)
		if err != nil {
			return err
		}
		e := &cached{stat: statOf(after), content: b}
		e.racy = e.stat != st || !fi.ModTime().Before(before.Add(-racyWindow))
		files[rel] = b
		seen[rel] = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.entries = seen
	return files, nil
}

// Sum is a SumFunc: the sum of content at path, from the cache when content
// is the very content Read returned for path.
func (c *DirCache) Sum(path string, content []byte) ID {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[path]
	if !ok || !sameBytes(e.content, content) {
		return Sum(content)
	}
	if !e.summed {
		e.sum, e.summed = Sum(content), true
	}
	return e.sum
}

// sameBytes reports whether a and b are the same slice of the same array:
// the cache holds its contents, so their addresses cannot be reused.
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || &a[0] == &b[0]
}

// fileStat is what tells a file unchanged.
type fileStat struct {
	size         int64
	mtime, ctime int64
	ino          uint64
	mode         fs.FileMode
}
