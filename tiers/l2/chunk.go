package l2

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Chunk is one structural piece of a file: a declaration, a block, a
// section.
type Chunk struct {
	StartLine, EndLine int    // 1-based, inclusive
	Symbol             string // e.g. "(*Server).Serve", "parse_config", "## Install"
	Kind               string // func, method, type, const, var, package, def, class, block, section, text
	Text               string
	Defs               []Def
	Refs               []Ref
}

// Def is a name a chunk declares.
type Def struct {
	Name string // the bare identifier
	Recv string // the receiver or enclosing type, for methods and fields
	Pkg  string // the Go package name; empty outside Go
	Kind string // func, method, type, field, const, var, or a heuristic kind
	Line int
}

// Ref is a name a chunk uses: a call, or a selector on an imported package.
type Ref struct {
	Name string
	// Qual qualifies Name: "" for a bare identifier, the import path for
	// pkg.Name, "." for a selector on a value (x.Name: a method or field
	// whose receiver type is unknown without type checking).
	Qual string
	Line int
	Call bool
}

// Limits of the heuristic chunkers.
const (
	maxChunkLines = 120 // longer blocks are split at blank lines, else hard
	minChunkLines = 3   // shorter blocks join the next one
)

// ChunkFile splits a file into chunks by its structure: Go through
// go/parser, Markdown by headings, anything else by a block heuristic.
// Go that does not parse falls back to the heuristic.
func ChunkFile(name string, src []byte) []Chunk {
	switch strings.ToLower(path.Ext(name)) {
	case ".go":
		if cs, ok := chunkGo(name, src); ok {
			return cs
		}
		// Unparsable Go still declares its names in its package, so that
		// a qualified lookup sees them and stays ambiguous.
		cs := chunkBlocks(src)
		if m := packageRE().FindSubmatch(src); m != nil {
			for i := range cs {
				for j := range cs[i].Defs {
					cs[i].Defs[j].Pkg = string(m[1])
				}
			}
		}
		return cs
	case ".md", ".markdown", ".mdx":
		return chunkMarkdown(src)
	}
	return chunkBlocks(src)
}

// chunkGo chunks a Go file by its top-level declarations.
func chunkGo(name string, src []byte) ([]Chunk, bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil || f == nil {
		return nil, false
	}
	tf := fset.File(f.Pos())
	if tf == nil {
		return nil, false
	}
	pkg := f.Name.Name
	imports := map[string]string{}
	var dots []Ref
	for _, is := range f.Imports {
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			continue
		}
		local := importName(p)
		if is.Name != nil {
			local = is.Name.Name
		}
		if local == "." {
			dots = append(dots, Ref{Name: ".", Qual: p, Line: tf.Line(is.Pos())})
		}
		if local == "_" || local == "." {
			continue
		}
		imports[local] = p
	}
	line := func(p token.Pos) int { return tf.Line(p) }
	text := func(from, to token.Pos) string {
		a, b := tf.Offset(from), tf.Offset(to)
		if a < 0 || b > len(src) || a > b {
			return ""
		}
		return string(src[a:b])
	}
	mk := func(from, to token.Pos, sym, kind string, body ast.Node) Chunk {
		c := Chunk{StartLine: line(from), EndLine: line(to), Symbol: sym, Kind: kind, Text: text(from, to)}
		if body != nil {
			c.Refs = goRefs(body, imports, line)
		}
		return c
	}

	var out []Chunk
	// The file header: package doc, clause and imports.
	hdrFrom, hdrTo := f.Package, f.Name.End()
	if f.Doc != nil {
		hdrFrom = f.Doc.Pos()
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			hdrTo = g.End()
		}
	}
	hdr := mk(hdrFrom, hdrTo, "package "+pkg, "package", nil)
	hdr.Refs = dots // recorded so that lookups know the package's names leak
	out = append(out, hdr)

	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			from := d.Pos()
			if d.Doc != nil {
				from = d.Doc.Pos()
			}
			def := Def{Name: d.Name.Name, Pkg: pkg, Kind: "func", Line: line(d.Name.Pos())}
			sym := d.Name.Name
			if d.Recv != nil && len(d.Recv.List) == 1 {
				recv, ptr := recvType(d.Recv.List[0].Type)
				def.Recv, def.Kind = recv, "method"
				if ptr {
					sym = "(*" + recv + ")." + d.Name.Name
				} else {
					sym = recv + "." + d.Name.Name
				}
			}
			c := mk(from, d.End(), sym, def.Kind, d)
			c.Defs = []Def{def}
			out = append(out, c)
		case *ast.GenDecl:
			switch d.Tok {
			case token.TYPE:
				for i, s := range d.Specs {
					ts := s.(*ast.TypeSpec)
					from, to := ts.Pos(), ts.End()
					if ts.Doc != nil {
						from = ts.Doc.Pos()
					}
					if !d.Lparen.IsValid() || len(d.Specs) == 1 {
						from, to = d.Pos(), d.End()
						if d.Doc != nil {
							from = d.Doc.Pos()
						}
					} else if i == 0 && d.Doc != nil {
						from = d.Doc.Pos()
					}
					c := mk(from, to, ts.Name.Name, "type", ts)
					c.Defs = append([]Def{{Name: ts.Name.Name, Pkg: pkg, Kind: "type", Line: line(ts.Name.Pos())}}, memberDefs(ts, pkg, line)...)
					out = append(out, c)
				}
			case token.CONST, token.VAR:
				from := d.Pos()
				if d.Doc != nil {
					from = d.Doc.Pos()
				}
				kind := d.Tok.String()
				var defs []Def
				for _, s := range d.Specs {
					for _, n := range s.(*ast.ValueSpec).Names {
						if n.Name == "_" {
							continue
						}
						defs = append(defs, Def{Name: n.Name, Pkg: pkg, Kind: kind, Line: line(n.Pos())})
					}
				}
				sym := kind
				if len(defs) > 0 {
					sym = defs[0].Name
					if len(defs) > 1 {
						sym += ", …"
					}
				}
				c := mk(from, d.End(), sym, kind, d)
				c.Defs = defs
				out = append(out, c)
			}
		}
	}
	return out, true
}

