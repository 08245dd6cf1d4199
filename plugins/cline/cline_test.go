package cline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/joulehook/joule/plugins/hook/hooktest"
)

func TestGolden(t *testing.T) { hooktest.Golden(t, Adapter{}) }

func FuzzParse(f *testing.F) { hooktest.Fuzz(f, Adapter{}) }

// TestCommandLines: the lines the gate judges are what Cline 3.0.65's
// run_commands runs for each input shape (the first shape of its union
// that parses), and an input it refuses has none.
func TestCommandLines(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string // nil: Cline refuses the input
	}{
		{`{"commands":["a","b c"]}`, []string{"a", "b c"}},
		{`{"commands":[]}`, []string{}},
		{`{"commands":["a",{"command":"rm","args":["-rf","x y",""]}]}`, []string{"a", "rm -rf 'x y' ''"}},
		{`{"commands":[{"command":"ls -l | wc"}]}`, []string{"ls -l | wc"}},
		{`{"commands":"a; b"}`, []string{"a; b"}},
		{`{"commands":{"command":"rm","args":["x"]}}`, []string{"rm x"}},
		{`{"commands":["rm -rf x"],"command":"ls"}`, []string{"rm -rf x"}},
		{`{"commands":["rm -rf x"],"cmd":"ls"}`, []string{"rm -rf x"}},
		{`{"command":"rm","args":["-rf","/"]}`, []string{"rm -rf /"}},
		{`{"command":"rm -rf /"}`, []string{"rm -rf /"}},
		{`{"command":"rm","args":null}`, []string{"rm"}},
		{`{"command":"rm","args":[1]}`, []string{"rm"}},
		{`{"command":""}`, []string{""}},
		{`{"commands":[1],"cmd":"ls"}`, []string{"ls"}},
		{`{"commands":[1]}`, nil},
		{`{"commands":5}`, nil},
		{`{"commands":[{"args":["x"]}]}`, nil},
		{`{"cmd":5}`, nil},
		{`{}`, nil},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(tt.in), &m); err != nil {
			t.Fatal(err)
		}
		got, ok := commandLines(m)
		if ok != (tt.want != nil) || ok && strings.Join(got, "\n") != strings.Join(tt.want, "\n") || ok && len(got) != len(tt.want) {
			t.Errorf("%s: got %q (%v), want %q", tt.in, got, ok, tt.want)
		}
	}
}
