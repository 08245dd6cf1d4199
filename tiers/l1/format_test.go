package l1

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/joulehook/joule/core"
)

var update = flag.Bool("update", false, "rewrite the golden out/ sections of testdata/format/*.txtar")

// writeTree writes files below a fresh directory and returns it.
func writeTree(t *testing.T, files core.Files) string {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	for p, b := range files {
		if err := mkfile(filepath.Join(root, filepath.FromSlash(p)), string(b)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestFormatGolden runs each testdata/format/*.txtar: the request on the in/
// tree (written to disk, as goimports resolves imports there); out/ holds
// every file that changes, and summary the op's summary, with GOVERSION,
// XTOOLS and SHVERSION standing for the linked versions.
func TestFormatGolden(t *testing.T) {
	paths, _ := filepath.Glob("testdata/format/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no golden files")
	}
	for _, gp := range paths {
		t.Run(filepath.Base(gp), func(t *testing.T) {
			ar, err := txtar.ParseFile(gp)
			if err != nil {
				t.Fatal(err)
			}
			in, out := core.Files{}, core.Files{}
			var request, summary string
			for _, f := range ar.Files {
				switch {
				case f.Name == "request":
					request = strings.TrimSpace(string(f.Data))
				case f.Name == "summary":
					summary = strings.TrimSpace(string(f.Data))
				case strings.HasPrefix(f.Name, "in/"):
					in[strings.TrimPrefix(f.Name, "in/")] = f.Data
				case strings.HasPrefix(f.Name, "out/"):
					out[strings.TrimPrefix(f.Name, "out/")] = f.Data
				}
			}
			cmd, err := Parse(request)
			if err != nil {
				t.Fatal(err)
			}
			c, ok := cmd.(Format)
			if !ok {
				t.Fatalf("%q parsed as %#v", request, cmd)
			}
			root := writeTree(t, in)
			next, sum, err := formatFiles(context.Background(), root, in, c)
			if err != nil {
				t.Fatal(err)
			}
			sum = strings.NewReplacer(runtime.Version(), "GOVERSION", "golang.org/x/tools "+moduleVersion("golang.org/x/tools"), "golang.org/x/tools XTOOLS",
				"mvdan.cc/sh/v3 "+moduleVersion("mvdan.cc/sh/v3"), "mvdan.cc/sh/v3 SHVERSION").Replace(sum)
			changed := changedFiles(in, next)
			if *update {
				var fs []txtar.File
				for _, f := range ar.Files {
					if !strings.HasPrefix(f.Name, "out/") && f.Name != "summary" {
						fs = append(fs, f)
					}
				}
				for _, p := range changed {
					fs = append(fs, txtar.File{Name: "out/" + p, Data: next[p]})
				}
				fs = append(fs, txtar.File{Name: "summary", Data: []byte(sum + "\n")})
				ar.Files = fs
				if err := os.WriteFile(gp, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if sum != summary {
				t.Errorf("summary\n got %s\nwant %s", sum, summary)
			}
			for p, want := range out {
				if string(next[p]) != string(want) {
					t.Errorf("%s:\n got %q\nwant %q", p, next[p], want)
				}
			}
			for _, p := range changed {
				if _, ok := out[p]; !ok {
					t.Errorf("%s changed to %q; the golden file says it does not", p, next[p])
				}
			}
		})
	}
}

func changedFiles(prior, next core.Files) []string {
	var ps []string
	for p, b := range next {
		if string(prior[p]) != string(b) {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

// fakeTool writes an executable script named name into dir.
func fakeTool(t *testing.T, dir, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nPATH=/usr/bin:/bin\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestFormatExternal proves the PATH plumbing with formatters of the
// test's own: the file goes in on stdin, the tool is told its path (to find
// its configuration), runs outside the workspace, and its version lands in
// the summary; a class without its tool is skipped with a note; a tool that
// fails fails the whole request.
func TestFormatExternal(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("shell-script fake formatters")
	}
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "calls")
	fakeTool(t, bin, "prettier", `if [ "$1" = --version ]; then echo 3.9.9; exit 0; fi
echo "prettier $* cwd=$(pwd)" >> `+log+`
tr a-z A-Z
`)
	fakeTool(t, bin, "clang-format", `if [ "$1" = --version ]; then echo "Debian clang-format version 99.0.1"; exit 0; fi
echo "clang-format: bad config in .clang-format" >&2
exit 2
`)
	t.Setenv("PATH", bin)
	files := core.Files{
		"web/app.ts":        []byte("let x = 1\n"),
		"web/readme.md":     []byte("# title\n"),
		"py/a.py":           []byte("x=1\n"),
		"py/b.py":           []byte("y=2\n"),
		"node_modules/m.js": []byte("skipped\n"),
		"run.sh":            []byte("echo  hi\n"),
	}
	root := writeTree(t, files)
	next, sum, err := formatFiles(context.Background(), root, files, Format{})
	if err != nil {
		t.Fatal(err)
	}
	if string(next["web/app.ts"]) != "LET X = 1\n" || string(next["web/readme.md"]) != "# TITLE\n" || string(next["py/a.py"]) != "x=1\n" {
		t.Fatalf("next = %q", next)
	}
	if string(next["node_modules/m.js"]) != "skipped\n" || string(next["run.sh"]) != "echo hi\n" {
		t.Fatalf("node_modules or shell: %q %q", next["node_modules/m.js"], next["run.sh"])
	}
	for _, want := range []string{"prettier 3.9.9: 2 of 2 file(s) reformatted", "skipped 2 Python file(s): black or ruff not on PATH", "shfmt (mvdan.cc/sh/v3 "} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary %q lacks %q", sum, want)
		}
	}
	calls, _ := os.ReadFile(log)
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		if !strings.Contains(line, "--stdin-filepath "+root+"/web/") || strings.Contains(line, "cwd="+root) {
			t.Errorf("prettier was run as %q (root %s)", line, root)
		}
	}

	// A failing formatter: the whole request fails, nothing is half-applied.
	files["c/x.c"] = []byte("int  main(){}\n")
	if err := mkfile(filepath.Join(root, "c/x.c"), "int  main(){}\n"); err != nil {
		t.Fatal(err)
	}
	_, _, err = formatFiles(context.Background(), root, files, Format{})
	if err == nil || !strings.Contains(err.Error(), "c/x.c: clang-format failed") || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("failing formatter: %v", err)
	}

	// Only classes without a tool: a clear error naming what is missing.
	_, _, err = formatFiles(context.Background(), root, files, Format{Glob: "*.py"})
	if err == nil || !strings.Contains(err.Error(), "black or ruff not on PATH") {
		t.Fatalf("missing formatter: %v", err)
	}
}

// TestFormatRustfmt runs the real rustfmt when it is installed and runs
// (a rustup shim without a toolchain is on PATH but does not), with the
// crate's edition from its Cargo.toml.
func TestFormatRustfmt(t *testing.T) {
	if out, err := exec.Command("rustfmt", "--version").CombinedOutput(); err != nil {
		t.Skipf("rustfmt does not run here: %v %s", err, out)
	}
	files := core.Files{
		"crate/Cargo.toml":  []byte("[package]\nname = \"c\"\nedition = \"2021\"\n"),
		"crate/src/main.rs": []byte("fn main(){let x=1;println!(\"{}\",x);}\n"),
	}
	root := writeTree(t, files)
	next, sum, err := formatFiles(context.Background(), root, files, Format{Glob: "*.rs"})
	if err != nil {
		t.Fatal(err)
	}
	want := "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n}\n"
	if string(next["crate/src/main.rs"]) != want || !strings.HasPrefix(sum, "rustfmt ") {
		t.Fatalf("%q %q", next["crate/src/main.rs"], sum)
	}
	if e := rustEdition(files, "crate/src/main.rs"); e != "2021" {
		t.Fatalf("edition %s", e)
	}
	if e := rustEdition(core.Files{"x.rs": nil}, "x.rs"); e != "2015" {
		t.Fatalf("edition without Cargo.toml %s", e)
	}
}

// TestFormatProbesTools: a formatter on PATH that does not run (a rustup
// shim with no default toolchain, a broken install) is not taken: the
// next candidate is, or the class is skipped with its --version error,
// never a failed request; one that runs is used.
func TestFormatProbesTools(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// rustup's shim when no toolchain is installed.
	script("rustfmt", `echo "error: rustup could not choose a version of rustfmt to run, because one wasn't specified explicitly, and no default is configured." >&2; exit 1`+"\n")
	script("black", "exit 127\n")
	script("ruff", `if [ "$1" = --version ]; then echo "ruff 0.9.0"; exit 0; fi; cat; echo "# ruff"`+"\n")
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	files := core.Files{"a.rs": []byte("fn main(){}\n"), "b.py": []byte("x=1\n"), "c.go": []byte("package c\nvar  x=1\n")}
	root := writeTree(t, files)
	next, sum, err := formatFiles(context.Background(), root, files, Format{})
	if err != nil {
		t.Fatal(err)
	}
	if string(next["a.rs"]) != "fn main(){}\n" || string(next["b.py"]) != "x=1\n# ruff\n" || string(next["c.go"]) != "package c\n\nvar x = 1\n" {
		t.Fatalf("formatted %q", next)
	}
	for _, want := range []string{"ruff 0.9.0: 1 of 1 file(s) reformatted", "skipped 1 Rust file(s): rustfmt on PATH does not run (rustfmt --version: error: rustup could not choose a version of rustfmt"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary %q lacks %q", sum, want)
		}
	}
	if !strings.Contains(sum, "black on PATH does not run (black --version: exit status 127)") || strings.Contains(sum, "skipped 1 Python") {
		t.Errorf("summary %q: black passed over for ruff, said", sum)
	}
	// Only the class whose tool does not run: the error says why.
	_, _, err = formatFiles(context.Background(), root, files, Format{Glob: "*.rs"})
	if err == nil || !strings.Contains(err.Error(), "rustfmt on PATH does not run") {
		t.Fatalf("a broken rustfmt alone: %v", err)
	}
}

func TestFormatBadInput(t *testing.T) {
	files := core.Files{"a.go": []byte("package a\nfunc {\n"), "b.sh": []byte("if then fi fi\n"), "c.txt": []byte("x"), "d.sh": []byte("$``\n")}
	root := writeTree(t, files)
	for _, tt := range []struct {
		c    Format
		want string
	}{
		{Format{Glob: "a.go"}, "a.go: gofmt failed"},
		{Format{Glob: "a.go", Imports: true}, "a.go: goimports failed"},
		{Format{Glob: "b.sh"}, "b.sh: shfmt failed"},
		{Format{Glob: "d.sh"}, "d.sh: shfmt failed: the formatted script would not parse"},
		{Format{Glob: "*.txt"}, `no formattable file matches "*.txt"`},
		{Format{Glob: "[", GoOnly: true}, "bad glob"},
		{Format{Glob: "*.sh", GoOnly: true}, `no Go file matches "*.sh"`},
	} {
		_, _, err := formatFiles(context.Background(), root, files, tt.c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.c, err, tt.want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := formatFiles(ctx, root, files, Format{}); err == nil {
		t.Error("a cancelled format closed")
	}
}

func FuzzShfmt(f *testing.F) {
	f.Add("run.sh", "#!/bin/sh\nif [ -n \"$1\" ];then echo  x; fi\n")
	f.Add("x.bash", "arr=( a b ); echo ${arr[@]}\n")
	f.Add("tool", "#!/usr/bin/env zsh\necho $((1+2))\n")
	f.Fuzz(func(t *testing.T, name, src string) {
		out, err := shfmt(name, []byte(src))
		if err != nil {
			return
		}
		// What joule would write must still be a script shfmt accepts.
		if _, err := shfmt(name, out); err != nil {
			t.Fatalf("shfmt output of %q is %q, which does not parse: %v", src, out, err)
		}
	})
}
