package lsp_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers"
	"github.com/joulehook/joule/tiers/l1"
	"github.com/joulehook/joule/tiers/l1/lsp"

	"github.com/joulehook/joule/internal/testdeps"
)

// bin is the node_modules/.bin of the pinned servers (.ci/setup.d/70-lsp.sh
// installs them; internal/testdeps finds them).
var bin string

func TestMain(m *testing.M) {
	if nm := testdeps.NodeModules("testdata/servers"); nm != "" {
		bin = filepath.Join(nm, ".bin")
		os.Setenv(lsp.PathEnv, bin)
	}
	code := m.Run()
	lsp.Default.Close()
	os.Exit(code)
}

// need fails under CI and skips locally when the servers are not installed.
func need(t *testing.T) {
	t.Helper()
	for _, f := range lsp.Discover() {
		if f.Path == "" || f.CheckerPath == "" {
			msg := fmt.Sprintf("%s or %s is not installed: run .ci/setup.d/70-lsp.sh", f.Name, f.Checker)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not installed: run .ci/setup.d/70-lsp.sh")
	}
}

// project copies a testdata project to a temporary directory.
func project(t testing.TB, name string) (string, core.Files) {
	t.Helper()
	files, err := core.ReadDir(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, p := range files.Paths() {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, files[p], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// reference runs testdata/ref.mjs: the server's own edit, applied in Node.
func reference(t *testing.T, server, root, exts string, args ...string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"testdata/ref.mjs", filepath.Join(bin, server), root, exts}, args...)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ref.mjs %v: %v\n%s", args, err, stderr.String())
	}
	var m map[string]string
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("ref.mjs: %v: %q", err, out.String())
	}
	return m
}

// col is the 1-based byte column of the first occurrence of what on line.
func col(t testing.TB, files core.Files, rel string, line int, what string) int {
	t.Helper()
	l := strings.Split(string(files[rel]), "\n")[line-1]
	i := strings.Index(l, what)
	if i < 0 {
		t.Fatalf("%s:%d does not hold %q", rel, line, what)
	}
	return i + 1
}

// sameAsServer checks that next differs from prior exactly where the
// reference says, byte for byte.
func sameAsServer(t *testing.T, prior, next core.Files, ref map[string]string) {
	t.Helper()
	if len(ref) == 0 {
		t.Fatal("the reference session changed nothing")
	}
	for p, want := range ref {
		if got := string(next[p]); got != want {
			t.Errorf("%s differs from the server's own edit:\n got: %q\nwant: %q", p, got, want)
		}
	}
	for p, b := range next {
		if _, ok := ref[p]; !ok && !bytes.Equal(prior[p], b) {
			t.Errorf("%s changed, but not in the server's own edit", p)
		}
	}
}

const (
	tsServer, tsExts = "typescript-language-server", ".ts,.tsx,.js,.jsx"
	pyServer, pyExts = "pyright-langserver", ".py"
)

func TestRenameMatchesServer(t *testing.T) {
	need(t)
	cases := []struct {
		name, proj, server, exts, file string
		line                           int
		at, to, gone                   string
	}{
		{"ts function across files", "ts", tsServer, tsExts, "src/shapes.ts", 14, "totalArea", "sumAreas", "totalArea("},
		{"ts after an astral character", "ts", tsServer, tsExts, "src/shapes.ts", 19, "sum =", "summed", "const sum ="},
		{"js function", "ts", tsServer, tsExts, "src/util.js", 2, "greet", "welcome", "function greet"},
		{"py function across modules", "py", pyServer, pyExts, "pkg/geometry.py", 14, "total_area", "sum_areas", "total_area("},
		{"py method", "py", pyServer, pyExts, "pkg/geometry.py", 10, "area", "surface", ".area()"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			column := col(t, files, c.file, c.line, c.at)
			res, err := lsp.Rename(context.Background(), root, files, c.file, c.line, column, c.to)
			if err != nil {
				t.Fatal(err)
			}
			ref := reference(t, c.server, root, c.exts, "rename", c.file, strconv.Itoa(c.line), strconv.Itoa(column), c.to)
			sameAsServer(t, files, res.Next, ref)
			for p, b := range res.Next {
				if strings.Contains(string(b), c.gone) {
					t.Errorf("%s still holds %q", p, c.gone)
				}
			}
			t.Logf("%s: server %v, whole request %v (start, request, apply, the check on the server)", c.name, res.Server, res.Total)
		})
	}
}

