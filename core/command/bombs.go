package command

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Resource bombs the analysis can see.
//
// A line made only of builtins and functions needs no rule, and some such
// lines never end: a function that calls itself (the fork bomb
// :(){ :|:& };: is one, run in a pipeline and in the background), a loop
// whose condition is always true and whose body never leaves it (while
// true; do :; done burns a core; while :; do x=$x$x; done fills memory),
// and a brace expansion of millions of words. The analysis refuses them
// (resource-bomb). What it cannot see (a program that loops, a script
// that recurses, a recursion through a file) the kernel's limits bound
// when the line runs contained (sandbox.Limits: processes, memory, CPU
// time).

// maxBraceWords is the most words a brace expansion may make: bash builds
// them all in memory before it runs anything.
const maxBraceWords = 1 << 20

// callGraph records, for each function the line defines, the names its
// body calls directly, so that recursion can be found once the line is
// walked.
type callGraph struct {
	defined map[string]bool
	calls   map[string][]string
}

func (g *callGraph) define(name string) {
	if g.defined == nil {
		g.defined = map[string]bool{}
	}
	g.defined[name] = true
}

func (g *callGraph) call(from, to string) {
	if from == "" {
		return
	}
	if g.calls == nil {
		g.calls = map[string][]string{}
	}
	if !slices.Contains(g.calls[from], to) {
		g.calls[from] = append(g.calls[from], to)
	}
}

// cycle returns a function of the line that calls itself, directly or
// through other functions of the line, with the path of calls.
func (g *callGraph) cycle() []string {
	names := make([]string, 0, len(g.defined))
	for n := range g.defined {
		names = append(names, n)
	}
	slices.Sort(names) // deterministic reasons
	for _, start := range names {
		seen := map[string]bool{}
		var path []string
		var walk func(f string) bool
		walk = func(f string) bool {
			path = append(path, f)
			for _, to := range g.calls[f] {
				if to == start {
					path = append(path, to)
					return true
				}
				if g.defined[to] && !seen[to] {
					seen[to] = true
					if walk(to) {
						return true
					}
				}
			}
			path = path[:len(path)-1]
			return false
		}
		if walk(start) {
			return path
		}
	}
	return nil
}

// checkRecursion fails the line when a function it defines calls itself.
func (a *analyzer) checkRecursion() {
	if c := a.graph.cycle(); c != nil {
		how := "calls itself"
		if len(c) > 2 {
			how = "calls itself through " + strings.Join(c[1:len(c)-1], ", ")
		}
		a.fail(CodeResourceBomb, "the function %s %s, so the line recurses without end (a fork bomb when the calls run in a pipeline or in the background)", quote(c[0]), how)
	}
}

// endlessLoop fails a while, until or for loop whose condition is always
// true and whose body holds no break, return or exit.
func (a *analyzer) endlessLoop(n syntax.Command, fr frame) {
	var cond []*syntax.Stmt
	var body []*syntax.Stmt
	always := false
	switch l := n.(type) {
	case *syntax.WhileClause:
		cond, body = l.Cond, l.Do
		if len(cond) == 1 {
			ok, known := constant(cond[0])
			always = known && ok == !l.Until
		}
	case *syntax.ForClause:
		c, ok := l.Loop.(*syntax.CStyleLoop)
		if !ok {
			return
		}
		body = l.Do
		always = c.Cond == nil || constantArith(c.Cond) == 1
	}
	if !always || leaves(body, fr.src) {
		return
	}
	a.fail(CodeResourceBomb, "the loop %s never ends: its condition is always true and nothing in it leaves the loop (break, return, exit)", quote(fr.src.slice(n)))
}

// constantStatus reports whether a loop condition always succeeds.
func constantStatus(s *syntax.Stmt) bool {
	ok, known := constant(s)
	return known && ok
}

