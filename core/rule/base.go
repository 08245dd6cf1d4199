package rule

import "path"

// PathScope describes where a Read or Write rule's pattern can match, for
// enforcement that cannot evaluate globs (a kernel sandbox grants whole
// file hierarchies): Base is the anchor joined with the pattern's leading
// literal segments, Exact reports that the pattern is exactly Base (no
// wildcard follows), and Tree that the rest of the pattern is only "**", so
// it covers Base and everything below it.
type PathScope struct {
	Access Access // Read (covering ReadTree) or Write
	Base   string
	Exact  bool
	Tree   bool
}

// Scope returns the PathScope of a Read or Write rule under roots, and false
// for a rule of another tool or when the root it is anchored at is empty.
func (r Rule) Scope(roots Roots) (PathScope, bool) {
	var s PathScope
	switch r.kind {
	case kindRead:
		s.Access = Read
	case kindWrite:
		s.Access = Write
	default:
		return PathScope{}, false
	}
	base := r.path.base(roots)
	if !isCleanAbs(base) {
		return PathScope{}, false
	}
	if r.path.bare {
		return PathScope{Access: s.Access, Base: base, Tree: true}, true
	}
	parts := []string{base}
	n := 0
	for n < len(r.path.segs) && r.path.segs[n].literal {
		parts = append(parts, r.path.segs[n].text)
		n++
	}
	s.Base = path.Join(parts...)
	s.Exact = n == len(r.path.segs)
	s.Tree = s.Exact || onlyGlobstars(r.path.segs[n:])
	return s, true
}