// untouched checks that the project on disk is what it was.
func untouched(t *testing.T, root string, files core.Files) {
	t.Helper()
	now, err := core.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(now) != len(files) {
		t.Errorf("the project has %d files, had %d", len(now), len(files))
	}
	for p, b := range files {
		if !bytes.Equal(now[p], b) {
			t.Errorf("%s was written", p)
		}
	}
}

func TestRefusedRenames(t *testing.T) {
	need(t)
	cases := []struct {
		name, proj, file string
		line             int
		at, to, want     string
	}{
		{"ts keyword", "ts", "src/shapes.ts", 15, "return", "yield", "typescript-language-server"},
		{"ts standard library", "ts", "src/shapes.ts", 9, "Math", "M", "typescript-language-server"},
		{"py keyword", "py", "pkg/geometry.py", 14, "def", "fn", "pyright-langserver"},
		{"no such line", "py", "main.py", 0, "", "x", "outside the file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			line, column := c.line, 1
			if c.at != "" {
				column = col(t, files, c.file, c.line, c.at)
			} else {
				line = 999
			}
			res, err := lsp.Rename(context.Background(), root, files, c.file, line, column, c.to)
			if err == nil {
				t.Fatalf("renamed: %s", res.Summary)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			t.Log(err)
			untouched(t, root, files)
		})
	}
}

func TestTypeCheckRegressionRefused(t *testing.T) {
	need(t)
	cases := []struct {
		name, proj, file string
		line             int
		at, to           string
	}{
		// TypeScript renames a private property onto a method's name.
		{"ts duplicate member", "ts", "src/shapes.ts", 7, "radius", "area"},
		// pyright renames a function onto the class its signature uses.
		{"py name clash", "py", "pkg/geometry.py", 14, "total_area", "Circle"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			_, err := lsp.Rename(context.Background(), root, files, c.file, c.line, col(t, files, c.file, c.line, c.at), c.to)
			if !errors.Is(err, lsp.ErrRegression) {
				t.Fatalf("want a type-check regression, got %v", err)
			}
			t.Log(err)
			untouched(t, root, files)
		})
	}
}

func TestOrganizeImportsMatchesServer(t *testing.T) {
	need(t)
	cases := []struct{ name, proj, server, exts, file, want string }{
		{"ts", "ts", tsServer, tsExts, "src/main.ts", `import { Circle, emoji, totalArea } from "./shapes";`},
		{"py", "py", pyServer, pyExts, "pkg/geometry.py", "import math\nimport sys\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			res, err := lsp.OrganizeImports(context.Background(), root, files, c.file)
			if err != nil {
				t.Fatal(err)
			}
			sameAsServer(t, files, res.Next, reference(t, c.server, root, c.exts, "organize", c.file))
			if !strings.Contains(string(res.Next[c.file]), c.want) {
				t.Errorf("%s lacks %q:\n%s", c.file, c.want, res.Next[c.file])
			}
			t.Logf("%s: server %v, whole request %v", c.name, res.Server, res.Total)
		})
	}
}

