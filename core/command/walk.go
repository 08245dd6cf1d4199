package command

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// source is one parsed script: the line itself or a string given to sh -c.
type source struct {
	text string
	// dirChanges holds the offsets of commands that may be cd, pushd or
	// popd, so loops and functions can tell whether they change directory.
	dirChanges []uint
	// deep is set when the tree was too deep to scan: any part of it may
	// change directory.
	deep bool
	// calls and words count the simple commands and their words, to size
	// the analysis.
	calls, words int
}

func newSource(text string, file *syntax.File) *source {
	src := &source{text: text}
	src.deep = walkLimited(file, func(n syntax.Node) bool {
		if call, ok := n.(*syntax.CallExpr); ok {
			src.calls++
			src.words += len(call.Args)
			if slices.ContainsFunc(call.Args, src.mayChangeDir) {
				src.dirChanges = append(src.dirChanges, call.Pos().Offset())
			}
		}
		return true
	})
	slices.Sort(src.dirChanges)
	return src
}

// maxWalkDepth bounds syntax.Walk, which recurses: chains of pipes, && or
// arithmetic operators nest without brackets, and a maxLineBytes line can nest
// them deep enough to exhaust the stack.
const maxWalkDepth = 1024

// walkLimited is syntax.Walk that stops descending below maxWalkDepth. It
// reports whether it had to, so callers can assume the worst of what it
// did not see.
func walkLimited(node syntax.Node, f func(syntax.Node) bool) (cut bool) {
	depth := 0
	syntax.Walk(node, func(n syntax.Node) bool {
		switch {
		case n == nil:
			depth--
			return false
		case depth >= maxWalkDepth:
			cut = true
			return false
		case !f(n):
			return false
		}
		depth++
		return true
	})
	return cut
}

// slice returns the source text of n.
func (s *source) slice(n syntax.Node) string {
	start, end := n.Pos().Offset(), n.End().Offset()
	if start > end || end > uint(len(s.text)) {
		return ""
	}
	return s.text[start:end]
}

var unquote = strings.NewReplacer(`\`, "", `'`, "", `"`, "")

// mayChangeDir reports whether w may be cd, pushd or popd however it is
// quoted. $'…' and $"…" can spell anything.
func (s *source) mayChangeDir(w *syntax.Word) bool {
	text := s.slice(w)
	if strings.Contains(text, `$'`) || strings.Contains(text, `$"`) {
		return true
	}
	switch unquote.Replace(text) {
	case "cd", "pushd", "popd":
		return true
	}
	return false
}

// changesDir reports whether n may contain a directory change.
func (s *source) changesDir(n syntax.Node) bool {
	if s.deep {
		return true
	}
	start, end := n.Pos().Offset(), n.End().Offset()
	i, _ := slices.BinarySearch(s.dirChanges, start)
	return i < len(s.dirChanges) && s.dirChanges[i] < end
}

// funcScope records the functions defined so far in one part of the line.
// Scopes chain to their parent; a boundary scope starts a new process
// (subshell, pipeline element), so unset -f does not reach past it.
type funcScope struct {
	parent   *funcScope
	defined  map[string]bool // false records an unset
	boundary bool
	opaque   bool // unset with a computed name: no function is known from here up
}

func (s *funcScope) lookup(name string) bool {
	for ; s != nil; s = s.parent {
		if s.opaque {
			return false
		}
		if d, ok := s.defined[name]; ok {
			return d
		}
	}
	return false
}

func (s *funcScope) set(name string, defined bool) {
	if s.defined == nil {
		s.defined = map[string]bool{}
	}
	s.defined[name] = defined
}

// unset forgets name, or every function when name is "", up to the
// enclosing process boundary: an unset inside `a && unset -f f` may run.
func (s *funcScope) unset(name string) {
	for ; s != nil; s = s.parent {
		if name == "" {
			s.opaque = true
		} else {
			s.set(name, false)
		}
		if s.boundary {
			return
		}
	}
}

// shellState is what one shell process carries from statement to
// statement: its possible working directories and whether its stdin was
// redirected by exec.
type shellState struct {
	// dirs are the directories the shell may be in, relative to where the
	// line starts ("" is the start); nil with unknownDir when cd cannot be
	// followed.
	dirs       []string
	unknownDir bool
	stdin      bool
}

func (s *shellState) clone() *shellState {
	c := *s
	c.dirs = slices.Clone(s.dirs)
	return &c
}

// cd records a possible change to dir (literal, as written), keeping the
// old directories since cd may fail.
func (s *shellState) cd(dir string, known bool) {
	if !known {
		s.unknownDir, s.dirs = true, nil
		return
	}
	if s.unknownDir {
		return
	}
	for _, d := range slices.Clone(s.dirs) {
		next := joinPath(d, dir)
		if !slices.Contains(s.dirs, next) {
			s.dirs = append(s.dirs, next)
		}
	}
	if len(s.dirs) > maxDirs {
		s.unknownDir, s.dirs = true, nil
	}
}

// chdir records that a command starts in dir: unlike cd, failing to get
// there means the command does not run.
func (s *shellState) chdir(dir word) {
	if !dir.Literal {
		s.unknownDir, s.dirs = true, nil
		return
	}
	if s.unknownDir {
		return
	}
	var next []string
	for _, d := range s.dirs {
		if j := joinPath(d, dir.Text); !slices.Contains(next, j) {
			next = append(next, j)
		}
	}
	s.dirs = next
}

// joinPath joins a relative or absolute path onto dir without cleaning it:
// the gate canonicalises paths itself.
func joinPath(dir, p string) string {
	if dir == "" || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
		return p
	}
	return strings.TrimSuffix(dir, "/") + "/" + p
}

