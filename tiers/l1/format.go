package l1

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/format"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/tools/imports"
	"mvdan.cc/sh/v3/fileutil"
	"mvdan.cc/sh/v3/syntax"

	"github.com/joulehook/joule/core"
)

// A formatter formats one class of files. Go and shell are formatted in
// process; the other classes by the user's own tool when it is on PATH.
type formatter struct {
	class string   // what the user reads in a note: "Python"
	tools []string // candidates on PATH, preferred first; nil for in-process
	// args is the command line for a file given on stdin, formatted to
	// stdout; abs is the file's path, so the tool finds its configuration.
	args func(tool, abs string, files core.Files, rel string) []string
}

var (
	shellExt = map[string]bool{".sh": true, ".bash": true, ".bats": true, ".mksh": true, ".zsh": true}
	webExt   = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".ts": true, ".mts": true, ".cts": true, ".tsx": true,
		".json": true, ".css": true, ".scss": true, ".less": true, ".md": true, ".markdown": true}
	cExt = map[string]bool{".c": true, ".h": true, ".cc": true, ".cpp": true, ".cxx": true, ".hh": true, ".hpp": true, ".hxx": true}
)

// external are the formatters joule runs from PATH, by file class.
var external = []struct {
	match func(rel string) bool
	formatter
}{
	{func(rel string) bool { return webExt[path.Ext(rel)] }, formatter{"JavaScript/TypeScript/JSON/CSS/Markdown", []string{"prettier"},
		func(_, abs string, _ core.Files, _ string) []string { return []string{"--stdin-filepath", abs} }}},
	{func(rel string) bool { return path.Ext(rel) == ".py" || path.Ext(rel) == ".pyi" }, formatter{"Python", []string{"black", "ruff"},
		func(tool, abs string, _ core.Files, _ string) []string {
			if tool == "ruff" {
				return []string{"format", "--stdin-filename", abs, "-"}
			}
			return []string{"--quiet", "--stdin-filename", abs, "-"}
		}}},
	{func(rel string) bool { return path.Ext(rel) == ".rs" }, formatter{"Rust", []string{"rustfmt"},
		func(_, _ string, files core.Files, rel string) []string {
			return []string{"--emit", "stdout", "--edition", rustEdition(files, rel)}
		}}},
	{func(rel string) bool { return cExt[path.Ext(rel)] }, formatter{"C/C++", []string{"clang-format"},
		func(_, abs string, _ core.Files, _ string) []string { return []string{"--assume-filename=" + abs} }}},
}

