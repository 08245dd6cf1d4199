package l1

import (
	"bytes"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/joulehook/joule/core"
)

// A look-up's answer starts from the declarations of one name. Finding
// them by reading every Go file that holds the name's text costs, on a
// tree the size of GOROOT, a scan of every file and a parse of hundreds;
// an index of the names each file declares, kept per workspace and brought
// up to date with each snapshot (a file is parsed again only when its
// content changes), reduces that to the few files that declare the name.
// A snapshot from a core.DirCache shares the unchanged files' contents
// with the one before, so telling what changed is a pointer comparison.

// nameIndex maps each name the Go files of one workspace declare to the
// files that declare it; a method or field M of T is under M and T.M.
type nameIndex struct {
	mu     sync.Mutex
	files  map[string]indexedFile // workspace path → what was indexed
	byName map[string][]string    // name → workspace paths, unordered
	broken map[string]bool        // the files that do not parse
}

type indexedFile struct {
	content []byte
	pkg     string   // the package clause's name
	names   []string // declared, each once; nil when the file does not parse
	broken  bool     // does not parse: a candidate for every name
}

// maxIndexes bounds the workspaces whose indexes a process keeps.
const maxIndexes = 4

var indexes struct {
	mu    sync.Mutex
	roots []string // least recently used first
	byDir map[string]*nameIndex
}

// indexFor returns the index of the workspace at root.
func indexFor(root string) *nameIndex {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	indexes.mu.Lock()
	defer indexes.mu.Unlock()
	if indexes.byDir == nil {
		indexes.byDir = map[string]*nameIndex{}
	}
	for i, r := range indexes.roots {
		if r == root {
			indexes.roots = append(append(indexes.roots[:i:i], indexes.roots[i+1:]...), root)
			return indexes.byDir[root]
		}
	}
	if len(indexes.roots) >= maxIndexes {
		delete(indexes.byDir, indexes.roots[0])
		indexes.roots = indexes.roots[1:]
	}
	ix := &nameIndex{files: map[string]indexedFile{}, byName: map[string][]string{}, broken: map[string]bool{}}
	indexes.roots = append(indexes.roots, root)
	indexes.byDir[root] = ix
	return ix
}

// spellings brings the index up to date with files and returns the names
// declared that are low in lower case and written otherwise, sorted.
func (ix *nameIndex) spellings(files core.Files, low string) []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.update(files)
	var out []string
	for name := range ix.byName {
		if len(name) == len(low) && name != low && strings.ToLower(name) == low {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// filesDeclaring brings the index up to date with files and returns the
// Go files that may declare name as the qualifiers say (pkg.Name,
// Type.Member, pkg.Type.Member; qualified decides), and those that do not
// parse and hold the name's text, sorted.
func (ix *nameIndex) filesDeclaring(files core.Files, name string, qual []string) []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.update(files)
	pkgOK := func(p, q string) bool {
		dir, pkg := path.Dir(p), ix.files[p].pkg
		return pkg == q || dir == q || strings.HasSuffix(dir, "/"+q) || strings.TrimSuffix(pkg, "_test") == q
	}
	var cands []string
	switch len(qual) {
	case 0:
		cands = ix.byName[name]
	case 1:
		cands = append(cands, ix.byName[qual[0]+"."+name]...)
		for _, p := range ix.byName[name] {
			if pkgOK(p, qual[0]) {
				cands = append(cands, p)
			}
		}
	case 2:
		for _, p := range ix.byName[qual[1]+"."+name] {
			if pkgOK(p, qual[0]) {
				cands = append(cands, p)
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range cands {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for p := range ix.broken {
		if f := ix.files[p]; !seen[p] && bytes.Contains(f.content, []byte(name)) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// update re-indexes the Go files of files whose content is not the one
// indexed, in parallel, and forgets the files that are gone.
func (ix *nameIndex) update(files core.Files) {
	var stale []string
	kept := 0
	for p, b := range files {
		if !strings.HasSuffix(p, ".go") {
			continue
		}
		if f, ok := ix.files[p]; ok && sameContent(f.content, b) {
			if len(b) > 0 && &f.content[0] != &b[0] {
				// equal, read anew: keep this copy, so that the next
				// snapshot sharing it compares by pointer
				f.content = b
				ix.files[p] = f
			}
			kept++
			continue
		}
		if !skipped(p) {
			stale = append(stale, p)
		}
	}
	if kept < len(ix.files) {
		for p, f := range ix.files {
			if b, ok := files[p]; !ok || !sameContent(f.content, b) {
				ix.remove(p)
			}
		}
	}
	if len(stale) == 0 {
		return
	}
	parsed := make([]indexedFile, len(stale))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				parsed[i] = indexFile(stale[i], files[stale[i]])
			}
		}()
	}
	for i := range stale {
		work <- i
	}
	close(work)
	wg.Wait()
	for i, p := range stale {
		ix.files[p] = parsed[i]
		if parsed[i].broken {
			ix.broken[p] = true
		}
		for _, n := range parsed[i].names {
			ix.byName[n] = append(ix.byName[n], p)
		}
	}
}

// remove drops p from the index.
func (ix *nameIndex) remove(p string) {
	f, ok := ix.files[p]
	if !ok {
		return
	}
	delete(ix.files, p)
	delete(ix.broken, p)
	for _, n := range f.names {
		ps := ix.byName[n]
		for i, q := range ps {
			if q == p {
				ps[i] = ps[len(ps)-1]
				ps = ps[:len(ps)-1]
				break
			}
		}
		if len(ps) == 0 {
			delete(ix.byName, n)
		} else {
			ix.byName[n] = ps
		}
	}
}

// indexFile lists the names one Go file declares (as fileDecls finds
// declarations).
func indexFile(rel string, src []byte) indexedFile {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
	if err != nil {
		return indexedFile{content: src, broken: true}
	}
	seen := map[string]bool{}
	var names []string
	for _, d := range fileDecls(fset, f, rel, src, "") {
		keys := []string{d.name}
		if d.recv != "" {
			keys = append(keys, d.recv+"."+d.name)
		}
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	return indexedFile{content: src, pkg: f.Name.Name, names: names}
}

// sameContent is bytes.Equal with a shortcut for one backing array, the
// common case of an unchanged file of a cached workspace.
func sameContent(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}
