package lsp_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/joulehook/joule/core"
	"github.com/joulehook/joule/tiers/l1/lsp"
)

// The check on the resident server compares which errors the affected
// files have before and after, not how many: a new one refuses the edit
// even when it replaces one the edit fixes; an error the prior tree
// already had does not; and a file the edit leaves alone is asked about
// when it still holds the old name.
func TestCheckEditOnServer(t *testing.T) {
	needGopls(t)
	goRoot, goFiles := goProject(t)
	const stats = "stats/stats.go"
	swap := func(files core.Files, rel, old, new string) core.Files {
		next := files.Clone()
		if !bytes.Contains(files[rel], []byte(old)) {
			t.Fatalf("%s does not hold %q", rel, old)
		}
		next[rel] = bytes.Replace(files[rel], []byte(old), []byte(new), 1)
		return next
	}
	broken := swap(goFiles, stats, "square(x - mean)", "square(x - mean, 2)")
	cases := []struct {
		name        string
		prior, next core.Files
		words       []string
		regression  bool
	}{
		{"go: a new error", goFiles, broken, nil, true},
		{"go: no error", goFiles, swap(goFiles, stats, "square(x - mean)", "square(mean - x)"), nil, false},
		{"go: an old error stays", broken, swap(broken, stats, "dev +=", "dev = dev +"), nil, false},
		{"go: one error fixed, another made", broken, swap(swap(broken, stats, "square(x - mean, 2)", "square(x - mean)"), stats, "square(x - mean)", "square(x - nope)"), nil, true},
		// main.go calls stats.Describe and is not changed: asked about
		// because it still holds the old name
		{"go: a use the edit missed", goFiles, swap(goFiles, stats, "func Describe(", "func Summarize("), []string{"Describe"}, true},
		// the same, not told the old name: main.go is not asked about
		{"go: unchanged files unasked", goFiles, swap(goFiles, stats, "func Describe(", "func Summarize("), nil, false},
		// states checked before: the errors of a prior are remembered
		// (diagnose), and remembering them hides no new one
		{"go: the first regression again", goFiles, broken, nil, true},
		{"go: the regression undone", broken, goFiles, nil, false},
		{"go: the regression once more, from a prior just checked as a successor", goFiles, broken, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := lsp.CheckEdit(context.Background(), lsp.Gopls, goRoot, c.prior, c.next, c.words...)
			if got := errors.Is(err, lsp.ErrRegression); got != c.regression {
				t.Fatalf("regression %v, want %v (err %v)", got, c.regression, err)
			}
			if err != nil && !c.regression {
				t.Fatal(err)
			}
			t.Log(err)
		})
	}
}