// TestStageSignsOneOp puts phrased requests to the L1 stage: the server's
// edit comes back as one signed op that core.Apply takes to the same tree,
// and a refusal is a miss with no op.
func TestStageSignsOneOp(t *testing.T) {
	need(t)
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &l1.Stage{Key: key}
	root, files := project(t, "ts")
	prompt := fmt.Sprintf("rename src/shapes.ts:14:%d to sumAreas", col(t, files, "src/shapes.ts", 14, "totalArea"))
	res, err := st.TryResolve(context.Background(), &tiers.Request{Prompt: prompt, Root: root})
	if err != nil || res == nil || res.Op == nil {
		t.Fatalf("%q: %v %+v", prompt, err, res)
	}
	if _, err := res.Op.Verify(); err != nil {
		t.Fatal(err)
	}
	next, err := core.Apply(files, &res.Op.Op)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"src/shapes.ts", "src/main.ts"} {
		if b := string(next[p]); !strings.Contains(b, "sumAreas(") || strings.Contains(b, "totalArea(") {
			t.Errorf("%s after the op:\n%s", p, b)
		}
	}
	untouched(t, root, files)
	t.Log(res.Answer)

	refused := "rename src/shapes.ts:9:12 to M" // Math, of the standard library
	res, err = st.TryResolve(context.Background(), &tiers.Request{Prompt: refused, Root: root})
	if err == nil || res != nil {
		t.Fatalf("%q: want a miss, got %v %+v", refused, err, res)
	}
	untouched(t, root, files)
}

// kind accepts the declarations of one LSP SymbolKind (0: any).
func kind(k int) func(lsp.Symbol) string {
	return func(s lsp.Symbol) string {
		if k != 0 && s.Kind != k {
			return "is a " + lsp.KindName(s.Kind)
		}
		return ""
	}
}

// TestRenameSymbolMatchesServer renames declarations named, not placed:
// the declaration is found with documentSymbol (in the file given) or
// workspace/symbol (in none), and the edit must be what the server itself
// writes for a rename at that declaration's name.
func TestRenameSymbolMatchesServer(t *testing.T) {
	need(t)
	servers := map[string]lsp.Server{}
	for _, s := range lsp.Servers {
		servers[s.Name] = s
	}
	cases := []struct {
		name, proj, server, exts, file, sym string
		kind                                int
		declFile                            string
		line                                int
		at, to                              string
	}{
		{"ts class, no file", "ts", tsServer, tsExts, "", "Circle", lsp.SymClass, "src/shapes.ts", 6, "Circle", "Disk"},
		{"ts method of a class", "ts", tsServer, tsExts, "src/shapes.ts", "Circle.area", lsp.SymMethod, "src/shapes.ts", 8, "area", "surface"},
		{"ts function in a file", "ts", tsServer, tsExts, "src/shapes.ts", "totalArea", lsp.SymFunction, "src/shapes.ts", 14, "totalArea", "sumAreas"},
		{"js function, no file", "ts", tsServer, tsExts, "", "greet", lsp.SymFunction, "src/util.js", 2, "greet", "welcome"},
		{"py class, no file", "py", pyServer, pyExts, "", "Circle", lsp.SymClass, "pkg/geometry.py", 6, "Circle", "Disk"},
		{"py method", "py", pyServer, pyExts, "pkg/geometry.py", "Circle.area", lsp.SymMethod, "pkg/geometry.py", 10, "area", "surface"},
		{"py function, no file", "py", pyServer, pyExts, "", "total_area", lsp.SymFunction, "pkg/geometry.py", 14, "total_area", "sum_areas"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			res, err := lsp.RenameSymbol(context.Background(), root, files, servers[c.server], c.file, c.sym, c.to, kind(c.kind))
			if err != nil {
				t.Fatal(err)
			}
			column := col(t, files, c.declFile, c.line, c.at)
			ref := reference(t, c.server, root, c.exts, "rename", c.declFile, strconv.Itoa(c.line), strconv.Itoa(column), c.to)
			sameAsServer(t, files, res.Next, ref)
			untouched(t, root, files)
			t.Logf("%s: %s; server %v of %v", c.name, res.Summary, res.Server, res.Total)
		})
	}
}

