package l3

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/joulehook/joule/core"
)

func TestChecker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go toolchain")
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		changed []string
		chk     Checker
		step    string // the failing ValidationError's step; "" passes
		err     string // a non-validation error
	}{
		{name: "nested module", files: map[string]string{"go.mod": "module example.com/top\n\ngo 1.21\n",
			"sub/go.mod": "module example.com/sub\n\ngo 1.21\n", "sub/x/x.go": "package x\n\nfunc X() int { return 1 }\n"},
			changed: []string{"sub/x/x.go"}},
		{name: "nested module broken", files: map[string]string{"sub/go.mod": "module example.com/sub\n\ngo 1.21\n", "sub/x/x.go": "package x\n\nfunc X() int { return y }\n"},
			changed: []string{"sub/x/x.go"}, step: "go build"},
		{name: "outside any module", files: map[string]string{"tool/main.go": "package main\n\nfunc main() {}\n"}, changed: []string{"tool/main.go"}},
		{name: "outside any module broken", files: map[string]string{"tool/main.go": "package main\n\nfunc main() { undefined() }\n"}, changed: []string{"tool/main.go"}, step: "go build"},
		{name: "does not parse", files: map[string]string{"go.mod": "module m\n", "a.go": "package a\n\nfunc {\n"}, changed: []string{"a.go"}, step: "gofmt"},
		{name: "vet", files: map[string]string{"go.mod": "module m\n\ngo 1.21\n", "a.go": "package a\n\nimport \"fmt\"\n\nfunc A() { fmt.Printf(\"%d\\n\") }\n"}, changed: []string{"a.go"}, step: "go vet"},
		{name: "check command sees the changed files", files: map[string]string{"notes.txt": "x\n"}, changed: []string{"notes.txt"},
			chk: Checker{Command: []string{"sh", "-c", `test "$JOULE_CHANGED_FILES" = notes.txt`}}},
		{name: "check command fails", files: map[string]string{"notes.txt": "x\n"}, changed: []string{"notes.txt"},
			chk: Checker{Command: []string{"sh", "-c", "echo bad notes >&2; exit 3"}}, step: "check"},
		{name: "check command too slow", files: map[string]string{"notes.txt": "x\n"}, changed: []string{"notes.txt"},
			chk: Checker{Command: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond}, err: "did not finish within 200ms"},
		{name: "check command missing", files: map[string]string{"notes.txt": "x\n"}, changed: []string{"notes.txt"},
			chk: Checker{Command: []string{"no-such-check-command"}}, err: "no-such-check-command"},
		{name: "no check command for text", files: map[string]string{"notes.txt": "x\n"}, changed: []string{"notes.txt"}, err: "no check command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := core.Files{}
			for p, s := range tc.files {
				files[p] = []byte(s)
			}
			err := tc.chk.Check(context.Background(), files, tc.changed)
			var ve *ValidationError
			switch {
			case tc.step != "":
				if !errors.As(err, &ve) || ve.Step != tc.step {
					t.Fatalf("err = %v, want a %s failure", err, tc.step)
				}
				if strings.Contains(ve.Output, "joule-l3-") {
					t.Errorf("the output names the scratch directory: %s", ve.Output)
				}
			case tc.err != "":
				if err == nil || errors.As(err, &ve) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