// frame is the context a statement runs in.
type frame struct {
	src        *source
	funcs      *funcScope
	shell      *shellState
	fed        bool     // stdin comes from a pipe or redirection in the line
	raw        bool     // the command is run by another program's option with arguments of its choosing: no model applies
	fn         string   // the function whose body this is, if any
	wrappers   []string // wrappers around the commands run here
	depth      int      // nesting of statements and words
	shellDepth int      // nesting of sh -c
}

func newFrame() frame {
	return frame{funcs: &funcScope{boundary: true}, shell: &shellState{dirs: []string{""}}}
}

// subshell is a frame for a separate process: nothing it defines or
// changes reaches the parent.
func (f frame) subshell() frame {
	f.funcs = &funcScope{parent: f.funcs, boundary: true}
	f.shell = f.shell.clone()
	return f
}

// conditional is a frame for code that may or may not run: functions it
// defines are not known afterwards, directory changes are kept as
// possibilities.
func (f frame) conditional() frame {
	f.funcs = &funcScope{parent: f.funcs}
	return f
}

func (f frame) wrapped(name string) frame {
	f.wrappers = append(slices.Clip(f.wrappers), name)
	return f
}

// enter counts one level of nesting and reports whether the walk may go on.
func (a *analyzer) enter(fr *frame) bool {
	if a.err != nil {
		return false
	}
	fr.depth++
	if fr.depth > maxDepth {
		a.fail(CodeTooComplex, "the line nests more than %d levels deep", maxDepth)
		return false
	}
	return true
}

func (a *analyzer) stmts(list []*syntax.Stmt, fr frame) {
	for _, s := range list {
		if a.err != nil {
			return
		}
		a.stmt(s, fr)
	}
}

func (a *analyzer) stmt(s *syntax.Stmt, fr frame) {
	if !a.enter(&fr) {
		return
	}
	if s.Background || s.Coprocess || s.Disown {
		fr = fr.subshell()
	}
	if fr.shell.stdin {
		fr.fed = true
	}
	if _, simple := s.Cmd.(*syntax.CallExpr); !simple {
		// A compound command's redirections are set up before it runs; a
		// simple command's after its words are expanded (see call).
		a.redirects(s, &fr)
	}
	if s.Cmd != nil {
		a.command(s.Cmd, s, fr)
	}
}

