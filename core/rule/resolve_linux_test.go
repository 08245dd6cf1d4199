//go:build linux

package rule

import (
	"os"
	"testing"
)

// TestResolveDirFast checks when the one-call proof applies: only for an
// existing directory reached without any symlink.
func TestResolveDirFast(t *testing.T) {
	ws, out := symlinkFixture(t)
	if err := os.WriteFile(ws+"/src/file", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string // "" when the fast path must not answer
	}{
		{ws, ws},
		{ws + "/src/ok/", ws + "/src/ok"},
		{ws + "/src/ok/../ok", ws + "/src/ok"},
		{out, out},
		{ws + "/src/dirlink", ""},       // a symlink as the last component
		{ws + "/src/dirlink/..", ""},    // a symlink before ..
		{ws + "/src/chain1/secret", ""}, // a symlink in the middle
		{ws + "/src/missing", ""},
		{ws + "/src/file", ""},
		{ws + "/src/file/..", ""},
	}
	if _, ok := resolveDirFast(ws); !ok {
		t.Skip("openat2 is not available here")
	}
	for _, tt := range tests {
		got, ok := resolveDirFast(tt.path)
		if ok != (tt.want != "") || got != tt.want {
			t.Errorf("resolveDirFast(%q) = %q, %v; want %q", tt.path, got, ok, tt.want)
		}
	}
}
