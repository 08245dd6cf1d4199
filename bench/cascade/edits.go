package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"go/types"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/tools/go/packages"

	"github.com/joulehook/joule/core"
)

// writeFiles writes files under root.
func writeFiles(root string, files core.Files) error {
	for p, b := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// copyPackage copies dir's non-test Go files into files under rel.
func copyPackage(files core.Files, dir, rel string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		files[rel+"/"+n] = b
	}
	return nil
}

// renameTarget is one declaration a rename request may name.
type renameTarget struct {
	Pkg, File  string // package path in the module, file relative to the module root
	Name, Qual string // the identifier, and how the prompt names it
	Offset     int    // byte offset of the declaring identifier in File
	Line, Col  int
	To         string
}

// renames builds rename requests over a scratch module of copied std
// packages, each with `gopls rename -w` on a copy of that module as ground
// truth. It returns no request and a note when gopls is missing.
func renames(ctx context.Context, rng *rand.Rand, env []string, gopls, work string, pool []stdPkg, n int) ([]*Request, string, []string, error) {
	var notes []string
	root := filepath.Join(work, "module")
	if n == 0 {
		return nil, root, nil, nil
	}
	if gopls == "" {
		return nil, root, []string{"gopls is not installed (go install golang.org/x/tools/gopls@v0.23.0): the rename class is skipped"}, nil
	}
	ver, err := goVersion(ctx, env)
	if err != nil {
		return nil, root, nil, err
	}
	files := core.Files{"go.mod": []byte("module example.com/std\n\ngo " + ver + "\n")}
	chosen := sample(rng, pool, max(3, (n+5)/6))
	for _, p := range chosen {
		if err := copyPackage(files, p.Dir, p.Path); err != nil {
			return nil, root, nil, err
		}
	}
	if err := writeFiles(root, files); err != nil {
		return nil, root, nil, err
	}
	cfg := &packages.Config{Context: ctx, Mode: loadMode, Dir: root, Env: env, Fset: token.NewFileSet()}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, root, nil, fmt.Errorf("loading the rename module: %w", err)
	}
	var groups [][]renameTarget
	for _, p := range pkgs {
		if len(p.Errors) > 0 {
			// A copy that does not type-check outside GOROOT stays in the
			// module (it is part of the tree) but gets no request.
			notes = append(notes, fmt.Sprintf("rename: %s does not type-check as a copy (%v); no request names it", p.PkgPath, p.Errors[0]))
			continue
		}
		ts := renameTargets(cfg.Fset, root, p)
		rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
		groups = append(groups, ts)
	}
	cands := roundRobin(groups, 3*n)
	var reqs []*Request
	// gopls runs on two cores at once; the requests are the first n
	// candidates gopls accepts, in candidate order, whatever the timing.
	for next := 0; next < len(cands) && len(reqs) < n; {
		batch := cands[next:min(len(cands), next+n-len(reqs))]
		wants := make([]core.Files, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		sem := make(chan struct{}, max(1, runtime.NumCPU()))
		for i, t := range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				wants[i], errs[i] = goplsRename(ctx, gopls, env, work, files, t)
			}()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, root, nil, err
		}
		for i, t := range batch {
			if errs[i] != nil {
				notes = append(notes, fmt.Sprintf("rename %s → %s: gopls refused, no request: %v", t.Qual, t.To, firstLine(errs[i].Error())))
				continue
			}
			prompt := "rename " + t.Qual + " to " + t.To
			if (next+i)%4 == 3 {
				prompt = fmt.Sprintf("rename %s:%d:%d to %s", t.File, t.Line, t.Col, t.To)
			}
			read, out := changeBytes(files, wants[i])
			reqs = append(reqs, &Request{Class: Rename, Prompt: prompt, Root: root, Symbol: t.Qual, Want: wants[i], ReadBytes: read, OutBytes: out,
				To: t.To, Def: Span{Path: t.File, Line: t.Line, Col: t.Col}}) // Def: where the declaration is, for a phrasing naming it
		}
		next += len(batch)
	}
	return reqs, root, notes, nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// goVersion is the toolchain's language version, e.g. "1.26".
func goVersion(ctx context.Context, env []string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "env", "GOVERSION")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "go")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return "", fmt.Errorf("go env GOVERSION: unexpected %q", out)
	}
	return parts[0] + "." + strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }), nil
}

