package l1

import (
	"bytes"
	"context"
	"fmt"
	"go/token"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// Refactor is a refactoring gopls offers as a code action, asked for by
// name: extract a span of a Go file into a function, a method, a variable
// or a constant (named Name, or as gopls names it), or inline one call.
// Lines are 1-based, columns 1-based bytes; EndCol is exclusive (the
// column just after the span), 0 meaning the end of EndLine; a span of
// whole lines has Col 1 and EndCol 0. An inline call has no end; its Col
// may be 0 when Callee is given: the one call of Callee on Line.
type Refactor struct {
	Kind            string // lsp.ExtractFunction, lsp.ExtractMethod, lsp.ExtractVariable, lsp.ExtractConstant, lsp.InlineCall
	File            string
	Line, Col       int
	EndLine, EndCol int
	Name            string // the extracted function's or variable's name
	Callee          string // the function an inlined call must call
}

func (Refactor) verb() string { return "refactor" }

// extractKinds maps what a request extracts into to a code action kind.
var extractKinds = map[string]string{
	"function": lsp.ExtractFunction, "func": lsp.ExtractFunction,
	"method":   lsp.ExtractMethod,
	"variable": lsp.ExtractVariable, "var": lsp.ExtractVariable, "local": lsp.ExtractVariable,
	"constant": lsp.ExtractConstant, "const": lsp.ExtractConstant,
}

var (
	lineSpan  = regexp.MustCompile(`^(\d+)(?:-|–|\.\.)(\d+)$`)                  // 10-14
	fileLines = regexp.MustCompile(`^(.+):(\d+)(?:-|–)(\d+)$`)                  // FILE:10-14
	fileRange = regexp.MustCompile(`^(.+):(\d+):(\d+)(?:-|–)(?:(\d+):)?(\d+)$`) // FILE:L:C-L:C, FILE:L:C-C
)

// extract reads "extract lines 10-14 of FILE into a function named X",
// "extract FILE:L:C-L:C into a variable", "extract function X from lines
// 10-14 of FILE" and their variants.
func (r *reader) extract() (Command, error) {
	r.i++ // extract
	var c Refactor
	kindFirst := false
	save := r.i
	r.acceptAny("a", "an", "the")
	r.accept("new")
	if k, ok := extractKinds[r.peek(0)]; ok && r.peek(1) != "" {
		r.i++
		c.Kind, kindFirst = k, true
		if err := r.refactorName(&c, "from"); err != nil {
			return nil, err
		}
		if !r.accept("from") {
			return nil, decline("say what to extract it from: lines A-B of FILE, or FILE:L:C-L:C")
		}
	} else {
		r.i = save
	}
	ok, err := r.span(&c)
	if err != nil {
		return nil, err
	}
	if !ok {
		if kindFirst {
			return nil, decline("%q is not a span: lines A-B of FILE, or FILE:L:C-L:C", r.rest())
		}
		return nil, nil // "extract the archive": not code
	}
	if !kindFirst {
		if _, ok := r.acceptAny("into", "to", "as"); !ok {
			if r.done() {
				return nil, decline("say what to extract it into: a function, a method, a variable or a constant")
			}
			return nil, decline("%q is not understood", r.rest())
		}
		r.acceptAny("a", "an", "the")
		r.accept("new")
		k, ok := extractKinds[r.peek(0)]
		if !ok {
			return nil, decline("%q: extract into a function, a method, a variable or a constant", r.rest())
		}
		r.i++
		c.Kind = k
		if err := r.refactorName(&c, ""); err != nil {
			return nil, err
		}
	}
	if !r.done() {
		return nil, decline("%q is not understood", r.rest())
	}
	if (c.Kind == lsp.ExtractVariable || c.Kind == lsp.ExtractConstant) && c.Col == 1 && c.EndCol == 0 {
		return nil, decline("a %s is extracted from an expression: give its span as FILE:L:C-L:C", strings.TrimPrefix(lsp.ActionNames[c.Kind], "extract "))
	}
	return c, nil
}

// refactorName reads [named|called] NAME, up to stop.
func (r *reader) refactorName(c *Refactor, stop string) error {
	_, said := r.acceptAny("named", "called")
	if r.done() || (!said && (r.peek(0) == stop || r.peek(0) == "")) && !(r.i < len(r.w) && r.w[r.i].q) {
		if said {
			return decline("no name after %q", r.w[r.i-1].s)
		}
		return nil
	}
	w, _ := r.next()
	if !token.IsIdentifier(w.s) || w.s == "_" {
		return decline("%q is not a valid Go identifier", w.s)
	}
	c.Name = w.s
	return nil
}

// span reads the span of an extraction: [the] [lines|code|expression …]
// then "A-B of|in FILE", "A to B of FILE", "N of FILE" (one line), or
// FILE:A-B, FILE:L:C-L:C, FILE:L:C-C, with an optional "at" or "in". It
// reports false, consuming nothing, when none comes next.
func (r *reader) span(c *Refactor) (bool, error) {
	start := r.i
	r.acceptAny("the", "this", "these", "that")
	obj, _ := r.acceptAny("lines", "line", "code", "statements", "statement", "block", "expression", "expr", "selection", "range", "span")
	if obj == "code" || obj == "block" {
		r.accept("on") // "the code on lines 10-14"
		r.acceptAny("lines", "line")
	}
	r.acceptAny("at", "in", "from", "on")
	w, ok := r.next()
	if !ok {
		r.i = start
		return false, nil
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	lines := func(a, b int) error {
		if a < 1 || b < 1 {
			return decline("line numbers start at 1")
		}
		if b < a {
			return decline("lines %d-%d end before they start", a, b)
		}
		c.Line, c.Col, c.EndLine, c.EndCol = a, 1, b, 0
		return nil
	}
	switch {
	case w.q:
		r.i = start
		return false, nil
	case lineSpan.MatchString(w.s) || (obj == "line" || obj == "lines") && isNumber(w.s):
		a, b := 0, 0
		if m := lineSpan.FindStringSubmatch(w.s); m != nil {
			a, b = atoi(m[1]), atoi(m[2])
		} else {
			a, b = atoi(w.s), atoi(w.s)
			if _, ok := r.acceptAny("to", "through", "thru", "-", "–", "and"); ok {
				v, _ := r.next()
				if !isNumber(v.s) {
					return false, decline("%q is not a line number", v.s)
				}
				b = atoi(v.s)
			} else if obj == "lines" {
				return false, decline("lines %d to what? (lines A-B of FILE)", a)
			}
		}
		if err := lines(a, b); err != nil {
			return false, err
		}
		if _, ok := r.acceptAny("of", "in", "from"); !ok {
			return false, decline("name the file: lines %d-%d of FILE", a, b)
		}
		r.acceptAny("the", "file")
		f, ok := r.next()
		if !ok || !pathWord(f.s) {
			return false, decline("%q is not a file", f.s)
		}
		c.File = strings.TrimPrefix(f.s, "./")
	case fileRange.MatchString(w.s) && pathWord(fileRange.FindStringSubmatch(w.s)[1]):
		m := fileRange.FindStringSubmatch(w.s)
		c.File = strings.TrimPrefix(m[1], "./")
		c.Line, c.Col, c.EndLine, c.EndCol = atoi(m[2]), atoi(m[3]), atoi(m[2]), atoi(m[5])
		if m[4] != "" {
			c.EndLine = atoi(m[4])
		}
		if c.Line < 1 || c.Col < 1 || c.EndCol < 1 {
			return false, decline("lines and columns start at 1")
		}
		if c.EndLine < c.Line || c.EndLine == c.Line && c.EndCol <= c.Col {
			return false, decline("the span %s ends before it starts", w.s)
		}
	case fileLines.MatchString(w.s) && !strings.Contains(fileLines.FindStringSubmatch(w.s)[1], ":") && pathWord(fileLines.FindStringSubmatch(w.s)[1]):
		m := fileLines.FindStringSubmatch(w.s)
		if err := lines(atoi(m[2]), atoi(m[3])); err != nil {
			return false, err
		}
		c.File = strings.TrimPrefix(m[1], "./")
	default:
		if f, _, col, ok := fileLoc(w.s); ok && col > 0 {
			return false, decline("%s is a position; extract a span: FILE:L:C-L:C", w.s)
		} else if ok || obj != "" {
			_ = f
			return false, decline("%q is not a span: lines A-B of FILE, or FILE:L:C-L:C", w.s)
		}
		r.i = start
		return false, nil
	}
	if path.Ext(c.File) != ".go" {
		return false, decline("L1 extracts from Go files only (through gopls), not %s", c.File)
	}
	return true, nil
}

func isNumber(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0
}

// inline reads "inline the call at FILE:L:C", "inline the call to F at
// FILE:L:C", "inline the call to F on line N of FILE", "inline FILE:L:C".
func (r *reader) inline() (Command, error) {
	r.i++ // inline
	c := Refactor{Kind: lsp.InlineCall}
	r.acceptAny("the", "this", "that")
	if w := r.peek(0); w != "" {
		if f, l, col, ok := fileLoc(r.w[r.i].s); ok {
			r.i++
			return c, r.inlineAt(&c, f, l, col)
		}
	}
	r.acceptAny("function", "func", "method")
	if !r.accept("call") && !r.accept("invocation") {
		if name, ok := symbolWord(r.peek(0)); ok && r.peek(0) != "" && (r.peek(1) == "" || r.peek(1) == "everywhere" || r.peek(1) == "function") {
			return nil, decline("L1 inlines one call at FILE:LINE:COL, not every call of %s", name)
		}
		return nil, nil // "inline the CSS": not a Go call
	}
	if _, ok := r.acceptAny("to", "of"); ok {
		r.acceptAny("the")
		r.acceptAny("function", "func", "method")
		w, ok := r.next()
		name, ok2 := symbolWord(w.s)
		if !ok || !ok2 {
			return nil, decline("%q is not a function", w.s)
		}
		c.Callee = name[strings.LastIndexByte(name, '.')+1:]
	}
	switch {
	case r.accept("at") || r.accept("in"):
		w, ok := r.next()
		if !ok {
			return nil, decline("nothing after %q", r.w[r.i-1].s)
		}
		if f, l, col, ok := fileLoc(w.s); ok {
			if err := r.inlineAt(&c, f, l, col); err != nil {
				return nil, err
			}
			break
		}
		if !pathWord(w.s) {
			return nil, decline("%q is not FILE:LINE:COL", w.s)
		}
		r.i-- // "in FILE on line N"
		fallthrough
	case r.peek(0) == "on" || pathWord(r.peek(0)):
		file, line := "", 0
		for !r.done() {
			switch {
			case r.accept("on", "line") || r.accept("line"):
				v, _ := r.next()
				if !isNumber(v.s) || line != 0 {
					return nil, decline("%q is not one line number", v.s)
				}
				line, _ = strconv.Atoi(v.s)
			case r.accept("of") || r.accept("in"):
			default:
				w, _ := r.next()
				if !pathWord(w.s) || file != "" {
					return nil, decline("%q is not understood", w.s)
				}
				file = strings.TrimPrefix(w.s, "./")
			}
		}
		if file == "" || line == 0 {
			return nil, decline("say where the call is: at FILE:LINE:COL, or on line N of FILE")
		}
		if err := r.inlineAt(&c, file, line, 0); err != nil {
			return nil, err
		}
	default:
		if r.done() {
			return nil, decline("say where the call is: at FILE:LINE:COL")
		}
		return nil, decline("%q is not understood", r.rest())
	}
	if !r.done() {
		return nil, decline("%q is not understood", r.rest())
	}
	return c, nil
}

func (r *reader) inlineAt(c *Refactor, file string, line, col int) error {
	if col == 0 && c.Callee == "" {
		return decline("give the call's column (%s:%d:COL) or the function it calls", file, line)
	}
	if path.Ext(file) != ".go" {
		return decline("L1 inlines calls in Go files only (through gopls), not %s", file)
	}
	c.File, c.Line, c.Col = file, line, col
	if !r.done() {
		return decline("%q is not understood", r.rest())
	}
	return nil
}

// refactor makes a Refactor through gopls.
func refactor(ctx context.Context, root string, files core.Files, c Refactor) (core.Files, string, error) {
	if _, err := lsp.Look(lsp.Gopls.Name); err != nil {
		return nil, "", fmt.Errorf("%s needs gopls, which is not installed (go install golang.org/x/tools/gopls@%s)", lsp.ActionNames[c.Kind], lsp.GoplsVersion)
	}
	src, ok := files[c.File]
	if !ok {
		return nil, "", fmt.Errorf("%s is not in the workspace", c.File)
	}
	if c.Col == 0 { // the one call of Callee on Line
		ls := bytes.Split(src, []byte("\n"))
		if c.Line > len(ls) {
			return nil, "", fmt.Errorf("line %d is outside %s (%d lines)", c.Line, c.File, len(ls))
		}
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(c.Callee) + `\s*\(`)
		ms := re.FindAllIndex(ls[c.Line-1], -1)
		if len(ms) != 1 {
			return nil, "", fmt.Errorf("line %d of %s has %d calls of %s; give the column (%s:%d:COL)", c.Line, c.File, len(ms), c.Callee, c.File, c.Line)
		}
		c.Col = ms[0][0] + 1
	}
	res, err := lsp.CodeAction(ctx, root, files, lsp.Action{Kind: c.Kind, File: c.File, Line: c.Line, Col: c.Col,
		EndLine: c.EndLine, EndCol: c.EndCol, Name: c.Name, Callee: c.Callee})
	if err != nil {
		return nil, "", err
	}
	return res.Next, served(res), nil
}
