package main

import (
	"bytes"
	"flag"
	"go/format"
	"go/scanner"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/joulehook/joule/core"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// tokensOf is src's token sequence, the inserted semicolons aside.
func tokensOf(t testing.TB, src []byte) []string {
	fset := token.NewFileSet()
	file := fset.AddFile("", fset.Base(), len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.SEMICOLON && lit == "\n" {
			continue
		}
		out = append(out, tok.String()+" "+lit)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it)", path)
	}
}

// TestPerturbGolden pins the perturbation of one file for one seed, so a
// seed names the same workload everywhere.
func TestPerturbGolden(t *testing.T) {
	src, err := os.ReadFile("testdata/perturb_in.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Perturb(rand.New(rand.NewPCG(1, 1)), src)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "perturb_out.go.txt", got)
	again, _ := Perturb(rand.New(rand.NewPCG(1, 1)), src)
	if !bytes.Equal(got, again) {
		t.Error("the same seed perturbed differently")
	}
	other, _ := Perturb(rand.New(rand.NewPCG(2, 1)), src)
	if bytes.Equal(got, other) {
		t.Error("two seeds perturbed alike")
	}
}

// TestPerturbKeepsTokens perturbs real gofmt-clean files of the toolchain:
// the token sequence must not change, the result must differ, and gofmt
// must give the original back.
func TestPerturbKeepsTokens(t *testing.T) {
	var files []string
	for _, dir := range []string{"container/list", "container/ring", "text/tabwriter", "encoding/csv", "strings", "go/token"} {
		m, _ := filepath.Glob(filepath.Join(runtime.GOROOT(), "src", dir, "*.go"))
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("found %d toolchain files", len(files))
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := format.Source(src); err != nil || !bytes.Equal(out, src) {
			continue // only gofmt-clean files can round-trip
		}
		got, err := Perturb(rng, src)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if bytes.Equal(got, src) {
			t.Errorf("%s: nothing was perturbed", f)
		}
		if a, b := tokensOf(t, src), tokensOf(t, got); !equalStrings(a, b) {
			t.Fatalf("%s: the perturbation changed the tokens", f)
		}
		back, err := format.Source(got)
		if err != nil {
			t.Fatalf("%s: perturbed file does not parse: %v", f, err)
		}
		if !bytes.Equal(back, src) {
			t.Errorf("%s: gofmt does not restore the original:\n%s", f, firstDiffLine(back, src))
		}
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func firstDiffLine(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(la) && i < len(lb); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			return string(la[i]) + "\n" + string(lb[i])
		}
	}
	return "(lengths differ)"
}

func FuzzPerturb(f *testing.F) {
	f.Add([]byte("package p\n\nfunc f(a, b int) int { return a + -b }\n"), uint64(1))
	f.Add([]byte("package p\n\nvar x = `raw\n  string` // c\n\n\n/* d */ var y = 1. + .5\n"), uint64(2))
	f.Add([]byte("package p\nfunc g() { x := []int{1,2}; x[0]--; _ = x[0]&^x[1] }\n"), uint64(3))
	f.Fuzz(func(t *testing.T, src []byte, seed uint64) {
		if len(src) > 1<<16 {
			return
		}
		got, err := Perturb(rand.New(rand.NewPCG(seed, 0)), src)
		if err != nil {
			return // not Go tokens: Perturb refuses, which is the point
		}
		if a, b := tokensOf(t, src), tokensOf(t, got); !equalStrings(a, b) {
			t.Fatalf("tokens changed:\n%q\n%q", src, got)
		}
	})
}

func TestChangeBytes(t *testing.T) {
	prior := core.Files{"a": []byte("x\ny\nz\n"), "b": []byte("same\n")}
	for _, tc := range []struct {
		name      string
		next      core.Files
		read, out int
	}{
		{"one line", core.Files{"a": []byte("x\nY2\nz\n"), "b": []byte("same\n")}, 6, 5},
		{"line count changes", core.Files{"a": []byte("x\n"), "b": []byte("same\n")}, 6, 8},
		{"nothing", prior, 0, 0},
	} {
		read, out := changeBytes(prior, tc.next)
		if read != tc.read || out != tc.out {
			t.Errorf("%s: changeBytes = %d, %d; want %d, %d", tc.name, read, out, tc.read, tc.out)
		}
	}
}
