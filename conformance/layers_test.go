package conformance

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// layers ranks the project's top-level trees: a package may import its own
// tree and trees of a lower rank, never one above it (the project guide's
// layout: core depends on nothing of the project).
var layers = map[string]int{
	// internal holds what the tests of every tree share (testdeps: where
	// make deps put the tools) and imports nothing of the project.
	"internal": -1,
	"core":     0, "energy": 1, "tiers": 2,
	"mcpserver": 3, "acpagent": 3, "plugins": 3, "ui": 3,
	"conformance": 4, "bench": 5, "demo": 5, "cmd": 6,
}

const module = "github.com/joulehook/joule/"

// TestNoImportRunsUpward lists every package of the module with its
// imports and fails on one that imports a tree above its own, or a tree
// this table does not rank.
func TestNoImportRunsUpward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	tree := func(pkg string) (string, bool) {
		rest, ok := strings.CutPrefix(pkg, module)
		if !ok {
			return "", false
		}
		top, _, _ := strings.Cut(rest, "/")
		return top, true
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		from, _ := tree(fs[0])
		rank, ok := layers[from]
		if !ok {
			t.Errorf("%s: tree %q has no rank in the layer table", fs[0], from)
			continue
		}
		n++
		for _, imp := range fs[1:] {
			to, ours := tree(imp)
			if !ours || to == from {
				continue
			}
			if r, ok := layers[to]; !ok || r >= rank {
				t.Errorf("%s imports %s: %s (rank %d) may not import %s", fs[0], imp, from, rank, to)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d packages listed; go list output:\n%s", n, out)
	}
}
