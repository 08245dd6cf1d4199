package core

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// packs are the conformance packs whose bytes seed the fuzzers.
var packs = []string{"../conformance/v1", "../conformance/testdata/external-v1"}

// vectorBytes returns every hex field named key from the vector files
// called file in both packs.
func vectorBytes(tb testing.TB, file, key string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, dir := range packs {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			tb.Fatal(err)
		}
		var f struct{ Vectors []map[string]any }
		if err := json.Unmarshal(data, &f); err != nil {
			tb.Fatal(err)
		}
		for _, v := range f.Vectors {
			s, _ := v[key].(string)
			b, err := hex.DecodeString(s)
			if err != nil {
				tb.Fatalf("%s %v: %v", file, v["name"], err)
			}
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no %s in %s", key, file)
	}
	return out
}