// redirects walks a statement's redirections and notes whether they feed
// its standard input.
func (a *analyzer) redirects(s *syntax.Stmt, fr *frame) {
	for _, r := range s.Redirs {
		if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
			// {name}>file assigns name, and bash evaluates a subscript in
			// it: {a[$(cmd)]}>file runs cmd.
			name := strings.TrimSuffix(strings.TrimPrefix(r.N.Value, "{"), "}")
			if _, ok := a.varName(literalWord(name), "a {name} redirection"); !ok {
				return
			}
		}
		a.redirect(r, *fr)
		if readsStdin(r) {
			fr.fed = true
		}
	}
}

func (a *analyzer) command(cmd syntax.Command, s *syntax.Stmt, fr frame) {
	switch c := cmd.(type) {
	case *syntax.CallExpr:
		a.call(c, s, fr)
	case *syntax.Block:
		a.stmts(c.Stmts, fr)
	case *syntax.Subshell:
		a.stmts(c.Stmts, fr.subshell())
	case *syntax.BinaryCmd:
		pipe := isPipe(c.Op)
		for i, elem := range chain(c) {
			switch {
			case pipe:
				sub := fr.subshell()
				sub.fed = sub.fed || i > 0
				a.stmt(elem, sub)
			case i == 0:
				a.stmt(elem, fr)
			default: // && and ||: may not run
				a.stmt(elem, fr.conditional())
			}
		}
	case *syntax.IfClause:
		a.stmts(c.Cond, fr)
		a.stmts(c.Then, fr.conditional())
		if c.Else != nil {
			a.command(c.Else, s, fr.conditional())
		}
	case *syntax.WhileClause:
		a.endlessLoop(c, fr)
		a.loop(c, fr)
		body := fr.conditional()
		a.stmts(c.Cond, body)
		a.stmts(c.Do, body)
	case *syntax.ForClause:
		a.endlessLoop(c, fr)
		a.loop(c, fr)
		a.forClause(c, fr)
	case *syntax.CaseClause:
		a.word(c.Word, fr)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				a.word(p, fr)
			}
			a.stmts(item.Stmts, fr.conditional())
		}
	case *syntax.FuncDecl:
		a.funcDecl(c, fr)
	case *syntax.ArithmCmd:
		a.arith(c.X, fr)
	case *syntax.TestClause:
		a.test(c.X, fr)
	case *syntax.DeclClause:
		a.declClause(c, fr)
	case *syntax.LetClause:
		a.letClause(c, fr)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			a.stmt(c.Stmt, fr.wrapped("time"))
		}
	case *syntax.CoprocClause:
		co := fr.subshell()
		co.fed = true // later commands write to it
		if c.Name != nil {
			name := a.word(c.Name, fr)
			a.setVar(name.Text, nil, "coproc", fr)
		}
		a.stmt(c.Stmt, co)
	default:
		a.fail(CodeUnsupported, "the construct %q is not supported", fr.src.slice(cmd))
	}
}

func isPipe(op syntax.BinCmdOperator) bool {
	return op == syntax.Pipe || op == syntax.PipeAll
}

// chain flattens a left-nested run of pipes (a | b | c) or of && and ||
// into its statements, so a long chain does not count as deep nesting.
func chain(c *syntax.BinaryCmd) []*syntax.Stmt {
	pipe := isPipe(c.Op)
	var rev []*syntax.Stmt
	for {
		rev = append(rev, c.Y)
		x := c.X
		inner, ok := x.Cmd.(*syntax.BinaryCmd)
		if !ok || isPipe(inner.Op) != pipe || x.Negated || x.Background || x.Coprocess || x.Disown || len(x.Redirs) > 0 {
			rev = append(rev, x)
			break
		}
		c = inner
	}
	slices.Reverse(rev)
	return rev
}