// renameTargets lists p's package-level declarations, methods and struct
// fields, in source order.
func renameTargets(fset *token.FileSet, root string, p *packages.Package) []renameTarget {
	var out []renameTarget
	add := func(obj types.Object, qual string) {
		if obj.Name() == "_" || obj.Name() == "init" || obj.Name() == "main" {
			return
		}
		pos := fset.Position(obj.Pos())
		rel, err := filepath.Rel(root, pos.Filename)
		if err != nil || strings.HasPrefix(rel, "..") {
			return
		}
		to := obj.Name() + "2"
		if obj.Exported() {
			to = obj.Name() + "V2"
		}
		out = append(out, renameTarget{
			Pkg: p.PkgPath, File: filepath.ToSlash(rel), Name: obj.Name(), Qual: qual,
			Offset: pos.Offset, Line: pos.Line, Col: pos.Column, To: to,
		})
	}
	scope := p.Types.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		add(obj, p.Name+"."+name)
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for i := 0; i < named.NumMethods(); i++ {
			add(named.Method(i), name+"."+named.Method(i).Name())
		}
		if st, ok := named.Underlying().(*types.Struct); ok {
			for i := 0; i < st.NumFields(); i++ {
				if f := st.Field(i); !f.Embedded() {
					add(f, name+"."+f.Name())
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Offset < out[j].Offset
	})
	return out
}

// goplsRename runs `gopls rename -w` on a fresh copy of files and returns
// the copy's whole tree afterwards.
func goplsRename(ctx context.Context, gopls string, env []string, work string, files core.Files, t renameTarget) (core.Files, error) {
	dir, err := os.MkdirTemp(work, "gopls-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := writeFiles(dir, files); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, gopls, "rename", "-w", filepath.Join(dir, filepath.FromSlash(t.File))+":#"+strconv.Itoa(t.Offset), t.To)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
		}
		return nil, err
	}
	want, err := core.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if sameFiles(want, files) {
		return nil, errors.New("gopls changed nothing")
	}
	return want, nil
}

// changeBytes is the size of the files an edit touches (what an agent
// reads) and twice the size of the lines it changes (an edit block quotes
// the old lines and gives the new).
func changeBytes(prior, next core.Files) (read, out int) {
	for p, b := range next {
		old := prior[p]
		if bytes.Equal(old, b) {
			continue
		}
		read += len(old)
		ol, nl := bytes.SplitAfter(old, []byte("\n")), bytes.SplitAfter(b, []byte("\n"))
		if len(ol) != len(nl) {
			out += len(old) + len(b)
			continue
		}
		for i := range ol {
			if !bytes.Equal(ol[i], nl[i]) {
				out += len(ol[i]) + len(nl[i])
			}
		}
	}
	return read, out
}

func sameFiles(a, b core.Files) bool {
	if len(a) != len(b) {
		return false
	}
	for p, x := range a {
		y, ok := b[p]
		if !ok || !bytes.Equal(x, y) {
			return false
		}
	}
	return true
}

