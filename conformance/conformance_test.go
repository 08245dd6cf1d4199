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

// TestCheckWarnsOnUnknownKeys: a key WIRE.md does not define is named in a
// warning and the vector is still judged; a file that is not a vector file
// at all is refused as a whole.
func TestCheckWarnsOnUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileCascade), []byte(`{"version":1,"generator":"peer 0.1","vectors":[{"name":"x","stages":[],"closing_tier":null,"consulted":[],"typo":1}]}`), 0o644)
	rep, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := report(rep)
	for _, want := range []string{`warn cascade_vectors.json x: unknown key "typo"`, `warn cascade_vectors.json (file): unknown key "generator"`, "ok   cascade_vectors.json x\n", "missing from the pack"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if rep.Warnings() != 2 || rep.Failed() != 4 {
		t.Errorf("%d warnings, %d failed; want 2 and 4 (the missing files)", rep.Warnings(), rep.Failed())
	}
	for _, body := range []string{`[]`, `{"version":2,"vectors":[]}`, `{"vectors":[]}`, `{"version":1}`, `{"version":1,"vectors":[1]}`, `{"version":1,"vectors":{}}`, `not json`, `{"version":1,"vectors":[]} {}`} {
		os.WriteFile(filepath.Join(dir, FileCascade), []byte(body), 0o644)
		rep, err := Check(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Results, func(r Result) bool { return r.File == FileCascade && r.Name == fileResult && r.Err != nil }) {
			t.Errorf("%s: not refused as a file:\n%s", body, report(rep))
		}
	}
	if _, err := Check(t.TempDir()); err == nil {
		t.Fatal("an empty directory was accepted as a pack")
	}
}

func report(rep *Report) string {
	var b bytes.Buffer
	rep.Write(&b)
	return b.String()
}