// importName is the name an import is referred to by when it has none:
// the last path element, skipping a major-version suffix (v2) and a
// "go-" prefix or ".v3"-style suffix as the go command's convention does.
func importName(p string) string {
	elems := strings.Split(p, "/")
	name := elems[len(elems)-1]
	if len(elems) > 1 && len(name) > 1 && name[0] == 'v' && strings.Trim(name[1:], "0123456789") == "" {
		name = elems[len(elems)-2]
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(name, "go-")
	return strings.ReplaceAll(name, "-", "_")
}

// recvType names a receiver's base type, and whether it is a pointer.
func recvType(e ast.Expr) (string, bool) {
	ptr := false
	if s, ok := e.(*ast.StarExpr); ok {
		e, ptr = s.X, true
	}
	switch t := e.(type) {
	case *ast.IndexExpr:
		e = t.X
	case *ast.IndexListExpr:
		e = t.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name, ptr
	}
	return "?", ptr
}

// memberDefs records a struct's named fields and an interface's methods,
// so that a lookup of a member name sees every declaration of it.
func memberDefs(ts *ast.TypeSpec, pkg string, line func(token.Pos) int) []Def {
	var fl *ast.FieldList
	kind := "field"
	switch t := ts.Type.(type) {
	case *ast.StructType:
		fl = t.Fields
	case *ast.InterfaceType:
		fl, kind = t.Methods, "interface method"
	}
	if fl == nil {
		return nil
	}
	var out []Def
	for _, f := range fl.List {
		for _, n := range f.Names {
			if n.Name == "_" {
				continue
			}
			out = append(out, Def{Name: n.Name, Recv: ts.Name.Name, Pkg: pkg, Kind: kind, Line: line(n.Pos())})
		}
	}
	return out
}

// goRefs collects the calls in n and its references to imported packages'
// names, once per (name, qualifier, line).
func goRefs(n ast.Node, imports map[string]string, line func(token.Pos) int) []Ref {
	type key struct {
		name, qual string
		line       int
	}
	seen := map[key]int{}
	var out []Ref
	add := func(r Ref) {
		k := key{r.Name, r.Qual, r.Line}
		if i, ok := seen[k]; ok {
			out[i].Call = out[i].Call || r.Call
			return
		}
		seen[k] = len(out)
		out = append(out, r)
	}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			fun := n.Fun
			switch f := fun.(type) {
			case *ast.IndexExpr:
				fun = f.X
			case *ast.IndexListExpr:
				fun = f.X
			}
			switch f := fun.(type) {
			case *ast.Ident:
				add(Ref{Name: f.Name, Line: line(f.Pos()), Call: true})
			case *ast.SelectorExpr:
				add(selRef(f, imports, line, true))
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if _, imp := imports[id.Name]; imp {
					add(selRef(n, imports, line, false))
				}
			}
		}
		return true
	})
	return out
}