// Perturb rewrites src's layout without changing its tokens: runs of blanks
// between tokens change width, some disappear next to punctuation, lines
// gain trailing blanks and space indentation, blank lines are doubled. The
// result parses exactly as src does; gofmt puts it back in shape. The same
// rng state gives the same output.
func Perturb(rng *rand.Rand, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	var errs scanner.ErrorList
	s.Init(file, src, func(pos token.Position, msg string) { errs.Add(pos, msg) }, scanner.ScanComments)
	type tok struct {
		start, end int
		t          token.Token
	}
	var toks []tok
	for {
		pos, t, lit := s.Scan()
		if t == token.EOF {
			break
		}
		if t == token.SEMICOLON && lit == "\n" {
			continue // inserted, not in the source
		}
		start := file.Offset(pos)
		size := len(lit)
		if lit == "" || t.IsOperator() || t.IsKeyword() {
			size = len(t.String())
		}
		toks = append(toks, tok{start, start + size, t})
	}
	if errs.Len() > 0 {
		return nil, errs.Err()
	}
	var out bytes.Buffer
	prev := tok{t: token.ILLEGAL}
	emit := func(gap []byte, next tok) {
		nl := bytes.Count(gap, []byte("\n"))
		if nl == 0 {
			switch {
			case len(gap) > 0 && rng.IntN(3) == 0:
				out.WriteString(strings.Repeat(" ", 1+rng.IntN(3)))
			case len(gap) > 0 && droppable(prev.t, next.t) && rng.IntN(3) == 0:
			case len(gap) == 0 && prev.t != token.ILLEGAL && rng.IntN(6) == 0:
				out.WriteString(" ")
			default:
				out.Write(gap)
			}
			return
		}
		lines := bytes.Split(gap, []byte("\n"))
		for i, l := range lines {
			last := i == len(lines)-1
			switch {
			case i == 0 && rng.IntN(5) == 0:
				out.Write(l)
				out.WriteString(strings.Repeat(" ", 1+rng.IntN(3)))
			case last && rng.IntN(4) == 0:
				tabs := bytes.Count(l, []byte("\t"))
				out.WriteString(strings.Repeat(" ", 4*tabs+rng.IntN(3)))
			default:
				out.Write(l)
			}
			if !last {
				out.WriteByte('\n')
				if i == 0 && nl >= 2 && rng.IntN(3) == 0 {
					out.WriteByte('\n')
				}
			}
		}
	}
	at := 0
	for _, t := range toks {
		emit(src[at:t.start], t)
		out.Write(src[t.start:t.end])
		at, prev = t.end, t
	}
	emit(src[at:], tok{t: token.EOF})
	return out.Bytes(), nil
}

// droppable reports whether the blanks between a and b can go without
// gluing the two into another token: one is a word, the other a bracket,
// comma or an operator that cannot combine with a word.
func droppable(a, b token.Token) bool {
	word := func(t token.Token) bool { return t.IsLiteral() }
	punct := func(t token.Token) bool {
		switch t {
		case token.COMMA, token.LPAREN, token.RPAREN, token.LBRACK, token.RBRACK, token.LBRACE, token.RBRACE,
			token.ASSIGN, token.DEFINE, token.ADD, token.MUL, token.EQL, token.NEQ, token.LSS, token.GTR,
			token.LAND, token.LOR:
			return true
		}
		return false
	}
	return word(a) && punct(b) || punct(a) && word(b)
}

// formats builds format requests: real files of GOROOT/src, perturbed,
// gathered in one scratch tree, each to be put back by the gofmt binary.
func formats(ctx context.Context, rng *rand.Rand, gofmt, src, work string, pool []stdPkg, n int) ([]*Request, string, []string, error) {
	root := filepath.Join(work, "formats")
	if n == 0 {
		return nil, root, nil, nil
	}
	var cands []string
	for _, p := range pool {
		for _, f := range p.GoFiles {
			cands = append(cands, filepath.Join(p.Dir, f))
		}
	}
	sort.Strings(cands)
	var notes []string
	files := core.Files{}
	type item struct{ rel string }
	var items []item
	for _, abs := range sample(rng, cands, len(cands)) {
		if len(items) == n {
			break
		}
		b, err := os.ReadFile(abs)
		if err != nil || len(b) < 1<<10 || len(b) > 48<<10 {
			continue
		}
		rel, err := filepath.Rel(src, abs)
		if err != nil {
			continue
		}
		rel = filepath.ToSlash(rel)
		pert, err := Perturb(rng, b)
		if err != nil {
			notes = append(notes, fmt.Sprintf("format: %s does not scan: %v", rel, err))
			continue
		}
		files[rel] = pert
		items = append(items, item{rel})
	}
	if err := writeFiles(root, files); err != nil {
		return nil, root, nil, err
	}
	var reqs []*Request
	for _, it := range items {
		want, err := runGofmt(ctx, gofmt, files[it.rel])
		if err != nil {
			return nil, root, nil, fmt.Errorf("gofmt %s: %w", it.rel, err)
		}
		if bytes.Equal(want, files[it.rel]) {
			continue // nothing to format: not a request
		}
		next := files.Clone()
		next[it.rel] = want
		read, out := changeBytes(files, next)
		reqs = append(reqs, &Request{Class: Format, Prompt: "format " + it.rel, Root: root, Symbol: it.rel, Want: next, ReadBytes: read, OutBytes: out})
	}
	return reqs, root, notes, nil
}

// runGofmt formats src with the gofmt binary.
func runGofmt(ctx context.Context, gofmt string, src []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, gofmt)
	cmd.Stdin = bytes.NewReader(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