var reEdition = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\s*edition\s*=\s*"(\d{4})"`)
})

// rustEdition is the edition of the crate holding rel (its nearest
// Cargo.toml), as cargo fmt would pass it; 2015 is rustfmt's own default.
func rustEdition(files core.Files, rel string) string {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		p := "Cargo.toml"
		if d != "." {
			p = d + "/Cargo.toml"
		}
		if b, ok := files[p]; ok {
			if m := reEdition().FindSubmatch(b); m != nil {
				return string(m[1])
			}
			return "2015"
		}
		if d == "." || d == "/" {
			return "2015"
		}
	}
}

// isShell reports whether rel is a shell script, as shfmt finds them: by
// extension, or an extensionless file with a shell shebang.
func isShell(rel string, b []byte) bool {
	if shellExt[path.Ext(rel)] {
		return true
	}
	return path.Ext(rel) == "" && fileutil.Shebang(b) != ""
}

// formatTimeout bounds one external formatter run on one file.
const formatTimeout = time.Minute

// maxFormatOutput caps what an external formatter may print for one file.
const maxFormatOutput = 64 << 20

// formatFiles formats every file matching c.Glob whose class has a
// formatter: Go with gofmt (goimports when c.Imports), shell with shfmt,
// the others with the user's tool from PATH. A class without its tool is
// skipped with a note; any formatter failing fails the whole request, so
// nothing is half-applied. root is the workspace on disk, where goimports
// resolves imports and external tools find their configuration.
func formatFiles(ctx context.Context, root string, files core.Files, c Format) (core.Files, string, error) {
	if err := validGlob(c.Glob); err != nil {
		return nil, "", err
	}
	next := files.Clone()
	type tally struct{ n, changed int }
	used := map[string]*tally{} // "gofmt (go1.26)" → counts
	var order []string
	count := func(by string, changed bool) {
		if used[by] == nil {
			used[by] = &tally{}
			order = append(order, by)
		}
		used[by].n++
		if changed {
			used[by].changed++
		}
	}
	missing := map[string]int{} // class → files skipped for want of its tool
	var missingOrder []string
	tools := map[string]probe{}     // tool → what its --version said; asked once per request
	broken := map[string][]string{} // class → the tools on PATH that do not run
	var scratch string
	defer func() {
		if scratch != "" {
			os.RemoveAll(scratch)
		}
	}()
	for _, p := range files.Paths() {
		if !match(c.Glob, p) || (c.Glob == "" && skipped(p)) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		src := files[p]
		abs := filepath.Join(root, filepath.FromSlash(p))
		var (
			out  []byte
			by   string // the formatter and its version
			name string // the formatter
			err  error
		)
		switch {
		case c.Tool != "" && strings.HasSuffix(p, ".go"):
			continue // a named formatter other than gofmt and goimports
		case strings.HasSuffix(p, ".go"):
			if c.Imports {
				name, by = "goimports", "goimports (golang.org/x/tools "+moduleVersion("golang.org/x/tools")+")"
				out, err = imports.Process(abs, src, &imports.Options{Comments: true, TabIndent: true, TabWidth: 8})
			} else {
				name, by = "gofmt", "gofmt ("+runtime.Version()+")"
				out, err = format.Source(src)
			}
		case c.GoOnly:
			continue
		case isShell(p, src) && (c.Tool == "" || c.Tool == "shfmt"):
			name, by = "shfmt", "shfmt (mvdan.cc/sh/v3 "+moduleVersion("mvdan.cc/sh/v3")+")"
			out, err = shfmt(p, src)
		default:
			var f *formatter
			for i := range external {
				if external[i].match(p) {
					f = &external[i].formatter
					break
				}
			}
			if f == nil || c.Tool == "shfmt" {
				continue // no formatter for this kind of file
			}
			cands := f.tools
			if c.Tool != "" {
				if !slices.Contains(f.tools, c.Tool) {
					continue
				}
				cands = []string{c.Tool}
			}
			if scratch == "" {
				if scratch, err = os.MkdirTemp("", "joule-format-*"); err != nil {
					return nil, "", err
				}
			}
			// A tool on PATH is taken only once it runs: a rustup shim
			// with no toolchain, or a broken install, is on PATH too.
			tool, bin := "", ""
			for _, t := range cands {
				b, lerr := exec.LookPath(t)
				if lerr != nil {
					continue
				}
				pr, ok := tools[t]
				if !ok {
					pr = probeTool(ctx, t, b, scratch)
					tools[t] = pr
					if pr.err != "" {
						broken[f.class] = append(broken[f.class], t+" on PATH does not run ("+t+" --version: "+pr.err+")")
					}
				}
				if pr.err == "" {
					tool, bin = t, b
					break
				}
			}
			if tool == "" {
				if missing[f.class] == 0 {
					missingOrder = append(missingOrder, f.class)
				}
				missing[f.class]++
				continue
			}
			name, by = tool, tools[tool].version
			out, err = runFormatter(ctx, bin, f.args(tool, abs, files, p), src, scratch)
		}
		if err != nil {
			return nil, "", fmt.Errorf("format %s: %s failed: %v; nothing was formatted", p, name, err)
		}
		changed := !bytes.Equal(out, src)
		if changed {
			next[p] = out
		}
		count(by, changed)
	}
	var notes []string
	// A preferred tool that does not run, passed over for the next: said,
	// so that the user knows why ruff and not black formatted.
	for _, e := range external {
		if len(broken[e.class]) > 0 && missing[e.class] == 0 {
			notes = append(notes, strings.Join(broken[e.class], "; "))
		}
	}
	for _, cl := range missingOrder {
		var want []string
		for _, e := range external {
			if e.class == cl {
				want = e.tools
			}
		}
		why := strings.Join(want, " or ") + " not on PATH"
		if len(broken[cl]) > 0 {
			why = strings.Join(broken[cl], "; ")
		}
		notes = append(notes, fmt.Sprintf("skipped %d %s file(s): %s", missing[cl], cl, why))
	}
	if len(order) == 0 {
		what := "formattable file"
		if c.GoOnly || c.Imports {
			what = "Go file"
		}
		if c.Tool != "" {
			what = "file " + c.Tool + " formats"
		}
		msg := fmt.Sprintf("no %s matches %q", what, c.Glob)
		if len(notes) > 0 {
			msg += " (" + strings.Join(notes, "; ") + ")"
		}
		return nil, "", errors.New(msg)
	}
	var parts []string
	for _, by := range order {
		parts = append(parts, fmt.Sprintf("%s: %d of %d file(s) reformatted", by, used[by].changed, used[by].n))
	}
	return next, strings.Join(append(parts, notes...), "; "), nil
}

// shfmt formats a shell script as shfmt does by default (tabs, no
// simplification; the language from the extension, else the shebang, else
// bash). EditorConfig files are not read.
func shfmt(rel string, src []byte) ([]byte, error) {
	lang := syntax.LangBash
	switch ext := strings.TrimPrefix(path.Ext(rel), "."); ext {
	case "sh", "":
		if sb := fileutil.Shebang(src); sb != "" {
			if err := lang.Set(sb); err != nil {
				lang = syntax.LangBash
			}
		}
	default:
		if err := lang.Set(ext); err != nil {
			lang = syntax.LangBash
		}
	}
	f, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(lang)).Parse(bytes.NewReader(src), rel)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := syntax.NewPrinter().Print(&buf, f); err != nil {
		return nil, err
	}
	// The printer has corner cases (e.g. "$``") whose output does not parse
	// back; such a script is left alone rather than broken.
	if _, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(lang)).Parse(bytes.NewReader(buf.Bytes()), rel); err != nil {
		return nil, fmt.Errorf("the formatted script would not parse (%v); left as it is", err)
	}
	return buf.Bytes(), nil
}

// runFormatter runs an external formatter on src (stdin) in a scratch
// directory, never in the workspace, and returns its standard output.
func runFormatter(ctx context.Context, bin string, args []string, src []byte, dir string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, formatTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(src)
	var out capped
	errw := &capped{max: 4096}
	cmd.Stdout, cmd.Stderr = &out, errw
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return nil, fmt.Errorf("no answer within %s", formatTimeout)
	}
	if err != nil {
		msg := strings.TrimSpace(errw.buf.String())
		if msg == "" {
			return nil, err
		}
		return nil, fmt.Errorf("%v: %s", err, oneLineOf(msg))
	}
	if out.over {
		return nil, fmt.Errorf("more than %d bytes of output", maxFormatOutput)
	}
	if len(out.buf.Bytes()) == 0 && len(bytes.TrimSpace(src)) > 0 {
		return nil, errors.New("it printed nothing for a non-empty file")
	}
	return out.buf.Bytes(), nil
}

// probe is what a formatter's --version said: its version line, or why
// it does not run.
type probe struct{ version, err string }

// probeTool runs bin --version in dir: a tool that fails it (a rustup
// shim with no default toolchain, a broken install) is not used.
func probeTool(ctx context.Context, tool, bin, dir string) probe {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Dir = dir
	var out, errOut capped
	out.max, errOut.max = 4096, 4096
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(errOut.buf.String())
		if why == "" {
			why = strings.TrimSpace(out.buf.String())
		}
		if why == "" {
			why = err.Error()
		}
		return probe{err: oneLineOf(strings.SplitN(why, "\n", 2)[0])}
	}
	v := strings.TrimSpace(strings.SplitN(out.buf.String(), "\n", 2)[0])
	if v == "" {
		return probe{version: tool + " (version unknown)"}
	}
	if !strings.Contains(strings.ToLower(v), strings.ToLower(tool)) {
		v = tool + " " + v
	}
	return probe{version: oneLineOf(v)}
}

func oneLineOf(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "") + "…"
	}
	return s
}

// capped is a writer keeping at most max bytes (maxFormatOutput if 0).
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	limit := c.max
	if limit == 0 {
		limit = maxFormatOutput
	}
	if room := limit - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

// moduleVersion is the version of a module linked into this binary.
func moduleVersion(mod string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == mod {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Version
			}
		}
	}
	return "(devel)"
}
