package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGateConfChanged: the resident gate trusts the configuration files'
// stamps only once they are older than confRacy, and then notices every
// change a stamp shows: a rewrite of the same size, a rewrite that puts
// the old mtime back (ctime still moves), a file created or removed.
func TestGateConfChanged(t *testing.T) {
	old := confRacy
	confRacy = 50 * time.Millisecond
	t.Cleanup(func() { confRacy = old })
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, home string)
	}{
		{"same size", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"x":2}`), 0o600)
		}},
		{"mtime put back", func(t *testing.T, home string) {
			p := filepath.Join(home, ConfigFile)
			st, _ := os.Stat(p)
			os.WriteFile(p, []byte(`{"x":3}`), 0o600)
			os.Chtimes(p, st.ModTime(), st.ModTime())
		}},
		{"issuers created", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, IssuersFile), []byte("# none\n"), 0o600)
		}},
		{"key removed", func(t *testing.T, home string) {
			os.Remove(filepath.Join(home, "steward.pub"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			os.WriteFile(filepath.Join(home, ConfigFile), []byte(`{"x":1}`), 0o600)
			os.WriteFile(filepath.Join(home, "steward.pub"), []byte("k\n"), 0o600)
			r := &residentGate{home: home, confHash: confHash(home)}
			if r.confChanged() {
				t.Fatal("changed before any change")
			}
			if r.confTrusted {
				t.Fatal("stamps trusted within confRacy of the files' writes")
			}
			time.Sleep(2 * confRacy)
			if r.confChanged() || !r.confTrusted {
				t.Fatalf("changed %v, trusted %v: want unchanged and trusted", r.confChanged(), r.confTrusted)
			}
			tc.change(t, home)
			if !r.confChanged() {
				t.Fatal("the change went unnoticed")
			}
		})
	}
}
