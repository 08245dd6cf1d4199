package lsp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// needGopls finds the pinned gopls: under CI a missing one fails the test,
// locally it skips.
func needGopls(t *testing.T) string {
	t.Helper()
	p, err := lsp.Look("gopls")
	if err != nil {
		msg := "gopls is not installed: .ci/setup.d/40-acp.sh installs it (go install golang.org/x/tools/gopls@" + lsp.GoplsVersion + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// goProject copies testdata/go to a temporary directory; its *.go.in
// files become *.go (kept apart so that the repository's gofmt check
// leaves their unsorted imports alone).
func goProject(t *testing.T) (string, core.Files) {
	t.Helper()
	src, err := core.ReadDir(filepath.Join("testdata", "go"))
	if err != nil {
		t.Fatal(err)
	}
	files := core.Files{}
	for p, b := range src {
		files[strings.TrimSuffix(p, ".in")] = b
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, files)
	return dir, files
}

func writeTree(t *testing.T, dir string, files core.Files) {
	t.Helper()
	for p, b := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// goplsCLI runs gopls's own command line in dir, which writes the files.
func goplsCLI(t *testing.T, bin, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gopls %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

var freshName = regexp.MustCompile(`\bnew(Function|Method|Var|Const)\d*\b`)

// reference is what gopls's command line writes for a: the code action
// executed (gopls codeaction -exec -w), then what it declared renamed
// (gopls rename -w), in a fresh copy of files.
func goplsReference(t *testing.T, bin string, files core.Files, a lsp.Action, span string) core.Files {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, files)
	goplsCLI(t, bin, dir, "codeaction", "-exec", "-w", "-kind", a.Kind, a.File+":"+span)
	if a.Name != "" {
		b, err := os.ReadFile(filepath.Join(dir, a.File))
		if err != nil {
			t.Fatal(err)
		}
		var at []int
		for _, m := range freshName.FindAllIndex(b, -1) {
			if !bytes.Contains(files[a.File], b[m[0]:m[1]]) {
				at = m
				break
			}
		}
		if at == nil {
			t.Fatalf("gopls's own %s declared nothing new:\n%s", a.Kind, b)
		}
		line := bytes.Count(b[:at[0]], []byte("\n")) + 1
		col := at[0] - (bytes.LastIndexByte(b[:at[0]], '\n') + 1) + 1
		goplsCLI(t, bin, dir, "rename", "-w", fmt.Sprintf("%s:%d:%d", a.File, line, col), a.Name)
	}
	out, err := core.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for p := range out {
		if strings.HasSuffix(p, ".orig") {
			delete(out, p)
		}
	}
	return out
}

// span finds what on line of rel: its start and end columns (bytes,
// 1-based, the end exclusive).
func span(t *testing.T, files core.Files, rel string, line int, what string) (int, int) {
	c := col(t, files, rel, line, what)
	return c, c + len(what)
}

// TestGoplsActionsMatchCLI drives gopls as an LSP client for each code
// action L1 asks for by name, both ways gopls hands an edit back
// (codeAction/resolve, and a command whose execution sends
// workspace/applyEdit), and compares the successor tree byte for byte with
// what gopls's own command line writes.
func TestGoplsActionsMatchCLI(t *testing.T) {
	bin := needGopls(t)
	root, files := goProject(t)
	const f = "stats/stats.go"
	vs, ve := span(t, files, f, 37, "float64(len(xs))")
	ic, _ := span(t, files, f, 29, "average(")
	qs, qe := span(t, files, f, 23, `"no samples"`)
	cases := []struct {
		name string
		a    lsp.Action
		cli  string // the span as gopls's command line takes it
		want string // in the file after
		both bool   // also through workspace/applyEdit
	}{
		{"extract function", lsp.Action{Kind: lsp.ExtractFunction, File: f, Line: 30, Col: 1, EndLine: 33},
			"30:1-33:3", "func newFunction(", false},
		{"extract function named", lsp.Action{Kind: lsp.ExtractFunction, File: f, Line: 30, Col: 1, EndLine: 33, Name: "deviation"},
			"30:1-33:3", "dev := deviation(xs, mean)", true},
		{"extract variable named", lsp.Action{Kind: lsp.ExtractVariable, File: f, Line: 37, Col: vs, EndLine: 37, EndCol: ve, Name: "n"},
			fmt.Sprintf("37:%d-37:%d", vs, ve), "math.Sqrt(dev / n)", false},
		{"extract constant named", lsp.Action{Kind: lsp.ExtractConstant, File: f, Line: 23, Col: qs, EndLine: 23, EndCol: qe, Name: "errNone"},
			fmt.Sprintf("23:%d-23:%d", qs, qe), "fmt.Errorf(errNone)", false},
		{"inline call", lsp.Action{Kind: lsp.InlineCall, File: f, Line: 29, Col: ic, Callee: "average"},
			fmt.Sprintf("29:%d", ic), "mean := sum / float64(len(xs))", true},
	}
	defer func() { lsp.ResolveEdits = true }()
	for _, resolve := range []bool{true, false} {
		lsp.ResolveEdits = resolve // the group before has ended
		t.Run(fmt.Sprintf("resolve=%v", resolve), func(t *testing.T) {
			for _, c := range cases {
				if !resolve && !c.both {
					continue
				}
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					res, err := lsp.CodeAction(context.Background(), root, files, c.a)
					if err != nil {
						t.Fatal(err)
					}
					ref := goplsReference(t, bin, files, c.a, c.cli)
					for p, want := range ref {
						if got := res.Next[p]; !bytes.Equal(got, want) {
							t.Errorf("%s differs from gopls's own edit:\n got:\n%s\nwant:\n%s", p, got, want)
						}
					}
					if len(ref) != len(res.Next) {
						t.Errorf("%d files after, gopls's own edit leaves %d", len(res.Next), len(ref))
					}
					if !bytes.Contains(res.Next[f], []byte(c.want)) {
						t.Errorf("%s lacks %q:\n%s", f, c.want, res.Next[f])
					}
					untouched(t, root, files)
					t.Logf("%s: %s; gopls %v of %v", c.name, res.Summary, res.Server, res.Total)
				})
			}
		})
	}
}

func TestGoplsOrganizeImports(t *testing.T) {
	needGopls(t)
	root, files := goProject(t)
	res, err := lsp.OrganizeImports(context.Background(), root, files, "stats/stats.go")
	if err != nil {
		t.Fatal(err)
	}
	if want := "import (\n\t\"fmt\"\n\t\"math\"\n\t\"sort\"\n)\n"; !strings.Contains(string(res.Next["stats/stats.go"]), want) {
		t.Errorf("imports not organized:\n%s", res.Next["stats/stats.go"])
	}
	if changed := 0; true {
		for p, b := range res.Next {
			if !bytes.Equal(files[p], b) {
				changed++
			}
		}
		if changed != 1 {
			t.Errorf("%d files changed, want 1", changed)
		}
	}
	// In order already: nothing to change, and no error.
	res, err = lsp.OrganizeImports(context.Background(), root, files, "main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(res.Next["main.go"], files["main.go"]) {
		t.Errorf("main.go changed:\n%s", res.Next["main.go"])
	}
	untouched(t, root, files)
}

func TestGoplsRefusals(t *testing.T) {
	needGopls(t)
	root, files := goProject(t)
	const f = "stats/stats.go"
	ic, _ := span(t, files, f, 32, "square(")
	cases := []struct {
		name string
		a    lsp.Action
		want string
	}{
		{"inline the wrong callee", lsp.Action{Kind: lsp.InlineCall, File: f, Line: 32, Col: ic, Callee: "cube"}, "not a call of cube"},
		{"extract half a statement", lsp.Action{Kind: lsp.ExtractFunction, File: f, Line: 31, Col: 1, EndLine: 32}, "extract function"},
		{"extract a variable from statements", lsp.Action{Kind: lsp.ExtractVariable, File: f, Line: 30, Col: 1, EndLine: 33}, "no extract variable"},
		{"inline no call", lsp.Action{Kind: lsp.InlineCall, File: f, Line: 25, Col: 2}, "no inline call"},
		{"a span backwards", lsp.Action{Kind: lsp.ExtractFunction, File: f, Line: 33, Col: 1, EndLine: 30}, "ends before it starts"},
		{"not a Go file", lsp.Action{Kind: lsp.ExtractFunction, File: "go.mod", Line: 1, Col: 1, EndLine: 1}, "not a Go file"},
		{"a name that clashes", lsp.Action{Kind: lsp.ExtractFunction, File: f, Line: 30, Col: 1, EndLine: 33, Name: "Describe"}, "Describe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := lsp.CodeAction(context.Background(), root, files, c.a)
			if err == nil {
				t.Fatalf("applied: %s", res.Summary)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
			t.Log(err)
			untouched(t, root, files)
		})
	}
}

// TestGoVetRegression: the Go check refuses an edit that breaks the vet
// of a package it touches, and passes one that does not.
func TestGoVetRegression(t *testing.T) {
	needGopls(t)
	root, files := goProject(t)
	next := files.Clone()
	next["stats/stats.go"] = bytes.Replace(files["stats/stats.go"], []byte("square(x - mean)"), []byte("square(x - mean, 2)"), 1)
	if err := lsp.Check(context.Background(), lsp.Gopls, root, files, next); !errors.Is(err, lsp.ErrRegression) {
		t.Fatalf("want a regression, got %v", err)
	}
	next["stats/stats.go"] = bytes.Replace(files["stats/stats.go"], []byte("square(x - mean)"), []byte("square(mean - x)"), 1)
	if err := lsp.Check(context.Background(), lsp.Gopls, root, files, next); err != nil {
		t.Fatal(err)
	}
}
