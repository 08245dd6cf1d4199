package l1

import (
	"context"
	"strings"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/ask"
)

// A look-up is read by its vocabulary and its symbol is found in the
// workspace's declarations (tiers/reader), not by the grammar's sentence
// forms. The grammar's reading is kept where it says more than a name: a
// kind, file, line, package or function that resolve then checks.

// readsAsLookUp reports whether a request should be read as a look-up:
// the grammar read none of its edits, and its words ask for one. A slash
// command is taken as typed.
func readsAsLookUp(prompt string, cmd Command) bool {
	if strings.HasPrefix(strings.TrimSpace(prompt), "/") {
		return false
	}
	switch cmd.(type) {
	case nil, Lookup, Find:
	default:
		return false
	}
	return ask.Read(context.Background(), prompt, nil).Intent.LookUp()
}

// readLookUp reads prompt as a look-up against the workspace's Go
// declarations; the grammar's reading (cmd) is kept when it names the same
// symbol with more said about it, or is a text search the words allow.
func readLookUp(ctx context.Context, prompt, root string, files core.Files, cmd Command) (Command, error) {
	syms := goSymbols{root, files}
	rd := ask.Read(ctx, prompt, syms)
	gl, isLookup := cmd.(Lookup)
	if rd.Refused != "" {
		switch {
		case rd.Weak && (isLookup && gl.OrText || isFind(cmd)):
			return cmd, nil // "find TODO": a text search
		case isLookup && gl.Target.said() && (rd.Symbol == "" || lastPart(goName(rd.Symbol)) == lastPart(gl.Target.Name)):
			// "the variable n in Sum", "the type Config in package
			// pricing": resolve checks what the request says of it. A
			// request the words read as a definition ("go to X in f.go")
			// is answered with the declaration alone, never its uses.
			if rd.Intent == ask.Definition && gl.Want == Uses {
				gl.Want, gl.OrText = Definition, false
			}
			return gl, nil
		}
		return nil, &Declined{rd.Refused}
	}
	want := Definition
	switch rd.Intent {
	case ask.Callers:
		want = Callers
	case ask.Uses:
		want = Uses
	}
	name := goName(rd.Symbol)
	if isLookup && lastPart(gl.Target.Name) == lastPart(name) && gl.Target.said() {
		gl.Want, gl.OrText = want, false
		return gl, nil
	}
	target := Symbol{Name: name}
	if want != Definition || rd.Called {
		// the one function or method of that name, not a field namesake
		target.Kind = syms.callableKind(name)
	}
	if rd.Kind != "" || rd.File != "" {
		// "the Dir type", "cleanPath in server.go": pin the one
		// declaration the words single out
		if ds, err := syms.declsOf(name, rd.Kind, rd.File, want != Definition || rd.Called); err == nil && len(ds) == 1 {
			target.Kind, target.File, target.Line = ds[0].kind, ds[0].file, ds[0].line
		}
	}
	l := Lookup{Target: target, Want: want}
	if want == Definition && target.File == "" {
		// one method declared per build (roundtrip.go, roundtrip_js.go):
		// the answer cites each
		if ds, err := syms.decls(name, rd.Called); err == nil && len(ds) > 1 && len(ds) <= ask.MaxDefinitionSites && buildTwins(ds) {
			l.Target.Kind, l.Target.File, l.Target.Line = ds[0].kind, ds[0].file, ds[0].line
			for _, d := range ds[1:] {
				l.Builds = append(l.Builds, d.where()+": "+d.text)
			}
		}
	}
	return l, nil
}

// buildTwins reports whether ds are one symbol declared once per build:
// the same package, receiver, name and kind in files whose names differ
// only by a build suffix (_js, _unix, _windows, _wasm …) or a build tag.
func buildTwins(ds []decl) bool {
	stem := func(f string) string {
		f = strings.TrimSuffix(f, ".go")
		if i := strings.LastIndex(f, "/"); i >= 0 {
			f = f[i+1:]
		}
		if i := strings.Index(f, "_"); i >= 0 {
			f = f[:i]
		}
		return f
	}
	dir := func(f string) string { return f[:strings.LastIndex(f, "/")+1] }
	files := map[string]bool{}
	for _, d := range ds {
		if d.pkg != ds[0].pkg || d.recv != ds[0].recv || d.kind != ds[0].kind || dir(d.file) != dir(ds[0].file) ||
			stem(d.file) != stem(ds[0].file) || files[d.file] || strings.HasSuffix(d.file, "_test.go") {
			return false
		}
		files[d.file] = true
	}
	return true
}