func selRef(s *ast.SelectorExpr, imports map[string]string, line func(token.Pos) int, call bool) Ref {
	r := Ref{Name: s.Sel.Name, Qual: ".", Line: line(s.Sel.Pos()), Call: call}
	if id, ok := s.X.(*ast.Ident); ok {
		if p, imp := imports[id.Name]; imp {
			r.Qual = p
		}
	}
	return r
}

// splitLines splits src into lines without their terminators.
func splitLines(src []byte) []string {
	s := string(src)
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

var packageRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^package\s+([\p{L}_][\p{L}\p{N}_]*)`) })

var headingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$`) })

// chunkMarkdown splits Markdown at ATX headings outside fenced code.
func chunkMarkdown(src []byte) []Chunk {
	lines := splitLines(src)
	var out []Chunk
	start, sym := 0, ""
	fence := ""
	flush := func(end int) {
		if end > start {
			out = append(out, splitLong(lines, start, end, sym, "section")...)
		}
	}
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if m := headingRE().FindStringSubmatch(l); m != nil {
			flush(i)
			start, sym = i, m[1]+" "+m[2]
		}
	}
	flush(len(lines))
	return out
}

// symbolRE recognises a named top-level definition in common languages; it
// only names chunks and feeds the symbol table, so it is deliberately narrow.
type symbolForm struct {
	re   *regexp.Regexp
	kind string
}

// Compiled on first use: a hook process that never chunks a file should
// not pay for them at start-up.
var symbolRE = sync.OnceValue(func() []symbolForm {
	return []symbolForm{
		{regexp.MustCompile(`^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*[\(:\[]`), "def"},
		{regexp.MustCompile(`^func\s+(?:\([^)]*\)\s*)?([\p{L}_][\p{L}\p{N}_]*)\s*[\(\[<]`), "function"}, // Go that does not parse, Swift
		{regexp.MustCompile(`^class\s+([A-Za-z_$][\w$]*)`), "class"},
		{regexp.MustCompile(`^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*[\(<]`), "function"},
		{regexp.MustCompile(`^(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+([A-Za-z_$][\w$]*)`), "class"},
		{regexp.MustCompile(`^(?:export\s+)?(?:interface|type|enum)\s+([A-Za-z_$][\w$]*)`), "type"},
		{regexp.MustCompile(`^(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+([A-Za-z_]\w*)`), "function"},
		{regexp.MustCompile(`^(?:pub(?:\([\w:]+\))?\s+)?(?:struct|enum|trait|union)\s+([A-Za-z_]\w*)`), "type"},
		{regexp.MustCompile(`^(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)`), "function"},
		{regexp.MustCompile(`^([A-Za-z_][\w-]*)\s*\(\)\s*\{`), "function"}, // shell
		{regexp.MustCompile(`^(?:module|defmodule)\s+([A-Z][\w.:]*)`), "module"},
	}
})

// blockSymbol names a block by its first top-level definition line, if
// any: a short block joined to the next (an import line above a function)
// is named after the definition that follows it.
func blockSymbol(lines []string) (string, string) {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || l[0] == ' ' || l[0] == '\t' || isCommentLine(t) || strings.HasPrefix(t, "@") {
			continue
		}
		for _, s := range symbolRE() {
			if m := s.re.FindStringSubmatch(t); m != nil {
				return m[1], s.kind
			}
		}
	}
	return "", ""
}

