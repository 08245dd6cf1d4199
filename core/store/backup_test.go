package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestBackupRestore: a backup taken while the store is in use is a whole
// store; restoring it brings the store back to that moment; a backup is
// never written over a file, and a file that is not a store is never
// restored.
func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t)
	putGrant(t, s, "g1", "", 1000)
	for i := 0; i < 5; i++ {
		seal(t, s, "s1", []string{"g1"}, 10, "a")
	}
	bak := filepath.Join(dir, "backup.db")
	if err := s.Backup(ctx, bak); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(bak); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", info, err)
	}
	if err := s.Backup(ctx, bak); err == nil {
		t.Fatal("a backup overwrote an existing file")
	}
	if err := CheckBackup(ctx, bak); err != nil {
		t.Fatalf("the backup is not a whole store: %v", err)
	}
	// More happens after the backup; the restore takes it back.
	for i := 0; i < 3; i++ {
		seal(t, s, "s1", []string{"g1"}, 10, "b")
	}
	putGrant(t, s, "g2", "", 5)
	if err := s.Restore(ctx, bak); err != nil {
		t.Fatal(err)
	}
	if n, err := s.LogSize(ctx); err != nil || n != 5 {
		t.Fatalf("log size after restore %d, %v; want 5", n, err)
	}
	if g, err := s.Grant(ctx, "g1"); err != nil || g.SpentUJ != 50 {
		t.Fatalf("g1 after restore: %+v %v", g, err)
	}
	if _, err := s.Grant(ctx, "g2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("g2 survived the restore: %v", err)
	}
	// The restored store is writable and whole.
	seal(t, s, "s1", []string{"g1"}, 10, "c")
	if err := s.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk")
	os.WriteFile(junk, []byte("not a database at all, just some bytes"), 0o600)
	if err := s.Restore(ctx, junk); err == nil {
		t.Fatal("restored from a file that is not a store")
	}
	if n, _ := s.LogSize(ctx); n != 6 {
		t.Fatalf("a refused restore changed the store: log size %d", n)
	}
}

// TestReadOnlyOpen: a store in a directory nobody may write is read, not
// refused, and every write fails.
func TestReadOnlyOpen(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: the directory's mode does not stop writes, the read-only open still must")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "home")
	s, err := Open(filepath.Join(dir, "joule.db"))
	if err != nil {
		t.Fatal(err)
	}
	putGrant(t, s, "g1", "", 1000)
	seal(t, s, "s1", []string{"g1"}, 10, "a")
	s.Close()
	os.Chmod(dir, 0o500)
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	ro, err := Open(filepath.Join(dir, "joule.db"), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if g, err := ro.Grant(ctx, "g1"); err != nil || g.SpentUJ != 10 {
		t.Fatalf("read: %+v %v", g, err)
	}
	if _, err := ro.Session(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := ro.Verify(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ro.SetSetting(ctx, "k", "v"); err == nil {
		t.Fatal("a read-only store took a write")
	}
	if _, err := Open(filepath.Join(dir, "missing.db"), ReadOnly()); err == nil {
		t.Fatal("a read-only open created a store")
	}
}