func isFind(c Command) bool {
	_, ok := c.(Find)
	return ok
}

// said reports whether a request said more of a symbol than its name.
func (s Symbol) said() bool {
	return s.Kind != KindAny || s.File != "" || s.Line != 0 || s.Pkg != "" || s.Func != ""
}

func lastPart(s string) string { return s[strings.LastIndex(s, ".")+1:] }

// goName is a reader's symbol as resolve takes it: (*T).M is T.M, and
// dir/pkg.X is pkg.X.
func goName(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	if n, ok := symbolWord(s); ok {
		return n
	}
	return s
}

// goSymbols is the workspace's Go symbol table as the reader asks it:
// package-level declarations and members (methods, fields, interface
// methods), never locals or parameters, which any word may name.
type goSymbols struct {
	root  string // the workspace, whose name index says which files declare a name
	files core.Files
}

func (g goSymbols) Declarations(_ context.Context, name string, callable bool) (int, error) {
	ds, err := g.decls(name, callable)
	if err == nil && len(ds) > 1 && len(ds) <= ask.MaxDefinitionSites && buildTwins(ds) {
		return 1, nil // one symbol, declared per build
	}
	return len(ds), err
}

// Spellings lists the declared names that are word in lower case.
func (g goSymbols) Spellings(_ context.Context, word string) ([]string, error) {
	return indexFor(g.root).spellings(g.files, word), nil
}

// DeclarationsOf counts the declarations of name of one kind ("type",
// "func", "method", "field", "var", "const"; "" any) in one file ("" any).
func (g goSymbols) DeclarationsOf(_ context.Context, name, kind, file string, callable bool) (int, error) {
	ds, err := g.declsOf(name, kind, file, callable)
	return len(ds), err
}

func (g goSymbols) declsOf(name, kind, file string, callable bool) ([]decl, error) {
	all, err := g.decls(name, callable)
	if err != nil {
		return nil, err
	}
	var out []decl
	for _, d := range all {
		if file != "" && !sameFile(file, d.file) {
			continue
		}
		switch kind {
		case "":
		case "package": // declared at package level: not a method or field
			if d.kind == KindMethod || d.kind == KindField {
				continue
			}
		case "func":
			if d.kind != KindFunc && d.kind != KindMethod {
				continue
			}
		case "type":
			if !KindType.Matches(d.kind) {
				continue
			}
		case "method":
			if d.kind != KindMethod {
				continue
			}
		case "field":
			if d.kind != KindField {
				continue
			}
		case "var":
			if d.kind != KindVar {
				continue
			}
		case "const":
			if d.kind != KindConst {
				continue
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func (g goSymbols) decls(name string, callable bool) ([]decl, error) {
	n, ok := symbolWord(goName(name))
	if !ok {
		return nil, nil
	}
	parts := strings.Split(n, ".")
	all, err := declsNamed(g.root, g.files, parts[len(parts)-1], parts[:len(parts)-1])
	if err != nil {
		return nil, err
	}
	var out []decl
	for _, d := range all {
		if callable && d.kind != KindFunc && d.kind != KindMethod {
			continue
		}
		if d.fn == "" && d.kind != KindParam && d.kind != KindImport && qualified(d, parts[:len(parts)-1]) {
			out = append(out, d)
		}
	}
	return out, nil
}

// callableKind is the kind of the one function or method named name, or
// KindAny when there is not exactly one.
func (g goSymbols) callableKind(name string) Kind {
	if ds, err := g.decls(name, true); err == nil && len(ds) == 1 {
		return ds[0].kind
	}
	return KindAny
}
