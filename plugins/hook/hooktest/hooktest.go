// Package hooktest holds the tests host packages share: adapters checked
// against golden files (each real payload shape in testdata/payloads is
// parsed, every gate decision rendered, the result compared with
// testdata/golden), and the install test of editors' agent_servers entry.
package hooktest

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/plugins/hook"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Results are the gate decisions every payload is rendered with.
var Results = []gate.Result{
	{Decision: gate.Allow, Code: gate.CodeAllowed, Reason: "allowed by Bash(go test:*)"},
	{Decision: gate.Deny, Code: gate.CodeNotGranted, Reason: "no rule of grant g1 allows Bash(curl -s x)"},
	{Decision: gate.Ask, Code: gate.CodeAskRule, Reason: "grant g1 asks before Bash(rm:*)"},
	{Decision: gate.Rewrite, Code: gate.CodeAllowed, Reason: "redacted", UpdatedInput: json.RawMessage(`{"command":"echo [redacted]"}`)},
}

// Golden parses every testdata/payloads/*.json with a and renders each of
// Results (and a refusal when parsing fails), comparing the text with
// testdata/golden/<name>.golden. Run the test with -update to rewrite them.
func Golden(t *testing.T, a hook.Adapter) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "payloads", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads in testdata/payloads: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := Render(a, payload)
			path := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n--- got\n%s--- want\n%s", name, path, got, want)
			}
		})
	}
}

// Render is the golden text for one payload: the parsed event (or the
// refusal), then the host's answer to each of Results.
func Render(a hook.Adapter, payload []byte) string {
	var b strings.Builder
	call, err := a.Parse(payload)
	results := Results
	if err == nil {
		err = call.Event.Validate()
	}
	if err != nil {
		fmt.Fprintf(&b, "refused: %v\n", err)
		results = []gate.Result{{Decision: gate.Deny, Code: gate.CodeMalformed, Reason: err.Error()}}
	} else {
		ev, _ := json.MarshalIndent(call.Event, "", "  ")
		fmt.Fprintf(&b, "hook: %s\nevent: %s\n", call.Hook, ev)
	}
	for _, res := range results {
		out := a.Answer(call, res)
		fmt.Fprintf(&b, "\n== %s\nexit: %d\nstdout: %s\nstderr: %s\n", res.Decision, out.Exit, bytes.TrimSpace(out.Stdout), strings.TrimSpace(out.Stderr))
	}
	return b.String()
}

// Fuzz feeds a's parser arbitrary payloads, seeded with testdata/payloads:
// it must never panic, and a deny must always reach the host as something
// (output or a non-zero exit), never as silence, which every host reads as
// allow.
func Fuzz(f *testing.F, a hook.Adapter) {
	files, _ := filepath.Glob(filepath.Join("testdata", "payloads", "*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte("\xff{"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		call, err := a.Parse(payload)
		if err == nil && (call == nil || call.Event == nil) {
			t.Fatalf("Parse returned no event and no error")
		}
		out := a.Answer(call, gate.Result{Decision: gate.Deny, Code: gate.CodeMalformed, Reason: "x"})
		if len(bytes.TrimSpace(out.Stdout)) == 0 && out.Exit == 0 {
			t.Fatalf("a deny rendered as silence with exit 0")
		}
	})
}