func TestRenameSymbolRefusals(t *testing.T) {
	need(t)
	ts, py := lsp.Servers[0], lsp.Servers[1]
	cases := []struct {
		name      string
		proj      string
		srv       lsp.Server
		file, sym string
		kind      int
		want      string
	}{
		{"ts two methods named area", "ts", ts, "", "area", 0, "ambiguous"},
		{"js a function and a property named greet", "ts", ts, "src/util.js", "greet", 0, "ambiguous"},
		{"ts no such symbol", "ts", ts, "", "Nope", 0, "no declaration of Nope"},
		{"ts a class called a function", "ts", ts, "src/shapes.ts", "Circle", lsp.SymFunction, "is a class"},
		{"ts a method of the wrong class", "ts", ts, "src/shapes.ts", "Shape.radius", 0, "no declaration"},
		{"ts not in that file", "ts", ts, "src/main.ts", "totalArea", lsp.SymFunction, "no declaration"},
		{"py a function called a class", "py", py, "pkg/geometry.py", "total_area", lsp.SymClass, "is a function"},
		{"py no such method", "py", py, "", "Circle.perimeter", 0, "no declaration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			res, err := lsp.RenameSymbol(context.Background(), root, files, c.srv, c.file, c.sym, "renamed", kind(c.kind))
			if err == nil {
				t.Fatalf("renamed: %s", res.Summary)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			t.Log(err)
			untouched(t, root, files)
		})
	}
}

// TestStageRenamesByName puts renames that name a TypeScript or Python
// symbol (not its position) to the L1 stage: one signed op when exactly
// one declaration fits, a miss with the reason otherwise.
func TestStageRenamesByName(t *testing.T) {
	need(t)
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		proj, prompt string
		file, want   string // "" want: a miss whose reason holds gone
		gone         string
	}{
		{"ts", "rename class Circle to Disk", "src/main.ts", "new Disk(1)", "Circle"},
		{"ts", "Rename the method `area` of `Circle` in src/shapes.ts to `surface`.", "src/shapes.ts", "  surface(): number {", "return Math.PI * this.radius * this.radius;\n  }\n}\n\n/** totalArea sums the areas of shapes. */\nexport function totalArea(shapes: Shape[]): number {\n  return shapes.reduce((sum, s) => sum + s.surface()"},
		{"py", "Rename the function `total_area` in pkg/geometry.py to `sum_areas`.", "main.py", "import Circle, sum_areas", "total_area"},
		{"py", "rename the method area of Circle to surface", "pkg/geometry.py", "def surface(self)", "def area("},
		{"ts", "rename the function Circle to Disk in src/shapes.ts", "", "", "is a class"},
		{"ts", "rename area to surface", "", "", "ambiguous"},
		{"py", "rename the class Circle on line 7 of pkg/geometry.py to Disk", "", "", "is on line 6"},
		{"py", "rename the class Nope to Disk", "", "", "no declaration of Nope"},
	}
	for _, c := range cases {
		t.Run(c.prompt, func(t *testing.T) {
			t.Parallel()
			root, files := project(t, c.proj)
			st := &l1.Stage{Key: key}
			res, err := st.TryResolve(context.Background(), &tiers.Request{Prompt: c.prompt, Root: root})
			untouched(t, root, files)
			if c.want == "" {
				if res != nil || err == nil || !strings.Contains(err.Error(), c.gone) {
					t.Fatalf("want a miss holding %q, got %v %+v", c.gone, err, res)
				}
				t.Log(err)
				return
			}
			if err != nil || res == nil || res.Op == nil {
				t.Fatalf("%v %+v", err, res)
			}
			if _, err := res.Op.Verify(); err != nil {
				t.Fatal(err)
			}
			next, err := core.Apply(files, &res.Op.Op)
			if err != nil {
				t.Fatal(err)
			}
			if b := string(next[c.file]); !strings.Contains(b, c.want) {
				t.Errorf("%s lacks %q:\n%s", c.file, c.want, b)
			}
			if c.proj == "ts" && c.gone == "Circle" {
				for p, b := range next {
					if strings.Contains(string(b), "Circle") {
						t.Errorf("%s still holds Circle", p)
					}
				}
			}
			t.Log(res.Answer)
		})
	}
}
