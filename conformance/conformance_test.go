package conformance

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPacksPass(t *testing.T) {
	for _, dir := range []string{"v1", "testdata/external-v1"} {
		t.Run(dir, func(t *testing.T) {
			rep, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			if dir == "v1" && !slices.ContainsFunc(rep.Results, func(r Result) bool { return r.File == FileGatedCascade }) {
				t.Fatal("our pack has no C5 vectors")
			}
			if rep.Failed() != 0 || rep.Passed() < 60 {
				var b bytes.Buffer
				rep.Write(&b)
				t.Fatalf("%d passed, %d failed:\n%s", rep.Passed(), rep.Failed(), b.String())
			}
		})
	}
}

// TestGenIsReproducible regenerates the pack and compares it with the
// committed conformance/v1 byte for byte.
func TestGenIsReproducible(t *testing.T) {
	dir := t.TempDir()
	if err := Gen(dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		got, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		want, err := os.ReadFile(filepath.Join("v1", e.Name()))
		if err != nil {
			t.Fatalf("%s is not committed in conformance/v1 (run make vectors)", e.Name())
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the committed pack (run make vectors and review the diff)", e.Name())
		}
	}
}

// TestCheckerCatchesTampering mutates one field of each vector file and
// expects the checker to report at least one failure: a checker that passes
// anything is a defect.
func TestCheckerCatchesTampering(t *testing.T) {
	tamper := map[string]func(v map[string]any){
		FileCodingOps: func(v map[string]any) { v["op_id"] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
		FileSignatures: func(v map[string]any) {
			v["valid"] = !v["valid"].(bool)
		},
		FileReceipts: func(v map[string]any) { v["valid"] = !v["valid"].(bool) },
		FileCascade:  func(v map[string]any) { v["consulted"] = []string{"L0", "L1", "L2", "L3", "L4", "L4"} },
		FileTree:     func(v map[string]any) { v["canonical_cbor_hex"] = "a1" },
		FileGatedCascade: func(v map[string]any) {
			v["total_debit_uj"] = json.Number("12")
		},
	}
	for file, mutate := range tamper {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{FileCodingOps, FileSignatures, FileReceipts, FileCascade, FileTree, FileGatedCascade} {
				b, _ := os.ReadFile(filepath.Join("v1", f))
				if f == file {
					var doc map[string]any
					dec := json.NewDecoder(bytes.NewReader(b))
					dec.UseNumber()
					if err := dec.Decode(&doc); err != nil {
						t.Fatal(err)
					}
					vectors := doc["vectors"].([]any)
					mutate(vectors[0].(map[string]any))
					b, _ = json.Marshal(doc)
				}
				os.WriteFile(filepath.Join(dir, f), b, 0o644)
			}
			rep, err := Check(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Failed() != 1 {
				t.Fatalf("%d failures, want exactly 1", rep.Failed())
			}
		})
	}
}

func TestCheckRejectsMalformedFiles(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileCascade), []byte(`{"version":1,"vectors":[{"name":"x","stages":[],"closing_tier":null,"consulted":[],"typo":1}]}`), 0o644)
	rep, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	rep.Write(&b)
	if !strings.Contains(b.String(), "unknown field") || !strings.Contains(b.String(), "missing from the pack") {
		t.Fatalf("report:\n%s", b.String())
	}
	if _, err := Check(t.TempDir()); err == nil {
		t.Fatal("an empty directory was accepted as a pack")
	}
}

// TestCheckRejectsNulls: WIRE.md omits an absent field and gives arrays as
// arrays; only closing_tier may be null. Each shape an implementation might
// write by mistake is refused.
func TestCheckRejectsNulls(t *testing.T) {
	tests := []struct {
		file, body string
		ok         bool
	}{
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":[],"closing_tier":null,"consulted":[]}]}`, true},
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":null,"closing_tier":null,"consulted":[]}]}`, false},
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":[],"closing_tier":null,"consulted":null}]}`, false},
		{FileCascade, `{"version":1,"vectors":null}`, false},
		{FileCascade, `{"version":1,"vectors":[{"name":null,"stages":[],"closing_tier":null,"consulted":[]}]}`, false},
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":[null],"closing_tier":null,"consulted":[]}]}`, false},
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":[{"tier":"L0","outcome":null}],"closing_tier":null,"consulted":["L0"]}]}`, false},
		{FileCascade, `{"version":1,"vectors":[{"name":"x","stages":[],"closing_tier":null,"consulted":[null]}]}`, false},
		{FileCascade, `{"version":null,"vectors":[]}`, false},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.body), 0o644)
		rep, err := Check(dir)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		rep.Write(&b)
		rejected := strings.Contains(b.String(), "is null")
		if rejected == tt.ok {
			t.Errorf("%s: rejected=%v, want %v\n%s", tt.body, rejected, !tt.ok, b.String())
		}
	}
}
