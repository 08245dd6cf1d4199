// Package receiptstest holds what the receipt golden tests of several
// packages share: signed payloads pinned byte for byte in a golden file,
// one "name hex" line per case.
package receiptstest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// CheckGolden compares got, by case name, with the payloads in the golden
// file at path. With update it first rewrites the file from got, so a
// deliberate change shows as that file's diff.
func CheckGolden(t testing.TB, path string, got map[string][]byte, update bool) {
	t.Helper()
	if update {
		names := make([]string, 0, len(got))
		for n := range got {
			names = append(names, n)
		}
		sort.Strings(names)
		var b strings.Builder
		for _, n := range names {
			fmt.Fprintf(&b, "%s %x\n", n, got[n])
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		name, h, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("%s: %s: %v", path, name, err)
		}
		want[name] = b
	}
	if len(want) != len(got) {
		t.Errorf("%s: %d golden payloads, %d sealed", path, len(want), len(got))
	}
	for name, g := range got {
		if !bytes.Equal(g, want[name]) {
			t.Errorf("%s: payload\n%x\nwant\n%x", name, g, want[name])
		}
	}
}
