package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchChanged: a gate trusts the watched files' stamps only once they
// are older than racy, and then notices every change a stamp shows: a
// rewrite of the same size, a rewrite that puts the old mtime back (ctime
// still moves), a file created or removed.
func TestWatchChanged(t *testing.T) {
	old := racy
	racy = 50 * time.Millisecond
	t.Cleanup(func() { racy = old })
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, home string)
	}{
		{"same size", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"x":2}`), 0o600)
		}},
		{"mtime put back", func(t *testing.T, home string) {
			p := filepath.Join(home, "config.json")
			st, _ := os.Stat(p)
			os.WriteFile(p, []byte(`{"x":3}`), 0o600)
			os.Chtimes(p, st.ModTime(), st.ModTime())
		}},
		{"issuers created", func(t *testing.T, home string) {
			os.WriteFile(filepath.Join(home, "issuers"), []byte("# none\n"), 0o600)
		}},
		{"key removed", func(t *testing.T, home string) {
			os.Remove(filepath.Join(home, "steward.pub"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			os.WriteFile(filepath.Join(home, "config.json"), []byte(`{"x":1}`), 0o600)
			os.WriteFile(filepath.Join(home, "steward.pub"), []byte("k\n"), 0o600)
			w := newWatch(home, []string{"config.json", "issuers", "steward.pub"})
			if w.changed() {
				t.Fatal("changed before any change")
			}
			if w.trusted {
				t.Fatal("stamps trusted within racy of the files' writes")
			}
			time.Sleep(2 * racy)
			if w.changed() || !w.trusted {
				t.Fatalf("changed %v, trusted %v: want unchanged and trusted", w.changed(), w.trusted)
			}
			tc.change(t, home)
			if !w.changed() {
				t.Fatal("the change went unnoticed")
			}
		})
	}
}