func isCommentLine(t string) bool {
	for _, p := range []string{"#", "//", "/*", "*", "--", ";", "<!--", "%"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

func isCloser(t string) bool {
	if t == "" {
		return false
	}
	switch t[0] {
	case '}', ')', ']':
		return true
	}
	return t == "end" || strings.HasPrefix(t, "end ") || strings.HasPrefix(t, "</")
}

// chunkBlocks splits text into top-level blocks: a block starts at a line
// in column 0, outside any open bracket, that follows a blank line, a
// closing line, or an indented body. Comments and decorators directly
// above a definition stay with it. Long blocks are split, short ones joined.
func chunkBlocks(src []byte) []Chunk {
	lines := splitLines(src)
	var starts []int
	depth := 0
	prevBlank, prevCloser, prevIndented := true, false, false
	for i, l := range lines {
		t := strings.TrimSpace(l)
		blank := t == ""
		top := !blank && (l[0] != ' ' && l[0] != '\t')
		if top && depth == 0 && !isCloser(t) && (i == 0 || prevBlank || prevCloser || prevIndented) {
			starts = append(starts, i)
		}
		depth += bracketDelta(t)
		if depth < 0 {
			depth = 0
		}
		if !blank {
			prevCloser = top && isCloser(t)
			prevIndented = !top
		}
		prevBlank = blank
	}
	if len(lines) > 0 && (len(starts) == 0 || starts[0] != 0) {
		starts = append([]int{0}, starts...)
	}
	// Join short blocks into the next while the result stays within bounds.
	var merged []int
	for i, s := range starts {
		end := len(lines)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		if len(merged) > 0 {
			last := merged[len(merged)-1]
			if s-last < minChunkLines && end-last <= maxChunkLines {
				continue // absorb s into the block at last
			}
		}
		merged = append(merged, s)
	}
	var out []Chunk
	for i, s := range merged {
		end := len(lines)
		if i+1 < len(merged) {
			end = merged[i+1]
		}
		for end > s && strings.TrimSpace(lines[end-1]) == "" {
			end--
		}
		if end == s {
			continue
		}
		sym, kind := blockSymbol(lines[s:end])
		if kind == "" {
			kind = "block"
		}
		out = append(out, splitLong(lines, s, end, sym, kind)...)
	}
	return out
}

// bracketDelta is a line's net opening brackets, ignoring quoted strings
// and line comments roughly: enough to keep a block's inner column-0 lines
// (heredocs, multi-line literals) from starting new blocks.
func bracketDelta(t string) int {
	d := 0
	var quote byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		if quote != 0 {
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
		case '#':
			if i == 0 || t[i-1] == ' ' {
				return d
			}
		case '/':
			if i+1 < len(t) && t[i+1] == '/' {
				return d
			}
		case '{', '(', '[':
			d++
		case '}', ')', ']':
			d--
		}
	}
	return d
}

// splitLong emits lines[start:end] as one chunk, or several of at most
// maxChunkLines each, cut at the last blank line before the limit when
// there is one.
func splitLong(lines []string, start, end int, sym, kind string) []Chunk {
	var out []Chunk
	for start < end {
		stop := end
		if stop-start > maxChunkLines {
			stop = start + maxChunkLines
			for j := stop - 1; j > start+maxChunkLines/2; j-- {
				if strings.TrimSpace(lines[j]) == "" {
					stop = j + 1
					break
				}
			}
		}
		e := stop
		for e > start && strings.TrimSpace(lines[e-1]) == "" {
			e--
		}
		if e > start {
			c := Chunk{StartLine: start + 1, EndLine: e, Symbol: sym, Kind: kind, Text: strings.Join(lines[start:e], "\n")}
			if sym != "" && kind != "section" && kind != "block" && len(out) == 0 {
				c.Defs = []Def{{Name: sym, Kind: kind, Line: start + 1 + symbolLine(lines[start:e], sym)}}
			}
			out = append(out, c)
		}
		start = stop
	}
	return out
}

// symbolLine is the index of the top-level line that declares sym.
func symbolLine(lines []string, sym string) int {
	for i, l := range lines {
		if l == "" || l[0] == ' ' || l[0] == '\t' {
			continue
		}
		for _, s := range symbolRE() {
			if m := s.re.FindStringSubmatch(strings.TrimSpace(l)); m != nil && m[1] == sym {
				return i
			}
		}
	}
	return 0
}

// isBinary reports whether data looks like a binary file: a NUL byte in
// its first 8 KiB, as git decides.
func isBinary(data []byte) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	return bytes.IndexByte(data, 0) >= 0
}
