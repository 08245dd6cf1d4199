package main

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
)

// Loc is one location an answer cites: a line, or a range of lines when
// End > Line.
type Loc struct {
	Path      string
	Line, End int
}

// locPattern matches "path.go:12", "path.go:12:5" (line and column) and
// "path.go:12-40" (a range; an en dash too).
var locPattern = regexp.MustCompile(`([^\s:()\[\]"'` + "`" + `,]+\.go):(\d+)(?:(?:-|–)(\d+)|:\d+)?`)

// ParseLocs returns the locations text cites, paths made relative to root
// when they are under it.
func ParseLocs(text, root string) []Loc {
	var out []Loc
	prefix := filepath.ToSlash(filepath.Clean(root)) + "/"
	for _, m := range locPattern.FindAllStringSubmatch(text, -1) {
		line, err := strconv.Atoi(m[2])
		if err != nil || line <= 0 {
			continue
		}
		end := line
		if m[3] != "" {
			if e, err := strconv.Atoi(m[3]); err == nil && e >= line {
				end = e
			}
		}
		p := strings.TrimPrefix(filepath.ToSlash(m[1]), prefix)
		p = strings.TrimPrefix(p, "./")
		out = append(out, Loc{Path: p, Line: line, End: end})
	}
	return out
}

// points reports whether l points at the line want inside the declaration
// span s: a single line within the declaration, or a range holding want
// that is not much wider than the declaration itself.
func points(l Loc, s Span, want int) bool {
	if l.Path != s.Path {
		return false
	}
	if l.End == l.Line {
		return s.Lo <= l.Line && l.Line <= s.Hi
	}
	return l.Line <= want && want <= l.End && (l.End-l.Line) <= (s.Hi-s.Lo)+10
}

// Verdict is how a closed request scores against its ground truth.
type Verdict int

// Verdicts. Unscored is a close by a scripted tier, whose answer is not
// real and is not judged.
const (
	Unscored Verdict = iota
	Correct
	False
)

func (v Verdict) String() string {
	switch v {
	case Correct:
		return "correct"
	case False:
		return "false"
	}
	return "unscored"
}

// Score judges a cheap tier's resolution of r: prior is the workspace the
// request applied to (edits are applied to it and compared byte for byte).
func Score(r *Request, res *tiers.Resolution, prior core.Files) (Verdict, string) {
	switch r.Class {
	case Negative:
		return False, "a cheap tier claimed a request that needs a model"
	case Define:
		for _, l := range ParseLocs(res.Answer, r.Root) {
			if points(l, r.Def, r.Def.Line) {
				return Correct, ""
			}
		}
		return False, "the answer does not cite " + r.Def.Path + ":" + strconv.Itoa(r.Def.Line)
	case Callers:
		locs := ParseLocs(res.Answer, r.Root)
		for _, c := range r.Calls {
			found := false
			for _, l := range locs {
				// The call's own line, or a range holding it no wider than
				// the calling declaration: the definition's line inside a
				// recursive function does not count as its call.
				if l.Path == c.Path && l.Line <= c.Line && c.Line <= l.End && (l.End-l.Line) <= (c.Hi-c.Lo)+10 {
					found = true
					break
				}
			}
			if !found {
				return False, "the answer misses the call in " + c.Function + " at " + c.Path + ":" + strconv.Itoa(c.Line)
			}
		}
		return Correct, ""
	case Rename, Format:
		if res.Op == nil {
			return False, "closed without an edit"
		}
		next, err := core.Apply(prior, &res.Op.Op)
		if err != nil {
			return False, "the op does not apply: " + err.Error()
		}
		for p, b := range r.Want {
			if string(next[p]) != string(b) {
				return False, p + " differs from the ground truth"
			}
		}
		for p := range next {
			if _, ok := r.Want[p]; !ok {
				return False, p + " exists only in the tier's result"
			}
		}
		return Correct, ""
	}
	return False, "unknown class " + string(r.Class)
}

// Recall5 reports whether one of the first five hits covers the true
// definition.
func Recall5(def Span, hits []Loc) bool {
	for i, h := range hits {
		if i == 5 {
			break
		}
		if h.Path == def.Path && h.Line <= def.Line && def.Line <= max(h.End, h.Line) {
			return true
		}
	}
	return false
}
