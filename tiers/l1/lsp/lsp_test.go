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
)

// bin is the node_modules/.bin of the pinned servers (.ci/setup.d/70-lsp.sh).
var bin string

func TestMain(m *testing.M) {
	abs, err := filepath.Abs("testdata/servers/node_modules/.bin")
	if err == nil {
		bin = abs
		os.Setenv(lsp.PathEnv, abs)
	}
	os.Exit(m.Run())
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
func project(t *testing.T, name string) (string, core.Files) {
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
func col(t *testing.T, files core.Files, rel string, line int, what string) int {
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
			t.Logf("%s: server %v, whole request %v (start, request, apply, two type checks)", c.name, res.Server, res.Total)
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