// constant reports the status of a condition that does not depend on
// anything: true, :, false, ((N)), [ word ], test word, [[ word ]], and
// lists, groups and subshells made of them (true || x, { :; }).
func constant(s *syntax.Stmt) (ok, known bool) {
	if s == nil || len(s.Redirs) > 0 || s.Background {
		return false, false
	}
	switch c := s.Cmd.(type) {
	case *syntax.TestClause:
		w, isWord := c.X.(*syntax.Word)
		if !isWord {
			return false, false
		}
		lit, isLit := plainLit(w)
		if !isLit {
			return false, false
		}
		ok, known = lit != "", true
	case *syntax.BinaryCmd:
		l, lKnown := constant(c.X)
		r, rKnown := constant(c.Y)
		switch {
		case c.Op == syntax.OrStmt && lKnown && l, c.Op == syntax.AndStmt && lKnown && !l:
			ok, known = l, true
		case (c.Op == syntax.OrStmt || c.Op == syntax.AndStmt) && lKnown && rKnown:
			ok, known = r, true
		default:
			return false, false
		}
	case *syntax.Block:
		if len(c.Stmts) != 1 {
			return false, false
		}
		ok, known = constant(c.Stmts[0])
	case *syntax.Subshell:
		if len(c.Stmts) != 1 {
			return false, false
		}
		ok, known = constant(c.Stmts[0])
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 || len(c.Args) == 0 {
			return false, false
		}
		words := make([]string, len(c.Args))
		for i, w := range c.Args {
			lit, isLit := plainLit(w)
			if !isLit {
				return false, false
			}
			words[i] = lit
		}
		switch {
		case words[0] == "true" || words[0] == ":":
			ok, known = true, true
		case words[0] == "false":
			ok, known = false, true
		case words[0] == "[" && len(words) == 3 && words[2] == "]" || words[0] == "test" && len(words) == 2:
			ok, known = words[1] != "", !strings.HasPrefix(words[1], "-") || words[1] == "-"
		default:
			return false, false
		}
	case *syntax.ArithmCmd:
		switch constantArith(c.X) {
		case 1:
			ok, known = true, true
		case 0:
			ok, known = false, true
		default:
			return false, false
		}
	default:
		return false, false
	}
	if s.Negated {
		ok = !ok
	}
	return ok, known
}

// constantArith returns 1 for an arithmetic expression that is a nonzero
// number, 0 for zero, and -1 for anything else.
func constantArith(x syntax.ArithmExpr) int {
	w, ok := x.(*syntax.Word)
	if !ok {
		return -1
	}
	lit, isLit := plainLit(w)
	if !isLit {
		return -1
	}
	n, err := strconv.ParseInt(lit, 0, 64)
	switch {
	case err != nil:
		return -1
	case n != 0:
		return 1
	}
	return 0
}

// plainLit returns the text of a word made of one unquoted literal.
func plainLit(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.ContainsAny(l.Value, `\$*?[{~`) && l.Value != "[" {
		return "", false
	}
	return l.Value, true
}

// leaves reports whether any statement below list may leave a loop:
// break, return, exit, exec or kill.
func leaves(list []*syntax.Stmt, src *source) bool {
	found := false
	for _, s := range list {
		cut := walkLimited(s, func(n syntax.Node) bool {
			if call, ok := n.(*syntax.CallExpr); ok && len(call.Args) > 0 && !found {
				switch unquote.Replace(src.slice(call.Args[0])) {
				case "break", "return", "exit", "exec", "kill":
					found = true
				}
			}
			return !found
		})
		if found || cut {
			return true
		}
	}
	return false
}

// braceWords counts the words a word's brace expansions make, up to a
// bound past maxBraceWords.
func braceWords(w *syntax.Word) int {
	split := &syntax.Word{Parts: slices.Clone(w.Parts)}
	syntax.SplitBraces(split)
	return countBraces(split.Parts)
}

func countBraces(parts []syntax.WordPart) int {
	total := 1
	for _, p := range parts {
		b, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		n := 0
		if b.Sequence {
			n = sequenceLen(b.Elems)
		} else {
			for _, e := range b.Elems {
				n += countBraces(e.Parts)
				if n > maxBraceWords {
					break
				}
			}
		}
		if n > maxBraceWords || total > maxBraceWords/max(n, 1) {
			return maxBraceWords + 1
		}
		total *= max(n, 1)
	}
	return total
}

// sequenceLen is the length of {A..B[..STEP]}.
func sequenceLen(elems []*syntax.Word) int {
	if len(elems) < 2 || len(elems[0].Parts) != 1 || len(elems[1].Parts) != 1 {
		return 1
	}
	from, ok1 := elems[0].Parts[0].(*syntax.Lit)
	to, ok2 := elems[1].Parts[0].(*syntax.Lit)
	if !ok1 || !ok2 || from.Value == "" || to.Value == "" {
		return 1
	}
	a, err1 := strconv.ParseInt(from.Value, 10, 64)
	b, err2 := strconv.ParseInt(to.Value, 10, 64)
	if err1 != nil || err2 != nil {
		return 1 + int(abs64(int64(to.Value[0])-int64(from.Value[0]))) // {a..z}
	}
	step := int64(1)
	if len(elems) > 2 && len(elems[2].Parts) == 1 {
		if st, ok := elems[2].Parts[0].(*syntax.Lit); ok {
			if s, err := strconv.ParseInt(st.Value, 10, 64); err == nil && s != 0 {
				step = abs64(s)
			}
		}
	}
	n := abs64(b-a)/step + 1
	if n > maxBraceWords {
		return maxBraceWords + 1
	}
	return int(n)
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