// peerPack copies the external pack into a temporary directory after
// editing the vectors of one file.
func peerPack(t *testing.T, file string, edit func(vectors []any) []any) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{FileCodingOps, FileSignatures, FileReceipts, FileCascade, FileTree} {
		b, err := os.ReadFile(filepath.Join("testdata/external-v1", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == file {
			var doc map[string]any
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			doc["vectors"] = edit(doc["vectors"].([]any))
			if b, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func vectorNamed(vectors []any, name string) map[string]any {
	for _, v := range vectors {
		if m := v.(map[string]any); m["name"] == name {
			return m
		}
	}
	panic("no vector " + name)
}

// TestCheckJudgesNegativeVectors: every kind of negative vector a peer may
// write, in each file, is judged (and refused by the implementation), never
// taken for a malformed file; the same vector claiming a form the
// implementation accepts fails.
func TestCheckJudgesNegativeVectors(t *testing.T) {
	aaaa := strings.Repeat("A", 42) // the malformed op_id: one character short
	tests := []struct {
		name, file string
		edit       func(vectors []any) []any
		ok         bool
	}{
		{"signature: malformed op_id in a negative vector", FileSignatures, func(vs []any) []any {
			vectorNamed(vs, "neg-alg-2")["op_id"] = aaaa
			return vs
		}, true},
		{"signature: op, op_id and signature all garbage", FileSignatures, func(vs []any) []any {
			v := vectorNamed(vs, "neg-tampered-edit-replacement")
			v["op"], v["op_id"], v["signature"] = map[string]any{"prior": 7, "extra": []any{}}, "%%%", "not base64url!"
			return vs
		}, true},
		{"signature: op, op_id and signature absent", FileSignatures, func(vs []any) []any {
			v := vectorNamed(vs, "neg-author-key-swapped")
			delete(v, "op")
			delete(v, "op_id")
			delete(v, "signature")
			delete(v, "seed_hex")
			return vs
		}, true},
		{"signature: a positive vector's bytes marked negative", FileSignatures, func(vs []any) []any {
			vectorNamed(vs, "valid-rfc8032-test1-seed-single-edit")["valid"] = false
			return vs
		}, false},
		{"signature: malformed op_id in a positive vector", FileSignatures, func(vs []any) []any {
			vectorNamed(vs, "valid-rfc8032-test1-seed-single-edit")["op_id"] = aaaa
			return vs
		}, false},
		{"tree: the issue's negative vector", FileTree, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-dotdot", "files": map[string]any{"a/../b": "eA"}, "valid": false})
		}, true},
		{"tree: negative with CBOR only", FileTree, func(vs []any) []any {
			// {"../x": h'00…'}: a canonical map with an invalid path
			return append(vs, map[string]any{"name": "neg-cbor", "canonical_cbor_hex": "a1642e2e2f785820" + strings.Repeat("00", 32), "tree_id": aaaa, "valid": false, "reason": "invalid-path"})
		}, true},
		{"tree: negative whose files are fine", FileTree, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-not-really", "files": map[string]any{"a/b": "eA"}, "valid": false})
		}, false},
		{"tree: negative whose CBOR is fine", FileTree, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-not-really", "files": map[string]any{"../b": "eA"}, "canonical_cbor_hex": "a0", "valid": false})
		}, false},
		{"tree: negative with nothing to judge", FileTree, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-empty", "valid": false})
		}, false},
		{"tree: valid must be a boolean", FileTree, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-string", "files": map[string]any{"../b": "eA"}, "valid": "false"})
		}, false},
		{"receipt: negative with a garbage core", FileReceipts, func(vs []any) []any {
			for _, v := range vs {
				if m := v.(map[string]any); m["valid"] == false {
					m["core"] = map[string]any{"measured_uj": nil, "tier": "L9"}
					break
				}
			}
			return vs
		}, true},
		{"coding op: negative op", FileCodingOps, func(vs []any) []any {
			op := map[string]any{}
			for k, v := range vs[0].(map[string]any)["op"].(map[string]any) {
				op[k] = v
			}
			op["tier"] = "L5"
			return append(vs, map[string]any{"name": "neg-tier", "op": op, "valid": false})
		}, true},
		{"coding op: negative canonical bytes", FileCodingOps, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-not-a-map", "canonical_cbor_hex": "80", "op_id": aaaa, "valid": false})
		}, true},
		{"coding op: negative that is a valid op", FileCodingOps, func(vs []any) []any {
			v := map[string]any{}
			for k, e := range vs[0].(map[string]any) {
				v[k] = e
			}
			v["valid"] = false
			return append(vs, v)
		}, false},
		{"cascade: negative stages", FileCascade, func(vs []any) []any {
			return append(vs, map[string]any{"name": "neg-outcome", "stages": []any{map[string]any{"tier": "L0", "outcome": "explode"}}, "valid": false})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Check(peerPack(t, tt.file, tt.edit))
			if err != nil {
				t.Fatal(err)
			}
			out := report(rep)
			if strings.Contains(out, "(file)") {
				t.Fatalf("a file was refused:\n%s", out)
			}
			if got := rep.Failed() == 0; got != tt.ok {
				t.Fatalf("passed=%v, want %v:\n%s", got, tt.ok, out)
			}
			if tt.ok && rep.Passed() < 69 {
				t.Fatalf("only %d judged:\n%s", rep.Passed(), out)
			}
		})
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
		out := report(rep)
		rejected := strings.Contains(out, "is null") && rep.Failed() > 4
		if rejected == tt.ok {
			t.Errorf("%s: rejected=%v, want %v\n%s", tt.body, rejected, !tt.ok, out)
		}
	}
}

// FuzzVectorFile: no vector file, however malformed, panics a checker, and
// each file checker either refuses the file or judges every vector it holds.
func FuzzVectorFile(f *testing.F) {
	for _, name := range []string{FileCodingOps, FileSignatures, FileReceipts, FileCascade, FileTree, FileGatedCascade} {
		b, err := os.ReadFile(filepath.Join("v1", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 4096)])
	}
	f.Add([]byte(`{"version":1,"vectors":[{"name":"n","valid":false,"files":{"../a":"eA"}}]}`))
	f.Add([]byte(`{"version":1,"vectors":[{"name":"n","valid":false,"signed_op_cbor_hex":"a0","op_id":"AAAA"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range checkers {
			if c.file == FileGatedCascade {
				continue // runs a store per vector: too slow to fuzz here
			}
			judged := 0
			_, err := c.check(data, func(v Verdict) {
				judged++
				if v.Name == "" {
					t.Fatalf("%s: a verdict without a name", c.file)
				}
			})
			if err != nil && judged > 0 {
				t.Fatalf("%s: refused the file after judging %d vectors", c.file, judged)
			}
		}
	})
}
