package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/analysis.golden.json")

// goldenEntry is one line's analysis or error, as stored in the golden file.
type goldenEntry struct {
	Line     string             `json:"line"`
	Analysis *Analysis          `json:"analysis,omitempty"`
	Error    *UnanalyzableError `json:"error,omitempty"`
}

// TestGolden analyzes testdata/lines.json and compares the full structured
// result, reasons included, with testdata/analysis.golden.json. Run
// go test -run TestGolden -update to rewrite it after a deliberate change.
func TestGolden(t *testing.T) {
	var lines []string
	readJSON(t, filepath.Join("testdata", "lines.json"), &lines)
	entries := make([]goldenEntry, len(lines))
	for i, line := range lines {
		entries[i].Line = line
		an, err := Analyze(line)
		var ue *UnanalyzableError
		switch {
		case err == nil:
			entries[i].Analysis = an
		case errors.As(err, &ue):
			entries[i].Error = ue
		default:
			t.Fatalf("Analyze(%q) returned %T: %v", line, err, err)
		}
	}
	got, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "analysis.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		var old []goldenEntry
		readJSON(t, path, &old)
		for i := range entries {
			if i >= len(old) {
				t.Errorf("new entry %q", entries[i].Line)
				continue
			}
			g, _ := json.Marshal(entries[i])
			w, _ := json.Marshal(old[i])
			if !bytes.Equal(g, w) {
				t.Errorf("line %q:\n got %s\nwant %s", entries[i].Line, g, w)
			}
		}
		if len(old) > len(entries) {
			t.Errorf("golden file has %d entries, want %d", len(old), len(entries))
		}
		t.Error("analysis differs from the golden file (run with -update if the change is intended)")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestConcurrentAnalyze runs the golden lines from many goroutines at once
// (parsers are pooled) and checks each result matches a sequential run.
func TestConcurrentAnalyze(t *testing.T) {
	var lines []string
	readJSON(t, filepath.Join("testdata", "lines.json"), &lines)
	want := make([][]byte, len(lines))
	for i, l := range lines {
		want[i] = analysisJSON(l)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range lines {
				i := (i + g) % len(lines)
				if got := analysisJSON(lines[i]); !bytes.Equal(got, want[i]) {
					t.Errorf("concurrent Analyze(%q) = %s, want %s", lines[i], got, want[i])
				}
			}
		})
	}
	wg.Wait()
}

func analysisJSON(line string) []byte {
	an, err := Analyze(line)
	b, _ := json.Marshal(struct {
		A *Analysis
		E error
	}{an, err})
	return b
}