// loop makes the working directory unknown when a loop body changes it,
// since later iterations run where earlier ones moved to.
func (a *analyzer) loop(n syntax.Node, fr frame) {
	if fr.src.changesDir(n) {
		fr.shell.cd("", false)
	}
}

func (a *analyzer) forClause(c *syntax.ForClause, fr frame) {
	switch loop := c.Loop.(type) {
	case *syntax.WordIter:
		items := make([]word, len(loop.Items))
		for i, w := range loop.Items {
			items[i] = a.word(w, fr)
		}
		how := "for"
		if c.Select {
			how = "select"
			a.setVar("REPLY", nil, how, fr)
		}
		for i := range items {
			a.setVar(loop.Name.Value, &items[i], how, fr)
		}
		if len(items) == 0 || c.Select {
			// for x; iterates over "$@"; select takes what is typed
			a.setVar(loop.Name.Value, nil, how, fr)
		}
	case *syntax.CStyleLoop:
		for _, x := range []syntax.ArithmExpr{loop.Init, loop.Cond, loop.Post} {
			if x != nil {
				a.arith(x, fr)
			}
		}
	}
	a.stmts(c.Do, fr.conditional())
}

// funcDecl lists the body's commands. A later direct call of the function
// is then not listed again. The body may run from anywhere after the
// definition, so it is judged with stdin fed and, when the line changes
// directory anywhere, an unknown working directory.
func (a *analyzer) funcDecl(c *syntax.FuncDecl, fr frame) {
	names := c.Names
	if c.Name != nil {
		names = append([]*syntax.Lit{c.Name}, names...)
	}
	body := fr.conditional()
	body.fed = true
	body.shell = fr.shell.clone()
	if len(fr.src.dirChanges) > 0 || fr.src.deep {
		body.shell.cd("", false)
	}
	for _, n := range names {
		body.funcs.set(n.Value, true)
		a.graph.define(n.Value)
	}
	if len(names) > 0 {
		body.fn = names[0].Value
	}
	a.stmt(c.Body, body)
	for _, n := range names {
		fr.funcs.set(n.Value, true)
	}
	if fr.src.changesDir(c.Body) {
		fr.shell.cd("", false)
	}
}

func (a *analyzer) letClause(c *syntax.LetClause, fr frame) {
	words := []word{literalWord("let")}
	for _, x := range c.Exprs {
		if w, ok := x.(*syntax.Word); ok {
			info := a.word(w, fr)
			a.arithWord(w, info, fr)
			words = append(words, info)
			continue
		}
		a.arith(x, fr)
		text := fr.src.slice(x)
		words = append(words, word{Word: Word{Text: text, Literal: !hasExpansion(x)}})
	}
	a.addCommand(words, fr)
}

// readsStdin reports whether r replaces standard input.
func readsStdin(r *syntax.Redirect) bool {
	if r.N != nil && r.N.Value != "0" {
		return false
	}
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return true
	}
	return false
}

// redirect walks a redirection's words and records the file it writes.
func (a *analyzer) redirect(r *syntax.Redirect, fr frame) {
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		// {name}>file stores the new descriptor in name.
		name := strings.TrimSuffix(strings.TrimPrefix(r.N.Value, "{"), "}")
		fd := literalWord("10")
		a.setVar(name, &fd, "a {name} redirection", fr)
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		// The delimiter is never expanded; an unquoted body is, and command
		// substitutions in it run.
		if r.Hdoc != nil {
			a.word(r.Hdoc, fr)
		}
		return
	}
	if r.Word == nil {
		return
	}
	target := a.word(r.Word, fr)
	appends := false
	switch r.Op {
	case syntax.AppOut, syntax.AppClob, syntax.AppAll, syntax.AppAllClob:
		appends = true
	case syntax.RdrIn:
		a.read(target, fr)
		return
	case syntax.RdrInOut:
		a.read(target, fr)
	case syntax.RdrOut, syntax.RdrClob, syntax.RdrAll, syntax.RdrAllClob:
	case syntax.DplOut:
		// >&word duplicates a descriptor, or writes to a file when the
		// word is not a number or "-".
		if target.Literal && isFD(target.Text) {
			return
		}
	default: // <, <&, <<<
		return
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // > >(cmd) writes to a pipe; cmd is listed
		}
	}
	a.write(target, appends, fr)
}

