package lsp

import (
	"reflect"
	"testing"
)

// The regression check compares which errors, not how many, and ignores
// where they are (an edit shifts lines and columns).
func TestNewErrors(t *testing.T) {
	dir := "/tmp/joule-lsp-check-1"
	key := func(e string) string { return errorKey(dir, e) }
	for _, c := range []struct {
		name          string
		before, after []string
		want          []string
	}{
		{"none", nil, nil, nil},
		{"same error moved", []string{"a.go:3:1: x declared and not used"}, []string{"a.go:9:4: x declared and not used"}, nil},
		{"fixed one", []string{"a.go:3:1: x declared and not used"}, nil, nil},
		{"one for another, same count", []string{"a.go:3:1: x declared and not used"}, []string{"a.go:3:1: undefined: Total"},
			[]string{"a.go: undefined: Total"}},
		{"a second copy", []string{"a.go:3:1: undefined: y"}, []string{"a.go:3:1: undefined: y", "a.go:7:1: undefined: y"},
			[]string{"a.go: undefined: y"}},
		{"same message, other file", []string{"a.go:3:1: undefined: y"}, []string{"b.go:3:1: undefined: y"}, []string{"b.go: undefined: y"}},
		{"tsc, in another temp dir", []string{"/tmp/joule-lsp-check-1/src/a.ts(2,5): error TS2304: Cannot find name 'total'."},
			[]string{"/tmp/joule-lsp-check-1/src/a.ts(8,1): error TS2304: Cannot find name 'total'.", "/tmp/joule-lsp-check-1/src/b.ts(1,1): error TS2339: Property 'sum' does not exist"},
			[]string{"src/b.ts: error TS2339: Property 'sum' does not exist"}},
		{"vet prefix", []string{"vet: a.go:1:2: unreachable code"}, []string{"vet: a.go:5:2: unreachable code"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b, a []string
			for _, e := range c.before {
				b = append(b, key(e))
			}
			for _, e := range c.after {
				a = append(a, key(e))
			}
			if got := newErrors(b, a); !reflect.DeepEqual(got, c.want) {
				t.Errorf("new errors %q, want %q", got, c.want)
			}
		})
	}
}