// isFD reports whether s names a file descriptor in a duplication: "1",
// "2-" (move) or "-" (close).
func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	if s == "" {
		return true
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// write records a file written at path, resolved against the directories
// the shell may be in.
func (a *analyzer) write(path word, appends bool, fr frame) {
	a.writeTree(path, appends, false, fr)
}

// writeTree is write for a program that may write below path too.
func (a *analyzer) writeTree(path word, appends, tree bool, fr frame) {
	switch {
	case path.Literal && harmlessTarget(path.Text):
	default:
		a.place(path, fr, func(p Read) {
			a.addWrite(Write{Path: p.Path, Literal: p.Literal, Unknown: p.Unknown, Append: appends, Tree: tree})
		})
	}
}

// read records a file a redirection or a program reads, resolved like a
// write against the directories the shell may be in.
func (a *analyzer) read(path word, fr frame) {
	switch {
	case path.procSubst && strings.HasPrefix(path.Text, "<(") && strings.HasSuffix(path.Text, ")"):
		// <(cmd) is a pipe from cmd, which is listed
	case path.Literal && (harmlessTarget(path.Text) || harmlessSource(path.Text)):
	default:
		a.place(path, fr, a.addRead)
	}
}

// readPlace records that a program lists or works in a directory (see
// Read.Names): "." is the directory the command runs in.
func (a *analyzer) readPlace(path word, fr frame) {
	a.place(path, fr, func(p Read) {
		p.Names = true
		a.addRead(p)
	})
}

// place gives each place a path word lands: joined onto each directory
// the shell may be in when it is relative, as the source text when it is
// computed, and unknown when it is relative to a directory the line
// changed to in a way that cannot be followed.
func (a *analyzer) place(path word, fr frame, each func(Read)) {
	sh := fr.shell
	moved := sh.unknownDir || len(sh.dirs) != 1 || sh.dirs[0] != ""
	switch {
	case path.input:
		// filled in by xargs or find when the line runs
		each(Read{Path: path.Text, Unknown: true})
		return
	case !path.Literal && path.lead == 0:
		// It starts with a value: absolute or relative, only the line
		// knows. $PWD after a cd is no longer the starting directory.
		each(Read{Path: path.Text, Unknown: moved && strings.Contains(path.Text, "PWD")})
		return
	case path.lead == '/' || strings.HasPrefix(path.Text, "/"):
		each(Read{Path: path.Text, Literal: path.Literal})
		return
	case sh.unknownDir:
		// Literal stays: a relative path in an unknown directory, whose
		// name the gate still checks.
		each(Read{Path: path.Text, Unknown: true, Literal: path.Literal})
		return
	}
	text := path.Text
	if path.Literal && strings.HasPrefix(text, "~") {
		text = "./" + text // a quoted ~ names a directory called ~
	}
	for _, d := range sh.dirs {
		p := joinPath(d, text)
		// A directory reached with cd ~/… is the gate's to expand.
		each(Read{Path: p, Literal: path.Literal && !strings.HasPrefix(p, "~")})
	}
}

// harmlessSource reports input redirection targets that hold no one's data.
func harmlessSource(p string) bool {
	switch p {
	case "/dev/stdin", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/full":
		return true
	}
	return false
}

// harmlessTarget reports redirection targets that are not files.
func harmlessTarget(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	if n, ok := strings.CutPrefix(p, "/dev/fd/"); ok && n != "" {
		return isFD(n) && !strings.HasSuffix(n, "-")
	}
	return false
}

// hasExpansion reports whether n contains any expansion.
func hasExpansion(n syntax.Node) bool {
	found := false
	cut := walkLimited(n, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob:
			found = true
		}
		return !found
	})
	return found || cut
}
